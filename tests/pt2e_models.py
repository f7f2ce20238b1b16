"""The PT2E flow and the MNIST-trained nets that tests/test_pt2e.py and benchmarks/pt2e.py share.

The flow is the seed's: torch.export, prepare_pt2e with torchao's XNNPACKQuantizer (symmetric int8 weights per
tensor or per channel, int8 per-tensor activations from a histogram observer), calibrate, convert_pt2e.
The nets are trained here for a few seconds on real MNIST digits (shared/data/mnist10k.npz): digits 0..7999
train and calibrate, 8000..9999 are held out. Images are in [0, 1], shaped (N, 1, 28, 28).
"""
from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from trained_weights import Recipe, load
from zoo import LeNet5

from tinyaot.report.pt2e_agreement import one_torch_thread

TRAIN, HELD_OUT = slice(0, 8000), slice(8000, 10000)


# ---- the PT2E flow ---------------------------------------------------------------------------------------------
def quiet() -> None:
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for name in ("torchao", "torch"):
        logging.getLogger(name).setLevel(logging.WARNING)


def quantizer(per_channel: bool, config=None):
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    quiet()
    return XNNPACKQuantizer().set_global(config or get_symmetric_quantization_config(is_per_channel=per_channel))


def quantize_pt2e(model, example, calibration, per_channel: bool = True, config=None, fold_quantize: bool = True):
    """The seed's flow: torch.export, prepare_pt2e, calibrate (one sample per call), convert_pt2e."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quiet()
    with torch.no_grad(), one_torch_thread():  # one small sample per call: a second thread only waits
        exported = torch.export.export(model.eval(), (example,), strict=True).module()
        prepared = prepare_pt2e(exported, quantizer(per_channel, config))
        for sample in calibration:
            prepared(torch.as_tensor(np.asarray(sample, np.float32)[None]))
        return convert_pt2e(prepared, fold_quantize=fold_quantize)


# ---- MNIST nets ------------------------------------------------------------------------------------------------
def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act=nn.ReLU) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                         act())


def mlp() -> nn.Module:
    """784-128-64-10 with ReLU."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def lenet5() -> nn.Module:
    return LeNet5(10)


class DSCNN(nn.Module):
    """MLPerf Tiny's KWS DS-CNN shape for 28x28 digits: a 3x3 stride-2 conv, `blocks` depthwise-separable blocks
    (3x3 depthwise + 1x1 pointwise, each conv-BN-ReLU) at 14x14, global average pool, linear."""

    def __init__(self, width: int = 32, blocks: int = 4) -> None:
        super().__init__()
        layers = [_conv_bn(1, width, 3, stride=2)]
        for _ in range(blocks):
            layers += [_conv_bn(width, width, 3, groups=width), _conv_bn(width, width, 1)]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# MobileNetV1's 13 depthwise-separable blocks: (output channels at width 1.0, depthwise stride)
MOBILENET_V1 = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
                (512, 1), (1024, 2), (1024, 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 (conv-BN-ReLU6, 3x3 stride-2 stem, the 13 blocks above) at width `alpha` on 28x28 digits:
    maps 14 -> 7 -> 4 -> 2 -> 1, then global average pool and linear."""

    def __init__(self, alpha: float = 0.25) -> None:
        super().__init__()
        c = int(32 * alpha)
        layers = [_conv_bn(1, c, 3, stride=2, act=nn.ReLU6)]
        for out, stride in MOBILENET_V1:
            out = int(out * alpha)
            layers += [_conv_bn(c, c, 3, stride, groups=c, act=nn.ReLU6), _conv_bn(c, out, 1, act=nn.ReLU6)]
            c = out
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def mnist(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(images float32 (N, 1, 28, 28) in [0, 1], labels int64)."""
    data = np.load(path)
    return (data["images"].astype(np.float32) / 255.0)[:, None], data["labels"].astype(np.int64)


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, epochs: int = 1, batch: int = 64, lr: float = 3e-3,
          seed: int = 0) -> nn.Module:
    """Adam on cross-entropy on one torch thread (deterministic for a seed, and at these sizes faster than two);
    returns the model in eval mode."""
    torch.manual_seed(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    with one_torch_thread():
        for _ in range(epochs):
            perm = torch.randperm(len(xt))
            for i in range(0, len(xt), batch):
                idx = perm[i:i + batch]
                opt.zero_grad()
                F.cross_entropy(model(xt[idx]), yt[idx]).backward()
                opt.step()
    return model.eval()


def _train_mnist_dscnn(model: nn.Module) -> nn.Module:
    """test_pt2e's deep net: one epoch on the training digits (run once, by tests/trained_weights.py)."""
    from mnist_models import shared_mnist_path

    path = shared_mnist_path()
    if path is None:
        raise FileNotFoundError("training the MNIST DS-CNN needs shared/data/mnist10k.npz (set TINYAOT_SHARED)")
    images, labels = mnist(path)
    return train(model, images[TRAIN], labels[TRAIN], epochs=1, batch=32, lr=1e-2)


def _dscnn16() -> nn.Module:
    return DSCNN(width=16)


RECIPES = {"dscnn16": Recipe("pt2e_dscnn16", _dscnn16, _train_mnist_dscnn, code=(DSCNN, _conv_bn, train))}


def trained_dscnn16() -> nn.Module:
    """The DS-CNN (width 16, 9 convs deep) trained once on real digits, with its committed weights."""
    return load(RECIPES["dscnn16"])


def predict(model: nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad(), one_torch_thread():
        return model(torch.from_numpy(x)).argmax(1).numpy()
