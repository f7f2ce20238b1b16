"""The int8 kernels max_pool2d, mean, sum, concat, pad, mul, lut, relu, transpose and quantize:
NumPy reference == host C (>= 50 random one-op graphs per op, through codegen) == Cortex-M33 (50 per op, one
QEMU run), int8 within one quantization step of the real math, in-place runs, and clear errors."""
from __future__ import annotations

import ctypes
import math
import subprocess

import numpy as np
import pytest
from kernel_suite import Case, act, c_params, mismatches, one_op_graph, run_host, run_m33_suite, suite_sources

from tinyaot.codegen import generate_c
from tinyaot.errors import ModelError, TinyAOTError, UnsupportedOpError
from tinyaot.ir import Tensor
from tinyaot.ir.ops import RELU, RELU6
from tinyaot.quantize.scheme import activation_qparams
from tinyaot.ref import lut_s8
from tinyaot.ref.interpreter import KERNELS

N_HOST, S_HOST = 60, 6  # cases per op checked on the host, samples per case
N_M33, S_M33 = 50, 2
N_FLOAT, S_FLOAT = 60, 8
CLAMPS = [None, None, RELU, RELU6, (-1.0, 1.0), (-0.5, math.inf)]


# ---- random one-op graphs --------------------------------------------------------------------------------------
def _scale(rng) -> float:
    return float(10 ** rng.uniform(-2.5, 0.0))


def _zp(rng) -> int:
    return int(rng.integers(-128, 128))


def _qp_covering(lo: float, hi: float, rng) -> tuple[float, int]:
    """Output qparams for real results in [lo, hi], stretched or shrunk a little so some outputs saturate."""
    k = rng.uniform(0.6, 1.3)
    qp = activation_qparams(lo * k, hi * k)
    return qp.scale[0], qp.zero_point[0]


def _real_range(scale: float, zp: int) -> tuple[float, float]:
    return scale * (-128 - zp), scale * (127 - zp)


def _samples(shape, n: int, rng) -> np.ndarray:
    """Random int8 with about a tenth of the values at the extremes -128 / 127."""
    x = rng.integers(-128, 128, size=(n, *shape))
    edge = rng.random(x.shape) < 0.1
    x[edge] = rng.choice([-128, 127], size=int(edge.sum()))
    return x.astype(np.int8)


def _nhwc(rng, max_hw: int = 9, max_c: int = 8) -> tuple[int, int, int, int]:
    return (int(rng.integers(1, 3)), int(rng.integers(1, max_hw + 1)), int(rng.integers(1, max_hw + 1)),
            int(rng.integers(1, max_c + 1)))


def _shape(rng, rank: int) -> tuple[int, ...]:
    return tuple(int(rng.integers(1, 6)) for _ in range(rank))


def gen_max_pool2d(rng):
    while True:
        n, h, w, c = _nhwc(rng)
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        pad = (int(rng.integers(0, kh)), int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kw)))
        out_h, out_w = (h + pad[0] + pad[1] - kh) // sh + 1, (w + pad[2] + pad[3] - kw) // sw + 1
        if out_h >= 1 and out_w >= 1 and (out_h - 1) * sh - pad[0] < h and (out_w - 1) * sw - pad[2] < w:
            break
    s, z = _scale(rng), _zp(rng)
    attrs = {"kernel": (kh, kw) if rng.random() < 0.7 else kh, "stride": (sh, sw), "padding": pad,
             "clamp": CLAMPS[rng.integers(len(CLAMPS))]}
    if kh != kw and isinstance(attrs["kernel"], int):
        attrs["kernel"] = (kh, kw)
    return [act("x", (n, h, w, c), s, z)], act("y", (n, out_h, out_w, c), s, z), attrs


