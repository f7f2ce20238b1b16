"""softmax_s8: int8 softmax over the last axis, TFLite Micro's reference (gemmlowp fixed-point) path.

Prepare is TFLM's CalculateSoftmaxParams for int8: PreprocessSoftmaxScaling turns beta * input_scale
into a Q31 multiplier and left shift for Q5.26 differences, and CalculateInputRadius gives diff_min,
below which exp() counts as 0. The kernel evaluates exp with gemmlowp's exp_on_negative_values,
sums in Q12.19, takes the reciprocal with one_over_one_plus_x_for_x_in_0_1 and writes int8 with
scale 1/256 and zero point -128, or (TFLM's int8 -> int16 softmax, the same template with an int16 output type)
int16 with scale 1/65536 and zero point -32768. The fixed-point helpers below are the gemmlowp primitives on int32
(held in int64 arrays); softmax_s8.c has their C twins.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_i32,
)
from tinyaot.ir import Graph, Node

SCALED_DIFF_INTEGER_BITS = 5  # exp() input is Q5.26
ACCUMULATION_INTEGER_BITS = 12  # sum of exps is Q12.19
OUTPUT_SCALE = 1.0 / 256.0
OUTPUT_ZERO_POINT = -128
INT16_OUTPUT_SCALE = 1.0 / 65536.0  # TFLM: within 0.001 / 65536 (TF_LITE_ENSURE_NEAR, in float32)
INT16_OUTPUT_ZERO_POINT = -32768


@dataclass(frozen=True)
class SoftmaxParams:
    outer: int  # rows
    depth: int  # classes per row
    input_multiplier: int  # Q31 of beta * input_scale * 2**26 (capped)
    input_left_shift: int  # >= 0
    diff_min: int  # input differences below this contribute exp() = 0
    output_bits: int = 8  # 8: int8 output; 16: int16 (TFLM's int8 -> int16 softmax)


def check_output(node: Node, y) -> int:
    """The output's bits, after TFLM's rules for an int8 softmax's output: int8 at scale 1/256 and zero point
    -128, or int16 at zero point -32768 and scale 1/65536 within 0.001 / 65536 (SoftmaxPrepare)."""
    qp = y.qparams
    if y.dtype == "int16":
        delta = abs(np.float32(qp.scale[0]) - np.float32(INT16_OUTPUT_SCALE)) if qp is not None else np.inf
        if qp is None or qp.zero_point[0] != INT16_OUTPUT_ZERO_POINT or delta > np.float32(0.001) * np.float32(
                INT16_OUTPUT_SCALE):
            raise ModelError(f"layer '{node.name}': an int8 softmax's int16 output must have zero point -32768 and "
                             f"scale 1/65536 (TFLite Micro's rule), got {qp}")
        return 16
    if qp is None or float(qp.scale[0]) != OUTPUT_SCALE or qp.zero_point[0] != OUTPUT_ZERO_POINT:
        raise ModelError(f"layer '{node.name}': int8 softmax output must have scale 1/256 and zero point -128, "
                         f"got {qp}")
    return 8


def prepare(node: Node, g: Graph) -> SoftmaxParams:
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    bits = check_output(node, y)
    beta = float(node.attrs.get("beta", 1.0))
    in_scale = float(x.qparams.scale[0])
    real = min(beta * in_scale * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    multiplier, shift = quantize_multiplier(real)
    if shift < 0:
        raise ModelError(f"layer '{node.name}': softmax beta * input scale = {beta * in_scale:.3g} is too small "
                         "for the int8 kernel (needs >= 2**-26)")
    radius = ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)) / (1 << shift)
    depth = x.shape[-1]
    return SoftmaxParams(outer=x.size // depth, depth=depth, input_multiplier=multiplier, input_left_shift=shift,
                         diff_min=-math.floor(radius), output_bits=bits)


# ---- gemmlowp fixed-point primitives (int32 semantics) -------------------------------------


def _srdhm(a, b) -> np.ndarray:
    return saturating_rounding_doubling_high_mul(a, b)


def saturating_left_shift(x, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent."""
    x = np.asarray(x, dtype=np.int64)
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def rounding_half_sum(a, b) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))  # C division truncates


def exp_on_interval_between_negative_one_quarter_and_0_excl(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: a Taylor series around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap_i32(np.asarray(a, dtype=np.int64) + (1 << 28))
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap_i32(_srdhm(wrap_i32(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return wrap_i32(constant_term + _srdhm(constant_term, wrap_i32(x + poly)))


# exp(-2**k) in Q0.31 for the barrel shifter, k = -2..4.
_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int = SCALED_DIFF_INTEGER_BITS) -> np.ndarray:
    """exp(a) for a <= 0 given in Q(integer_bits).(31 - integer_bits); result Q0.31."""
    a = np.asarray(a, dtype=np.int64)
    frac = 31 - integer_bits
    one_quarter = 1 << (frac - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_left_shift(a_mod_quarter_minus_one_quarter, integer_bits))
    remainder = wrap_i32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _BARREL:
        if integer_bits > exponent:
            bit = 1 << (frac + exponent)
            result = np.where(remainder & bit, _srdhm(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), Q0.31 in and out: Newton-Raphson in Q2.29."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap_i32(1515870810 + _srdhm(half_denominator, -1010580540))  # 48/17 - 32/17 * d
    one_q2 = 1 << 29  # 1.0 in Q2.29
    for _ in range(3):
        half_denominator_times_x = _srdhm(half_denominator, x)
        one_minus = wrap_i32(one_q2 - half_denominator_times_x)
        x = wrap_i32(x + saturating_left_shift(_srdhm(x, one_minus), 2))
    return saturating_left_shift(x, 1)


def count_leading_zeros_u32(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    n = np.zeros_like(x)
    for shift in (16, 8, 4, 2, 1):
        small = x < (1 << (32 - shift))
        n = np.where(small, n + shift, n)
        x = np.where(small, x << shift, x)
    return np.where(x == 0, 32, n)


def get_reciprocal(x, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's GetReciprocal: (1 / x in Q0.31 after normalization, bits above one)."""
    headroom_plus_one = count_leading_zeros_u32(x)
    num_bits_over_unit = integer_digits - headroom_plus_one
    shifted = ((np.asarray(x, dtype=np.int64) & 0xFFFFFFFF) << headroom_plus_one) & 0xFFFFFFFF
    shifted_sum_minus_one = wrap_i32(shifted - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def softmax_s8(x: np.ndarray, p: SoftmaxParams) -> np.ndarray:
    rows = x.reshape(p.outer, p.depth).astype(np.int64)
    diff = rows - rows.max(axis=1, keepdims=True)
    valid = diff >= p.diff_min
    rescaled = _srdhm(wrap_i32(diff << p.input_left_shift), p.input_multiplier)
    exps = exp_on_negative_values(rescaled)
    contrib = np.where(valid, rounding_divide_by_pot(exps, ACCUMULATION_INTEGER_BITS), 0)
    sum_of_exps = wrap_i32(contrib.sum(axis=1, keepdims=True))
    shifted_scale, num_bits_over_unit = get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS)
    exponent = num_bits_over_unit + 31 - p.output_bits
    unsat = rounding_divide_by_pot(_srdhm(shifted_scale, exps), exponent)
    lo, hi = -(1 << (p.output_bits - 1)), (1 << (p.output_bits - 1)) - 1
    out = np.clip(unsat + lo, lo, hi)
    return np.where(valid, out, lo).astype(np.int16 if p.output_bits == 16 else np.int8).reshape(x.shape)
