"""The fast kernels' per-channel requantization (ref/per_channel.py fast_requant): each of its three forms against
TFLM's MultiplyByQuantizedMultiplier (tinyaot/fixedpoint.py, itself tested against TFLM's definition) on edge
values and random ones, the C twin of the fast form with right 0, which channels a layer's forms take and why
not, and the accumulator bounds from the input's reachable values."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from kernel_suite import act, fixedpoint_library, one_op_graph

from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Node, QParams, Tensor
from tinyaot.ir.ops import RELU
from tinyaot.ref.per_channel import (
    ACC_LIMIT,
    CONSTANT_MULTIPLIER,
    CONSTANT_REACH,
    CONSTANT_RIGHT,
    accumulator_bounds,
    fast_requant,
    input_range,
)

RNG = np.random.default_rng(2024)


def fast_form(a, m, right) -> np.ndarray:
    """The kernels' one rounding step for the accumulator they hold (ref/per_channel.py F; tinyaot_requantize_right,
    and the in-register SMMLAR with k): (floor((2a m + 2^31) / 2^32) + floor(2^right / 2) - (a < 0)) >> right."""
    a, m, right = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (a, m, right)))
    high = (2 * a * m + (1 << 31)) >> 32
    return (high + ((np.int64(1) << right) >> 1) - (a < 0)) >> right


def _edges(limit: int) -> np.ndarray:
    """0, +-1, +-2, both ends of (-limit, limit) and their neighbours, powers of two, and random values."""
    pows = np.array([1 << k for k in range(30) if (1 << k) < limit], dtype=np.int64)
    ends = np.array([0, 1, 2, 3, limit - 1, limit - 2, limit // 2, limit // 2 + 1, limit // 3], dtype=np.int64)
    rand = RNG.integers(-limit + 1, limit, size=20_000)
    small = RNG.integers(-5000, 5000, size=5_000)
    v = np.concatenate([ends, pows, pows - 1, pows + 1, rand, small])
    v = v[np.abs(v) < limit]
    return np.concatenate([v, -v])


MULTIPLIERS = np.concatenate([[1 << 30, (1 << 30) + 1, (1 << 31) - 1, (1 << 31) - 2, 3 << 29],
                              RNG.integers(1 << 30, 1 << 31, size=24)]).astype(np.int64)


@pytest.mark.parametrize("left", range(9))
def test_zero_and_left_shifts_take_the_fast_form_exactly_where_the_clamp_allows(left):
    """Form 2: with the accumulator scaled by 2^left and right 0, the fast form is TFLM's result for acc >= 0 and
    one lower for acc < 0, where TFLM's is <= 0: so a clamp with act_min >= zero point gives the same byte."""
    acc = _edges(ACC_LIMIT >> left)
    for m in MULTIPLIERS:
        want = multiply_by_quantized_multiplier(acc, m, left)
        got = fast_form(acc << left, m, 0)
        neg = acc < 0
        np.testing.assert_array_equal(got[~neg], want[~neg])
        np.testing.assert_array_equal(got[neg], want[neg] - 1)
        assert (want[neg] <= 0).all()
        for zp in (-128, -5, 0, 37, 127):
            act_min = max(zp, -128)
            np.testing.assert_array_equal(np.clip(got + zp, act_min, 127), np.clip(want + zp, act_min, 127))
    ties = np.arange(-2001, 2002, 2)  # odd accumulators with multiplier 2^30 (0.5): exact halves before rounding
    np.testing.assert_array_equal(fast_form(ties[ties > 0], 1 << 30, 0),
                                  multiply_by_quantized_multiplier(ties[ties > 0], 1 << 30, 0))


def test_right_shifts_take_the_fast_form_exactly_below_the_bound():
    """Form 1 (the kernels' original one), in this test's model of the fast form: TFLM's double rounding."""
    acc = _edges(ACC_LIMIT)
    for right in (1, 2, 7, 13, 22, 31):
        for m in MULTIPLIERS[:8]:
            np.testing.assert_array_equal(fast_form(acc, m, right), multiply_by_quantized_multiplier(acc, m, -right))