def gen_mean(rng):
    if rng.random() < 0.7:  # global average pooling over NHWC
        shape = _nhwc(rng, max_hw=12, max_c=16)
        axes = [(1, 2), (2, 1), (-3, -2)][rng.integers(3)]
    else:  # any run of consecutive axes, e.g. the last one
        shape = _shape(rng, int(rng.integers(1, 5)))
        first = int(rng.integers(len(shape)))
        axes = tuple(range(first, int(rng.integers(first, len(shape))) + 1))
    s, z = _scale(rng), _zp(rng)
    lo, hi = _real_range(s, z)
    os_, oz = _qp_covering(lo * rng.uniform(0.1, 1), hi * rng.uniform(0.1, 1), rng)
    keep = bool(rng.random() < 0.6)
    norm = {a % len(shape) for a in axes}
    out_shape = tuple(1 if i in norm else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in norm)
    return [act("x", shape, s, z)], act("y", out_shape, os_, oz), {"axes": axes, "keepdims": keep}


def gen_concat(rng):
    rank = int(rng.integers(2, 5))
    base = list(_shape(rng, rank))
    axis = rank - 1 if rng.random() < 0.6 else int(rng.integers(-rank, rank))
    k = int(rng.integers(2, 5))
    os_, oz = _scale(rng), _zp(rng)
    ins = []
    for i in range(k):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 6))
        if rng.random() < 0.4:
            s, z = os_, oz
        else:
            s, z = os_ * rng.uniform(0.3, 3), _zp(rng)
        ins.append(act(f"x{i}", shape, s, z))
    if rng.random() < 0.3:  # a constant input (a ViT's class token): int8 in flash with its own qparams
        t = ins[int(rng.integers(k))]
        data = rng.integers(-128, 128, size=t.shape).astype(np.int8)
        ins[ins.index(t)] = Tensor(t.name, t.shape, "int8", data=data, qparams=t.qparams)
    out_shape = list(base)
    out_shape[axis] = sum(t.shape[axis] for t in ins)
    return ins, act("y", out_shape, os_, oz), {"axis": axis}


def gen_pad(rng):
    n, h, w, c = _nhwc(rng)
    pad = tuple(int(v) for v in rng.integers(0, 4, size=4))
    s, z = _scale(rng), _zp(rng)
    out = (n, h + pad[0] + pad[1], w + pad[2] + pad[3], c)
    return [act("x", (n, h, w, c), s, z)], act("y", out, s, z), {"padding": pad}


def _mul_shapes(rng) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n, h, w, c = _nhwc(rng, max_hw=6)
    full = (n, h, w, c)
    kind = int(rng.integers(6))
    other = [full, (n, 1, 1, c), (1, 1, 1, c), (n, h, w, 1), (1,), (c,)][kind]
    if rng.random() < 0.15:
        full, other = (n, c * h), (1, c * h)
    return (full, other) if rng.random() < 0.5 else (other, full)


def gen_mul(rng):
    sa, sb = _mul_shapes(rng)
    a_s, a_z, b_s, b_z = _scale(rng), _zp(rng), _scale(rng), _zp(rng)
    corners = [x * y for x in _real_range(a_s, a_z) for y in _real_range(b_s, b_z)]
    os_, oz = _qp_covering(min(corners) * rng.uniform(0.05, 1), max(corners) * rng.uniform(0.05, 1), rng)
    a, b = act("a", sa, a_s, a_z), act("b", sb, b_s, b_z)
    if rng.random() < 0.2:  # one constant operand
        const = b if rng.random() < 0.5 else a
        const.data = _samples(const.shape, 1, rng)[0]
    if a.is_const and b.is_const:
        a.data = None
    out = act("y", np.broadcast_shapes(sa, sb), os_, oz)
    return [a, b], out, {"clamp": CLAMPS[rng.integers(len(CLAMPS))]}


def gen_lut(rng, function: str | None = None):
    function = function or sorted(lut_s8.FUNCTIONS)[rng.integers(len(lut_s8.FUNCTIONS))]
    shape = _shape(rng, int(rng.integers(1, 5)))
    s = float(10 ** rng.uniform(-2, -0.5))
    z = _zp(rng)
    real = lut_s8.FUNCTIONS[function](np.linspace(*_real_range(s, z), 256))
    os_, oz = _qp_covering(real.min(), real.max(), rng)
    attrs = {"function": function}
    if rng.random() < 0.2:
        attrs["clamp"] = (-0.25, 0.5)
    return [act("x", shape, s, z)], act("y", shape, os_, oz), attrs


