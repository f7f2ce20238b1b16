"""The int8 kernels against TensorFlow Lite Micro itself: single-op .tflite models run by TFLM's reference
kernels give the same bytes as tinyaot's NumPy reference (and so, by test_misc_kernels, as the C).

Covers the ops with a TFLite int8 twin: MAX_POOL_2D, MEAN, MUL (broadcast too), PAD, CONCATENATION, RELU
(rescaling), RELU6, QUANTIZE (int8 -> int8) and TRANSPOSE. LUT activations are tinyaot's own semantics.
"""
from __future__ import annotations

import numpy as np
import pytest
from kernel_suite import act, one_op_graph

from tinyaot.ir import Graph
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.ref.interpreter import KERNELS

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")

CASES, SAMPLES = 16, 24
ACTIVATIONS = {0: None, 1: RELU, 2: (-1.0, 1.0), 3: RELU6}  # TFLite fused activation codes -> clamp


def _qp(rng) -> tuple[float, int]:
    return float(np.float32(10 ** rng.uniform(-2.5, 0.0))), int(rng.integers(-128, 128))


def _t(shape, qp, name="") -> tb.T:
    return tb.T(tuple(int(d) for d in shape), "int8", scale=qp[0], zero_point=qp[1], name=name)


def _i32(values) -> tb.T:
    values = np.asarray(values, dtype=np.int32)
    return tb.T(values.shape, "int32", data=values)


def _run_tflm(model: bytes, inputs: list[np.ndarray]) -> np.ndarray:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=64 * 1024)
    outs = []
    for s in range(len(inputs[0])):
        for i, x in enumerate(inputs):
            interp.set_input(x[s], i)
        interp.invoke()
        outs.append(interp.get_output(0).copy())
    return np.stack(outs)


def _run_ref(g: Graph, inputs: list[np.ndarray]) -> np.ndarray:
    node = g.nodes[0]
    p = KERNELS[node.op][0](node, g)
    return np.stack([KERNELS[node.op][1](*(x[s] for x in inputs), p) for s in range(len(inputs[0]))])


def _samples(shape, rng) -> np.ndarray:
    return rng.integers(-128, 128, size=(SAMPLES, *shape)).astype(np.int8)


def _same_padding(size: int, k: int, s: int) -> tuple[int, int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def case_max_pool(rng):
    n, h, w, c = 1, int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 9))
    kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, size=4))
    same, act_code = bool(rng.random() < 0.5), int(rng.choice(list(ACTIVATIONS)))
    if same:
        (oh, top, bottom), (ow, left, right) = _same_padding(h, kh, sh), _same_padding(w, kw, sw)
    else:
        kh, kw = min(kh, h), min(kw, w)
        oh, ow, top, bottom, left, right = (h - kh) // sh + 1, (w - kw) // sw + 1, 0, 0, 0, 0
    qp = _qp(rng)
    opts = ("Pool2DOptions", {"Padding": 0 if same else 1, "StrideW": sw, "StrideH": sh, "FilterWidth": kw,
                              "FilterHeight": kh, "FusedActivationFunction": act_code})
    model = tb.Model([_t((n, h, w, c), qp), _t((n, oh, ow, c), qp)], [tb.Op("MAX_POOL_2D", [0], [1], opts)], [0], [1])
    g = one_op_graph("max_pool2d", [act("x", (n, h, w, c), *qp)], act("y", (n, oh, ow, c), *qp),
                     {"kernel": (kh, kw), "stride": (sh, sw), "padding": (top, bottom, left, right),
                      "clamp": ACTIVATIONS[act_code]})
    return model, g, [(n, h, w, c)]


def case_mean(rng):
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 12)), int(rng.integers(1, 12)), int(rng.integers(1, 17)))
    keep = bool(rng.random() < 0.5)
    qi, qo = _qp(rng), _qp(rng)
    out = (shape[0], 1, 1, shape[3]) if keep else (shape[0], shape[3])
    model = tb.Model([_t(shape, qi), _i32([1, 2]), _t(out, qo)],
                     [tb.Op("MEAN", [0, 1], [2], ("ReducerOptions", {"KeepDims": keep}))], [0], [2])
    g = one_op_graph("mean", [act("x", shape, *qi)], act("y", out, *qo), {"axes": (1, 2), "keepdims": keep})
    return model, g, [shape]


