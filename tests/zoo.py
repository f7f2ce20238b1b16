"""The model zoo: small networks of the kinds our users deploy, written as PyTorch users write them.

Each entry builds the module, names its input shape, and makes a synthetic but learnable data set
(class templates plus noise) so a few epochs of training give well-separated logits: int8 vs float
agreement then measures quantization, not coin flips between near-tied untrained outputs.
"""
from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def _conv_bn_relu(cin, cout, k, stride=1, padding=0, groups=1, relu6=False):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, padding, groups=groups, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU6() if relu6 else nn.ReLU())


class DSCNN(nn.Module):
    """Keyword spotting on 49x10 MFCCs, after the MLPerf Tiny DS-CNN (smaller width)."""

    def __init__(self, classes: int = 12, width: int = 32):
        super().__init__()
        self.stem = _conv_bn_relu(1, width, (10, 4), stride=(2, 2), padding=(5, 1))
        blocks = []
        for _ in range(4):
            blocks += [_conv_bn_relu(width, width, 3, padding=1, groups=width), _conv_bn_relu(width, width, 1)]
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(self.dropout(torch.flatten(self.pool(x), 1)))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.expand = _conv_bn_relu(cin, hidden, 1, relu6=True)
        self.dw = _conv_bn_relu(hidden, hidden, 3, stride, 1, groups=hidden, relu6=True)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.project(self.dw(self.expand(x)))
        return x + y if self.use_res else y


class MobileNetV2Tiny(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = _conv_bn_relu(3, 16, 3, stride=2, padding=1, relu6=True)
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, 2), InvertedResidual(16, 24, 2, 4),
                                    InvertedResidual(24, 24, 1, 4), InvertedResidual(24, 32, 2, 4))
        self.head = _conv_bn_relu(32, 64, 1, relu6=True)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(x.mean((2, 3)))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.shortcut is None else self.shortcut(x)
        return F.relu(y + skip)


