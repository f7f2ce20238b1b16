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

/* quantize_multiplier(1.0), the requantization that changes nothing (ref/concat_s8.py: IDENTITY): concat copies
 * such inputs and relu only clamps. */
#define TINYAOT_IDENTITY_MULTIPLIER 1073741824 /* 2^30 */
#define TINYAOT_IDENTITY_SHIFT 1

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
 * tinyaot_requantize for multiplier in [0, 2^31), the range QuantizeMultiplier makes; every kernel's epilogue.
 *
 * For those multipliers a * multiplier is never the one saturating case of the doubling high mul, and its
 * rounding (C's truncating division after a sign-dependent nudge) equals floor((a * multiplier + 2^30) / 2^31)
 * for both signs: one SMLAL and a shift instead of a 64-bit division. The divide by 2^right rounds half away
 * from zero: taking 1 off a negative high turns that into rounding half up, which is the bit below the shift
 * added to the shifted value (no sum that could overflow; high > INT32_MIN since multiplier < 2^31).
 */
static inline int32_t tinyaot_requantize_nonneg(int32_t x, int32_t multiplier, int32_t shift)
{
    int32_t high;
    if (shift >= 0) {
        const int64_t ab = (int64_t)(int32_t)((uint32_t)x << shift) * multiplier + ((int64_t)1 << 30);
        return (int32_t)((uint64_t)ab >> 31);
    }
    high = (int32_t)((uint64_t)((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31);
    high += high >> 31;
    return (high >> -shift) + ((high >> (-shift - 1)) & 1);
}

/*
 * tinyaot_requantize_nonneg for a right shift (right = -shift in [1, 31]) and |x| < 2^30, which the compiler
 * proves per layer before it picks a kernel that calls this. (2x * multiplier + 2^31) >> 32 is the rounded high
 * half h; the divide by 2^right rounding half away from zero is (h - (h < 0) + 2^(right - 1)) >> right. h has
 * x's sign except when it rounds to 0, where taking the 1 off or not gives 0 either way (right >= 1), so the
 * correction reads x: SMMLAR adds it and the half into the high half in one instruction.
 * right 0 gives h - (x < 0): for x >= 0 TFLM's zero shift exactly, one less for x < 0, which the compiler allows
 * only where such outputs clamp to the same byte (ref/per_channel.py, form 2).
 */
static inline int32_t tinyaot_requantize_right(int32_t x, int32_t multiplier, int32_t right)
{
    int32_t high;
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
    int32_t half; /* 2^(right - 1), 0 for right 0 (LSR by a register shifts 32 out): once per channel in a loop */
    __asm__("lsr %0, %1, %2" : "=r"(half) : "r"(0x80000000u), "r"(32 - right));
    __asm__("smmlar %0, %1, %2, %3" : "=r"(high) : "r"(x + x), "r"(multiplier), "r"(half + (x >> 31)));
#else
    const int32_t correction = (int32_t)((1u << right) >> 1) + (x >> 31);
    high = (int32_t)((uint64_t)((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31) + correction;
#endif
    return high >> right;
}

/*
 * x * multiplier * 2^(shift - 31): the requantization step of every int8 kernel. Negative multipliers
 * (QuantizeMultiplier never makes them) take the literal TFLM path.
 */
static inline int32_t tinyaot_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    if (multiplier < 0) {
        const int32_t shifted = (int32_t)((uint32_t)x << (shift > 0 ? shift : 0));
        return tinyaot_rounding_divide_by_pot(tinyaot_srdhm(shifted, multiplier), shift > 0 ? 0 : -shift);
    }
    return tinyaot_requantize_nonneg(x, multiplier, shift);
}

/*
 * The 15-bit multiplier of TFLite's 64-bit MultiplyByQuantizedMultiplier: (multiplier + 2^15) >> 16, 0x7FFF from
 * 0x7FFF0000 up. Spelled as (multiplier >> 16) + bit 15, saturated to 0x7FFF, so that no sum can overflow (the
 * rounded value only reaches 0x8000 where TFLite takes 0x7FFF).
 */
static inline int32_t tinyaot_reduced_multiplier(int32_t multiplier)
{
    const int32_t reduced = (multiplier >> 16) + ((multiplier >> 15) & 1);
    return reduced > 0x7FFF ? 0x7FFF : reduced;
}

/*
 * TFLite's MultiplyByQuantizedMultiplier for an int64 x (the 16x8 kernels' accumulators): the multiplier rounded
 * to 15 bits (r), then (x * r + 2^(total - 1)) >> total with total = 15 - shift in [1, 63] (shift in [-48, 14];
 * TFLite makes [-31, 7]), the result cast to int32. Twin of quantize/fixedpoint.py
 * multiply_by_quantized_multiplier_64, equal to it for every int64 x (both wrap the product modulo 2^64).
 *
 * Only the low word of the shifted value is kept, so the product is formed in 32-bit halves: UMULL of x's low
 * word by r (its sign extension taken off the high word when r < 0) with the rounding term as UMLAL's addend,
 * MLA of x's high word; then one 32-bit shift (total >= 32) or a funnel of the two words. No 64-bit shift by a
 * variable amount, no 64 x 64 multiply.
 */
static inline int32_t tinyaot_requantize_64(int64_t x, int32_t multiplier, int32_t shift)
{
    const int32_t reduced = tinyaot_reduced_multiplier(multiplier);
    const int32_t total = 15 - shift;
    const uint32_t lo = (uint32_t)(uint64_t)x;
    const uint32_t r = (uint32_t)reduced;
    /* the high word of x * r mod 2^64, less the part the low word's product carries */
    const uint32_t hi_part = (uint32_t)((uint64_t)x >> 32) * r - (lo & (uint32_t)(reduced >> 31));
    uint64_t p;
    if (total > 32) {
        p = ((uint64_t)(1u << (total - 33)) << 32) + (uint64_t)lo * r;
        return (int32_t)((uint32_t)(p >> 32) + hi_part) >> (total - 32);
    }
    if (total == 32) {
        p = (uint64_t)0x80000000u + (uint64_t)lo * r;
        return (int32_t)((uint32_t)(p >> 32) + hi_part);
    }
    p = (uint64_t)(1u << (total - 1)) + (uint64_t)lo * r;
    return (int32_t)(((uint32_t)p >> total) | (((uint32_t)(p >> 32) + hi_part) << (32 - total)));
}

/*
 * tinyaot_requantize_64 for an int32 x (an int64 accumulator that fits), any multiplier and shift. For total = 15 -
 * shift in [17, 46] (shift in [-31, -2], the usual 16x8 layer) it is floor((x * r + 2^(total - 1)) / 2^total) =
 * floor((x * (r << 16) + 2^(total - 17) * 2^32) / 2^32) >> (total - 16) (|x * r| < 2^46: nothing wraps): SMMLA,
 * the high word of a product plus an addend, and one ASR. Other shifts take tinyaot_requantize_64.
 */
static inline int32_t tinyaot_requantize_64_int32(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t m16 = (int32_t)((uint32_t)tinyaot_reduced_multiplier(multiplier) << 16);
    int32_t high;
    if (shift < -31 || shift > -2) {
        return tinyaot_requantize_64(x, multiplier, shift);
    }
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
    __asm__("smmla %0, %1, %2, %3" : "=r"(high) : "r"(x), "r"(m16), "r"(1 << (-2 - shift)));
#else
    high = (int32_t)(((int64_t)x * m16 + ((int64_t)1 << (30 - shift))) >> 32);
#endif
    return high >> (-1 - shift);
}

static inline int32_t tinyaot_clamp(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* x saturated to [-128, 127]: one SSAT where the core has it (the clamp of a layer whose activation range is
 * the whole int8 range, e.g. a ReLU output with zero point -128). */
static inline int32_t tinyaot_saturate_s8(int32_t x)
{
#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(x));
    return r;
#else
    return tinyaot_clamp(x, -128, 127);
#endif
}

#endif /* TINYAOT_FIXEDPOINT_H */
