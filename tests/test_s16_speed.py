"""The faster 16x8 kernels compute the same bytes: the C tinyaot_requantize_64 (32-bit halves, no 64-bit multiply
or variable 64-bit shift) equals its Python twin multiply_by_quantized_multiplier_64 on edge cases and many random
inputs; the depthwise kernel's fast paths (int32 sums from the bias, SMMLA requantization, the 3x3 assembly run
over a row's inner pixels) equal TFLM on layers chosen to reach each path and its edges (blocks of 16 channels and
what is left, shifts either side of the fast path's bound, biases beyond int32, clamps, strides, dilation); the
conv and fully connected kernels' speed-mode int16 weights (weights16) give the bytes the size mode's int8 ones
do; ADD / SUB / MUL's SMMLAR rescaling (and ADD's exact 1/2 input scale, one shift) equal TFLM at the extremes."""
from __future__ import annotations

import ctypes
import subprocess
from importlib import resources

import numpy as np
import pytest

from tinyaot.fixedpoint import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier_64

tb = pytest.importorskip("tflite_builder", reason="tests/tflite_builder.py (the .tflite writer) is missing")
from s16_suite import assert_matches_tflm, int16_samples, run_tflm, t16  # noqa: E402

import tinyaot  # noqa: E402

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
SHIFTS = range(-48, 15)  # every total shift 15 - shift in [1, 63]; TFLite's own shifts are -31..7

_C_SOURCE = """#include "tinyaot_fixedpoint.h"
void requantize_64_many(const int64_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        out[i] = tinyaot_requantize_64(x[i], m[i], s[i]);
    }
}
void requantize_64_int32_many(const int64_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        out[i] = tinyaot_requantize_64_int32((int32_t)x[i], m[i], s[i]);
    }
}
"""


@pytest.fixture(scope="module")
def c_requantize_64(tmp_path_factory):
    """The C twin compiled on the host, applied to whole arrays."""
    tmp = tmp_path_factory.mktemp("rq64")
    (tmp / "rq64.c").write_text(_C_SOURCE)
    inc = resources.files("tinyaot").joinpath("c", "include")
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{inc}",
                    str(tmp / "rq64.c"), "-o", str(tmp / "librq64.so")], check=True)
    lib = ctypes.CDLL(str(tmp / "librq64.so"))

    def run(x, m, s, int32=False):
        fn = lib.requantize_64_int32_many if int32 else lib.requantize_64_many
        x, m, s = (np.ascontiguousarray(np.broadcast_to(v, np.broadcast(x, m, s).shape), dt).ravel()
                   for v, dt in ((x, np.int64), (m, np.int32), (s, np.int32)))
        out = np.empty(len(x), np.int32)
        fn(*(a.ctypes.data_as(ctypes.c_void_p) for a in (x, m, s, out)), ctypes.c_int32(len(x)))
        return out

    return run


def _exact(x: int, m: int, s: int) -> int:
    """TFLite's 64-bit MultiplyByQuantizedMultiplier with Python integers (int64 wrap spelled out)."""
    reduced = 0x7FFF if m >= 0x7FFF0000 else (m + (1 << 15)) >> 16
    total = 15 - s
    p = (x * reduced + (1 << (total - 1))) % 2**64
    p -= 2**64 if p >= 2**63 else 0
    return (((p >> total) + 2**31) % 2**32) - 2**31


EDGE_X = [0, 1, -1, 2, -2, 3, -3, (1 << 15) - 1, -(1 << 15), (1 << 31) - 1, -(1 << 31), 1 << 31, -(1 << 31) - 1,
          (1 << 32) - 1, 1 << 32, -(1 << 32), (1 << 46) - 1, -(1 << 46), (1 << 47) - 1, -(1 << 47) + 1,
          INT64_MAX, INT64_MIN, INT64_MIN + 1]
EDGE_M = [0, 1, 1 << 15, (1 << 15) - 1, 1 << 16, (1 << 30), 1518500250, 0x7FFE7FFF, 0x7FFE8000, 0x7FFEFFFF,
          0x7FFF0000, 0x7FFF7FFF, 0x7FFF8000, INT32_MAX, -1, -(1 << 15), -(1 << 15) - 1, -(1 << 30), INT32_MIN]