def gen_relu(rng):
    shape = _shape(rng, int(rng.integers(1, 5)))
    s, z = _scale(rng), _zp(rng)
    if rng.random() < 0.5:
        os_, oz = s, z
    else:
        os_, oz = _qp_covering(0.0, _real_range(s, z)[1], rng)
    clamp = [RELU, RELU, RELU6, (-1.0, 2.0), (0.0, 0.5), (-math.inf, math.inf)][rng.integers(6)]
    return [act("x", shape, s, z)], act("y", shape, os_, oz), {"clamp": clamp}


def gen_transpose(rng):
    rank = int(rng.integers(1, 7))  # up to 6-D: the kernel runs the reduced permutation
    shape = _shape(rng, rank)
    perm = tuple(int(a) for a in rng.permutation(rank))
    s, z = _scale(rng), _zp(rng)
    return [act("x", shape, s, z)], act("y", tuple(shape[a] for a in perm), s, z), {"perm": perm}


def gen_quantize(rng):
    shape = _shape(rng, int(rng.integers(1, 5)))
    s, z = _scale(rng), _zp(rng)
    os_, oz = (s, _zp(rng)) if rng.random() < 0.2 else _qp_covering(*_real_range(s, z), rng)
    return [act("x", shape, s, z)], act("y", shape, os_, oz), {}


def gen_sum(rng):
    """The mean's kernel without 1 / count: a run of consecutive axes, an output scale covering part of the sum."""
    ins, out, attrs = gen_mean(rng)
    count = ins[0].size // out.size
    s, z = out.qparams.scale[0], out.qparams.zero_point[0]
    spread = float(rng.uniform(0.2, 1.0)) * np.sqrt(count)
    return ins, act("y", out.shape, s * spread, z), attrs


GENERATORS = {
    "max_pool2d": gen_max_pool2d,
    "mean": gen_mean,
    "concat": gen_concat,
    "pad": gen_pad,
    "mul": gen_mul,
    "lut": gen_lut,
    "relu": gen_relu,
    "transpose": gen_transpose,
    "quantize": gen_quantize,
    "sum": gen_sum,
}
SEEDS = {op: 1000 * (i + 1) for i, op in enumerate(GENERATORS)}


def make_case(op: str, k: int, n_samples: int) -> Case:
    rng = np.random.default_rng(SEEDS[op] + k)
    ins, out, attrs = GENERATORS[op](rng)
    g = one_op_graph(op, ins, out, attrs)
    samples = [_samples(g.tensor(t).shape, n_samples, rng) for t in g.inputs]
    return Case(f"{op}{k}", g, samples)


_CACHE: dict[tuple[str, int, int], list[Case]] = {}


def cases(op: str, n: int, n_samples: int) -> list[Case]:
    key = (op, n, n_samples)
    if key not in _CACHE:
        _CACHE[key] = [make_case(op, k, n_samples) for k in range(n)]
    return _CACHE[key]


# ---- reference == host C == Cortex-M33 ----------------------------------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("op", list(GENERATORS))
def test_reference_equals_host(op):
    cs = cases(op, N_HOST, S_HOST)
    got = run_host(cs)
    assert not mismatches(cs, got), f"{op}: host C differs from the NumPy reference"
    # The generated data must exercise the op: outputs vary across cases and samples.
    values = np.concatenate([o.reshape(-1) for o in got])
    assert len(np.unique(values)) > 100


@pytest.mark.m33
def test_reference_equals_m33(tmp_path):
    cs = [c for op in GENERATORS for c in cases(op, N_M33, S_M33)]
    got, result = run_m33_suite(cs, tmp_path / "suite")
    bad = mismatches(cs, got)
    assert not bad, "Cortex-M33 differs from the NumPy reference: " + "; ".join(bad[:10])
    assert result.instructions > 10_000  # every case ran


def test_every_op_is_registered():
    from tinyaot.codegen.ops import EMITTERS

    for op in GENERATORS:
        assert op in KERNELS and op in EMITTERS


# ---- int8 vs the real math ----------------------------------------------------------------------------------
def _deq(t: Tensor, q: np.ndarray) -> np.ndarray:
    return (q.astype(np.float64) - t.qparams.zero_point[0]) * t.qparams.scale[0]


