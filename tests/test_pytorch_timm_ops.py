"""The PyTorch spellings timm's models use that the corpus turned up (tests/model_corpus.py): torch.stack of feature
maps and the split-attention arithmetic around it (SK-ResNet, ResNeSt), F.normalize (XCiT, EdgeNeXt), F.pad of a
non-spatial axis (CoaT) and adaptive pooling to sizes that do not divide the input. Each small model runs
bit-exactly in the reference and the host C, and its int8 output tracks its float one on seeded inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import have_host_cc

import tinyaot

pytestmark = [pytest.mark.host, pytest.mark.filterwarnings("ignore::tinyaot.diagnostics.CalibrationWarning")]


@pytest.fixture(autouse=True)
def _host_cc():
    if not have_host_cc():
        pytest.skip("no host C compiler (gcc or $CC)")


def _inputs(shape: tuple, n: int, seed: int) -> np.ndarray:
    """Smooth image-like inputs: low-resolution noise upsampled, as tests/model_corpus.py's."""
    g = torch.Generator().manual_seed(seed)
    c, h, w = shape
    x = torch.randn(n, c, max(h // 4, 2), max(w // 4, 2), generator=g)
    return F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False).numpy()


def _check(model: nn.Module, shape: tuple, min_sqnr: float, name: str = "m"):
    """Compiled on 32 seeded inputs; on 8 others: reference == host C on every byte, and the int8 output's SQNR
    against the float model's above `min_sqnr` dB. Returns the compiled model."""
    model = model.eval()
    cal = _inputs(shape, 32, 1)
    cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name=name)
    x = _inputs(shape, 8, 2)
    q = cm.quantize_input(cm.to_model_layout(x))
    ref = cm.run(q, engine="reference")
    np.testing.assert_array_equal(cm.run(q, engine="host"), ref)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy().astype(np.float64)
    if cm.graph.io_layout_of(cm.graph.outputs[0])[0] == "NHWC":  # a feature map comes out channels-last
        want = np.moveaxis(want, 1, -1)
    want = want.reshape(len(x), -1)
    got = np.asarray(cm.dequantize_output(ref), np.float64).reshape(len(x), -1)
    sqnr = 10 * np.log10(np.sum(want**2) / np.sum((want - got) ** 2))
    assert sqnr > min_sqnr, f"int8 tracks float at {sqnr:.1f} dB"
    return cm


