"""Trained models keep dead channels: weights of 1e-30 that cannot move the output (the MLPerf VWW float model has
hundreds). Quantized at the scale of their own weights, such a channel's bias overflowed int32 and its multiplier
underflowed to 0, with two warnings per layer; now its weights are zero at scale output / input and the channel
outputs its bias, with no warning."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from model_corpus import smooth_images  # noqa: E402
from torch import nn  # noqa: E402

import tinyaot  # noqa: E402
from tinyaot.diagnostics import CalibrationWarning  # noqa: E402

DEAD = (1, 5)


def _model(kind: str) -> nn.Module:
    torch.manual_seed(0)
    if kind == "conv":
        layer = nn.Conv2d(3, 8, 3, padding=1)
    elif kind == "depthwise":
        layer = nn.Conv2d(8, 8, 3, padding=1, groups=8)
    else:
        layer = nn.Linear(12, 8)
    with torch.no_grad():
        for c in DEAD:
            layer.weight[c] = 1e-30 * torch.sign(layer.weight[c])
            layer.bias[c] = 0.3 if c == 1 else -0.2
    return nn.Sequential(layer, nn.ReLU6()) if kind != "linear" else nn.Sequential(layer)


@pytest.mark.parametrize("kind", ["conv", "depthwise", "linear"])
def test_dead_channel_outputs_its_bias_without_a_warning(kind):
    shape = {"conv": (3, 6, 6), "depthwise": (8, 6, 6), "linear": (12,)}[kind]
    if kind == "linear":
        x = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (32,) + shape).astype(np.float32))
    else:  # image-like: random noise would (rightly) trip the "calibrating on noise" check
        x = torch.from_numpy(smooth_images(32, shape, seed=0))
    model = _model(kind).eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cm = tinyaot.compile(model, x[:1], calibration=x, name="dead")
    assert [str(w.message) for w in caught if issubclass(w.category, CalibrationWarning)] == []
    got = cm.run_float(cm.to_model_layout(x.numpy()))
    want = cm.to_model_layout(model(x).detach().numpy())
    scale = cm.output_qparams[0]
    channel_axis = -1  # the model's output layout keeps channels last
    for c in DEAD:
        dead_out = np.take(got, c, axis=channel_axis)
        np.testing.assert_allclose(dead_out, np.take(want, c, axis=channel_axis), atol=scale / 2 + 1e-9)
    assert np.abs(got - want).max() <= 4 * scale  # the live channels stay within a few output steps