def test_a_constant_channel_takes_4v_multiplier_2_30_and_right_1():
    """Form 3: F(4v, 2^30, 1) = v for every v the kernels are given, and clipping v to +-256 saturates the int8
    output exactly as v does, for every zero point and clamp."""
    v = np.arange(-CONSTANT_REACH, CONSTANT_REACH + 1)
    np.testing.assert_array_equal(fast_form(4 * v, CONSTANT_MULTIPLIER, CONSTANT_RIGHT), v)
    wide = np.concatenate([np.arange(-3000, 3000), [-(2**31), 2**31 - 1, -(2**20), 2**20]])
    clipped = np.clip(wide, -CONSTANT_REACH, CONSTANT_REACH)
    for zp in range(-128, 128, 5):
        for lo, hi in ((-128, 127), (zp, 127), (max(zp, -120), min(zp + 40, 127))):
            np.testing.assert_array_equal(np.clip(clipped + zp, lo, hi), np.clip(wide + zp, lo, hi))


@pytest.mark.host
def test_the_c_fast_form_takes_right_0(tmp_path):
    """tinyaot_requantize_right (the C the kernels' scalar paths call) == this test's fast form for right 0..31 on
    the accumulators the plan allows, right 0 included (TFLM's zero shift for x >= 0, one lower below)."""
    import ctypes

    lib = fixedpoint_library(tmp_path, "void run(const int32_t *x, const int32_t *m, const int32_t *r, int32_t *out, "
                             "int n) {\n    int i;\n    for (i = 0; i < n; ++i) { out[i] = "
                             "tinyaot_requantize_right(x[i], m[i], r[i]); }\n}\n")
    x = _edges(ACC_LIMIT)
    n = len(x)
    r = np.where(RNG.random(n) < 0.5, 0, RNG.integers(1, 32, size=n))
    m = RNG.choice(MULTIPLIERS, size=n)
    arrays = [np.ascontiguousarray(a, dtype=np.int32) for a in (x, m, r)]
    out = np.zeros(n, np.int32)
    ptr = ctypes.POINTER(ctypes.c_int32)
    lib.run.argtypes = [ptr, ptr, ptr, ptr, ctypes.c_int]
    lib.run(*(a.ctypes.data_as(ptr) for a in (*arrays, out)), n)
    np.testing.assert_array_equal(out, fast_form(x, m, r))
    zero = r == 0
    want = multiply_by_quantized_multiplier(x[zero], m[zero], 0)
    np.testing.assert_array_equal(out[zero], want - (x[zero] < 0))


def _params(w, bias, multiplier, shift, act_min=-128, zp=0, offset=0):
    return SimpleNamespace(weights=np.asarray(w, np.int8), bias=np.asarray(bias, np.int64),
                           multiplier=np.asarray(multiplier, np.int32), shift=np.asarray(shift, np.int32),
                           input_offset=offset, output_offset=zp, act_min=act_min, act_max=127)


def test_each_channel_takes_its_form_and_constant_channels_get_their_output():
    w = np.array([[1, -2, 3], [0, 0, 0], [0, 0, 0], [5, 5, -5], [2, 1, 0], [1, 1, 1]])
    bias = [100, 2**30 + 17, -(2**30), -7, 3, 40]
    multiplier = [1 << 30, 1_500_000_000, 0, 1_900_000_000, 0, 1_200_000_000]
    shift = [-3, -27, 0, 0, 0, 2]
    fast = fast_requant(_params(w, bias, multiplier, shift, act_min=-20, zp=-20), (-128, 127), max_left=7)
    assert not isinstance(fast, str), fast
    assert fast.constant.tolist() == [False, True, True, False, True, False]
    assert fast.right.tolist() == [3, 1, 1, 0, 1, 0] and fast.left.tolist() == [0, 0, 0, 0, 0, 2]
    v1 = int(multiply_by_quantized_multiplier(2**30 + 17, 1_500_000_000, -27))
    assert fast.bias.tolist() == [100, 4 * v1, 0, -7, 0, 40]
    assert fast.weights(w)[[1, 2, 4]].tolist() == [[0, 0, 0]] * 3 and fast.weights(w)[5].tolist() == [4, 4, 4]
    assert fast.note == "3 constant channels (zero weights or multiplier 0); 2 channels with a zero or left shift"
    size = fast_requant(_params(w, bias, multiplier, shift, act_min=-20, zp=-20), (-128, 127), max_left=0)
    assert size == ("1 of 6 channels cannot take the fast requantization: channel 5 shift left by more than the 0 "
                    "this variant's weights allow")


