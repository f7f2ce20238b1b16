"""Each PyTorch op family, compiled alone: the int8 reference tracks float PyTorch within quantization steps.

Random shapes and parameters per case (seeded). The error is measured in output quantization steps; weighted ops
also carry the input's rounding through their weights (and tables through their slope), so their bound is a little
wider than one step.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tinyaot

CASES = 6


class Fn(nn.Module):
    def __init__(self, fn, *mods):
        super().__init__()
        self.mods = nn.ModuleList(mods)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, *self.mods)


def _conv(rng):
    cin, cout, k = int(rng.integers(1, 9)), int(rng.integers(1, 17)), int(rng.choice([1, 3, 5]))
    stride, pad = int(rng.integers(1, 3)), str(rng.choice(["same", "valid", "1"]))
    if stride > 1 and pad == "same":
        pad = "valid"
    dilation = int(rng.integers(1, 3)) if k == 3 else 1
    conv = nn.Conv2d(cin, cout, k, stride, int(pad) if pad.isdigit() else pad, dilation=dilation)
    return Fn(lambda x, c: c(x), conv), (cin, int(rng.integers(6, 13)), int(rng.integers(6, 13)))


def _depthwise(rng):
    c, m = int(rng.integers(1, 13)), int(rng.integers(1, 3))
    conv = nn.Conv2d(c, c * m, 3, int(rng.integers(1, 3)), 1, groups=c)
    return Fn(lambda x, d: d(x), conv), (c, int(rng.integers(5, 12)), int(rng.integers(5, 12)))


def _conv1d(rng):
    cin, cout = int(rng.integers(1, 6)), int(rng.integers(1, 12))
    return Fn(lambda x, c: c(x), nn.Conv1d(cin, cout, 3, padding="same")), (cin, int(rng.integers(8, 40)))


def _linear(rng):
    fin, fout = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    return Fn(lambda x, f: f(x), nn.Linear(fin, fout)), (int(rng.integers(1, 5)), fin)  # 3-D input


def _pools(rng):
    k = int(rng.integers(2, 4))
    fn = [lambda x: F.max_pool2d(x, k), lambda x: F.avg_pool2d(x, k, 1, k // 2),
          lambda x: F.adaptive_avg_pool2d(x, 1), lambda x: x.mean((2, 3))][int(rng.integers(0, 4))]
    return Fn(lambda x: fn(x)), (int(rng.integers(1, 9)), int(rng.integers(4, 10)), int(rng.integers(4, 10)))


def _binary(rng):
    c = int(rng.integers(1, 9))
    a, b = nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
    fn = [lambda x, p, q: p(x) + q(x), lambda x, p, q: p(x) * q(x),
          lambda x, p, q: torch.cat([p(x), q(x)], 1)][int(rng.integers(0, 3))]
    return Fn(fn, a, b), (c, 5, 5)


def _pad_relu6(rng):
    return Fn(lambda x: F.relu6(F.pad(x, (1, 2, 0, 1)))), (int(rng.integers(1, 5)), 6, 6)


def _softmax(rng):
    n = int(rng.integers(2, 20))
    return Fn(lambda x, f: F.softmax(f(x), dim=-1), nn.Linear(n, n)), (n,)


def _lut(rng):
    act = [torch.sigmoid, torch.tanh, F.hardswish, F.hardsigmoid, F.silu, F.gelu][int(rng.integers(0, 6))]
    return Fn(lambda x: act(x)), (int(rng.integers(1, 30)),)


FAMILIES = {"conv2d": (_conv, 3.0), "depthwise_conv2d": (_depthwise, 3.0), "conv1d": (_conv1d, 3.0),
            "linear": (_linear, 3.0), "pool_mean": (_pools, 1.5), "add_mul_cat": (_binary, 3.0),
            "pad_relu6": (_pad_relu6, 1.0), "softmax": (_softmax, 2.5), "lut": (_lut, 2.5)}
# Test samples per case. A global mean's output step is up to 10x its input's, so the averaged input rounding
# widens its error (99th percentile 1.40 steps, bound 1.5): on 64 samples that percentile is the third largest of
# 192 errors (1.47, a flip or two from the bound); on 1,024 it has 31 errors above it and sits at 1.40. The other
# families' 99th percentiles are at least 0.5 steps inside their bounds.
SAMPLES = {"pool_mean": 1024}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_int8_reference_tracks_float_pytorch(family):
    make, bound = FAMILIES[family]
    worst = []
    for case in range(CASES):
        rng = np.random.default_rng(100 * case + len(family))
        torch.manual_seed(case)
        model, shape = make(rng)
        model.eval()
        cal = torch.randn((128,) + shape)
        cm = tinyaot.compile(model, cal[:1], calibration=cal, name="op")
        n = SAMPLES.get(family, 64)
        x = torch.randn((n,) + shape) * 0.9  # inside the calibrated range
        with torch.no_grad():
            want = model(x).numpy()
        got = cm.run_float(cm.to_model_layout(x.numpy()))
        got = got.reshape((n,) + cm.output_shape[1:])
        if cm.graph.output_layout == "NHWC":
            got = got.transpose(0, 3, 1, 2)
            if len(want.shape) == 3:
                got = got[:, :, 0, :]
        steps = np.abs(got.reshape(want.shape) - want) / cm.output_qparams[0]
        worst.append(float(np.percentile(steps, 99)))
        assert np.median(steps) <= 1.0, f"{family} case {case}: median error {np.median(steps):.2f} steps"
    assert max(worst) <= bound, f"{family}: 99th-percentile error {max(worst):.2f} steps > {bound}"


class ScalarArithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        z = y * F.relu6(y + 3) / 6  # hardswish written by hand
        return (1 - z * 0.5) - 0.25


@pytest.mark.host
def test_python_scalar_arithmetic_compiles_to_tables():
    torch.manual_seed(0)
    model = ScalarArithmetic().eval()
    cal = torch.randn(200, 8)
    cm = tinyaot.compile(model, cal[:1], calibration=cal, name="scalars")
    ops = [n.op for n in cm.graph.nodes]
    # y + 3 with its relu6 -> one table with a clamp; * 0.5, 1 - z and - 0.25 after the mul -> one table
    assert ops.count("lut") == 2 and "relu" not in ops and ops.count("mul") == 1
    x = torch.randn(100, 8)
    with torch.no_grad():
        want = model(x).numpy()
    got = cm.run_float(x.numpy())
    steps = np.abs(got - want) / cm.output_qparams[0]
    assert np.median(steps) <= 1.0 and steps.max() <= 3.0  # seeded: median 0.40, max 2.2 of 800 outputs
    xq = cm.quantize_input(x.numpy())
    np.testing.assert_array_equal(cm.run(xq, engine="host"), cm.run(xq))
