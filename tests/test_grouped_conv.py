"""Grouped convolution (1 < groups < channels): TFLite's grouped CONV_2D (groups = input depth / filter depth) and
PyTorch's Conv2d / Conv1d(groups=g). The reference equals TensorFlow Lite Micro on every byte of random one-op
.tflite graphs; host C (general, pointwise and patch kernels, and their rings) and the Cortex-M33 (DSP and
portable builds) equal the reference; small PyTorch models compile in every optimize mode and agree everywhere."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite

import tinyaot
from tinyaot.errors import ModelError
from tinyaot.frontend.tflite import compute_padding
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref import conv2d_s8
from tinyaot.report.macs import graph_macs

N_CASES, SAMPLES = 50, 4
TFLITE_ACTIVATIONS = {None: 0, RELU: 1, (-1.0, 1.0): 2, RELU6: 3}
CLAMPS = [None, RELU, RELU6, (-1.0, 1.0)]


def _f32(x: float) -> float:
    return float(np.float32(x))


def _samples(shape, n: int, rng) -> np.ndarray:
    x = rng.integers(-128, 128, size=(n, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def gen_grouped(rng):
    """A random grouped CONV_2D: groups 2..4, a few channels per group, any window, SAME or VALID, per-channel
    or per-tensor weights, TFLite's fused activations. Returns (graph, tflite twin)."""
    import tflite_builder as tb

    groups = int(rng.integers(2, 5))
    group_in, group_out = int(rng.choice([1, 2, 3, 4, 5, 8])), int(rng.choice([1, 2, 3, 4, 5, 6]))
    c_in, c_out = groups * group_in, groups * group_out
    n = 2 if rng.random() < 0.15 else 1
    h, w = (int(v) for v in rng.integers(1, 9, size=2))
    kh, kw = (int(v) for v in rng.choice([1, 1, 2, 3, 4], size=2))
    sh, sw = (int(v) for v in rng.integers(1, 3, size=2))
    dh, dw = (int(rng.choice([1, 1, 1, 2])) for _ in range(2))
    same = rng.random() < 0.6 or h < (kh - 1) * dh + 1 or w < (kw - 1) * dw + 1
    oh, top, bottom = compute_padding(0 if same else 1, h, kh, sh, dh)
    ow, left, right = compute_padding(0 if same else 1, w, kw, sw, dw)
    s_in, z_in = _f32(10 ** rng.uniform(-2.5, -0.5)), int(rng.integers(-128, 128))
    per_channel = rng.random() < 0.75
    w_scales = [_f32(10 ** rng.uniform(-3, -1.3)) for _ in range(c_out if per_channel else 1)]
    w_scales = w_scales if per_channel else w_scales * c_out
    weights = rng.integers(-127, 128, size=(c_out, kh, kw, group_in)).astype(np.int8)
    taps = kh * kw * group_in
    bias = np.round(rng.normal(0, 60 * math.sqrt(taps) * 40, c_out)).astype(np.int32)
    s_out = _f32(math.sqrt(taps) * 74 * 73 * s_in * float(np.mean(w_scales)) / rng.uniform(5, 60))
    z_out = int(rng.integers(-60, 60))
    clamp = CLAMPS[int(rng.integers(len(CLAMPS)))]
    x = act("x", (n, h, w, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights,
                qparams=QParams(tuple(w_scales) if per_channel else (w_scales[0],),
                                (0,) * (c_out if per_channel else 1), 0 if per_channel else None))
    bt = Tensor("b", (c_out,), "int32", data=bias, qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    y = act("y", (n, oh, ow, c_out), s_out, z_out)
    attrs = {"stride": (sh, sw), "padding": (top, bottom, left, right), "dilation": (dh, dw), "clamp": clamp}
    g = one_op_graph("conv2d", [x, wt, bt], y, attrs)
    opts = {"Padding": 0 if same else 1, "StrideW": sw, "StrideH": sh, "DilationWFactor": dw, "DilationHFactor": dh,
            "FusedActivationFunction": TFLITE_ACTIVATIONS[clamp]}
    tensors = [tb.T(x.shape, scale=s_in, zero_point=z_in),
               tb.T(weights.shape, data=weights, scale=w_scales if per_channel else w_scales[0]),
               tb.T((c_out,), "int32", data=bias, scale=[s_in * s for s in w_scales]),
               tb.T(y.shape, scale=s_out, zero_point=z_out)]
    twin = tb.Model(tensors, [tb.Op("CONV_2D", [0, 1, 2], [3], ("Conv2DOptions", opts), 3)], [0], [3])
    return g, twin


_CASES: dict = {}


def cases(optimize: str = "memory") -> list[tuple[Case, object]]:
    pytest.importorskip("tflite", reason="the tflite schema package is not installed")
    if optimize not in _CASES:
        out = []
        for k in range(N_CASES):
            rng = np.random.default_rng(4100 + k)
            g, twin = gen_grouped(rng)
            out.append((Case(f"grouped{k}", g, [_samples(g.tensor("x").shape, SAMPLES, rng)], optimize=optimize),
                        twin))
        _CASES[optimize] = out
    return _CASES[optimize]


def test_reference_equals_tflm():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    import tflite_builder as tb

    for case, twin in cases():
        want = tb.run_tflm(tb.build(twin), case.samples[0]).reshape(case.n_samples, -1)
        got = case.reference()
        assert np.array_equal(got, want), f"{case.name}: reference differs from TFLM: {got[0][:8]} vs {want[0][:8]}"


def test_the_cases_reach_every_conv_kernel():
    """The random cases go through the pointwise, patch and general C kernels, each with groups > 1."""
    from tinyaot.codegen.emit_conv import conv_kernel

    kernels = {conv_kernel(conv2d_s8.prepare(c.graph.nodes[0], c.graph))[1] for c, _ in cases()}
    assert kernels == {"tinyaot_conv2d_1x1_s8", "tinyaot_conv2d_patch_s8", "tinyaot_conv2d_s8"}
    assert {conv2d_s8.prepare(c.graph.nodes[0], c.graph).groups for c, _ in cases()} == {2, 3, 4}


@pytest.mark.host
@pytest.mark.parametrize("optimize", ["memory", "speed"])
def test_reference_equals_host(optimize):
    cs = [c for c, _ in cases(optimize)]
    assert all(not c.plan.chosen for c in cs)  # the pairs kernels take groups = 1 only, and the plan says so
    if optimize == "speed":
        assert all(dict(c.plan.kernels[0].rejected)["pairs"].startswith("a grouped conv") for c in cs)
    bad = mismatches(cs, run_host(cs))
    assert not bad, "host C differs from the NumPy reference: " + "; ".join(bad[:5])


@pytest.mark.m33
@pytest.mark.parametrize("dsp", [True, False], ids=["dsp", "portable"])
def test_reference_equals_m33(tmp_path, dsp):
    cs = [c for c, _ in cases()]
    got, result = run_m33_suite(cs, tmp_path / "suite", dsp=dsp)
    bad = mismatches(cs, got)
    assert not bad, f"Cortex-M33 (dsp={dsp}) differs from the NumPy reference: " + "; ".join(bad[:5])
    assert result.instructions > 10_000


def test_groups_must_split_the_channels():
    x = act("x", (1, 4, 4, 6), 0.05, 0)
    w = Tensor("w", (4, 3, 3, 4), "int8", data=np.ones((4, 3, 3, 4), np.int8), qparams=QParams((0.01,), (0,)))
    b = Tensor("b", (4,), "int32", data=np.zeros(4, np.int32), qparams=QParams((0.0005,), (0,)))
    g = one_op_graph("conv2d", [x, w, b], act("y", (1, 2, 2, 4), 0.1, 0), {"stride": (1, 1)})
    with pytest.raises(ModelError, match="does not split the input's 6 channels"):
        conv2d_s8.prepare(g.nodes[0], g)


# ---- from PyTorch ------------------------------------------------------------------------------------------------
class GroupedNet(nn.Module):
    """Grouped 3x3 and 1x1 convs (groups 2 and 4) with BatchNorm, and a grouped conv feeding a residual add."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.g2 = nn.Conv2d(8, 12, 3, stride=2, padding=1, groups=2, bias=False)
        self.bn = nn.BatchNorm2d(12)
        self.g4 = nn.Conv2d(12, 12, 1, groups=4)
        self.g3 = nn.Conv2d(12, 12, 3, padding=1, groups=3)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.bn(self.g2(x)))
        x = F.relu(self.g4(x))
        x = F.relu(x + self.g3(x))
        return self.fc(x.mean((2, 3)))


class GroupedNet1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 5, padding=2)
        self.c2 = nn.Conv1d(8, 8, 3, padding=1, groups=2)
        self.c3 = nn.Conv1d(8, 12, 1, groups=4)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        x = F.relu(self.c2(F.relu(self.c1(x))))
        return self.fc(F.relu(self.c3(x)).mean(2))


MODELS = {"grouped2d": (GroupedNet, (3, 10, 10)), "grouped1d": (GroupedNet1d, (4, 24))}


def _compiled(name: str, optimize: str):
    build, shape = MODELS[name]
    torch.manual_seed(3)
    model = build().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
    x = torch.randn(40, *shape).cumsum(-1) / 3  # smooth signals, as real inputs are
    cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name=f"{name}_{optimize}", optimize=optimize)
    return model, cm, x


@pytest.mark.host
@pytest.mark.m33
@pytest.mark.parametrize("optimize", ["speed", "size", "memory"])
@pytest.mark.parametrize("name", list(MODELS))
def test_pytorch_grouped_models_are_bit_exact_everywhere(name, optimize):
    model, cm, x = _compiled(name, optimize)
    ops = [n.op for n in cm.graph.nodes]
    assert "batch_norm" not in ops and "depthwise_conv2d" not in ops  # BatchNorm folded into the grouped conv
    assert "conv2d_add" not in ops  # a grouped conv does not fuse into the residual kernel
    grouped = [n for n in cm.graph.nodes if n.op == "conv2d"
               and cm.graph.tensor(n.inputs[1]).shape[3] != cm.graph.tensor(n.inputs[0]).shape[3]]
    assert len(grouped) >= 2
    assert not {k.node for k in cm.plan.chosen if k.ring is None} & {n.name for n in grouped}  # pairs: groups = 1
    xq = cm.quantize_input(cm.to_model_layout(x[:6].numpy()))
    want = cm.run(xq, engine="reference")
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), want)
    with torch.no_grad():
        ref = model(x[:6]).numpy()
    got = cm.dequantize_output(want)
    # int8 tracks the float model: seeded weights and inputs, worst error measured 0.003 against a bound of 0.08-0.10
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max() + 0.05


def test_grouped_macs_count_each_group_once():
    model, cm, x = _compiled("grouped2d", "memory")
    torch_macs = 0
    hooks = []

    def count(m, inp, out):
        nonlocal torch_macs
        if isinstance(m, nn.Conv2d):
            torch_macs += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            torch_macs += out.numel() * m.in_features

    for m in model.modules():
        hooks.append(m.register_forward_hook(count))
    with torch.no_grad():
        model(x[:1])
    assert graph_macs(cm.graph) == torch_macs


class GroupedChain(nn.Module):
    """Same-size grouped convs in a chain: the memory plan runs them as in-place rings (plan/inplace.py)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 16, 3, padding=1, groups=2)
        self.c = nn.Conv2d(16, 16, 1, groups=4)
        self.d = nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        for conv in (self.a, self.b, self.c, self.d):
            x = F.relu(conv(x))
        return self.fc(x.mean((2, 3)))


@pytest.mark.host
@pytest.mark.m33
def test_grouped_ring_kernels_are_bit_exact():
    torch.manual_seed(0)
    model = GroupedChain().eval()
    x = torch.randn(40, 4, 12, 12).cumsum(-1) / 3
    cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name="grouped_rings", optimize="memory")
    assert {v.node for v in cm.plan.rings} >= {"b", "c"}  # a 3x3 and a pointwise grouped ring
    xq = cm.quantize_input(cm.to_model_layout(x[:4].numpy()))
    want = cm.run(xq, engine="reference")  # the ring emulated pixel by pixel in the planned arena
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), want)


