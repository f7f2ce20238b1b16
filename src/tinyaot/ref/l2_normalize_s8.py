"""l2_normalize_s8: int8 x / ||x|| over the last axis, TFLite Micro's reference_integer_ops::L2Normalization.

Per row of `depth` values q (the input's zero point taken off): acc = sum(q^2), an int32 (at most 255^2 per value,
so up to MAX_DEPTH values); 1 / sqrt(acc) as a Q31 multiplier and a shift from TFLM's
GetInvSqrtQuantizedMultiplierExp (acc normalized by pairs of bits into [2^27, 2^29), five Newton steps
x <- 1.5 x - acc / 2 * x^3 in gemmlowp's Q3.28, times sqrt(2) / 2); each output is
MultiplyByQuantizedMultiplier(q, multiplier, shift + 7), saturated to int8. The 7 makes the output's scale 1/128
and its zero point 0 whatever the input's scale (which a norm cancels): 1.0 comes out as 127 (127 / 128). An acc
of 0 or 1 (a zero row, or one value of +-1) takes TFLM's special case (multiplier INT32_MAX, shift 0): a zero row
stays 0. TFLM has no epsilon in the integer kernel, and neither has this one.

TFLM's Prepare takes int8 in and out (float too) and does not check the output's qparams (the TensorFlow Lite
kernel required 1/128 and 0): the kernel writes the same bytes whatever they say, as this one does. Output may
be the input: a row is read whole (acc) before any of it is written, and each value is read before it is written.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap_i32,
)
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks

OUTPUT_SCALE = 1.0 / 128.0
OUTPUT_ZERO_POINT = 0
OUTPUT_SHIFT = 7  # TFLM's kOutputScale: the multiplier's extra left shift that makes the output's scale 1/128
MAX_DEPTH = INT32_MAX // (255 * 255)  # acc = sum((q - zp)^2) stays an int32
NEWTON_STEPS = 5
HALF_THREE = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
HALF_SQRT_2 = 1518500250  # sqrt(2) / 2 in Q0.31


@dataclass(frozen=True)
class L2NormalizeParams:
    outer: int  # rows
    depth: int  # values per row, normalized together
    input_zero_point: int


def prepare(node: Node, g: Graph) -> L2NormalizeParams:
    x, y = _checks.io(node, g)
    _checks.same_shape(node, y, x.shape)
    depth = int(x.shape[-1])
    if depth > MAX_DEPTH:
        raise UnsupportedOpError(f"l2_normalize '{node.name}' normalizes rows of {depth} values; the int8 kernel "
                                 f"(TFLite Micro's) sums their squares in int32, which holds up to {MAX_DEPTH}")
    return L2NormalizeParams(outer=x.size // depth, depth=depth, input_zero_point=int(x.qparams.zero_point[0]))


def _saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT<exponent> for exponent > 0: x * 2^exponent, saturated."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def inv_sqrt_multiplier(acc) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's GetInvSqrtQuantizedMultiplierExp(acc, kReverseShift = -1) for each acc >= 0: (multiplier, shift),
    1 / sqrt(acc) ~= multiplier * 2^(shift - 31)."""
    acc = np.asarray(acc, dtype=np.int64)
    x_in = np.maximum(acc, 2)  # acc <= 1 is the special case, patched in at the end
    shift = np.full_like(x_in, 11)
    for _ in range(2):  # acc < 2^31: at most two divisions by 4 bring it below 2^29
        big = x_in >= (1 << 29)
        x_in, shift = np.where(big, x_in // 4, x_in), shift + big
    clz = 32 - np.frexp(x_in.astype(np.float64))[1].astype(np.int64)  # exact: x_in < 2^29
    pairs = (clz - 1) // 2 - 1
    shift -= pairs
    x_in = x_in << (2 * pairs)
    half_input = rounding_divide_by_pot(x_in >> 1, 1)
    x = np.full_like(x_in, 1 << 28)  # 1.0 in Q3.28
    for _ in range(NEWTON_STEPS):
        x3 = _saturating_shift_left(saturating_rounding_doubling_high_mul(
            saturating_rounding_doubling_high_mul(x, x), x), 6)  # Q9 -> Q3
        step = wrap_i32(saturating_rounding_doubling_high_mul(HALF_THREE, x)
                        - saturating_rounding_doubling_high_mul(half_input, x3))  # Q6
        x = _saturating_shift_left(step, 3)
    x = saturating_rounding_doubling_high_mul(x, HALF_SQRT_2)
    x = np.where(shift < 0, wrap_i32(x << np.maximum(-shift, 0)), x)
    shift = np.maximum(shift, 0)
    small = acc <= 1
    return np.where(small, INT32_MAX, x), np.where(small, 0, -shift)


def l2_normalize_s8(x: np.ndarray, p: L2NormalizeParams) -> np.ndarray:
    q = x.reshape(p.outer, p.depth).astype(np.int64) - p.input_zero_point
    multiplier, shift = inv_sqrt_multiplier(np.sum(q * q, axis=1))
    y = multiply_by_quantized_multiplier(q, multiplier[:, None], shift[:, None] + OUTPUT_SHIFT)
    return np.clip(y, -128, 127).astype(np.int8).reshape(x.shape)
