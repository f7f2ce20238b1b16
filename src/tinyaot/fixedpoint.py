"""The one home of integer requantization arithmetic in Python.

These functions mirror TensorFlow Lite Micro's reference semantics exactly (QuantizeMultiplier,
SaturatingRoundingDoublingHighMul, RoundingDivideByPOT, MultiplyByQuantizedMultiplier with the
default "double rounding"). Their C twins live in `c/include/tinyaot_fixedpoint.h`; both are
tested against the same table of edge cases. The module imports nothing of tinyaot, so every stage
(the front ends' TFLM checks too) may use it.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _round_half_away(x: float) -> int:
    """std::round: ties go away from zero (Python's round() goes to even)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def tflm_quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLM's QuantizeMultiplier as its default (double-rounding) build computes it: (Q31 mantissa, shift),
    real ~= mantissa * 2**(shift - 31).

    A mantissa that rounds to 2**31 is halved and the shift bumped; a shift below -31 flushes to (0, 0); 0 is
    (0, 0); a negative multiplier keeps its sign in the mantissa. A shift above 30 is returned as is: TFLM's
    MultiplyByQuantizedMultiplier would then shift an int32 left by 31 or more, so the importer's checks refuse it
    (they read the shift here) and `quantize_multiplier` saturates it. Non-finite input (undefined in TFLM)
    raises ValueError.
    """
    if not math.isfinite(real_multiplier):
        raise ValueError(f"multiplier must be finite, got {real_multiplier}")
    if real_multiplier == 0.0:
        return 0, 0
    q, shift = math.frexp(real_multiplier)
    q_fixed = _round_half_away(q * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(q_fixed), int(shift)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """A non-negative real multiplier as the kernels take it: TFLM's QuantizeMultiplier, with a shift above 30
    saturated to (INT32_MAX, 30) as TFLM's single-rounding build does, so no kernel shifts an int32 left by 31."""
    if not math.isfinite(real_multiplier) or real_multiplier < 0:
        raise ValueError(f"multiplier must be finite and >= 0, got {real_multiplier}")
    mantissa, shift = tflm_quantize_multiplier(real_multiplier)
    if shift > 30:
        return INT32_MAX, 30
    return mantissa, shift


def _as_i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """(a * b * 2 + 2**31 rounding) >> 32 in int32, C truncating division, as gemmlowp."""
    a, b = np.broadcast_arrays(_as_i64(a), _as_i64(b))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    total = ab + nudge
    # C's '/' truncates toward zero; numpy's >> floors, so handle negatives by symmetry.
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    return np.where(overflow, INT32_MAX, high).astype(np.int64)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """Divide by 2**exponent, rounding half away from zero, as gemmlowp."""
    x, exponent = np.broadcast_arrays(_as_i64(x), _as_i64(exponent))
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLM's MultiplyByQuantizedMultiplier: int32 x times (multiplier, shift), double rounding."""
    x, multiplier, shift = np.broadcast_arrays(_as_i64(x), _as_i64(multiplier), _as_i64(shift))
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = _wrap_i32(x << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right)


def multiply_by_quantized_multiplier_64(x, multiplier, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier for an int64 x (the 16x8 kernels' accumulators, |x| < 2^47): the
    multiplier rounded to 15 bits, one rounding shift by 15 - shift, the result cast to int32."""
    x, multiplier, shift = np.broadcast_arrays(_as_i64(x), _as_i64(multiplier), _as_i64(shift))
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - shift
    return _wrap_i32((x * reduced + (np.int64(1) << (total - 1))) >> total)


def _wrap_i32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap to int32, what the C does with a uint32 shift."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def wrap_i32(x) -> np.ndarray:
    return _wrap_i32(_as_i64(x))


def activation_range(clamp, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127) -> tuple[int, int]:
    """Integer clamp bounds of a fused activation, as TFLite's CalculateActivationRangeQuantized.

    `clamp` is None or (lo, hi) in real units; the real bounds are quantized in float32 like TFLite.
    """
    if clamp is None:
        return qmin, qmax
    lo, hi = clamp
    s = np.float32(scale)
    act_min = qmin if lo == -math.inf else max(qmin, zero_point + _round_half_away(float(np.float32(lo) / s)))
    act_max = qmax if hi == math.inf else min(qmax, zero_point + _round_half_away(float(np.float32(hi) / s)))
    return int(act_min), int(act_max)
