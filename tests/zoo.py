"""The model zoo: small networks of the kinds our users deploy, written as PyTorch users write them.

Each entry builds the module, names its input shape, and makes a synthetic but learnable data set
(class templates plus noise) so a few epochs of training give well-separated logits: int8 vs float
agreement then measures quantization, not coin flips between near-tied untrained outputs.
"""
from __future__ import annotations

import copy
import functools
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from trained_weights import Recipe, load


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


class SqueezeExcite(nn.Module):
    """MobileNetV3's gate: global average pool -> linear -> ReLU -> linear -> hardsigmoid, one scale per channel
    multiplied back over the feature map (a broadcast mul)."""

    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(channels, reduced), nn.Linear(reduced, channels)

    def forward(self, x):
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3))))))
        return x * s[:, :, None, None]


class SqueezeExciteCNN(nn.Module):
    """MobileNetV3 style on 16x16 RGB: conv stem, a depthwise-separable block with a squeeze-excite gate and
    hardswish, then the classifier."""

    def __init__(self, classes: int = 6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), nn.BatchNorm2d(16),
                                nn.ReLU())
        self.se = SqueezeExcite(16, 8)
        self.project = nn.Sequential(nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24), nn.Hardswish())
        self.fc = nn.Linear(24, classes)

    def forward(self, x):
        x = self.project(self.se(self.dw(self.stem(x))))
        return self.fc(x.mean((2, 3)))


class LayerNormMLP(nn.Module):
    """An MLP with LayerNorm after each hidden layer (as in tabular / sensor-feature models)."""

    def __init__(self, features: int = 64, classes: int = 8):
        super().__init__()
        self.fc1, self.ln1 = nn.Linear(features, 64), nn.LayerNorm(64)
        self.fc2, self.ln2 = nn.Linear(64, 32), nn.LayerNorm(32)
        self.fc3 = nn.Linear(32, classes)

    def forward(self, x):
        x = F.gelu(self.ln1(self.fc1(x)))
        x = F.relu(self.ln2(self.fc2(x)))
        return self.fc3(x)


class TransformerBlock(nn.Module):
    """Pre-norm: x + MHA(LN(x)), then x + MLP(LN(x)) with GELU."""

    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(dim), nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyTransformer(nn.Module):
    """16 tokens x 12 features -> linear to 16 dims -> one transformer block -> mean over tokens -> classifier."""

    def __init__(self, classes: int = 6, dim: int = 16):
        super().__init__()
        self.embed = nn.Linear(12, dim)
        self.block = TransformerBlock(dim, heads=2, hidden=32)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        return self.fc(self.block(self.embed(x)).mean(1))


