"""Transposed convolution (transpose_conv2d): TFLite's TRANSPOSE_CONV and PyTorch's ConvTranspose2d / 1d.

Random one-op .tflite graphs imported by tinyaot give TensorFlow Lite Micro's bytes in the reference; host C and
the Cortex-M33 (DSP and portable builds) give the reference's; small PyTorch models (stride, padding,
output_padding, a fused ReLU, a folded BatchNorm) compile in every optimize mode and agree everywhere; the
output may sit over its dying input only as far as the gather kernel's read order allows (checked pixel by
pixel); what stays refused names the layer and its line."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite

import tinyaot
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref import transpose_conv2d_s8
from tinyaot.report.macs import graph_macs, node_macs

N_CASES, SAMPLES = 50, 4
ACTIVATIONS = {None: 0, RELU: 1, (-1.0, 1.0): 2, RELU6: 3}


def _f32(x: float) -> float:
    return float(np.float32(x))


def _samples(shape, n: int, rng) -> np.ndarray:
    x = rng.integers(-128, 128, size=(n, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def _out_size(size: int, k: int, stride: int, same: bool, rng) -> int:
    """TensorFlow's conv2d_transpose sizes (SAME: in * stride; VALID: in * stride + max(k - stride, 0)), or now
    and then any size a conv of this kernel and stride maps back to the input's size."""
    if rng.random() < 0.25:
        return int(rng.integers(max((size - 1) * stride + 1, 1), size * stride + 1)) if same else \
            (size - 1) * stride + k + int(rng.integers(0, stride))
    return size * stride if same else size * stride + max(k - stride, 0)


def tflite_case(rng):
    """A random int8 TRANSPOSE_CONV: (.tflite model, input shape)."""
    import tflite_builder as tb

    n = 1  # the TFLite front end takes batch-1 models
    h, w = (int(v) for v in rng.integers(1, 7, size=2))
    c_in, c_out = int(rng.choice([1, 2, 3, 4, 5, 8, 12])), int(rng.choice([1, 2, 3, 4, 5, 7, 8]))
    kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
    same = bool(rng.random() < 0.5)
    oh, ow = _out_size(h, kh, sh, same, rng), _out_size(w, kw, sw, same, rng)
    s_in, z_in = _f32(10 ** rng.uniform(-2.5, -0.5)), int(rng.integers(-128, 128))
    per_channel = rng.random() < 0.75
    w_scales = [_f32(10 ** rng.uniform(-3, -1.3)) for _ in range(c_out if per_channel else 1)]
    w_scales = w_scales if per_channel else w_scales * c_out
    weights = rng.integers(-127, 128, size=(c_out, kh, kw, c_in)).astype(np.int8)
    taps = math.ceil(kh / sh) * math.ceil(kw / sw) * c_in  # the taps one output pixel gathers
    bias = np.round(rng.normal(0, 60 * math.sqrt(taps) * 40, c_out)).astype(np.int32)
    s_out = _f32(math.sqrt(taps) * 74 * 73 * s_in * float(np.mean(w_scales)) / rng.uniform(5, 60))
    z_out = int(rng.integers(-60, 60))
    clamp = list(ACTIVATIONS)[int(rng.integers(len(ACTIVATIONS)))]
    with_bias = rng.random() < 0.8
    tensors = [tb.T((4,), "int32", data=np.array([n, oh, ow, c_out], np.int32)),
               tb.T(weights.shape, data=weights, scale=w_scales if per_channel else w_scales[0]),
               tb.T((n, h, w, c_in), scale=s_in, zero_point=z_in),
               tb.T((c_out,), "int32", data=bias, scale=[s_in * s for s in w_scales]),
               tb.T((n, oh, ow, c_out), scale=s_out, zero_point=z_out)]
    opts = {"Padding": 0 if same else 1, "StrideW": sw, "StrideH": sh,
            "FusedActivationFunction": ACTIVATIONS[clamp]}
    op = tb.Op("TRANSPOSE_CONV", [0, 1, 2, 3] if with_bias else [0, 1, 2], [4], ("TransposeConvOptions", opts), 3)
    return tb.build(tb.Model(tensors, [op], [2], [4])), (n, h, w, c_in)


_CASES: list = []


def cases() -> list[tuple[Case, bytes]]:
    """The random TRANSPOSE_CONV models, imported by tinyaot's TFLite front end (one transpose_conv2d node)."""
    pytest.importorskip("tflite", reason="the tflite schema package is not installed")
    from tinyaot.frontend.tflite import from_tflite

    if not _CASES:
        for k in range(N_CASES):
            rng = np.random.default_rng(5200 + k)
            model, shape = tflite_case(rng)
            g = from_tflite(model)
            assert [n.op for n in g.nodes] == ["transpose_conv2d"]
            _CASES.append((Case(f"tconv{k}", g, [_samples(shape, SAMPLES, rng)]), model))
    return _CASES