# ---- torch.stack -------------------------------------------------------------------------------------------
class SelectiveKernel(nn.Module):
    """timm's SelectiveKernel (SK-ResNet): two conv paths stacked along dim 1, their sum pooled into a softmax over
    the paths, each path weighted by it and summed."""

    def __init__(self, c: int = 8, paths: int = 2) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.paths = nn.ModuleList(nn.Sequential(nn.Conv2d(3, c, 3, padding=1 + k, dilation=1 + k), nn.ReLU())
                                   for k in range(paths))
        self.reduce, self.select = nn.Conv2d(c, 8, 1), nn.Conv2d(8, c * paths, 1)
        self.n = paths

    def forward(self, x):
        x = torch.stack([p(x) for p in self.paths], dim=1)  # [B, paths, C, H, W]
        a = self.select(torch.relu(self.reduce(x.sum(1).mean((2, 3), keepdim=True))))
        b, c, h, w = a.shape
        a = torch.softmax(a.view(b, self.n, c // self.n, h, w), dim=1)
        return torch.sum(x * a, dim=1)


class SplitAttention(nn.Module):
    """timm's SplitAttn (ResNeSt): a grouped conv viewed as radix groups, their sum pooled, the radix softmax in
    torch order (view, transpose, softmax, reshape) and the weighted sum of the groups."""

    def __init__(self, c: int = 8, radix: int = 2) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.conv = nn.Conv2d(3, c * radix, 3, padding=1, groups=1)
        self.fc1, self.fc2 = nn.Conv2d(c, 16, 1), nn.Conv2d(16, c * radix, 1)
        self.radix = radix

    def forward(self, x):
        x = torch.relu(self.conv(x))
        b, rc, h, w = x.shape
        x = x.reshape((b, self.radix, rc // self.radix, h, w))
        gap = self.fc2(torch.relu(self.fc1(x.sum(dim=1).mean((2, 3), keepdim=True))))
        att = F.softmax(gap.view(b, 1, self.radix, -1).transpose(1, 2), dim=1).reshape(b, -1)
        return (x * att.view(b, -1, 1, 1).reshape((b, self.radix, rc // self.radix, 1, 1))).sum(dim=1)


class StackTokens(nn.Module):
    """Stacks in torch order: two projections of [B, T, D] tokens along a new last dim and along dim 1."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.a, self.b = nn.Linear(6, 5), nn.Linear(6, 5)

    def forward(self, x):
        t = x.flatten(2).transpose(1, 2)[:, :, :6]  # [B, 64, 3] -> tokens of 3 channels, padded by slicing
        t = torch.cat([t, t], dim=2)
        last = torch.stack([self.a(t), self.b(t)], dim=-1)  # [B, T, 5, 2]
        first = torch.stack([self.a(t), torch.tanh(self.b(t))], dim=1)  # [B, 2, T, 5]
        return last.flatten(2) + first.transpose(1, 2).flatten(2)


def test_stack_of_feature_maps_stays_channels_last():
    """The stack is views of its inputs and one concat: the paths are channel groups, channels-last, and no layout
    change moves a feature map (the only transposes are the softmax's over the paths of [1, 1, 1, paths, C])."""
    cm = _check(SelectiveKernel(), (3, 12, 12), 30)
    concat = next(n for n in cm.graph.nodes if n.op == "concat")
    assert [cm.graph.producer(i).op for i in concat.inputs] == ["reshape", "reshape"]
    moves = [cm.graph.tensor(n.inputs[0]).shape for n in cm.graph.nodes if n.op == "transpose"]
    assert all(s[1:3] == (1, 1) for s in moves), moves


def test_split_attention():
    _check(SplitAttention(), (3, 10, 10), 28)


def test_stack_in_torch_order():
    _check(StackTokens(), (3, 8, 8), 25)


# ---- F.normalize ----------------------------------------------------------------------------------------------
class CrossCovarianceAttention(nn.Module):
    """XCiT's XCA: q and k normalized over the tokens, their cross-covariance softmaxed per head."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.embed = nn.Conv2d(3, dim, 2, stride=2)
        self.qkv, self.proj = nn.Linear(dim, dim * 3), nn.Linear(dim, dim)
        self.temperature = nn.Parameter(torch.rand(heads, 1, 1) + 0.5)
        self.heads = heads

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)  # [B, N, C]
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 4, 1).unbind(0)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        attn = ((q @ k.transpose(-2, -1)) * self.temperature).softmax(dim=-1)
        return self.proj((attn @ v).permute(0, 3, 1, 2).reshape(b, n, c))


class NormalizeFeatureMap(nn.Module):
    """F.normalize of a feature map over its channels (the IR's last axis), over its width (a transpose there and
    back), and x / x.norm(...) without eps over the channels of a pooled map ([B, C, 1, 1]: a view)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(4)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        pooled = y.mean((2, 3), keepdim=True)
        return F.normalize(y, dim=1) + F.normalize(y, dim=-1) + pooled / pooled.norm(dim=1, keepdim=True)


def test_normalize_in_cross_covariance_attention():
    cm = _check(CrossCovarianceAttention(), (3, 12, 12), 30)
    assert [n.op for n in cm.graph.nodes].count("l2_normalize") == 2


def test_normalize_over_any_dim():
    cm = _check(NormalizeFeatureMap(), (3, 8, 8), 25)
    assert [n.op for n in cm.graph.nodes].count("l2_normalize") == 3


class BareNorm(nn.Module):
    def forward(self, x):
        return x * x.norm(dim=-1, keepdim=True)


class OneNorm(nn.Module):
    def forward(self, x):
        return F.normalize(x, p=1.0, dim=-1)


@pytest.mark.parametrize("model", [BareNorm(), OneNorm()], ids=["norm read by mul", "p=1"])
def test_other_norms_are_refused_naming_normalize(model):
    with pytest.raises(tinyaot.errors.UnsupportedOpError, match="F.normalize's divisor"):
        tinyaot.compile(model, torch.zeros(1, 4, 6), calibration=_inputs((4, 6, 6), 8, 1)[:, 0])


# ---- F.pad beyond the spatial dims ----------------------------------------------------------------------------
class PadTokens(nn.Module):
    """CoaT's convolutional relative position encoding pads the token axis of [B, heads, N, C] by one at the start
    (its class token); a [B, D] vector padded at its end."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.embed, self.head = nn.Conv2d(3, 8, 2, stride=2), nn.Linear(8, 6)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)  # [B, N, 8]
        heads = t.reshape(t.shape[0], t.shape[1], 2, 4).transpose(1, 2)  # [B, 2, N, 4]
        padded = F.pad(heads, (0, 0, 1, 0, 0, 0))  # [B, 2, N + 1, 4]
        vec = F.pad(self.head(t.mean(1)), (0, 3))  # [B, 9]
        return padded.flatten(1)[:, :9] + vec


class PadChannels(nn.Module):
    """Zero channels added to a feature map (alone, with the spatial dims, and to a 1-D signal's channels)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(6)
        self.conv, self.conv1d = nn.Conv2d(3, 6, 3, padding=1), nn.Conv1d(3, 4, 3)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        a = F.pad(y, (0, 0, 0, 0, 2, 3))  # [B, 11, H, W]
        b = F.pad(y, (1, 1, 2, 0, 3, 2))[:, :, 2:, 1:-1]  # channels, H and W, the spatial pads cropped off again
        signal = F.pad(self.conv1d(x.mean(2)), (1, 1, 0, 7))  # [B, 11, W]
        return a + b + signal[:, :, None, :]


def test_pad_of_the_token_axis():
    cm = _check(PadTokens(), (3, 8, 8), 32)
    assert [n.op for n in cm.graph.nodes].count("pad") == 2


def test_pad_of_channels():
    cm = _check(PadChannels(), (3, 8, 8), 28)
    pads = [(cm.graph.tensor(n.inputs[0]).shape, n.attrs["padding"]) for n in cm.graph.nodes if n.op == "pad"]
    assert len(pads) == 5, pads  # channels; H and W in one node, then channels; a signal's L, then its channels


class PadBatch(nn.Module):
    def forward(self, x):
        return F.pad(x.flatten(1), (0, 0, 1, 0))


def test_pad_of_the_batch_is_refused():
    with pytest.raises(tinyaot.errors.UnsupportedOpError, match="padding the batch dimension"):
        tinyaot.compile(PadBatch(), torch.zeros(1, 3, 4, 4), calibration=_inputs((3, 4, 4), 8, 1))


# ---- adaptive pooling with uneven windows ---------------------------------------------------------------------
class AdaptivePools(nn.Module):
    """Adaptive pooling to sizes that do not divide the input: 10x6 -> 4x4 average (windows of 3 at starts 0, 2, 5, 7;
    of 2 at 0, 1, 3, 4), 10x6 -> 4x5 max, 5x5 -> 3x3 average (sizes 2, 3, 2), 7 -> 5 in 1-D."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(7)
        self.conv, self.conv1d = nn.Conv2d(3, 4, 3, padding=1), nn.Conv1d(3, 4, 4, padding=2)

    def forward(self, x):
        y = torch.relu(self.conv(x))  # [B, 4, 10, 6]
        a = F.adaptive_avg_pool2d(y, (4, 4)).flatten(1)
        m = F.adaptive_max_pool2d(y, (4, 5)).flatten(1)
        c = F.adaptive_avg_pool2d(y[:, :, :5, :5], 3).flatten(1)
        s = F.adaptive_avg_pool1d(self.conv1d(x.mean(2)), 5).flatten(1)  # [B, 4, 7] -> [B, 4, 5]
        return torch.cat([a, m, c, s], dim=1)


def test_uneven_adaptive_pooling():
    """One pooling kernel per run of rows and run of columns: 2 x 2, 2 x 1 (6 -> 5 is uniform), 3 x 3, 1 x 3."""
    cm = _check(AdaptivePools(), (3, 10, 6), 28)
    pools = [n for n in cm.graph.nodes if n.op in ("avg_pool2d", "max_pool2d")]
    assert len(pools) == 4 + 2 + 9 + 3, [n.name for n in pools]


@pytest.mark.parametrize(("size", "out", "kind"), [((10, 6), (4, 4), "avg"), ((7, 5), (5, 3), "avg"),
                                                   ((10, 6), (4, 5), "max"), ((3, 9), (2, 5), "max")])
def test_uneven_adaptive_windows_are_pytorchs(size, out, kind):
    """Each output is its PyTorch window's average (or maximum) of the int8 input, on random inputs where a wrong
    window cannot hide (a neighbouring window's average is ~0.2 away): within half a step of the input's (the
    pool's rounding) plus half a step of each concatenation's output (each requantizes to its own qparams) of the
    window's value computed from the dequantized int8 input."""
    pool = F.adaptive_avg_pool2d if kind == "avg" else (lambda t, o: F.adaptive_max_pool2d(t, o))
    model = type("Pool", (nn.Module,), {"forward": lambda self, t: pool(t, out)})().eval()
    cal = np.random.default_rng(1).uniform(-1, 1, (32, 2, *size)).astype(np.float32)
    cm = tinyaot.compile(model, torch.from_numpy(cal[:1]), calibration=cal, name="pool")
    x = cal[:6]  # samples the calibration saw: no output saturates
    q = cm.quantize_input(cm.to_model_layout(x))
    ref = cm.run(q, engine="reference")
    np.testing.assert_array_equal(cm.run(q, engine="host"), ref)
    in_scale, in_zp = cm.input_qparams
    xq = torch.from_numpy(((q.astype(np.float64) - in_zp) * in_scale).transpose(0, 3, 1, 2))
    want = pool(xq, out).numpy().transpose(0, 2, 3, 1)
    steps = [cm.graph.tensor(n.outputs[0]).qparams.scale[0] for n in cm.graph.nodes if n.op == "concat"]
    assert steps, "uneven windows are pooled in pieces"
    np.testing.assert_array_less(np.abs(cm.dequantize_output(ref) - want), (in_scale + sum(steps)) / 2 + 1e-9)


class TooManyWindows(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 7)


def test_adaptive_pooling_needing_too_many_kernels_is_refused():
    with pytest.raises(tinyaot.errors.UnsupportedOpError, match=r"2x2 to 7x7.*49 pooling kernels.*up to 16"):
        tinyaot.compile(TooManyWindows(), torch.zeros(1, 3, 2, 2), calibration=_inputs((3, 2, 2), 8, 1))
