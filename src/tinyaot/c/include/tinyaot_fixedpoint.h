/*
 * tinyaot_fixedpoint.h - integer requantization, the C twin of quantize/fixedpoint.py.
 *
 * Semantics of TensorFlow Lite Micro's reference kernels: MultiplyByQuantizedMultiplier is
 * SaturatingRoundingDoublingHighMul followed by RoundingDivideByPOT ("double rounding").
 * Both halves are tested against one table of edge cases.
 */
#ifndef TINYAOT_FIXEDPOINT_H
#define TINYAOT_FIXEDPOINT_H

#include <stdint.h>

/* (a * b * 2) >> 32 with rounding; the single overflow case saturates. */
static inline int32_t tinyaot_srdhm(int32_t a, int32_t b)
{
    int64_t ab;
    int64_t nudge;
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    ab = (int64_t)a * (int64_t)b;
    nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* x / 2^exponent, rounding half away from zero; exponent in [0, 31]. */
static inline int32_t tinyaot_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/*
 * x * multiplier * 2^(shift - 31): the requantization step of every int8 kernel.
 *
 * QuantizeMultiplier only makes multipliers in [0, 2^31). For those, a * multiplier is never the one
 * saturating case of the doubling high mul, and its rounding (C's truncating division after a
 * sign-dependent nudge) equals floor((a * multiplier + 2^30) / 2^31) for both signs: one SMLAL and a
 * shift instead of a 64-bit division. Negative multipliers take the literal TFLM path.
 */
static inline int32_t tinyaot_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)x << left);
    int32_t high;
    if (multiplier < 0) {
        return tinyaot_rounding_divide_by_pot(tinyaot_srdhm(shifted, multiplier), right);
    }
    high = (int32_t)((uint64_t)((int64_t)shifted * multiplier + ((int64_t)1 << 30)) >> 31);
    return tinyaot_rounding_divide_by_pot(high, right);
}

static inline int32_t tinyaot_clamp(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

#endif /* TINYAOT_FIXEDPOINT_H */