def test_a_layer_names_every_channel_no_form_takes():
    w = np.full((12, 4), 3)
    bias = [0] * 10 + [2**30 - 100, 0]
    shift = [-30, -25, 0, 0, 1, -5, -5, -5, -5, -5, -5, -5]
    why = fast_requant(_params(w, bias, [1 << 30] * 12, shift, act_min=-128, zp=10), (-128, 127), max_left=7)
    assert why == ("6 of 12 channels cannot take the fast requantization: channels 0, 1 shift right by more than "
                   "the fast kernels' 22; channel 10 may reach 2^30 in the accumulator over the input's values "
                   "(times 2^L for a left shift L); channels 2, 3, 4 have a zero or left shift and negative "
                   "accumulators without a clamp at the zero point (the fast rounding is one lower there)")
    nonneg = fast_requant(_params(w[2:5], [5, 5, 5], [1 << 30] * 3, [0, 0, 1], zp=10), (0, 127), max_left=7)
    assert not isinstance(nonneg, str) and nonneg.right.tolist() == [0, 0, 0]  # no negative accumulator: exact


def test_accumulator_bounds_are_reached_and_never_passed():
    w = RNG.integers(-128, 128, size=(6, 40))
    bias = RNG.integers(-5000, 5000, size=6)
    for x_range, offset in (((-128, 127), 128), ((-128, 127), -3), ((-128, -100), 128), ((5, 60), -50)):
        lo, hi = accumulator_bounds(w, bias, x_range, offset)
        a, b = min(0, x_range[0] + offset), max(0, x_range[1] + offset)
        np.testing.assert_array_equal(hi, bias + (np.where(w > 0, b, a) * w).sum(axis=1))  # reached
        np.testing.assert_array_equal(lo, bias + (np.where(w > 0, a, b) * w).sum(axis=1))
        taps = RNG.integers(x_range[0], x_range[1] + 1, size=(500, 40)) + offset
        taps[RNG.random(taps.shape) < 0.1] = 0  # taps outside the image
        acc = bias[None, :] + taps @ w.T
        assert (acc >= lo).all() and (acc <= hi).all()
        old = np.abs(bias) + 255 * np.abs(w).sum(axis=1)  # the bound the fast kernels used before
        assert (np.maximum(-lo, hi) <= old).all()


def test_the_input_range_is_the_producers_clamp_through_views():
    x = act("x", (1, 4, 4, 8), 0.05, -128)
    mid = act("mid", (1, 4, 4, 8), 0.02, -128)
    w = Tensor("w", (8, 1, 1, 8), "int8", data=np.ones((8, 1, 1, 8), np.int8), qparams=QParams((0.01,) * 8, (0,) * 8))
    b = Tensor("b", (8,), "int32", data=np.zeros(8, np.int32), qparams=QParams((0.0005,) * 8, (0,) * 8))
    attrs = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "clamp": (0.0, 1.0)}
    g = one_op_graph("conv2d", [x, w, b], mid, attrs)
    flat = act("flat", (1, 128), 0.02, -128)
    g.add_tensor(flat)
    g.nodes.append(Node("reshape", "reshape_1", ["mid"], ["flat"], {}))
    assert input_range(g, "x") == (-128, 127)  # a model input
    assert input_range(g, "mid") == (-128, -128 + 50)  # ReLU1 at scale 0.02: 50 steps above the zero point
    assert input_range(g, "flat") == (-128, -78)  # a view's bytes are its input's
    g.nodes[0] = g.nodes[0].with_attrs(clamp=RELU)
    assert input_range(g, "flat") == (-128, 127)
