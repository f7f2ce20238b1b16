"""The CNN kernels conv2d, depthwise_conv2d, avg_pool2d, add and softmax on random one-op int8 graphs:
NumPy reference == host C (60 cases per op, one gcc run per op) == Cortex-M33 (50 per op, one QEMU run, the
SMLAD path), and reference == TensorFlow Lite Micro on the same cases written as single-op .tflite files
(every case TFLite can express: SAME/VALID padding, its fused activations, count_include_pad False)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_suite import Case, act, mismatches, one_op_graph, run_host, run_m33_suite

from tinyaot.errors import ModelError
from tinyaot.frontend.tflite import compute_padding
from tinyaot.ir import QParams, Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref import softmax_s8
from tinyaot.ref.interpreter import KERNELS

N_HOST, S_HOST = 60, 5
N_M33, S_M33 = 50, 2
N_TFLM, S_TFLM = 24, 12
TFLITE_ACTIVATIONS = {None: 0, RELU: 1, (-1.0, 1.0): 2, RELU6: 3}
CLAMPS = [None, None, RELU, RELU, RELU6, (-1.0, 1.0), (-0.5, math.inf)]  # the last is IR-only


def _f32(x: float) -> float:
    return float(np.float32(x))


def _scale(rng, lo: float = -2.5, hi: float = -0.5) -> float:
    return _f32(10 ** rng.uniform(lo, hi))


def _zp(rng, span: int = 128) -> int:
    return int(rng.integers(-span, span))


def _samples(shape, n: int, rng) -> np.ndarray:
    """Random int8 with about a tenth of the values at the extremes -128 / 127."""
    x = rng.integers(-128, 128, size=(n, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def _mode(rng) -> str:
    return str(rng.choice(["SAME", "VALID", "EXPLICIT"], p=[0.5, 0.35, 0.15]))


def _spatial(rng, mode: str, size: int, k: int, stride: int, dilation: int) -> tuple[str, int, int, int]:
    """(mode, out, before, after): SAME / VALID as TFLM pads, or an IR-only explicit (asymmetric) padding."""
    eff = (k - 1) * dilation + 1
    if mode == "VALID" and size < eff:
        mode = "SAME"
    if mode == "EXPLICIT":
        before, after = int(rng.integers(0, eff)), int(rng.integers(0, eff))
        out = (size + before + after - eff) // stride + 1
        if out >= 1:
            return mode, out, before, after
        mode = "SAME"
    out, before, after = compute_padding(0 if mode == "SAME" else 1, size, k, stride, dilation)
    return mode, out, before, after


# ---- generators: (inputs, output, attrs, tflite twin or None) -------------------------------------------------
def gen_conv(rng, depthwise: bool = False):
    n = 2 if rng.random() < 0.15 else 1
    h, w = (int(v) for v in rng.integers(1, 10, size=2))
    c_in = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 12, 16]))
    mult = int(rng.integers(1, 4)) if depthwise else 1
    c_out = c_in * mult if depthwise else int(rng.choice([1, 2, 3, 4, 5, 8, 9, 16]))
    kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
    dh, dw = (int(rng.choice([1, 1, 1, 2])) for _ in range(2))
    mode = _mode(rng)
    mode_h, oh, top, bottom = _spatial(rng, mode, h, kh, sh, dh)
    mode_w, ow, left, right = _spatial(rng, mode, w, kw, sw, dw)
    s_in, z_in = _scale(rng), _zp(rng)
    per_channel = rng.random() < 0.75
    w_scales = [_scale(rng, -3, -1.3) for _ in range(c_out)] if per_channel else [_scale(rng, -3, -1.3)] * c_out
    w_shape = (1, kh, kw, c_out) if depthwise else (c_out, kh, kw, c_in)
    weights = rng.integers(-127, 128, size=w_shape).astype(np.int8)
    taps = kh * kw * (1 if depthwise else c_in)
    bias = np.round(rng.normal(0, 60 * math.sqrt(taps) * 40, c_out)).astype(np.int32)
    real_std = math.sqrt(taps) * 74 * 73 * s_in * float(np.mean(w_scales))
    s_out, z_out = _f32(real_std / rng.uniform(5, 60)), _zp(rng, 60)
    clamp = CLAMPS[int(rng.integers(len(CLAMPS)))]
    w_qp_axis = 3 if depthwise else 0
    x = act("x", (n, h, w, c_in), s_in, z_in)
    wt = Tensor("w", w_shape, "int8", data=weights,
                qparams=QParams(tuple(w_scales) if per_channel else (w_scales[0],), (0,) * (c_out if per_channel
                                                                                          else 1),
                                w_qp_axis if per_channel else None))
    bt = Tensor("b", (c_out,), "int32", data=bias,
                qparams=QParams(tuple(s_in * s for s in w_scales), (0,) * c_out, 0))
    y = act("y", (n, oh, ow, c_out), s_out, z_out)
    attrs = {"stride": (sh, sw), "padding": (top, bottom, left, right), "dilation": (dh, dw), "clamp": clamp}
    if depthwise:
        attrs["depth_multiplier"] = mult
    twin = None
    if mode_h == mode_w and mode_h != "EXPLICIT" and clamp in TFLITE_ACTIVATIONS:
        import tflite_builder as tb

        opts = {"Padding": 0 if mode_h == "SAME" else 1, "StrideW": sw, "StrideH": sh, "DilationWFactor": dw,
                "DilationHFactor": dh, "FusedActivationFunction": TFLITE_ACTIVATIONS[clamp]}
        if depthwise:
            opts["DepthMultiplier"] = mult
        tensors = [tb.T(x.shape, scale=s_in, zero_point=z_in),
                   tb.T(w_shape, data=weights, scale=w_scales if per_channel else w_scales[0], axis=w_qp_axis),
                   tb.T((c_out,), "int32", data=bias, scale=[s_in * s for s in w_scales]),
                   tb.T(y.shape, scale=s_out, zero_point=z_out)]
        code, options = ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions") if depthwise else ("CONV_2D", "Conv2DOptions")
        twin = tb.Model(tensors, [tb.Op(code, [0, 1, 2], [3], (options, opts), 3)], [0], [3])
    return [x, wt, bt], y, attrs, twin


def gen_depthwise_conv2d(rng):
    return gen_conv(rng, depthwise=True)


def gen_avg_pool2d(rng):
    n = 2 if rng.random() < 0.15 else 1
    h, w, c = int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 9))
    kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
    mode = _mode(rng)
    mode_h, oh, top, bottom = _spatial(rng, mode, h, kh, sh, 1)
    mode_w, ow, left, right = _spatial(rng, mode, w, kw, sw, 1)
    include_pad = bool(rng.random() < 0.25)
    s, z = _scale(rng), _zp(rng)
    clamp = CLAMPS[int(rng.integers(len(CLAMPS)))]
    x, y = act("x", (n, h, w, c), s, z), act("y", (n, oh, ow, c), s, z)
    attrs = {"kernel": (kh, kw), "stride": (sh, sw), "padding": (top, bottom, left, right),
             "count_include_pad": include_pad, "clamp": clamp}
    twin = None
    if mode_h == mode_w and mode_h != "EXPLICIT" and not include_pad and clamp in TFLITE_ACTIVATIONS:
        import tflite_builder as tb

        opts = {"Padding": 0 if mode_h == "SAME" else 1, "StrideW": sw, "StrideH": sh, "FilterWidth": kw,
                "FilterHeight": kh, "FusedActivationFunction": TFLITE_ACTIVATIONS[clamp]}
        twin = tb.Model([tb.T(x.shape, scale=s, zero_point=z), tb.T(y.shape, scale=s, zero_point=z)],
                        [tb.Op("AVERAGE_POOL_2D", [0], [1], ("Pool2DOptions", opts), 2)], [0], [1])
    return [x], y, attrs, twin


def gen_add(rng):
    rank = int(rng.integers(1, 5))
    shape = tuple(int(v) for v in rng.integers(1, 7, size=rank))
    sa, sb = _scale(rng, -2.5, 0), _scale(rng, -2.5, 0)
    za, zb = _zp(rng), _zp(rng)
    lo, hi = sa * (-128 - za) + sb * (-128 - zb), sa * (127 - za) + sb * (127 - zb)
    s_out = _f32((hi - lo) / 255 * rng.uniform(0.5, 1.3))
    z_out = int(np.clip(round(-128 - lo / s_out), -128, 127))
    clamp = CLAMPS[int(rng.integers(len(CLAMPS)))]
    a, b, y = act("a", shape, sa, za), act("b", shape, sb, zb), act("y", shape, s_out, z_out)
    twin = None
    if clamp in TFLITE_ACTIVATIONS:
        import tflite_builder as tb

        tensors = [tb.T(shape, scale=sa, zero_point=za), tb.T(shape, scale=sb, zero_point=zb),
                   tb.T(shape, scale=s_out, zero_point=z_out)]
        opts = ("AddOptions", {"FusedActivationFunction": TFLITE_ACTIVATIONS[clamp]})
        twin = tb.Model(tensors, [tb.Op("ADD", [0, 1], [2], opts, 2)], [0, 1], [2])
    return [a, b], y, {"clamp": clamp}, twin


def gen_softmax(rng):
    rows, depth = int(rng.integers(1, 4)), int(rng.integers(1, 41))
    shape = (rows, depth) if rng.random() < 0.6 else (1, 1, rows, depth)
    s_in = _scale(rng, -2.5, 1.7)  # up to 50: beta * scale * 2**26 then hits the 2**31 - 1 cap
    z_in = _zp(rng)
    beta = _f32(float(rng.choice([1.0, 1.0, 0.5, 2.0, rng.uniform(0.05, 3.0)])))
    x, y = act("x", shape, s_in, z_in), act("y", shape, 1 / 256, -128)
    import tflite_builder as tb

    twin = tb.Model([tb.T(shape, scale=s_in, zero_point=z_in), tb.T(shape, scale=1 / 256, zero_point=-128)],
                    [tb.Op("SOFTMAX", [0], [1], ("SoftmaxOptions", {"Beta": beta}), 2)], [0], [1])
    return [x], y, {"beta": beta}, twin


GENERATORS = {
    "conv2d": gen_conv,
    "depthwise_conv2d": gen_depthwise_conv2d,
    "avg_pool2d": gen_avg_pool2d,
    "add": gen_add,
    "softmax": gen_softmax,
}
SEEDS = {op: 7000 + 1000 * i for i, op in enumerate(GENERATORS)}


def _softmax_samples(shape, n: int, rng) -> np.ndarray:
    """Half the samples spread over a few int8 steps, so exp() of the differences is far from 0."""
    x = _samples(shape, n, rng).astype(np.int64)
    near = rng.integers(-128, 100, size=(n,) + (1,) * len(shape)) + rng.integers(0, 28, size=(n, *shape))
    half = rng.random(n) < 0.5
    x[half] = near[half]
    return x.astype(np.int8)


def make_case(op: str, k: int, n_samples: int):
    pytest.importorskip("tflite", reason="the tflite schema package is not installed")
    rng = np.random.default_rng(SEEDS[op] + k)
    ins, out, attrs, twin = GENERATORS[op](rng)
    g = one_op_graph(op, ins, out, attrs)
    make = _softmax_samples if op == "softmax" else _samples
    samples = [make(g.tensor(t).shape, n_samples, rng) for t in g.inputs]
    return Case(f"{op}{k}", g, samples), twin


_CACHE: dict = {}


def cases(op: str, n: int, n_samples: int) -> list[tuple[Case, object]]:
    key = (op, n, n_samples)
    if key not in _CACHE:
        _CACHE[key] = [make_case(op, k, n_samples) for k in range(n)]
    return _CACHE[key]


# ---- reference == host C == Cortex-M33 ----------------------------------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("op", list(GENERATORS))
def test_reference_equals_host(op):
    cs = [c for c, _ in cases(op, N_HOST, S_HOST)]
    got = run_host(cs)
    bad = mismatches(cs, got)
    assert not bad, f"{op}: host C differs from the NumPy reference: " + "; ".join(bad[:5])
    values = np.concatenate([o.reshape(-1) for o in got])
    assert len(np.unique(values)) > 100  # the cases exercise the op: outputs vary


@pytest.mark.m33
def test_reference_equals_m33(tmp_path):
    cs = [c for op in GENERATORS for c, _ in cases(op, N_M33, S_M33)]
    got, result = run_m33_suite(cs, tmp_path / "suite")
    bad = mismatches(cs, got)
    assert not bad, "Cortex-M33 (SMLAD path) differs from the NumPy reference: " + "; ".join(bad[:10])
    assert result.instructions > 50_000


# ---- reference == TensorFlow Lite Micro --------------------------------------------------------------------
def _run_tflm(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=256 * 1024)
    outs = []
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        outs.append(interp.get_output(0).copy().reshape(-1))
    return np.stack(outs)


@pytest.mark.parametrize("op", list(GENERATORS))
def test_reference_equals_tflm(op):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    import tflite_builder as tb

    checked = 0
    for case, twin in cases(op, N_TFLM, S_TFLM):
        if twin is None:
            continue
        want = _run_tflm(tb.build(twin), case.samples)
        got = case.reference()
        assert np.array_equal(got, want), (f"{case.name}: reference differs from TFLM, e.g. {got[0][:8]} vs "
                                           f"{want[0][:8]}")
        checked += 1
    assert checked >= N_TFLM // 2


# ---- semantics the random cases pin down less directly -------------------------------------------------------
def test_avg_pool_divides_by_the_taps_inside_or_the_whole_window():
    x = act("x", (1, 2, 2, 1), 0.1, 0)
    y = act("y", (1, 2, 2, 1), 0.1, 0)
    attrs = {"kernel": (2, 2), "stride": (1, 1), "padding": (0, 1, 0, 1), "clamp": None}
    data = np.array([10, 20, 30, 41], np.int8).reshape(1, 2, 2, 1)
    for include_pad, want in ((False, [25, 31, 36, 41]), (True, [25, 15, 18, 10])):
        g = one_op_graph("avg_pool2d", [x], y, attrs | {"count_include_pad": include_pad})
        p = KERNELS["avg_pool2d"][0](g.nodes[0], g)
        assert KERNELS["avg_pool2d"][1](data, p).reshape(-1).tolist() == want
    # Rounding is half away from zero with C's truncating division: -5 / 2 -> -3, 5 / 2 -> 3.
    g = one_op_graph("avg_pool2d", [act("x", (1, 1, 2, 1), 0.1, 0)], act("y", (1, 1, 1, 1), 0.1, 0),
                     {"kernel": (1, 2), "stride": (1, 2), "padding": (0, 0, 0, 0), "clamp": None})
    p = KERNELS["avg_pool2d"][0](g.nodes[0], g)
    assert KERNELS["avg_pool2d"][1](np.array([-2, -3], np.int8), p).item() == -3
    assert KERNELS["avg_pool2d"][1](np.array([2, 3], np.int8), p).item() == 3


def test_softmax_fixed_point_helpers_track_the_real_functions():
    a = np.arange(-31 * 2**26, 1, 2**22, dtype=np.int64)  # Q5.26 in [-31, 0]
    got = softmax_s8.exp_on_negative_values(a) / 2**31
    assert np.abs(got - np.exp(a / 2**26)).max() < 5e-7
    v = np.arange(0, 2**31, 2**20, dtype=np.int64)
    got = softmax_s8.one_over_one_plus_x_for_x_in_0_1(v) / 2**31
    assert np.abs(got - 1 / (1 + v / 2**31)).max() < 1e-7
    assert softmax_s8.count_leading_zeros_u32(np.array([1, 2**19, 2**31 - 1, 0])).tolist() == [31, 12, 1, 32]


def test_softmax_output_is_a_distribution():
    g = one_op_graph("softmax", [act("x", (1, 10), 0.1, 0)], act("y", (1, 10), 1 / 256, -128), {"beta": 1.0})
    p = KERNELS["softmax"][0](g.nodes[0], g)
    x = np.array([[0, 10, 20, 30, 40, 50, 60, 70, 80, 90]], np.int8)
    y = KERNELS["softmax"][1](x, p).astype(np.int64) + 128
    want = np.exp(x * 0.1) / np.exp(x * 0.1).sum() * 256
    assert np.abs(y - want).max() <= 1 and abs(int(y.sum()) - 256) <= 5



# ---- add: the compile-time tables and the sum's fast requantization equal TFLM's definition -------------------
ALL_A, ALL_B = (v.reshape(-1).astype(np.int8) for v in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128),
                                                                     indexing="ij"))
ADD_FAST = ((0.0512, -3), (0.0213, 7), (0.0437, -10), RELU)  # (scale, zero point) of a, b, y; the clamp
ADD_EXACT = ((0.05, -3), (0.02, 7), (0.04, -10), None)  # exact ties of both signs: no single-rounding form


def _add_graph(qa, qb, qy, clamp, shape=(1, 4)):
    return one_op_graph("add", [act("a", shape, *qa), act("b", shape, *qb)], act("y", shape, *qy), {"clamp": clamp})


def test_add_tables_and_sum_requantization_equal_the_definition_on_every_pair():
    from tinyaot.fixedpoint import multiply_by_quantized_multiplier as mbqm
    from tinyaot.ref import add_s8

    q = np.arange(-128, 128, dtype=np.int64)
    graphs = [one_op_graph("add", *GENERATORS["add"](np.random.default_rng(k))[:3]) for k in range(72)]
    paths = set()
    for g in [*graphs, _add_graph(*ADD_FAST), _add_graph(*ADD_EXACT)]:
        p = add_s8.prepare(g.nodes[0], g)
        for table, off, m, sh in ((p.input1_table, p.input1_offset, p.input1_multiplier, p.input1_shift),
                                  (p.input2_table, p.input2_offset, p.input2_multiplier, p.input2_shift)):
            assert table.dtype == np.int32 and np.array_equal(table, mbqm((q + off) << p.left_shift, m, sh))
        assert np.array_equal(add_s8.add_s8_tables(ALL_A, ALL_B, p), add_s8.add_s8_elementwise(ALL_A, ALL_B, p))
        paths.add(p.sum_multiplier != 0)
    assert paths == {True, False}


@pytest.mark.host
@pytest.mark.parametrize("mode", ["speed", "memory"])
def test_add_c_equals_the_definition_on_every_pair_on_the_host(mode):
    """Both requantizations of the sum in the C kernel, on all 65536 input pairs; speed mode reads the inputs'
    tables, the other modes leave them out (NULL) and scale each element."""
    from tinyaot.codegen import generate_c
    from tinyaot.ref import add_s8

    for config, fast in ((ADD_FAST, True), (ADD_EXACT, False)):
        g = _add_graph(*config, shape=(1, ALL_A.size))
        p = add_s8.prepare(g.nodes[0], g)
        assert (p.sum_multiplier != 0) == fast
        case = Case("add_all", g, [ALL_A[None], ALL_B[None]], optimize=mode)
        assert ("add_all_add_0_input1_table[" in generate_c(g, case.plan, "add_all").files["add_all.c"]) == (
            mode == "speed")
        (got,) = run_host([case])
        assert np.array_equal(got[0], add_s8.add_s8_elementwise(ALL_A, ALL_B, p)), config


@pytest.mark.m33
@pytest.mark.parametrize("mode", ["speed", "memory"])
def test_add_c_equals_the_definition_on_every_pair_on_the_m33(tmp_path, mode):
    """The DSP path too: full int8 range (SSAT), a fused clamp, and the exact fallback; with and without tables."""
    from tinyaot.ref import add_s8

    configs = [ADD_FAST, (*ADD_FAST[:3], None), ADD_EXACT]
    cs = [Case(f"add_all{i}", _add_graph(*c, shape=(1, ALL_A.size)), [ALL_A[None], ALL_B[None]], optimize=mode)
          for i, c in enumerate(configs)]
    got, _ = run_m33_suite(cs, tmp_path / "suite")
    for c, out in zip(cs, got):
        p = add_s8.prepare(c.graph.nodes[0], c.graph)
        assert np.array_equal(out[0], add_s8.add_s8_elementwise(ALL_A, ALL_B, p)), c.name


def _prepare(op, ins, out, attrs):
    g = one_op_graph(op, ins, out, attrs)
    return KERNELS[op][0](g.nodes[0], g)


def test_bad_graphs_get_clear_errors():
    x = act("x", (1, 4, 4, 4), 0.1, 0)
    w = Tensor("w", (2, 3, 3, 3), "int8", data=np.zeros((2, 3, 3, 3), np.int8), qparams=QParams((0.01,), (0,)))
    b = Tensor("b", (2,), "int32", data=np.zeros(2, np.int32))
    with pytest.raises(ModelError, match="equal groups"):  # 3 weight input channels do not split 4 into groups
        _prepare("conv2d", [x, w, b], act("y", (1, 4, 4, 2), 0.1, 0), {"padding": (1, 1, 1, 1)})
    with pytest.raises(ModelError, match="share scale and zero point"):
        _prepare("avg_pool2d", [x], act("y", (1, 2, 2, 4), 0.2, 0), {"kernel": (2, 2), "stride": (2, 2)})
    with pytest.raises(ModelError, match="scale 1/256 and zero point -128"):
        _prepare("softmax", [act("x", (1, 5), 0.1, 0)], act("y", (1, 5), 1 / 255, -128), {})
    with pytest.raises(ModelError, match="do not broadcast"):
        _prepare("add", [act("a", (1, 4), 0.1, 0), act("b", (1, 3), 0.1, 0)], act("y", (1, 4), 0.1, 0), {})
    with pytest.raises(ModelError, match="leaves a window with no input pixel"):
        _prepare("avg_pool2d", [x], act("y", (1, 6, 4, 4), 0.1, 0),
                 {"kernel": (1, 1), "stride": (1, 1), "padding": (1, 1, 0, 0)})