class ShuffleUnit(nn.Module):
    """A ShuffleNet unit without its channel shuffle (in NHWC that would be a run-time transpose): grouped 1x1
    reduce, 3x3 (depthwise, or grouped at stride 2), grouped 1x1 expand; residual when the shapes allow."""

    def __init__(self, cin, cout, groups, stride):
        super().__init__()
        mid = cout // 2
        self.reduce = _conv_bn_relu(cin, mid, 1, groups=groups)
        self.spatial = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid if stride == 1 else groups,
                                               bias=False), nn.BatchNorm2d(mid))
        self.expand = nn.Sequential(nn.Conv2d(mid, cout, 1, groups=groups, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.expand(self.spatial(self.reduce(x)))
        return F.relu(x + y if self.residual else y)


class ShuffleNetTiny(nn.Module):
    """Grouped convolutions (groups 2 and 4) as ShuffleNet uses them, on 16x16 RGB."""

    def __init__(self, classes: int = 6):
        super().__init__()
        self.stem = _conv_bn_relu(3, 16, 3, stride=2, padding=1)
        self.unit1 = ShuffleUnit(16, 16, groups=2, stride=1)
        self.unit2 = ShuffleUnit(16, 32, groups=4, stride=2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.unit2(self.unit1(self.stem(x)))
        return self.fc(x.mean((2, 3)))


class TwoHeadSensor(nn.Module):
    """A multi-task sensor model: one Conv1d trunk over 3-axis motion, an activity head and an intensity head."""

    def __init__(self, classes: int = 6, levels: int = 3):
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv1d(3, 16, 5, stride=2, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
                                   nn.Conv1d(16, 24, 5, stride=2, padding=2), nn.BatchNorm1d(24), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.activity = nn.Linear(24, classes)
        self.intensity = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, levels))

    def forward(self, x):
        h = torch.flatten(self.pool(self.trunk(x)), 1)
        return self.activity(h), self.intensity(h)


class TwoInputFusion(nn.Module):
    """Sensor fusion: a small image (a thermal or depth frame) and a feature vector (IMU statistics) -> one class."""

    def __init__(self, classes: int = 5):
        super().__init__()
        self.image = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.vector = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.head = nn.Linear(16, classes)

    def forward(self, image, features):
        return self.head(torch.flatten(self.image(image), 1) + self.vector(features))


class ConvDecoder(nn.Module):
    """An image-to-image autoencoder: stride-2 convs encode 16x16 to 4x4, a ConvTranspose2d x2 and an
    nn.Upsample x2 + conv (reflect padding) decode back to the input's shape."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(1, 8, 3, stride=2, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.dec1 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up = nn.Upsample(scale_factor=2)
        self.dec2 = nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect")
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        z = F.relu(self.enc2(F.relu(self.enc1(x))))
        y = F.relu(self.dec2(self.up(F.relu(self.dec1(z)))))
        return self.out(y)


class GRUKWS(nn.Module):
    """Keyword spotting on 49 frames of 13 MFCCs: one GRU layer of 32 units, a linear classifier on the last step."""

    def __init__(self, classes: int = 12):
        super().__init__()
        self.gru = nn.GRU(13, 32, batch_first=True)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


class LSTMSensor(nn.Module):
    """Gesture / vibration windows (32 steps of 8 channels): two stacked LSTM layers, the classifier on h_n[-1]."""

    def __init__(self, classes: int = 6):
        super().__init__()
        self.lstm = nn.LSTM(8, 24, num_layers=2, batch_first=True)
        self.fc = nn.Linear(24, classes)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.fc(h[-1])


@dataclass(frozen=True)
class ZooEntry:
    name: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...]  # one sample, torch layout
    classes: int  # 0 for the autoencoder (regression)
    epochs: int = 4
    head_transposes: int = 0  # attention's head merges (its splits are read in place): the runtime transposes
    more_shapes: tuple[tuple[int, ...], ...] = ()  # the other inputs of a model with several (torch layout)
    more_heads: tuple[int, ...] = ()  # the classes of the other outputs of a model with several

    @property
    def inputs(self) -> int:
        return 1 + len(self.more_shapes)

    @property
    def outputs(self) -> int:
        return 1 + len(self.more_heads)


ZOO = [
    ZooEntry("lenet5", LeNet5, (1, 28, 28), 10),
    ZooEntry("dscnn", DSCNN, (1, 49, 10), 12, epochs=8),
    ZooEntry("mobilenetv2", MobileNetV2Tiny, (3, 32, 32), 10, epochs=3),
    ZooEntry("resnet8", ResNet8, (3, 32, 32), 10, epochs=2),
    ZooEntry("autoencoder", AutoEncoder, (640,), 0),
    ZooEntry("branch_concat", BranchConcat, (3, 16, 16), 6, epochs=8),
    ZooEntry("sensor_conv1d", SensorConv1d, (3, 128), 6, epochs=8),
    ZooEntry("lut_net", LUTNet, (2, 8, 8), 5, epochs=10),
    ZooEntry("two_head", TwoHeadSensor, (3, 64), 6, epochs=8, more_heads=(3,)),
    ZooEntry("two_input", TwoInputFusion, (1, 16, 16), 5, epochs=8, more_shapes=((12,),)),
    ZooEntry("shufflenet", ShuffleNetTiny, (3, 16, 16), 6, epochs=6),
    ZooEntry("se_cnn", SqueezeExciteCNN, (3, 16, 16), 6, epochs=6),
    ZooEntry("layernorm_mlp", LayerNormMLP, (64,), 8, epochs=6),
    ZooEntry("tiny_transformer", TinyTransformer, (16, 12), 6, epochs=8, head_transposes=1),
    ZooEntry("conv_decoder", ConvDecoder, (1, 16, 16), 0, epochs=6),
    ZooEntry("gru_kws", GRUKWS, (49, 13), 12, epochs=8),
    ZooEntry("lstm_sensor", LSTMSensor, (32, 8), 6, epochs=8),
]


def synthetic_data(entry: ZooEntry, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Class templates (smooth random patterns) + noise; for the autoencoder, a low-rank signal. A model with
    several inputs gets a list of arrays (each input's templates keyed by the same label); one with several
    outputs gets labels (N, outputs): the class, then the class modulo each further head's classes."""
    if entry.inputs > 1 or entry.outputs > 1:
        return _several_io_data(entry, n, seed)
    rng = np.random.default_rng(1000 + seed)
    tmpl_rng = np.random.default_rng(zlib.crc32(entry.name.encode()))
    if entry.classes == 0 and len(entry.shape) > 1:  # images: a few smooth patterns mixed, plus a little noise
        basis = torch.nn.functional.interpolate(torch.from_numpy(tmpl_rng.normal(size=(6, 1, 4, 4))),
                                                size=entry.shape[1:], mode="bilinear", align_corners=True)
        coeff = rng.normal(size=(n, 6))
        images = np.einsum("nk,kchw->nchw", coeff, basis.numpy()).mean(1, keepdims=True) / 2
        images = np.repeat(images, entry.shape[0], axis=1) + rng.normal(scale=0.05, size=(n, *entry.shape))
        return images.astype(np.float32), coeff
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


def _several_io_data(entry: ZooEntry, n: int, seed: int):
    xs, labels = [], None
    for k, shape in enumerate((entry.shape, *entry.more_shapes)):
        one = ZooEntry(f"{entry.name}_{k}", entry.build, shape, entry.classes)
        x, y = synthetic_data(one, n, seed)  # the same seed: the same labels for every input
        xs.append(x)
        labels = y
    if entry.outputs == 1:
        return (xs if entry.inputs > 1 else xs[0]), labels
    heads = np.stack([labels, *[labels % c for c in entry.more_heads]], axis=1)
    return (xs if entry.inputs > 1 else xs[0]), heads


def _train_several_io(entry: ZooEntry, model: nn.Module, seed: int) -> nn.Module:
    x, y = synthetic_data(entry, 384, seed)
    xs = [torch.from_numpy(v) for v in (x if entry.inputs > 1 else [x])]
    yt = torch.from_numpy(y).long()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(entry.epochs):
        perm = torch.randperm(len(yt))
        for i in range(0, len(yt), 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            out = model(*[v[idx] for v in xs])
            outs = out if isinstance(out, tuple) else (out,)
            labels = yt[idx].reshape(len(idx), -1)
            loss = sum(F.cross_entropy(o, labels[:, k]) for k, o in enumerate(outs))
            loss.backward()
            opt.step()
    return model.eval()


def _train(entry: ZooEntry, model: nn.Module, seed: int = 0) -> nn.Module:
    """A few epochs of Adam on the entry's synthetic data (run once, by tests/trained_weights.py)."""
    if entry.inputs > 1 or entry.outputs > 1:
        return _train_several_io(entry, model, seed)
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


def _recipe(entry: ZooEntry) -> Recipe:
    return Recipe(f"zoo_{entry.name}", entry.build, functools.partial(_train, entry),
                  code=(_train, _train_several_io, synthetic_data, _several_io_data),
                  params={"epochs": entry.epochs, "shape": entry.shape, "classes": entry.classes,
                          "more_shapes": entry.more_shapes, "more_heads": entry.more_heads})


RECIPES = {e.name: _recipe(e) for e in ZOO}


@functools.lru_cache(maxsize=None)
def _trained(name: str) -> nn.Module:
    return load(RECIPES[name])


def trained(entry: ZooEntry) -> nn.Module:
    """The entry's model with its committed trained weights (tests/trained_weights.py): the same model on every
    machine. A fresh copy per call: tests may change a model's mode or wrap it."""
    return copy.deepcopy(_trained(entry.name))


# For the CLI: `tinyaot report tests/zoo.py:resnet8 --calibration ...`
def resnet8():
    return ResNet8().eval()


def lenet5():
    return LeNet5().eval()
