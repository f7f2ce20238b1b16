"""The DSP fast paths of the conv / FC kernels on inputs chosen to hit their edges: the pointwise kernel the
compiler picks for 1x1 convs without padding (bias folded with the input offset), depthwise with padding,
four-channel blocks with 1-3 channels left over, channel counts that are not multiples of 4 (scalar tails), and
requantization with left shifts, large right shifts and exact halves (the kernels' own SMLAL requantize).
NumPy reference == host C == Cortex-M33 on every byte."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite

from tinyaot.codegen import generate_c
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU

N_SAMPLES = 4


def _samples(shape, n: int, rng) -> np.ndarray:
    x = rng.integers(-128, 128, size=(n, *shape))
    edge = rng.random(x.shape) < 0.15
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def _out_scale(rng, s_in: float, w_scale: float, taps: int, small: bool) -> float:
    """From far below s_in * w_scale (left shifts, saturation) to far above (large right shifts); `small` cases
    (tiny weights and bias) get multipliers 2^-4 .. 2 so that outputs rarely clamp and the final rounding
    often meets exact halves."""
    if small:
        return float(np.float32(s_in * w_scale / 10 ** rng.uniform(-1.3, 0.3)))
    return float(np.float32(s_in * w_scale * np.sqrt(taps) * 10 ** rng.uniform(-1.5, 3.5)))


def _weights_and_bias(rng, shape, c_out: int, small: bool):
    if small:
        return (rng.integers(-2, 3, size=shape).astype(np.int8),
                rng.integers(-30, 30, size=c_out).astype(np.int32))
    return rng.integers(-127, 128, size=shape).astype(np.int8), rng.integers(-200_000, 200_000, size=c_out)


def pointwise_case(k: int) -> Case:
    rng = np.random.default_rng(9100 + k)
    n = int(rng.integers(1, 3))
    h, w = (int(v) for v in rng.integers(1, 7, size=2))
    small = k >= 16
    c_in = int(rng.choice([1, 2, 3, 5] if small else [1, 3, 4, 5, 8, 13, 16, 33]))
    c_out = int(rng.choice([1, 3, 4, 5, 7, 8, 9, 16]))
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
    oh, ow = (h - 1) // sh + 1, (w - 1) // sw + 1
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scales = [float(np.float32(10 ** rng.uniform(-3, -1.3))) for _ in range(c_out)]
    weights, bias = _weights_and_bias(rng, (c_out, 1, 1, c_in), c_out, small)
    x = act("x", (n, h, w, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams(tuple(w_scales), (0,) * c_out, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias.astype(np.int32),
                qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    y = act("y", (n, oh, ow, c_out), _out_scale(rng, s_in, float(np.mean(w_scales)), c_in, small),
            int(rng.integers(-60, 60)))
    attrs = {"stride": (sh, sw), "padding": (0, 0, 0, 0), "dilation": (1, 1), "clamp": RELU if k % 3 == 0 else None}
    g = one_op_graph("conv2d", [x, wt, bt], y, attrs)
    return Case(f"pointwise{k}", g, [_samples(x.shape, N_SAMPLES, rng)])


def fc_case(k: int) -> Case:
    rng = np.random.default_rng(9200 + k)
    n = int(rng.integers(1, 3))
    small = k >= 16
    c_in = int(rng.choice([1, 2, 3, 5] if small else [1, 2, 3, 4, 5, 7, 8, 9, 12, 31, 64, 67]))
    c_out = int(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 13]))
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scale = float(np.float32(10 ** rng.uniform(-3, -1.3)))
    weights, bias = _weights_and_bias(rng, (c_out, c_in), c_out, small)
    x = act("x", (n, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams.per_tensor(w_scale, 0))
    bt = Tensor("b", (c_out,), "int32", data=bias.astype(np.int32),
                qparams=QParams.per_tensor(float(np.float32(s_in * w_scale)), 0))
    y = act("y", (n, c_out), _out_scale(rng, s_in, w_scale, c_in, small), int(rng.integers(-60, 60)))
    g = one_op_graph("fully_connected", [x, wt, bt], y, {"clamp": RELU if k % 4 == 0 else None})
    return Case(f"fc{k}", g, [_samples(x.shape, N_SAMPLES, rng)])


def depthwise_case(k: int) -> Case:
    """3x3 or 3x1 depthwise with padding: border and interior pixels, four-channel blocks and tails."""
    rng = np.random.default_rng(9300 + k)
    small = k % 2 == 1
    h, w = (int(v) for v in rng.integers(1, 7, size=2))
    c_in = int(rng.choice([1, 3, 4, 5, 8, 9]))
    mult = 2 if k % 5 == 4 else 1
    c_out, kw = c_in * mult, (3 if k % 3 else 1)
    s_in, z_in = float(np.float32(10 ** rng.uniform(-2.5, -0.5))), int(rng.integers(-128, 128))
    w_scales = [float(np.float32(10 ** rng.uniform(-3, -1.3))) for _ in range(c_out)]
    weights, bias = _weights_and_bias(rng, (1, 3, kw, c_out), c_out, small)
    x = act("x", (1, h, w, c_in), s_in, z_in)
    wt = Tensor("w", weights.shape, "int8", data=weights, qparams=QParams(tuple(w_scales), (0,) * c_out, 3))
    bt = Tensor("b", (c_out,), "int32", data=bias.astype(np.int32),
                qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    y = act("y", (1, h, w, c_out), _out_scale(rng, s_in, float(np.mean(w_scales)), 3 * kw, small),
            int(rng.integers(-60, 60)))
    attrs = {"stride": (1, 1), "padding": (1, 1, kw // 2, kw // 2), "dilation": (1, 1), "clamp": None,
             "depth_multiplier": mult}
    g = one_op_graph("depthwise_conv2d", [x, wt, bt], y, attrs)
    return Case(f"depthwise{k}", g, [_samples(x.shape, N_SAMPLES, rng)])


POINTWISE = [pointwise_case(k) for k in range(32)]
DEPTHWISE = [depthwise_case(k) for k in range(16)]
FC = [fc_case(k) for k in range(32)]


def test_pointwise_convs_get_the_1x1_kernel_with_a_folded_bias():
    for case in POINTWISE:
        c = generate_c(case.graph, case.plan, case.name).files[f"{case.name}.c"]
        assert "tinyaot_conv2d_1x1_s8(" in c and "tinyaot_conv2d_s8(" not in c, case.name
    # padding keeps the general kernel: a padded pixel has no tap, so its sum must not hold the folded offset
    g = POINTWISE[0].graph.copy()
    g.nodes[0] = g.nodes[0].with_attrs(padding=(1, 1, 1, 1))
    y = g.tensor("y")
    g.tensors["y"] = Tensor("y", (y.shape[0], y.shape[1] + 2, y.shape[2] + 2, y.shape[3]), "int8", qparams=y.qparams)
    padded = Case("padded", g, POINTWISE[0].samples)
    c = generate_c(padded.graph, padded.plan, "padded").files["padded.c"]
    assert "tinyaot_conv2d_s8(" in c and "tinyaot_conv2d_1x1_s8(" not in c


def test_cases_requantize_with_left_and_right_shifts():
    from tinyaot.ref import conv2d_s8, fully_connected_s8

    shifts = np.concatenate([conv2d_s8.prepare(c.graph.nodes[0], c.graph).shift for c in POINTWISE]
                            + [fully_connected_s8.prepare(c.graph.nodes[0], c.graph).shift for c in FC])
    assert shifts.max() > 0 and shifts.min() < -10 and (shifts == -1).any()


@pytest.mark.host
def test_fast_paths_reference_equals_host():
    cases = POINTWISE + FC + DEPTHWISE
    got = run_host(cases)
    bad = mismatches(cases, got)
    assert not bad, "host C differs from the NumPy reference: " + "; ".join(bad[:5])
    values = np.concatenate([o.reshape(-1) for o in got])
    assert len(np.unique(values)) > 200 and (values == -128).any() and (values == 127).any()


@pytest.mark.m33
def test_fast_paths_reference_equals_m33(tmp_path):
    cases = POINTWISE[:8] + POINTWISE[16:24] + FC[:8] + FC[16:24] + DEPTHWISE
    got, _ = run_m33_suite(cases, tmp_path / "suite")
    bad = mismatches(cases, got)
    assert not bad, "Cortex-M33 (DSP path) differs from the NumPy reference: " + "; ".join(bad[:5])