def test_reference_equals_tflm():
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    import tflite_builder as tb

    strides, paddings = set(), set()
    for case, model in cases():
        want = tb.run_tflm(model, case.samples[0]).reshape(case.n_samples, -1)
        got = case.reference()
        assert np.array_equal(got, want), f"{case.name}: reference differs from TFLM: {got[0][:8]} vs {want[0][:8]}"
        node = case.graph.nodes[0]
        strides.add(node.attrs["stride"])
        paddings.add(node.attrs["padding"] != (0, 0, 0, 0) or node.attrs["output_padding"] != (0, 0))
    assert len(strides) >= 6 and paddings == {True, False}  # the cases cover the geometry


@pytest.mark.host
def test_reference_equals_host():
    cs = [c for c, _ in cases()]
    overlapped = sum(any(c.plan.shares_bytes(o) for o in c.plan.overlaps) for c in cs)
    assert overlapped >= N_CASES // 2  # most outputs sit over their dying input (the C must honour the rule)
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


def test_the_gather_equals_a_scatter_written_out():
    """The reference against TFLM's scatter loop written out in Python (independent of the NumPy formulation)."""
    rng = np.random.default_rng(11)
    x = act("x", (1, 3, 2, 3), 0.05, -7)
    wd = rng.integers(-127, 128, size=(4, 3, 2, 3)).astype(np.int8)
    w = Tensor("w", wd.shape, "int8", data=wd, qparams=QParams((0.01, 0.02, 0.015, 0.011), (0,) * 4, 0))
    bd = rng.integers(-500, 500, size=4).astype(np.int32)
    b = Tensor("b", (4,), "int32", data=bd, qparams=QParams(tuple(0.05 * s for s in w.qparams.scale), (0,) * 4, 0))
    y = act("y", (1, 6, 4, 4), 0.2, 3)
    g = one_op_graph("transpose_conv2d", [x, w, b], y, {"stride": (2, 2), "padding": (1, 1, 0, 0),
                                                        "output_padding": (1, 0)})
    p = transpose_conv2d_s8.prepare(g.nodes[0], g)
    xs = _samples(x.shape, 1, rng)[0]
    acc = np.zeros((6, 4, 4), np.int64)
    for iy in range(3):
        for ix in range(2):
            for ky in range(3):
                for kx in range(2):
                    oy, ox = iy * 2 - 1 + ky, ix * 2 + kx
                    if 0 <= oy < 6 and 0 <= ox < 4:
                        acc[oy, ox] += wd[:, ky, kx, :] @ (xs[0, iy, ix].astype(np.int64) + 7)
    want = np.clip(multiply_by_quantized_multiplier(acc + bd, p.multiplier, p.shift) + 3, -128, 127)
    assert np.array_equal(transpose_conv2d_s8.transpose_conv2d_s8(xs, p)[0], want)