def _max_pool_float(x: np.ndarray, a: dict) -> np.ndarray:
    kh, kw = a["kernel"] if isinstance(a["kernel"], tuple) else (a["kernel"],) * 2
    sh, sw = a["stride"]
    top, bottom, left, right = a["padding"]
    n, h, w, c = x.shape
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    y = np.empty((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * sh - top, j * sw - left
            win = x[:, max(y0, 0) : y0 + kh, max(x0, 0) : x0 + kw]
            y[:, i, j] = win.max(axis=(1, 2))
    return y


def _float_op(op: str, g, xs: list[np.ndarray]) -> np.ndarray:
    """The real-valued op on dequantized operands, before any clamp."""
    node = g.nodes[0]
    a = node.attrs
    if op == "max_pool2d":
        return _max_pool_float(xs[0], a)
    if op == "mean":
        return xs[0].mean(axis=tuple(a["axes"]))
    if op == "sum":
        return xs[0].sum(axis=tuple(a["axes"]))
    if op == "concat":
        return np.concatenate(xs, axis=a["axis"])
    if op == "pad":
        t, b, lft, r = a["padding"]
        return np.pad(xs[0], ((0, 0), (t, b), (lft, r), (0, 0)))
    if op == "mul":
        return xs[0] * xs[1]
    if op == "lut":
        return lut_s8.FUNCTIONS[a["function"]](xs[0])
    if op == "relu":
        return xs[0]
    if op == "transpose":
        return np.transpose(xs[0], a["perm"])
    return xs[0]


@pytest.mark.parametrize("op", list(GENERATORS))
def test_int8_within_one_step_of_real_math(op):
    worst = 0.0
    for case in cases(op, N_FLOAT, S_FLOAT):
        g = case.graph
        node, y = g.nodes[0], g.tensor(g.outputs[0])
        got = _deq(y, case.reference().reshape((case.n_samples, *y.shape)))
        operands = []
        for name in node.inputs:
            t = g.tensor(name)
            q = np.broadcast_to(t.data, (case.n_samples, *t.shape)) if t.is_const else \
                case.samples[g.inputs.index(name)]
            operands.append(_deq(t, q))
        want = np.stack([_float_op(op, g, [o[s] for o in operands]) for s in range(case.n_samples)])
        lo, hi = node.attrs.get("clamp") or (-math.inf, math.inf)
        rlo, rhi = _real_range(y.qparams.scale[0], y.qparams.zero_point[0])
        want = np.clip(np.clip(want, lo, hi), rlo, rhi).reshape(got.shape)
        err = np.abs(got - want).max() / y.qparams.scale[0]
        worst = max(worst, err)
        assert err <= 1.0 + 1e-6, f"{case.name}: int8 is {err:.3f} steps from the real result"
    if op in ("max_pool2d", "pad", "transpose"):
        assert worst <= 1.0  # pure byte moves; clamps are the only rounding


@pytest.mark.parametrize("function", sorted(lut_s8.FUNCTIONS))
def test_lut_tolerance_against_the_real_function(function):
    """From a real input: within 0.5 out_scale + L * 0.5 in_scale (the documented LUT tolerance)."""
    rng = np.random.default_rng(7)
    for k in range(8):
        ins, out, attrs = gen_lut(rng, function)
        g = one_op_graph("lut", ins, out, attrs)
        p = lut_s8.prepare(g.nodes[0], g)
        x_t, y_t = g.tensor("x"), g.tensor("y")
        lo, hi = _real_range(x_t.qparams.scale[0], x_t.qparams.zero_point[0])
        x = rng.uniform(lo, hi, size=2000)
        q = np.clip(np.sign(x / x_t.qparams.scale[0]) * np.floor(np.abs(x / x_t.qparams.scale[0]) + 0.5)
                    + x_t.qparams.zero_point[0], -128, 127).astype(np.int8)
        got = _deq(y_t, lut_s8.lut_s8(q, p))
        clamp = attrs.get("clamp") or (-math.inf, math.inf)
        want = np.clip(np.clip(lut_s8.FUNCTIONS[function](x), *clamp), *_real_range(y_t.qparams.scale[0],
                                                                                  y_t.qparams.zero_point[0]))
        tol = 0.5 * y_t.qparams.scale[0] + lut_s8.LIPSCHITZ[function] * 0.5 * x_t.qparams.scale[0]
        # the clamp bounds themselves are quantized to the nearest step
        tol += 0.5 * y_t.qparams.scale[0] if "clamp" in attrs else 0.0
        assert np.abs(got - want).max() <= tol * (1 + 1e-9), f"{function} case {k}"


def test_lut_lipschitz_bounds_hold():
    x = np.linspace(-12, 12, 200_001)
    for name, f in lut_s8.FUNCTIONS.items():
        slope = np.abs(np.diff(f(x)) / np.diff(x)).max()
        assert slope <= lut_s8.LIPSCHITZ[name] * (1 + 1e-9), name


def test_mean_folds_the_count_like_tflm():
    from tinyaot.ref.mean_s8 import fold_count

    # 49 values (7x7): shift by floor(log2 49) = 5, multiplier (m << 5) // 49
    assert fold_count(1 << 30, 0, 49) == (((1 << 30) << 5) // 49, -5)
    assert fold_count(1 << 30, 0, 1) == (1 << 30, 0)
    assert fold_count(1 << 30, -30, 4096) == (((1 << 30) << 1) // 4096, -31)  # capped at 31 + shift
    assert fold_count(1 << 30, 1, 2**40) == (((1 << 30) << 32) // 2**40, -31)  # capped at 32


# ---- in place ---------------------------------------------------------------------------------------------------
@pytest.mark.host
def test_elementwise_kernels_run_in_place():
    """relu, quantize, lut and mul give the same bytes when the output buffer is the input buffer."""
    from tinyaot.targets.host import build_shared_library

    ptr = ctypes.c_void_p
    unary = {"relu": "tinyaot_relu_s8", "quantize": "tinyaot_requantize_s8", "lut": "tinyaot_lut_s8"}
    checked = 0
    for op in ("relu", "quantize", "lut", "mul"):
        cs = cases(op, N_HOST, S_HOST)  # the host test's cases: same sources, so its library comes from the cache
        lib = ctypes.CDLL(str(build_shared_library(suite_sources(cs), "suite")))
        for case in cs:
            g = case.graph
            node = g.nodes[0]
            p = KERNELS[op][0](node, g)
            want = case.reference()
            params = ctypes.byref(c_params(p))  # the struct the generated C holds in flash
            for s in range(case.n_samples):
                buf = case.samples[0][s].copy().reshape(-1)
                io = buf.ctypes.data_as(ptr)
                if op == "mul":
                    a, b = (g.tensor(t) for t in node.inputs)
                    if a.is_const or b.is_const or tuple(a.shape) != tuple(g.tensor(node.outputs[0]).shape):
                        continue  # in place over a full-shape activation operand only
                    other = case.samples[1][s].copy().reshape(-1)
                    mul = lib.tinyaot_mul_broadcast_s8 if p.broadcast else lib.tinyaot_mul_s8
                    mul(io, other.ctypes.data_as(ptr), params, io)
                else:
                    getattr(lib, unary[op])(io, params, io)
                np.testing.assert_array_equal(buf, want[s], err_msg=f"{case.name} sample {s} in place")
                checked += 1
    assert checked > 150


# ---- the generated C is clean C99 for the Cortex-M33 too ---------------------------------------------------------
@pytest.mark.m33
def test_generated_c_is_pedantic_clean_for_cortex_m33(tmp_path):
    from tinyaot.targets.toolchain import find_m33_toolchain

    files: dict[str, str] = {}
    models = set()
    for op in GENERATORS:
        for case in cases(op, N_M33, S_M33)[:3]:
            files.update(generate_c(case.graph, case.plan, case.name).files)
            models.add(f"{case.name}.c")
    for fname, text in files.items():
        (tmp_path / fname).write_text(text)
    c_files = sorted(str(tmp_path / f) for f in files if f.endswith(".c"))
    kernels = [f for f in files if f.endswith(".c") and f not in models]
    assert len(models) == 3 * len(GENERATORS) and models <= set(files)  # one file per model
    assert len(GENERATORS) - 2 <= len(kernels) <= len(GENERATORS)  # one per kernel (sum and group_norm share)
    gcc = find_m33_toolchain().gcc
    proc = subprocess.run([str(gcc), "-mcpu=cortex-m33", "-mthumb", "-O2", "-std=c99", "-pedantic", "-Wall",
                           "-Wextra", "-Werror", "-Wconversion", "-fsyntax-only", f"-I{tmp_path}", *c_files],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


# ---- bad input gets a clear error ---------------------------------------------------------------------------------
def _prepare(op, ins, out, attrs):
    g = one_op_graph(op, ins, out, attrs)
    return KERNELS[op][0](g.nodes[0], g)


@pytest.mark.parametrize("op,ins,out,attrs,error,words", [
    ("max_pool2d", [act("x", (1, 4, 4, 2), 0.1, 0)], act("y", (1, 2, 2, 2), 0.2, 0), {"kernel": 2},
     ModelError, "quantize"),
    ("max_pool2d", [act("x", (1, 4, 4, 2), 0.1, 0)], act("y", (1, 3, 3, 2), 0.1, 0), {"kernel": 2},
     ModelError, "[1, 2, 2, 2]"),
    ("max_pool2d", [act("x", (1, 4, 4, 2), 0.1, 0)], act("y", (1, 3, 3, 2), 0.1, 0),
     {"kernel": 2, "padding": (2, 2, 0, 0)}, ModelError, "smaller than the kernel"),
    ("max_pool2d", [act("x", (4, 2), 0.1, 0)], act("y", (4, 2), 0.1, 0), {"kernel": 1}, UnsupportedOpError, "NHWC"),
    ("mean", [act("x", (1, 4, 4, 2), 0.1, 0)], act("y", (1, 1, 4, 1), 0.1, 0), {"axes": (1, 3), "keepdims": True},
     UnsupportedOpError, "consecutive axes"),
    ("relu", [act("x", (4,), 0.1, 0)], act("y", (4,), 0.1, 0), {}, ModelError, "(0.0, inf) for ReLU"),
    ("mean", [act("x", (1, 4, 4, 2), 0.1, 0)], act("y", (1, 2), 0.1, 0), {"axes": (1, 2), "keepdims": True},
     ModelError, "[1, 1, 1, 2]"),
    ("concat", [act("x0", (1, 2), 0.1, 0), act("x1", (2, 2), 0.1, 0)], act("y", (1, 4), 0.1, 0), {"axis": 1},
     ModelError, "all dims but"),
    ("pad", [act("x", (1, 2, 2, 1), 0.1, 0)], act("y", (1, 2, 2, 1), 0.1, 0), {"padding": (-1, 0, 0, 0)},
     ModelError, "negative"),
    ("mul", [act("a", (1, 3), 0.1, 0), act("b", (1, 4), 0.1, 0)], act("y", (1, 4), 0.1, 0), {},
     ModelError, "broadcast"),
    ("lut", [act("x", (4,), 0.1, 0)], act("y", (4,), 0.1, 0), {"function": "softplus"},
     UnsupportedOpError, "sigmoid"),
    ("transpose", [act("x", (2, 3), 0.1, 0)], act("y", (3, 2), 0.1, 0), {"perm": (0, 0)}, ModelError, "permutation"),
    ("quantize", [Tensor("x", (4,), "float32")], act("y", (4,), 0.1, 0), {}, UnsupportedOpError, "int8"),
])
def test_bad_graphs_get_clear_errors(op, ins, out, attrs, error, words):
    with pytest.raises(error) as info:
        _prepare(op, ins, out, attrs)
    assert isinstance(info.value, TinyAOTError)
    assert words in str(info.value)


# ---- a small CNN tail through the whole chain: CompiledModel on every engine -------------------------------------
def _chain_graph():
    """pad -> max_pool2d -> (relu | hardswish) -> concat -> squeeze-excitation (mean, sigmoid, mul) -> transpose
    -> quantize, qparams from the float ranges of random inputs (as calibration would choose them)."""
    from tinyaot.ir import Graph, Node

    rng = np.random.default_rng(11)
    x = rng.normal(0.0, 1.5, size=(200, 1, 9, 9, 3))
    f = {"x": x}
    f["p"] = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)))
    f["m"] = np.stack([_max_pool_float(s, {"kernel": 3, "stride": (2, 2), "padding": (0, 0, 0, 0)}) for s in f["p"]])
    f["r"] = np.maximum(f["m"], 0.0)
    f["h"] = lut_s8.FUNCTIONS["hardswish"](f["m"])
    f["c"] = np.concatenate([f["r"], f["h"]], axis=-1)
    f["g"] = f["c"].mean(axis=(2, 3), keepdims=True)
    f["s"] = lut_s8.FUNCTIONS["sigmoid"](f["g"])
    f["e"] = f["c"] * f["s"]
    f["t"] = np.transpose(f["e"], (0, 1, 4, 2, 3))
    f["q"] = f["t"]
    qp = {k: activation_qparams(float(v.min()), float(v.max())) for k, v in f.items()}
    for k in ("p", "m"):  # byte moves keep their input's qparams
        qp[k] = qp["x"]
    qp["t"] = qp["e"]
    qp["q"] = activation_qparams(float(f["q"].min()) * 0.7, float(f["q"].max()) * 0.7)
    t = {k: act(k, v.shape[1:], qp[k].scale[0], qp[k].zero_point[0]) for k, v in f.items()}
    nodes = [
        Node("pad", "pad", ["x"], ["p"], {"padding": (1, 1, 1, 1)}),
        Node("max_pool2d", "pool", ["p"], ["m"], {"kernel": 3, "stride": (2, 2), "padding": (0, 0, 0, 0)}),
        Node("relu", "relu", ["m"], ["r"], {"clamp": RELU}),
        Node("lut", "hswish", ["m"], ["h"], {"function": "hardswish"}),
        Node("concat", "cat", ["r", "h"], ["c"], {"axis": -1}),
        Node("mean", "squeeze", ["c"], ["g"], {"axes": (1, 2), "keepdims": True}),
        Node("lut", "gate", ["g"], ["s"], {"function": "sigmoid"}),
        Node("mul", "excite", ["c", "s"], ["e"], {}),
        Node("transpose", "to_nchw", ["e"], ["t"], {"perm": (0, 3, 1, 2)}),
        Node("quantize", "requant", ["t"], ["q"], {}),
    ]
    g = Graph(tensors=dict(t), nodes=nodes, inputs=["x"], outputs=["q"], layout="NHWC")
    return g, x[:, 0], f["q"][:, 0], qp


def _chain():
    from tinyaot.backend import plan
    from tinyaot.model import CompiledModel
    from tinyaot.quantize.scheme import quantize_array
    from tinyaot.result import CompileResult

    g, x, want, qp = _chain_graph()
    cm = CompiledModel(CompileResult("chain", g, plan(g), plan(g), float_graph=g))
    xq = quantize_array(x[:40], qp["x"])
    return cm, xq, cm.run(xq, engine="reference"), want, qp


def test_chain_reference_tracks_float():
    cm, xq, ref, want, qp = _chain()
    assert ref.shape == (40, 6, 5, 5) and len(np.unique(ref)) > 50
    # int8 tracks the float pipeline (a few steps: rounding compounds through nine ops, and saturates at 0.7x)
    out_range = _real_range(qp["q"].scale[0], qp["q"].zero_point[0])
    err = np.abs(cm.dequantize_output(ref) - np.clip(want[:40], *out_range))
    # seeded inputs, 6,000 outputs: median measured 0.69 steps, max 3.1
    assert np.median(err) <= qp["q"].scale[0] and err.max() <= 6 * qp["q"].scale[0]


@pytest.mark.host
def test_chain_runs_on_the_host():
    cm, xq, ref, *_ = _chain()
    np.testing.assert_array_equal(cm.run(xq, engine="host"), ref)


@pytest.mark.m33
def test_chain_runs_on_the_m33():
    cm, xq, ref, *_ = _chain()
    np.testing.assert_array_equal(cm.run(xq, engine="m33"), ref)
    assert cm.last_m33.instructions > 1_000
