/*
 * l2_normalize_s8.c - int8 x / ||x|| over rows; twin of ref/l2_normalize_s8.py (TFLite Micro's
 * reference_integer_ops::L2Normalization and its GetInvSqrtQuantizedMultiplierExp).
 *
 * Per row: acc = sum((q - zp)^2) in int32; 1 / sqrt(acc) as a Q31 multiplier and shift (gemmlowp Q3.28 Newton
 * steps); each value requantized with shift + 7, so the output has scale 1/128 and zero point 0. Output may be
 * the input: a row is summed before any of it is written.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define OUTPUT_SHIFT 7                      /* TFLM's kOutputScale: output scale 1/128 */
#define NEWTON_STEPS 5
#define HALF_THREE ((1 << 28) + (1 << 27))  /* 1.5 in Q3.28 */
#define HALF_SQRT_2 1518500250              /* sqrt(2) / 2 in Q0.31 */

/* gemmlowp's SaturatingRoundingMultiplyByPOT for a left shift: x * 2^exponent, saturated to int32. */
static int32_t saturating_shift_left(int32_t x, int32_t exponent)
{
    const int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

static int32_t leading_zeros(uint32_t x)
{
    int32_t n = 0;
    while (!(x & 0x80000000u)) {
        x <<= 1;
        ++n;
    }
    return n;
}

/* 1 / sqrt(input) ~= *multiplier * 2^(*shift - 31), for input >= 0 (TFLM's GetInvSqrtQuantizedMultiplierExp with
 * kReverseShift: *shift is a left shift). 0 and 1 give INT32_MAX, 0. */
static void inv_sqrt_multiplier(int32_t input, int32_t *multiplier, int32_t *shift)
{
    int32_t right = 11;
    int32_t pairs, half_input, x, i;
    if (input <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    while (input >= (1 << 29)) {
        input /= 4;
        ++right;
    }
    pairs = (leading_zeros((uint32_t)input) - 1) / 2 - 1;
    right -= pairs;
    input <<= 2 * pairs;  /* now in [2^27, 2^29) */
    half_input = tinyaot_rounding_divide_by_pot(input >> 1, 1);
    x = 1 << 28;          /* 1.0 in Q3.28 */
    for (i = 0; i < NEWTON_STEPS; ++i) {
        const int32_t x3 = saturating_shift_left(tinyaot_srdhm(tinyaot_srdhm(x, x), x), 6);
        const uint32_t step = (uint32_t)tinyaot_srdhm(HALF_THREE, x) - (uint32_t)tinyaot_srdhm(half_input, x3);
        x = saturating_shift_left((int32_t)step, 3);
    }
    x = tinyaot_srdhm(x, HALF_SQRT_2);
    if (right < 0) {
        x = (int32_t)((uint32_t)x << -right);
        right = 0;
    }
    *multiplier = x;
    *shift = -right;
}

void tinyaot_l2_normalize_s8(const int8_t *input, const tinyaot_l2_normalize_params *params, int8_t *output)
{
    const int32_t depth = params->depth;
    const int32_t zero_point = params->input_zero_point;
    int32_t row, i;
    for (row = 0; row < params->outer; ++row) {
        int32_t acc = 0;
        int32_t multiplier, shift;
        for (i = 0; i < depth; ++i) {
            const int32_t q = (int32_t)input[i] - zero_point;
            acc += q * q;
        }
        inv_sqrt_multiplier(acc, &multiplier, &shift);
        for (i = 0; i < depth; ++i) {
            const int32_t q = (int32_t)input[i] - zero_point;
            output[i] = (int8_t)tinyaot_saturate_s8(tinyaot_requantize(q, multiplier, shift + OUTPUT_SHIFT));
        }
        input += depth;
        output += depth;
    }
}