def test_the_real_valued_definition_equals_torch():
    """real_conv2d with groups (calibration's float evaluation) against torch's conv2d, NHWC <-> NCHW."""
    from tinyaot.quantize.float_eval import real_conv2d

    rng = np.random.default_rng(3)
    for groups, stride, pad in ((2, (1, 1), (1, 1)), (3, (2, 1), (0, 1)), (6, (1, 2), (2, 0))):
        x, w, b = rng.normal(size=(2, 7, 6, 6)), rng.normal(size=(12, 6 // groups, 3, 3)), rng.normal(size=12)
        want = F.conv2d(torch.from_numpy(x.transpose(0, 3, 1, 2)), torch.from_numpy(w), torch.from_numpy(b), stride,
                        pad, groups=groups).numpy().transpose(0, 2, 3, 1)
        g = one_op_graph("conv2d", [Tensor("x", (1, 7, 6, 6), "float32")], Tensor("y", want.shape, "float32"),
                         {"stride": stride, "padding": (pad[0], pad[0], pad[1], pad[1])})
        got = real_conv2d(g.nodes[0], [x, w.transpose(0, 2, 3, 1), b], g)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.host
def test_a_pt2e_quantized_grouped_conv_keeps_its_qparams_and_tracks_pt2e():
    """A graph quantized by torchao's PT2E flow: the grouped conv compiles with the graph's own qparams, host C equals
    the reference, and the int8 outputs stay within a step of the PT2E graph's own (it rounds in float)."""
    pytest.importorskip("torchao", reason="torchao (the PT2E quantization flow) is not installed")
    from pt2e_models import quantize_pt2e, quiet

    from tinyaot.report.pt2e_agreement import agreement_of, pt2e_reference

    quiet()
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 12, 3, padding=1, groups=4),
                          nn.ReLU()).eval()
    x = torch.randn(32, 4, 6, 6).cumsum(-1) / 3
    q = quantize_pt2e(model, x[:1], x)
    cm = tinyaot.compile(q, x[:1], name="grouped_pt2e")
    assert [n.op for n in cm.graph.nodes] == ["conv2d", "conv2d"]
    xq = cm.quantize_input(cm.to_model_layout(x[:8].numpy()))
    got = cm.run(xq)
    np.testing.assert_array_equal(cm.run(xq, engine="host"), got)
    agree = agreement_of(got.reshape(8, -1), pt2e_reference(cm, q, xq).reshape(8, -1))
    # seeded weights and inputs: 20 of the 3,456 output bytes differ (99.4% equal), 345 could
    assert agree.max_abs_steps <= 2 and agree.equal_fraction > 0.9