def test_python_twin_equals_python_integers():
    rng = np.random.default_rng(1)
    for _ in range(300):
        x = int(rng.integers(-(2**47), 2**47))
        m = int(rng.integers(0, 2**31))
        s = int(rng.integers(-31, 8))
        assert int(multiply_by_quantized_multiplier_64(x, m, s)) == _exact(x, m, s), (x, m, s)


@pytest.mark.host
def test_requantize_64_c_equals_python_on_edge_cases(c_requantize_64):
    x, m, s = (a.ravel() for a in np.meshgrid(np.array(EDGE_X, dtype=object), EDGE_M, list(SHIFTS), indexing="ij"))
    x = x.astype(np.int64)
    got = c_requantize_64(x, m.astype(np.int64), s.astype(np.int64))
    want = multiply_by_quantized_multiplier_64(x, m.astype(np.int64), s.astype(np.int64))
    np.testing.assert_array_equal(got, want)
    for i in range(0, len(x), 97):  # and the spelled-out integers on a sample
        assert got[i] == _exact(int(x[i]), int(m[i]), int(s[i]))


@pytest.mark.host
@pytest.mark.parametrize("x_bits", [16, 32, 47, 64])
def test_requantize_64_c_equals_python_random(c_requantize_64, x_bits):
    """Accumulators of every size (|x| < 2^x_bits; 64: any int64, where both wrap), multipliers of every sign and
    size, every total shift; TFLite's ranges (multiplier >= 0, shift -31..7) on half of them."""
    rng = np.random.default_rng(x_bits)
    n = 200_000
    x = rng.integers(-(2 ** (x_bits - 1)), 2 ** (x_bits - 1) - 1, size=n, dtype=np.int64, endpoint=True)
    m = rng.integers(INT32_MIN, INT32_MAX, size=n, dtype=np.int64, endpoint=True)
    s = rng.integers(SHIFTS.start, SHIFTS.stop, size=n, dtype=np.int64)
    tflite = slice(0, n // 2)
    m[tflite] = np.abs(m[tflite]) % 2**31
    s[tflite] = rng.integers(-31, 8, size=n // 2)
    np.testing.assert_array_equal(c_requantize_64(x, m, s), multiply_by_quantized_multiplier_64(x, m, s))


@pytest.mark.host
def test_requantize_64_int32_c_equals_python(c_requantize_64):
    """The int32-accumulator form (SMMLA for shifts -31..-2, the general form otherwise; the host compiles its
    portable twin, the M33 kernel tests its SMMLA) over every shift, edge and random int32 x and multipliers."""
    rng = np.random.default_rng(32)
    n = 200_000
    x = np.concatenate([rng.integers(INT32_MIN, INT32_MAX, size=n, dtype=np.int64, endpoint=True),
                        np.tile(np.array([0, 1, -1, INT32_MAX, INT32_MIN, 1 << 30, -(1 << 30)], np.int64), 700)])
    m = rng.integers(INT32_MIN, INT32_MAX, size=len(x), dtype=np.int64, endpoint=True)
    m[: len(x) // 2] = np.abs(m[: len(x) // 2]) % 2**31
    m[::13] = rng.choice(np.array(EDGE_M, np.int64), size=len(m[::13]))
    s = rng.integers(-48, 15, size=len(x), dtype=np.int64)
    np.testing.assert_array_equal(c_requantize_64(x, m, s, int32=True), multiply_by_quantized_multiplier_64(x, m, s))


@pytest.mark.host
def test_requantize_64_c_rounds_halves_up(c_requantize_64):
    """x * r exactly half way between two outputs rounds up (toward +inf), for both signs and every shift that
    leaves x * r + the rounding term inside int64."""
    rows = []
    for s in range(-40, 15):
        total = 15 - s
        for q in (-5, -1, 0, 1, 4):
            for delta in (-1, 0, 1):  # reduced 1: x = (q + 1/2) * 2^total + delta
                x = (2 * q + 1) * (1 << (total - 1)) + delta
                rows.append((x, 1 << 16, s, q + (delta >= 0)))
    x, m, s, want = (np.array(c, dtype=np.int64) for c in zip(*rows))
    np.testing.assert_array_equal(c_requantize_64(x, m, s), want)


# Depthwise layers: (channels, size, kernel, stride, dilation, activation, real multipliers, bias). "fast": every
# channel's in_scale * w_scale / out_scale below 1/4 (shift <= -2); "mixed": one channel of each block at 0.3 (shift
# -1: its block takes the general path); bias "small", "edge" (near the int32 limit the fast path accepts) or
# "wide" (2^38 in one channel: beyond int32).
DW_LAYERS = {
    "16ch-3x3-relu6": (16, 7, 3, 1, 1, 3, "fast", "small"),
    "36ch-blocks": (36, 6, 3, 1, 1, 0, "fast", "small"),
    "20ch-tail-of-4": (20, 5, 3, 1, 1, 1, "fast", "edge"),
    "18ch-tail-of-2": (18, 5, 3, 1, 1, 0, "fast", "small"),
    "stride2": (16, 9, 3, 2, 1, 0, "fast", "small"),
    "dilated-rows": (8, 8, 3, 1, (2, 1), 2, "fast", "small"),
    "dilated-cols": (8, 8, 3, 1, (1, 2), 0, "fast", "small"),
    "5x5": (8, 7, 5, 1, 1, 0, "fast", "small"),
    "2x2": (12, 6, 2, 1, 1, 0, "fast", "small"),
    "1x1-stride2": (8, 5, 1, 2, 1, 1, "fast", "small"),
    "shift-minus-one": (16, 5, 3, 1, 1, 0, "mixed", "small"),
    "bias-beyond-int32": (16, 5, 3, 1, 1, 0, "fast", "wide"),
}


def _dw_layer(channels, size, kernel, stride, dilation, act, mults, bias, seed=0):
    """A 16x8 DEPTHWISE_CONV_2D, SAME padding, depth multiplier 1; inputs: random, then the two extremes matched
    to the weights' signs (the largest sums of either sign)."""
    rng = np.random.default_rng(seed)
    dh, dw = dilation if isinstance(dilation, tuple) else (dilation, dilation)
    s_in, s_out = 2e-4, 2e-3
    real = np.exp2(rng.uniform(-13, -2.1, channels))
    if mults == "mixed":
        real[::16] = 0.3
    w = rng.integers(-127, 128, size=(1, kernel, kernel, channels)).astype(np.int8)
    w_scales = [float(np.float32(r * s_out / s_in)) for r in real]
    b = np.round(rng.normal(0, 3e5, channels)).astype(np.int64)
    if bias == "edge":
        b[: channels // 2] = np.where(np.arange(channels // 2) % 2, 1, -1) * (2**31 - 1 - kernel * kernel * 2**22)
    if bias == "wide":
        b[1] = 2**38
    out = (size + stride - 1) // stride
    opts = {"Padding": 0, "StrideW": stride, "StrideH": stride, "DilationWFactor": dw, "DilationHFactor": dh,
            "FusedActivationFunction": act, "DepthMultiplier": 1}
    tensors = [t16((1, size, size, channels), s_in), tb.T(w.shape, data=w, scale=w_scales, axis=3),
               t16((1, out, out, channels), s_out),
               tb.T((channels,), "int64", data=b, scale=[s_in * s for s in w_scales])]
    m = tb.Model(tensors, [tb.Op("DEPTHWISE_CONV_2D", [0, 1, 3], [2], ("DepthwiseConv2DOptions", opts), 6)], [0], [2])
    signs = np.where(w[0, kernel // 2, kernel // 2] >= 0, 1, -1)
    peak = np.broadcast_to(signs, (1, 1, size, size, channels))
    x = np.concatenate([int16_samples((1, size, size, channels), 2, rng),
                        np.where(peak > 0, 32767, -32768).astype(np.int16),
                        np.where(peak > 0, -32768, 32767).astype(np.int16)])
    return m, x


@pytest.mark.host
@pytest.mark.parametrize("layer", list(DW_LAYERS))
def test_depthwise_fast_paths_equal_tflm_on_the_host(layer):
    m, x = _dw_layer(*DW_LAYERS[layer])
    assert_matches_tflm(m, [x], engines=("reference", "host"))


@pytest.mark.m33
def test_depthwise_fast_paths_equal_tflm_on_the_m33():
    """The M33 build: the assembly runs (a row's whole windows in one, each border window's shape in its own;
    kernels up to 3 x 3), the C groups of four for the other windows, and the general path."""
    for layer in DW_LAYERS:
        m, x = _dw_layer(*DW_LAYERS[layer])
        cm = assert_matches_tflm(m, [x], engines=("m33",))
        assert cm.last_m33.instructions > 0, layer


def _fc_layer(in_f, out_f, batches, bias, seed=0):
    """A 16x8 FULLY_CONNECTED with an int64 or int32 bias; inputs random, then the extremes matched to row 0."""
    rng = np.random.default_rng(seed)
    s_in, s_out = 3e-4, 0.3
    w = rng.integers(-127, 128, size=(out_f, in_f)).astype(np.int8)
    w_scales = [float(np.float32(v)) for v in 10 ** rng.uniform(-3, -1.5, out_f)]
    b = rng.integers(-(2**24), 2**24, out_f).astype(bias)
    tensors = [t16((1, batches, in_f), s_in), tb.T((out_f, in_f), data=w, scale=w_scales, zero_point=[0] * out_f),
               tb.T((out_f,), bias, data=b, scale=[s_in * s for s in w_scales], zero_point=[0] * out_f),
               t16((1, batches, out_f), s_out)]
    m = tb.Model(tensors, [tb.Op("FULLY_CONNECTED", [0, 1, 2], [3], ("FullyConnectedOptions",
                                                                     {"FusedActivationFunction": 1}))], [0], [3])
    peak = np.where(w[0] >= 0, 32767, -32768).astype(np.int16)
    x = np.concatenate([int16_samples((1, batches, in_f), 2, rng), np.broadcast_to(peak, (1, 1, batches, in_f))])
    return m, x


# (in_features, out_features, batches, bias): word-aligned rows, odd rows (a later batch row starts at 2 mod 4),
# rows longer than one int32 chunk (508), a tail of inputs and of output rows.
FC_LAYERS = {"aligned": (64, 12, 1, "int64"), "odd-rows": (37, 9, 3, "int64"), "long": (1030, 5, 1, "int64"),
             "int32-bias": (40, 8, 2, "int32")}


def _conv_layer(c_in, c_out, size, kernel, groups, dilation, bias, seed=0):
    """A 16x8 CONV_2D, SAME padding, RELU6; inputs random, then the extremes matched to output channel 0."""
    rng = np.random.default_rng(seed)
    s_in, s_out = 2e-4, 0.05
    w = rng.integers(-127, 128, size=(c_out, kernel, kernel, c_in // groups)).astype(np.int8)
    w_scales = [float(np.float32(v)) for v in 10 ** rng.uniform(-3, -1.5, c_out)]
    b = rng.integers(-(2**24), 2**24, c_out).astype(bias)
    opts = {"Padding": 0, "StrideW": 1, "StrideH": 1, "DilationWFactor": dilation, "DilationHFactor": dilation,
            "FusedActivationFunction": 3}
    tensors = [t16((1, size, size, c_in), s_in), tb.T(w.shape, data=w, scale=w_scales, axis=0),
               t16((1, size, size, c_out), s_out), tb.T((c_out,), bias, data=b, scale=[s_in * s for s in w_scales])]
    m = tb.Model(tensors, [tb.Op("CONV_2D", [0, 1, 3], [2], ("Conv2DOptions", opts), 8)], [0], [2])
    peak = np.where(w[0, kernel // 2, kernel // 2] >= 0, 32767, -32768).astype(np.int16)
    x = np.concatenate([int16_samples((1, size, size, c_in), 2, rng),
                        np.broadcast_to(np.tile(peak, groups), (1, 1, size, size, c_in))])
    return m, x


# conv: (c_in, c_out, size, kernel, groups, dilation, bias): runs of 3 x 30 values (a tail of 2) and two channels
# past the groups of four; grouped and dilated (one run per tap); int32 sums; windows of 5 x 5 x 24 = 600 values
# (more than one exact piece of 508: summed row by row).
CONV_LAYERS = {"runs": (10, 6, 6, 3, 1, 1, "int64"), "grouped-dilated": (8, 12, 7, 3, 2, 2, "int64"),
               "int32-bias": (10, 8, 5, 3, 1, 1, "int32"), "long-window": (24, 4, 5, 5, 1, 1, "int64")}


def _speed_and_size(layers, build, engine, tag):
    """Each layer compiled in speed mode (weights16 emitted) and size mode (NULL): both equal TFLM."""
    for layer, args in layers.items():
        m, x = build(*args)
        buf = tb.build(m)
        want = run_tflm(buf, [x])
        for optimize in ("speed", "size"):
            cm = tinyaot.compile(buf, name=tag, optimize=optimize)
            source = "\n".join(cm.c_sources.files.values())
            assert ("_weights16[" in source) == (optimize == "speed"), (layer, optimize)
            got = np.asarray(cm.run(x, engine=engine)).reshape(want.shape)
            np.testing.assert_array_equal(got, want, err_msg=f"{layer} {optimize} {engine}")


@pytest.mark.parametrize("engine", [pytest.param("host", marks=pytest.mark.host),
                                    pytest.param("m33", marks=pytest.mark.m33)])
def test_fully_connected_speed_and_size_modes_equal_tflm(engine):
    """Speed mode passes weights16 (the M33 kernel's SMLAD path on them), size mode NULL (the kernel widens the
    int8 weights itself)."""
    _speed_and_size(FC_LAYERS, _fc_layer, engine, "fc16")


@pytest.mark.parametrize("engine", [pytest.param("host", marks=pytest.mark.host),
                                    pytest.param("m33", marks=pytest.mark.m33)])
def test_conv2d_speed_and_size_modes_equal_tflm(engine):
    _speed_and_size(CONV_LAYERS, _conv_layer, engine, "conv16")


_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}
# (code, scale a, scale b, scale out, activation, b's shape): equal input scales (both scale by exactly 1/2),
# either one the larger (one exact, one SMMLAR), a broadcast channel vector, RELU; MUL with products up to 2^30.
ELEMENTWISE = [("ADD", 1e-3, 1e-3, 2e-3, 0, None), ("ADD", 1e-3, 3e-4, 1.5e-3, 1, None),
               ("SUB", 3e-4, 1e-3, 1.5e-3, 0, None), ("SUB", 2e-4, 2e-4, 1e-4 * 3.1, 3, (1, 1, 5, 1)),
               ("ADD", 7e-4, 1e-4, 7e-4, 0, (1, 1, 1, 16)), ("MUL", 1e-3, 1e-3, 2e-3, 0, None),
               ("MUL", 2e-4, 3e-3, 1e-3, 1, (1, 4, 1, 16)), ("MUL", 1e-2, 1e-2, 3.3, 0, None)]


def _elementwise(code, sa, sb, so, act, b_shape):
    shape = (1, 4, 5, 16)
    b_shape = b_shape or shape
    tensors = [t16(shape, sa), t16(b_shape, sb), t16(shape, so)]
    m = tb.Model(tensors, [tb.Op(code, [0, 1], [2], (_OPTIONS[code], {"FusedActivationFunction": act}))], [0, 1], [2])
    rng = np.random.default_rng(5)
    edges = np.array([-32768, -32767, -1, 0, 1, 32766, 32767], np.int16)
    a = np.concatenate([int16_samples(shape, 2, rng), rng.choice(edges, size=(2, *shape)).astype(np.int16)])
    b = np.concatenate([int16_samples(b_shape, 2, rng), rng.choice(edges, size=(2, *b_shape)).astype(np.int16)])
    b[-1] = -32768  # with a = -32768 somewhere: MUL's product 2^30
    return m, [a, b]


@pytest.mark.m33
def test_elementwise_dsp_paths_equal_tflm_on_the_m33():
    for case in ELEMENTWISE:
        m, xs = _elementwise(*case)
        assert_matches_tflm(m, xs, engines=("m33",))