def case_mul(rng):
    full = (1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 9)))
    other = [full, (1, 1, 1, full[3]), (1, full[1], full[2], 1)][rng.integers(3)]
    sa, sb = (full, other) if rng.random() < 0.5 else (other, full)
    qa, qb, qo = _qp(rng), _qp(rng), _qp(rng)
    qo = (qa[0] * qb[0] * float(rng.uniform(20, 200)), qo[1])
    act_code = int(rng.choice(list(ACTIVATIONS)))
    model = tb.Model([_t(sa, qa), _t(sb, qb), _t(full, qo)],
                     [tb.Op("MUL", [0, 1], [2], ("MulOptions", {"FusedActivationFunction": act_code}))], [0, 1], [2])
    g = one_op_graph("mul", [act("a", sa, *qa), act("b", sb, *qb)], act("y", full, *qo),
                     {"clamp": ACTIVATIONS[act_code]})
    return model, g, [sa, sb]


def case_pad(rng):
    shape = (1, int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 5)))
    t, b, lft, r = (int(v) for v in rng.integers(0, 4, size=4))
    out = (1, shape[1] + t + b, shape[2] + lft + r, shape[3])
    qp = _qp(rng)
    model = tb.Model([_t(shape, qp), _i32([[0, 0], [t, b], [lft, r], [0, 0]]), _t(out, qp)],
                     [tb.Op("PAD", [0, 1], [2])], [0], [2])
    g = one_op_graph("pad", [act("x", shape, *qp)], act("y", out, *qp), {"padding": (t, b, lft, r)})
    return model, g, [shape]


def case_concat(rng):
    base = [1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 5))]
    axis = int(rng.integers(1, 4))
    qp = _qp(rng)
    shapes = []
    for _ in range(int(rng.integers(2, 4))):
        s = list(base)
        s[axis] = int(rng.integers(1, 5))
        shapes.append(tuple(s))
    out = list(base)
    out[axis] = sum(s[axis] for s in shapes)
    k = len(shapes)
    model = tb.Model([*(_t(s, qp) for s in shapes), _t(out, qp)],
                     [tb.Op("CONCATENATION", list(range(k)), [k], ("ConcatenationOptions", {"Axis": axis}))],
                     list(range(k)), [k])
    g = one_op_graph("concat", [act(f"x{i}", s, *qp) for i, s in enumerate(shapes)], act("y", out, *qp),
                     {"axis": axis})
    return model, g, shapes


def case_relu(rng):
    shape = tuple(int(d) for d in rng.integers(1, 6, size=int(rng.integers(1, 5))))
    six = bool(rng.random() < 0.4)
    qi = _qp(rng)
    qo = qi if six or rng.random() < 0.3 else _qp(rng)
    model = tb.Model([_t(shape, qi), _t(shape, qo)], [tb.Op("RELU6" if six else "RELU", [0], [1])], [0], [1])
    g = one_op_graph("relu", [act("x", shape, *qi)], act("y", shape, *qo), {"clamp": RELU6 if six else RELU})
    return model, g, [shape]


def case_quantize(rng):
    shape = tuple(int(d) for d in rng.integers(1, 6, size=int(rng.integers(1, 5))))
    qi, qo = _qp(rng), _qp(rng)
    model = tb.Model([_t(shape, qi), _t(shape, qo)], [tb.Op("QUANTIZE", [0], [1])], [0], [1])
    g = one_op_graph("quantize", [act("x", shape, *qi)], act("y", shape, *qo))
    return model, g, [shape]


def case_transpose(rng):
    rank = int(rng.integers(2, 5))
    shape = tuple(int(d) for d in rng.integers(1, 6, size=rank))
    perm = tuple(int(a) for a in rng.permutation(rank))
    out = tuple(shape[a] for a in perm)
    qp = _qp(rng)
    model = tb.Model([_t(shape, qp), _i32(perm), _t(out, qp)], [tb.Op("TRANSPOSE", [0, 1], [2])], [0], [2])
    g = one_op_graph("transpose", [act("x", shape, *qp)], act("y", out, *qp), {"perm": perm})
    return model, g, [shape]


BUILDERS = {
    "max_pool2d": case_max_pool,
    "mean": case_mean,
    "mul": case_mul,
    "pad": case_pad,
    "concat": case_concat,
    "relu": case_relu,
    "quantize": case_quantize,
    "transpose": case_transpose,
}


@pytest.mark.parametrize("op", list(BUILDERS))
def test_reference_equals_tflm(op):
    rng = np.random.default_rng(sum(map(ord, op)))
    varied = set()
    for k in range(CASES):
        model, g, shapes = BUILDERS[op](rng)
        inputs = [_samples(s, rng) for s in shapes]
        want = _run_tflm(tb.build(model), inputs)
        got = _run_ref(g, inputs)
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"{op} case {k}: {g.nodes[0].attrs}")
        varied.update(np.unique(want).tolist())
    assert len(varied) > 64  # the cases reach most of the int8 range
