"""Small models trained on real MNIST digits (mnist10k.npz), for the calibration tests and benchmark.

Three architectures of the kinds users deploy on a microcontroller: an MLP, LeNet-5 and a depthwise-separable
CNN. Each is trained once (tests/trained_weights.py) and its weights committed, so every machine scores the same
model. The first 8,000 digits train, the last 2,000 are the held-out split; calibration samples come from the
training digits.

`with_outliers` plants the calibration glitches real data pipelines produce: a digit scaled by 50 (a sample
that skipped or doubled a normalization step) and a saturated frame (every pixel at the raw 8-bit full scale,
255, never divided by 255).
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from trained_weights import Recipe, load
from zoo import LeNet5

N_TRAIN = 8000  # digits 0..7999 train; 8000..9999 are held out
N_CALIBRATION = 200


@dataclass(frozen=True)
class Mnist:
    x_train: np.ndarray  # (8000, 1, 28, 28) float32 in [0, 1]
    y_train: np.ndarray  # (8000,) int64
    x_test: np.ndarray  # (2000, 1, 28, 28)
    y_test: np.ndarray

    @property
    def calibration(self) -> np.ndarray:
        """200 real training digits."""
        return self.x_train[:N_CALIBRATION]


@functools.lru_cache(maxsize=None)
def load_mnist(path: str) -> Mnist:
    data = np.load(path)
    images = (data["images"].astype(np.float32) / 255.0)[:, None]
    labels = data["labels"].astype(np.int64)
    return Mnist(images[:N_TRAIN], labels[:N_TRAIN], images[N_TRAIN:], labels[N_TRAIN:])


class MnistMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 64), nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def _dw_separable(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU(),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
    )


class MnistDSCNN(nn.Module):
    """A depthwise-separable CNN: 3x3 stem, three depthwise + pointwise blocks, global average pool."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(_dw_separable(width, 2 * width, 1), _dw_separable(2 * width, 2 * width, 2),
                                    _dw_separable(2 * width, 2 * width, 1))
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(x.mean((2, 3)))


@dataclass(frozen=True)
class MnistEntry:
    name: str
    build: Callable[[], nn.Module]
    epochs: int
    lr: float = 2e-3


MODELS = {e.name: e for e in [
    MnistEntry("mlp", MnistMLP, epochs=6),
    MnistEntry("lenet5", LeNet5, epochs=4),
    MnistEntry("dscnn", MnistDSCNN, epochs=4, lr=5e-3),
]}


def _train(entry: MnistEntry, model: nn.Module) -> nn.Module:
    """Adam on the 8,000 training digits (run once, by tests/trained_weights.py)."""
    path = shared_mnist_path()
    if path is None:
        raise FileNotFoundError("training the MNIST models needs shared/data/mnist10k.npz (set TINYAOT_SHARED)")
    data = load_mnist(str(path))
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    opt = torch.optim.Adam(model.parameters(), lr=entry.lr)
    model.train()
    for _ in range(entry.epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


RECIPES = {name: Recipe(f"mnist_{name}", e.build, functools.partial(_train, e), code=(_train,),
                        params={"epochs": e.epochs, "lr": e.lr, "n_train": N_TRAIN})
           for name, e in MODELS.items()}


@functools.lru_cache(maxsize=None)
def _trained(name: str) -> nn.Module:
    return load(RECIPES[name])


def trained(name: str, path: str | None = None) -> nn.Module:
    """MODELS[name] with its committed weights, trained once on the 8,000 training digits (tests/trained_weights.py):
    the same model on every machine. `path` (the digits the caller scores on) is not needed to load it."""
    return copy.deepcopy(_trained(name))


def float_predictions(model: nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).argmax(1).numpy()


OUTLIER_KINDS = ("digit x50", "saturated frame (255)")


def with_outliers(calibration: np.ndarray, n: int) -> np.ndarray:
    """A copy of `calibration` whose first `n` (0, 1 or 2) samples are gross outliers (OUTLIER_KINDS, in order)."""
    if not 0 <= n <= len(OUTLIER_KINDS):
        raise ValueError(f"n must be 0..{len(OUTLIER_KINDS)}")
    out = calibration.copy()
    if n >= 1:
        out[0] = calibration[0] * 50.0
    if n >= 2:
        out[1] = 255.0
    return out


def shared_mnist_path() -> Path | None:
    """The mnist10k.npz of the shared folder (TINYAOT_SHARED or ../shared), or None; for the benchmark."""
    import os

    root = Path(os.environ.get("TINYAOT_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    path = root / "data" / "mnist10k.npz"
    return path if path.exists() else None