def test_the_overlap_rule_holds_pixel_by_pixel():
    """With the output placed exactly the rule's distance below its input, writing pixel after pixel in the C's
    order (each pixel computed from the input bytes as they are then) gives the bytes of a separate output."""
    from tinyaot.plan.overlap import overlap_rules

    for case, _ in cases()[:30]:
        g, node = case.graph, case.graph.nodes[0]
        (rule,) = overlap_rules(node, g)
        p = transpose_conv2d_s8.prepare(node, g)
        x = case.samples[0][0]
        want = transpose_conv2d_s8.transpose_conv2d_s8(x, p).reshape(-1).view(np.uint8)
        in_off = max(rule.distance, 0)
        out_off, oc = in_off - rule.distance, p.out_c
        arena = np.zeros(max(in_off + x.size, out_off + want.size), np.uint8)
        arena[in_off : in_off + x.size] = x.reshape(-1).view(np.uint8)
        for q in range(want.size // oc):
            now = arena[in_off : in_off + x.size].view(np.int8).reshape(x.shape)
            pixel = transpose_conv2d_s8.transpose_conv2d_s8(now, p).reshape(-1).view(np.uint8)[q * oc : (q + 1) * oc]
            arena[out_off + q * oc : out_off + (q + 1) * oc] = pixel
        assert np.array_equal(arena[out_off : out_off + want.size], want), case.name
        assert rule.distance < want.size  # the output may end over the input's bytes


# ---- from PyTorch ------------------------------------------------------------------------------------------------
class Decoder2d(nn.Module):
    """An upsampling decoder: stride-2 transposed convs (output_padding, BatchNorm, ReLU) and a 1x1 head."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.up2 = nn.ConvTranspose2d(6, 4, (2, 3), stride=(1, 2))
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        x = F.relu(self.enc(x))
        x = F.relu(self.bn(self.up1(x)))
        return self.head(F.relu(self.up2(x)))


class Decoder1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(3, 6, 3, padding=1)
        self.up = nn.ConvTranspose1d(6, 5, 4, stride=2, padding=1)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        x = F.relu(self.up(F.relu(self.c(x))))
        return self.fc(x.mean(2))


MODELS = {"decoder2d": (Decoder2d, (3, 8, 8)), "decoder1d": (Decoder1d, (3, 12))}


def _compiled(name: str, optimize: str):
    build, shape = MODELS[name]
    torch.manual_seed(5)
    model = build().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(40, *shape).cumsum(-1) / 3  # smooth signals, as real inputs are
    cm = tinyaot.compile(model, x[:1], calibration=x.numpy(), name=f"{name}_{optimize}", optimize=optimize)
    return model, cm, x


@pytest.mark.host
@pytest.mark.m33
@pytest.mark.parametrize("optimize", ["speed", "size", "memory"])
@pytest.mark.parametrize("name", list(MODELS))
def test_pytorch_transposed_models_are_bit_exact_everywhere(name, optimize):
    model, cm, x = _compiled(name, optimize)
    ops = [n.op for n in cm.graph.nodes]
    assert "batch_norm" not in ops and "relu" not in ops and "depthwise_conv2d" not in ops  # folded and fused
    tconvs = [n for n in cm.graph.nodes if n.op == "transpose_conv2d"]
    assert tconvs and all(n.attrs.get("clamp") == RELU for n in tconvs)
    steps = {cm.graph.nodes.index(n) for n in tconvs}
    if optimize == "memory":  # an upsampling output ends over its dying input (plan/overlap.py: transposed_rules)
        assert any(cm.plan.shares_bytes(o) for o in cm.plan.overlaps if o.step in steps)
    xq = cm.quantize_input(cm.to_model_layout(x[:6].numpy()))
    want = cm.run(xq, engine="reference")
    np.testing.assert_array_equal(cm.run(xq, engine="host"), want)
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), want)
    with torch.no_grad():
        ref = model(x[:6]).numpy()
    got = np.asarray(cm.dequantize_output(want))
    if ref.ndim == 4:
        ref = ref.transpose(0, 2, 3, 1)
    # int8 tracks float: seeded weights and inputs, worst error measured 0.001 against a bound of 0.07-0.08
    assert np.abs(got.reshape(ref.shape) - ref).max() < 0.1 * np.abs(ref).max() + 0.05


def test_transposed_macs_count_every_tap_of_every_input():
    """in pixels x in_c x out_c x kh x kw per layer (up1: 4x4 input, 8 -> 6, 3x3; up2: 8x8 input, 6 -> 4, 2x3)."""
    model, cm, x = _compiled("decoder2d", "memory")
    tconvs = [n for n in cm.graph.nodes if n.op == "transpose_conv2d"]
    assert [node_macs(n, cm.graph) for n in tconvs] == [16 * 8 * 6 * 9, 64 * 6 * 4 * 6]
    assert graph_macs(cm.graph) == sum(node_macs(n, cm.graph) for n in cm.graph.nodes) > sum(
        node_macs(n, cm.graph) for n in tconvs)


class Dilated(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, dilation=2)

    def forward(self, x):
        return self.up(x)


def test_dilated_transposed_conv_is_refused_with_the_layer_and_its_line():
    with pytest.raises(UnsupportedOpError) as exc:
        tinyaot.compile(Dilated().eval(), torch.zeros(1, 4, 5, 5), calibration=torch.randn(8, 4, 5, 5).numpy())
    msg = str(exc.value)
    assert "layer 'up'" in msg and "test_transpose_conv.py:" in msg and "dilation=(2, 2)" in msg
    assert "supported: groups=1, dilation=1" in msg


def test_a_shape_that_does_not_follow_from_the_attrs_is_an_error():
    x = act("x", (1, 3, 3, 2), 0.05, 0)
    w = Tensor("w", (2, 3, 3, 2), "int8", data=np.ones((2, 3, 3, 2), np.int8), qparams=QParams((0.01,), (0,)))
    b = Tensor("b", (2,), "int32", data=np.zeros(2, np.int32), qparams=QParams((0.0005,), (0,)))
    g = one_op_graph("transpose_conv2d", [x, w, b], act("y", (1, 6, 6, 2), 0.1, 0), {"stride": (2, 2)})
    with pytest.raises(ModelError, match="give a 7x7 output, not 6x6"):
        transpose_conv2d_s8.prepare(g.nodes[0], g)


def test_the_real_valued_definition_equals_torch():
    """real_transpose_conv2d (calibration's float evaluation) against torch's conv_transpose2d, NHWC <-> NCHW."""
    from tinyaot.quantize.float_eval import real_transpose_conv2d

    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(2, 5, 4, 3)), rng.normal(size=(3, 4, 3, 2)), rng.normal(size=4)  # torch w: in, out
    for stride, pad, extra in (((2, 2), (1, 1), (1, 0)), ((3, 1), (0, 2), (2, 0)), ((1, 2), (0, 0), (0, 1))):
        want = F.conv_transpose2d(torch.from_numpy(x.transpose(0, 3, 1, 2)), torch.from_numpy(w),
                                  torch.from_numpy(b), stride, pad, extra).numpy().transpose(0, 2, 3, 1)
        y = Tensor("y", (1, *want.shape[1:]), "float32")
        g = one_op_graph("transpose_conv2d", [Tensor("x", (1, 5, 4, 3), "float32")], y,
                         {"stride": stride, "padding": (pad[0], pad[0], pad[1], pad[1]), "output_padding": extra})
        got = real_transpose_conv2d(g.nodes[0], [x, w.transpose(1, 2, 3, 0), b], g)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
