"""TFLite Micro's int8 LOGISTIC, TANH and HARD_SWISH, computed exactly in integers for all 256 inputs.

An int8 elementwise function is a 256-entry table, so bit-exactness with TFLM needs no new kernel: these
routines replay TFLM's integer arithmetic (reference_integer_ops::Logistic / Tanh with gemmlowp's fixed-point
logistic / tanh, and reference_ops::HardSwish with its int16 multipliers) at compile time, including the
Prepare-time multipliers, and `ref/lut_s8.py` stores the result as the lut op's table. Every step is done in
int64 NumPy with explicit int32 / int16 wrapping and saturation where the C++ has them.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_i32,
)
from tinyaot.ref.activations import APPROXIMATES

_INPUTS = np.arange(-128, 128, dtype=np.int64)  # table index i holds the output for input q = i - 128
_INPUT_INTEGER_BITS = 4  # LOGISTIC / TANH rescale the input to Q4.27

# The output quantization TFLM's LOGISTIC / TANH kernels produce whatever the tensor says: (scale, zero point).
FIXED_OUTPUT = {"tflm_logistic": (1.0 / 256.0, -128), "tflm_tanh": (1.0 / 128.0, 0)}


# ---- int32 gemmlowp fixed point (raw values as int64 arrays holding int32) ----

def _mul(a, b) -> np.ndarray:
    """FixedPoint * FixedPoint: SaturatingRoundingDoublingHighMul on the raw values."""
    return saturating_rounding_doubling_high_mul(a, b)


def _sat_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent > 0> on int32."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, wrap_i32(x << exponent)))


def _rounding_half_sum(a: np.ndarray, b: int) -> np.ndarray:
    total = a + b
    t = total + np.where(total >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))  # C division truncates


def _exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 in Q(integer_bits), result in Q0.31 (gemmlowp's exp_on_negative_values; its clamp below
    -32 exists only for more than 5 integer bits, and LOGISTIC / TANH use 4 and 5)."""
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = wrap_i32((a & (quarter - 1)) - quarter)
    # exp on [-1/4, 0): Taylor series around -1/8.
    x = wrap_i32(_sat_shift_left(a_mod, integer_bits) + (1 << 28))
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap_i32(_mul(wrap_i32(x4_over_4 + x3), 715827883) + x2), 1)
    constant_term = 1895147668  # exp(-1/8)
    result = wrap_i32(constant_term + _mul(constant_term, wrap_i32(x + poly)))
    remainder = wrap_i32(a_mod - a)
    barrel = {-2: 1672461947, -1: 1302514674, 0: 790015084, 1: 290630308, 2: 39332535, 3: 720401, 4: 242}
    for exponent, multiplier in barrel.items():
        if integer_bits > exponent:
            bit = (remainder & (1 << (frac + exponent))) != 0
            result = np.where(bit, _mul(result, multiplier), result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal(half_denominator: np.ndarray) -> np.ndarray:
    """Three Newton-Raphson steps for 1 / half_denominator in Q2.29 (shared by logistic and tanh)."""
    one_q2 = 1 << 29
    x = wrap_i32(1515870810 + _mul(half_denominator, -1010580540))  # 48/17 - 32/17 * d
    for _ in range(3):
        one_minus = wrap_i32(one_q2 - _mul(half_denominator, x))
        x = wrap_i32(x + _sat_shift_left(_mul(x, one_minus), 2))
    return x


def _gemmlowp_logistic(a: np.ndarray) -> np.ndarray:
    """logistic(a) for a in Q4.27, result in Q0.31."""
    positive = a > 0
    abs_a = np.where(positive, a, wrap_i32(-a))
    e = _exp_on_negative_values(wrap_i32(-abs_a), _INPUT_INTEGER_BITS)
    # 1 / (1 + e): Newton on half the denominator, then ExactMulByPot<-1> (Q1) and Rescale<0>.
    if_positive = _sat_shift_left(_newton_reciprocal(_rounding_half_sum(e, INT32_MAX)), 1)
    if_negative = wrap_i32(INT32_MAX - if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative))


def _gemmlowp_tanh(a: np.ndarray) -> np.ndarray:
    """tanh(a) for a in Q4.27, result in Q0.31."""
    negative = a < 0
    n = np.where(negative, a, wrap_i32(-a))
    e = _exp_on_negative_values(n, _INPUT_INTEGER_BITS + 1)  # exp(2n): the same raw value read as Q5.26
    # (1 - e) / (1 + e) = 1 / half_denominator - 1, Rescale<0> from Q2.
    t = _sat_shift_left(wrap_i32(_newton_reciprocal(_rounding_half_sum(e, INT32_MAX)) - (1 << 29)), 2)
    return np.where(a == 0, 0, np.where(negative, wrap_i32(-t), t))


def _input_rescale(function: str, in_scale: float) -> tuple[int, int, int]:
    """TFLM's Prepare for int8 LOGISTIC / TANH: (input_multiplier, input_left_shift, input_range_radius)."""
    q, shift = math.frexp(float(np.float32(in_scale)) * float(1 << (31 - _INPUT_INTEGER_BITS)))
    if shift < 0:
        raise UnsupportedOpError(f"{function}: input scale {in_scale:g} is below 2^-28, outside what TFLite "
                                 "Micro's kernel handles; requantize the input to a larger scale")
    multiplier = math.floor(q * (1 << 31) + 0.5)  # exact: a float32 scale has 24 significant bits
    radius = math.floor(((1 << _INPUT_INTEGER_BITS) - 1) * float(1 << (31 - _INPUT_INTEGER_BITS)) / (1 << shift))
    return multiplier, shift, radius