class ResNet8(nn.Module):
    """The MLPerf Tiny image-classification ResNet-8 (32x32x3, 16/32/64 channels)."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = _conv_bn_relu(3, 16, 3, padding=1)
        self.stack1 = BasicBlock(16, 16, 1)
        self.stack2 = BasicBlock(16, 32, 2)
        self.stack3 = BasicBlock(32, 64, 2)
        self.pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stack3(self.stack2(self.stack1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class AutoEncoder(nn.Module):
    """MLPerf Tiny anomaly-detection shape: 640-128-8-128-640."""

    def __init__(self):
        super().__init__()
        self.enc1, self.enc2 = nn.Linear(640, 128), nn.Linear(128, 8)
        self.dec1, self.dec2 = nn.Linear(8, 128), nn.Linear(128, 640)

    def forward(self, x):
        z = F.relu(self.enc2(F.relu(self.enc1(x))))
        return self.dec2(F.relu(self.dec1(z)))


class BranchConcat(nn.Module):
    """Two branches that join in a concat, written in an order that wastes memory.

    The source computes the medium right branch first, so its output waits while the left branch
    expands to 32 channels; running the left branch first (it narrows to 2 channels) lowers the peak.
    """

    def __init__(self, classes: int = 6):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.right = nn.Conv2d(8, 16, 1)
        self.left1 = nn.Conv2d(8, 32, 3, padding=1)
        self.left2 = nn.Conv2d(32, 2, 1)
        self.mix = nn.Conv2d(18, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        b = F.relu(self.right(x))
        a = F.relu(self.left2(F.relu(self.left1(x))))
        y = F.relu(self.mix(torch.cat([a, b], dim=1)))
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class SensorConv1d(nn.Module):
    """Accelerometer windows: 3 axes x 128 samples."""

    def __init__(self, classes: int = 6):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 16, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(16)
        self.pool = nn.MaxPool1d(2)
        self.conv2 = nn.Conv1d(16, 32, 3, padding="same")
        self.gap = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(self.gap(x), 1))


class LUTNet(nn.Module):
    """Every LUT activation and a softmax head (int8 output, scale 1/256)."""

    def __init__(self, classes: int = 5):
        super().__init__()
        self.conv = nn.Conv2d(2, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 32)
        self.fc4 = nn.Linear(32, 32)
        self.fc5 = nn.Linear(32, classes)

    def forward(self, x):
        x = F.hardswish(self.conv(x))
        x = torch.sigmoid(self.fc1(torch.flatten(x, 1)))
        x = torch.tanh(self.fc2(x))
        x = F.silu(self.fc3(x))
        x = F.gelu(self.fc4(x))
        x = F.hardsigmoid(x)
        return F.softmax(self.fc5(x), dim=-1)


@dataclass(frozen=True)
class ZooEntry:
    name: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...]  # one sample, torch layout
    classes: int  # 0 for the autoencoder (regression)
    epochs: int = 4


ZOO = [
    ZooEntry("lenet5", LeNet5, (1, 28, 28), 10),
    ZooEntry("dscnn", DSCNN, (1, 49, 10), 12, epochs=8),
    ZooEntry("mobilenetv2", MobileNetV2Tiny, (3, 32, 32), 10, epochs=3),
    ZooEntry("resnet8", ResNet8, (3, 32, 32), 10, epochs=2),
    ZooEntry("autoencoder", AutoEncoder, (640,), 0),
    ZooEntry("branch_concat", BranchConcat, (3, 16, 16), 6, epochs=8),
    ZooEntry("sensor_conv1d", SensorConv1d, (3, 128), 6, epochs=8),
    ZooEntry("lut_net", LUTNet, (2, 8, 8), 5, epochs=10),
]


def synthetic_data(entry: ZooEntry, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Class templates (smooth random patterns) + noise; for the autoencoder, a low-rank signal."""
    rng = np.random.default_rng(1000 + seed)
    tmpl_rng = np.random.default_rng(zlib.crc32(entry.name.encode()))
    if entry.classes == 0:
        basis = tmpl_rng.normal(size=(6, entry.shape[0]))
        coeff = rng.normal(size=(n, 6))
        return (coeff @ basis / 3 + rng.normal(scale=0.1, size=(n, entry.shape[0]))).astype(np.float32), coeff
    low = tmpl_rng.normal(size=(entry.classes,) + tuple(max(s // 4, 1) for s in entry.shape))
    templates = low
    for axis in range(1, low.ndim):
        templates = np.repeat(templates, 4, axis=axis)
    slices = (slice(None),) + tuple(slice(0, s) for s in entry.shape)
    templates = templates[slices]
    if templates.shape[1:] != entry.shape:  # dims smaller than 4 stay at their size
        templates = np.resize(templates, (entry.classes,) + entry.shape)
    labels = rng.integers(0, entry.classes, size=n)
    x = 2.0 * templates[labels] + rng.normal(scale=0.5, size=(n,) + entry.shape)
    return x.astype(np.float32), labels


@functools.lru_cache(maxsize=None)
def trained(entry: ZooEntry, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    torch.set_num_threads(2)
    model = entry.build()
    x, y = synthetic_data(entry, 384, seed)
    xt = torch.from_numpy(x)
    yt = torch.from_numpy(y).float() if entry.classes == 0 else torch.from_numpy(y).long()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(entry.epochs):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            out = model(xt[idx])
            if entry.classes == 0:
                loss = F.mse_loss(out, xt[idx])
            elif isinstance(model, LUTNet):
                loss = F.nll_loss(torch.log(out + 1e-6), yt[idx])
            else:
                loss = F.cross_entropy(out, yt[idx])
            loss.backward()
            opt.step()
    return model.eval()


# For the CLI: `tinyaot report tests/zoo.py:resnet8 --calibration ...`
def resnet8():
    return ResNet8().eval()


def lenet5():
    return LeNet5().eval()
