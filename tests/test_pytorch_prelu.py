"""nn.PReLU, nn.LeakyReLU / F.leaky_relu and nn.Hardsigmoid from PyTorch: they compile (PReLU with one weight per
channel to the prelu op, its weight an int8 constant; one weight and leaky ReLU to leaky_relu, its exact slope;
hardsigmoid to a table), track the float model, and the reference, the host C and the Cortex-M33 give the same
bytes."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import random_int8

import tinyaot
from tinyaot.errors import UnsupportedOpError


class Net(nn.Module):
    """Conv net in NCHW and a 2-D head: PReLU per channel on a feature map and on features, one-weight PReLU,
    in-place and functional leaky ReLU (a negative slope too), hardsigmoid."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(11)
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.p1, self.p2, self.p3 = nn.PReLU(8), nn.PReLU(), nn.PReLU(6)
        with torch.no_grad():
            self.p1.weight.uniform_(-0.6, 1.4)  # negative, small and above-1 slopes: every kind of channel
            self.p3.weight.uniform_(-0.3, 0.8)
        self.leaky = nn.LeakyReLU(0.1, inplace=True)
        self.hsig = nn.Hardsigmoid()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        x = self.p1(self.c1(x))
        x = self.leaky(self.p2(self.c2(x)))
        x = F.leaky_relu(x, -0.2) * self.hsig(x)
        return self.p3(self.fc(x.mean((2, 3))))


def _calibration() -> np.ndarray:
    """Smooth image-like samples (not noise): low-frequency waves per channel."""
    rng = np.random.default_rng(5)
    yy, xx = np.meshgrid(np.linspace(0, 1, 10), np.linspace(0, 1, 10), indexing="ij")
    f = rng.uniform(0.5, 3.0, size=(128, 3, 2))
    phase = rng.uniform(0, 2 * np.pi, size=(128, 3, 1, 1))
    return (np.sin(2 * np.pi * (f[..., :1, None] * yy + f[..., 1:, None] * xx) + phase) * 1.5).astype(np.float32)


def _compile():
    cal = _calibration()
    return tinyaot.compile(Net().eval(), torch.from_numpy(cal[:1]), calibration=cal, name="prelu_net"), cal


def test_prelu_and_leaky_relu_become_their_ops_and_track_float():
    cm, cal = _compile()
    ops = [n.op for n in cm.graph.nodes]
    assert ops.count("prelu") == 2 and ops.count("leaky_relu") == 3
    assert [n.attrs["function"] for n in cm.graph.nodes if n.op == "lut"] == ["hardsigmoid"]  # nn.Hardsigmoid
    alphas = [cm.graph.tensor(n.inputs[1]) for n in cm.graph.nodes if n.op == "prelu"]
    assert all(a.dtype == "int8" and a.is_const for a in alphas) and [a.size for a in alphas] == [8, 6]
    assert [n.attrs["alpha"] for n in cm.graph.nodes if n.op == "leaky_relu"] == pytest.approx(
        [float(Net().p2.weight.detach()), 0.1, -0.2])
    with torch.no_grad():
        want = Net().eval()(torch.from_numpy(cal[:32])).numpy()
    got = cm.run_float(cal[:32].transpose(0, 2, 3, 1))
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max(), np.abs(got - want).max()


@pytest.mark.host
def test_reference_equals_host_c():
    cm, _ = _compile()
    x = random_int8((20, *cm.input_shape[1:]), seed=2)
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x))


@pytest.mark.m33
def test_reference_equals_cortex_m33():
    cm, _ = _compile()
    x = random_int8((4, *cm.input_shape[1:]), seed=3)
    np.testing.assert_array_equal(cm.run(x, engine="m33"), cm.run(x))


def test_a_prelu_weight_computed_in_forward_is_refused_clearly():
    class Computed(nn.Module):
        def forward(self, x):
            return F.prelu(x, x.mean((0, 2, 3)))

    cal = _calibration()
    with pytest.raises(UnsupportedOpError, match="expected a parameter, got the activation"):
        tinyaot.compile(Computed(), torch.from_numpy(cal[:1]), calibration=cal, name="bad")



def _pt2e():
    """A PT2E-quantized conv -> PReLU(8) -> conv, and tinyaot's compile of it."""
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    from pt2e_models import quantize_pt2e

    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.PReLU(8), nn.Conv2d(8, 4, 1)).eval()
    with torch.no_grad():
        model[1].weight.uniform_(-0.5, 1.0)
    cal = _calibration()
    gm = quantize_pt2e(model, torch.from_numpy(cal[:1]), cal[:32])
    return tinyaot.compile(gm, torch.from_numpy(cal[:1]), name="pt2e_prelu"), gm, cal


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pt2e_prelu_gets_an_int8_alpha_and_tracks_pt2e():
    """PT2E leaves PReLU's weight float between its dequantize and quantize; its lowering gives it int8 qparams from
    its values, as PTQ does (the int8_constants trait), where it used to reach the kernel as float32."""
    cm, gm, cal = _pt2e()
    alpha = [cm.graph.tensor(n.inputs[1]) for n in cm.graph.nodes if n.op == "prelu"]
    assert len(alpha) == 1 and alpha[0].dtype == "int8"
    with torch.no_grad():
        want = np.concatenate([gm(torch.from_numpy(cal[k : k + 1])).numpy() for k in range(16)])  # batch 1
    got = cm.run_float(cal[:16].transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max(), np.abs(got - want).max()


@pytest.mark.host
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pt2e_prelu_reference_equals_host_c():
    cm, _, _ = _pt2e()
    x = random_int8((8, *cm.input_shape[1:]), seed=6)
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x))