def _sigmoid_or_tanh(function: str, in_scale: float, in_zp: int) -> np.ndarray:
    multiplier, shift, radius = _input_rescale(function, in_scale)
    x = _INPUTS - in_zp
    inside = (x > -radius) & (x < radius)
    xs = np.where(inside, x, 0)  # outside the radius the result saturates; inside, xs << shift stays in int32
    a = saturating_rounding_doubling_high_mul(wrap_i32(xs << min(shift, 32)), multiplier)  # shift > 31: radius 0
    if function == "tflm_logistic":
        y = rounding_divide_by_pot(_gemmlowp_logistic(a), 31 - 8) - 128
    else:
        y = rounding_divide_by_pot(_gemmlowp_tanh(a), 31 - 7)
    y = np.where(inside, np.clip(y, -128, 127), np.where(x <= -radius, -128, 127))
    return y.astype(np.int8)


def logistic_table(in_scale: float, in_zp: int) -> np.ndarray:
    """TFLM int8 LOGISTIC for every input q at index q + 128 (output scale 1/256, zero point -128)."""
    return _sigmoid_or_tanh("tflm_logistic", in_scale, in_zp)


def tanh_table(in_scale: float, in_zp: int) -> np.ndarray:
    """TFLM int8 TANH for every input q at index q + 128 (output scale 1/128, zero point 0)."""
    return _sigmoid_or_tanh("tflm_tanh", in_scale, in_zp)


# ---- int16 arithmetic of reference_ops::HardSwish ----

def _wrap16(x) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int16 (b is never -32768 here, so it cannot overflow)."""
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    return _wrap16(np.where(t >= 0, t >> 15, -((-t) >> 15)))


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul: like the above but truncating toward zero."""
    ab = a * b
    high = _wrap16(np.where(ab >= 0, ab >> 15, -((-ab) >> 15)))
    return np.where((a == -32768) & (b == -32768), 32767, high)


def _sat_left16(x: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(x * (1 << amount), -32768, 32767)


def _rdbpot16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int16, including its mask wrap for exponents of 16 or more."""
    mask = int(_wrap16((1 << exponent) - 1))
    threshold = _wrap16((mask >> 1) + (x < 0))
    return _wrap16((x >> exponent) + ((x & mask) > threshold))


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then DownScaleInt32ToInt16Multiplier."""
    m32, exponent = quantize_multiplier(real)
    m16 = 32767 if m32 >= INT32_MAX - (1 << 15) else (m32 + (1 << 15)) >> 16
    return m16, exponent


def hard_swish_table(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """TFLM int8 HARD_SWISH for every input q at index q + 128."""
    f32 = np.float32
    hires_scale = f32(1.0 / 128.0) * f32(in_scale)
    out_mult, out_exp = _int16_multiplier(float(hires_scale / f32(out_scale)))
    if out_exp > 0:
        raise ModelError(f"tflm_hard_swish: input scale {in_scale:g} / 128 must be below the output scale "
                         f"{out_scale:g} (TFLite Micro's HARD_SWISH rejects it); requantize the output")
    relu_real = float(hires_scale / f32(3.0 / 32768.0))
    if relu_real >= 2.0**30:
        raise UnsupportedOpError(f"tflm_hard_swish: input scale {in_scale:g} is too large for TFLite Micro's kernel")
    relu_mult, relu_exp = _int16_multiplier(relu_real)
    hires = _wrap16(_INPUTS - in_zp) * 128
    preshift_out = _srdhm16(hires, out_mult)
    reluish = hires
    if relu_exp > 0:
        reluish = _sat_left16(reluish, relu_exp - 1)
    reluish = _srdhm16(reluish, relu_mult)
    if relu_exp > 0:
        reluish = _sat_left16(reluish, 1)
    if relu_exp < 0:
        reluish = _rdbpot16(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1
    y = _rdbpot16(_sdhm16(reluish, preshift_out), -out_exp)
    return np.clip(_wrap16(y + out_zp), -128, 127).astype(np.int8)


def build_table(function: str, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The int8 table of a tflm_* function; LOGISTIC / TANH insist on the output qparams TFLM produces."""
    if function in FIXED_OUTPUT:
        want_scale, want_zp = FIXED_OUTPUT[function]
        if np.float32(out_scale) != np.float32(want_scale) or out_zp != want_zp:
            raise ModelError(f"{function}: output scale {out_scale:g} / zero point {out_zp}, but TFLite Micro's int8 "
                             f"kernel always produces scale {want_scale:g} / zero point {want_zp}; requantize the "
                             "output to those (the TFLite converter writes them)")
        return logistic_table(in_scale, in_zp) if function == "tflm_logistic" else tanh_table(in_scale, in_zp)
    if function == "tflm_hard_swish":
        return hard_swish_table(in_scale, in_zp, out_scale, out_zp)
    raise UnsupportedOpError(f"unknown TFLite Micro activation {function!r}; available: {', '.join(TFLM_FUNCTIONS)}")


TFLM_FUNCTIONS = tuple(APPROXIMATES)  # ref/activations.py names the real function each approximates
