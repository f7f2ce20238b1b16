"""BC-ResNet-1, the keyword spotter of "Broadcasted Residual Learning for Efficient Keyword Spotting" (Kim, Chang,
Lee, Sung; Interspeech 2021), written from the paper as a test model: 40 log-mel bands x 101 frames in, 12 keyword
classes out, about 9.2 k parameters (tau = 1).

What it asks of a compiler:
- SubSpectralNorm: x.view(N, C * S, F // S, T), BatchNorm2d(C * S), view back: a BatchNorm no conv feeds, on a
  reshaped feature map (one affine per channel and sub-band);
- frequency-depthwise (3 x 1) convs, some strided (2, 1) in frequency;
- a mean over frequency (keepdim), then temporal-depthwise (1 x 3) dilated convs, BatchNorm, SiLU, 1 x 1 conv;
- the broadcast residual: the (C, 1, T) temporal branch added to the (C, F, T) maps, then ReLU.
"""
from __future__ import annotations

import torch
import torch.nn as nn

SUB_BANDS = 5  # SubSpectralNorm's S
MELS, FRAMES, CLASSES = 40, 101, 12


class SubSpectralNorm(nn.Module):
    """BatchNorm per channel and frequency sub-band: the bands fold into the channels for one BatchNorm2d."""

    def __init__(self, channels: int, sub_bands: int = SUB_BANDS):
        super().__init__()
        self.sub_bands = sub_bands
        self.bn = nn.BatchNorm2d(channels * sub_bands)

    def forward(self, x):
        n, c, f, t = x.shape
        x = x.view(n, c * self.sub_bands, f // self.sub_bands, t)
        return self.bn(x).view(n, c, f, t)


class BCBlock(nn.Module):
    """One BC-ResBlock. f2: frequency-depthwise conv + SubSpectralNorm (2-D features); f1 on their mean over
    frequency: temporal-depthwise conv, BatchNorm, SiLU, pointwise conv (1-D features, broadcast back over
    frequency). A transition block (channels change) starts with a pointwise conv, BatchNorm and ReLU and has no
    identity shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1, dilation: int = 1):
        super().__init__()
        self.transition = c_in != c_out
        if self.transition:
            self.expand = nn.Sequential(nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())
        self.freq_dw = nn.Conv2d(c_out, c_out, (3, 1), stride=(stride, 1), padding=(1, 0), groups=c_out, bias=False)
        self.ssn = SubSpectralNorm(c_out)
        self.temp_dw = nn.Conv2d(c_out, c_out, (1, 3), padding=(0, dilation), dilation=(1, dilation), groups=c_out,
                                 bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        self.swish = nn.SiLU()
        self.pointwise = nn.Conv2d(c_out, c_out, 1, bias=False)
        self.drop = nn.Dropout2d(0.1)

    def forward(self, x):
        shortcut = x
        if self.transition:
            x = self.expand(x)
        aux = self.ssn(self.freq_dw(x))
        y = aux.mean(2, keepdim=True)  # frequency average: (C, 1, T)
        y = self.drop(self.pointwise(self.swish(self.bn(self.temp_dw(y)))))
        y = y + aux  # the broadcast residual
        if not self.transition:
            y = y + shortcut
        return torch.relu(y)


class BCResNet(nn.Module):
    """BC-ResNet-tau (tau = 1: stage widths 8, 12, 16, 20)."""

    def __init__(self, tau: int = 1, classes: int = CLASSES):
        super().__init__()
        widths = [8 * tau, 12 * tau, 16 * tau, 20 * tau]
        stages = [(2, 1, 1), (2, 2, 2), (4, 2, 4), (4, 1, 8)]  # (blocks, frequency stride, dilation in time)
        self.stem = nn.Conv2d(1, 16 * tau, 5, stride=(2, 1), padding=2)
        blocks, c = [], 16 * tau
        for width, (count, stride, dilation) in zip(widths, stages):
            for k in range(count):
                blocks.append(BCBlock(c, width, stride if k == 0 else 1, dilation))
                c = width
        self.blocks = nn.Sequential(*blocks)
        self.head_dw = nn.Conv2d(c, c, 5, padding=(0, 2), groups=c)  # 5 frequency bins -> 1
        self.head_pw = nn.Conv2d(c, 32 * tau, 1, bias=False)
        self.classifier = nn.Conv2d(32 * tau, classes, 1, bias=False)

    def forward(self, x):
        x = self.head_pw(self.head_dw(self.blocks(self.stem(x))))
        x = x.mean((2, 3), keepdim=True)  # average over time (frequency is 1 here)
        return self.classifier(x).flatten(1)


def bc_resnet1(seed: int = 0) -> BCResNet:
    """BC-ResNet-1 in eval mode, its BatchNorms with seeded non-trivial statistics (an untrained net's unit
    variance would leave their folding untested)."""
    torch.manual_seed(seed)
    model = BCResNet()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.6, 1.4)
                m.bias.uniform_(-0.2, 0.2)
    return model.eval()


def log_mel_like(n: int, seed: int = 0) -> torch.Tensor:
    """(n, 1, 40, 101) inputs shaped like log-mel spectrograms: smooth over time and frequency, louder in the low
    bands, with a few word-like bursts; not i.i.d. noise (which the calibration checks refuse as data)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(n, 1, MELS // 4, FRAMES // 4 + 1, generator=g)
    x = nn.functional.interpolate(base, size=(MELS, FRAMES), mode="bilinear", align_corners=False)
    tilt = torch.linspace(1.0, -1.0, MELS).view(1, 1, MELS, 1)
    burst = (torch.rand(n, 1, 1, FRAMES, generator=g) > 0.7).float().cumsum(-1).remainder(2.0)
    return x + tilt + 0.5 * burst
