/*
 * softmax_s16.c - int16 (16x8) softmax over the last axis; twin of ref/softmax_s16.py (TFLite Micro's
 * SoftmaxInt16).
 *
 * Per row: each difference to the row maximum is scaled so [-65535, 0] spans exp's table [-10, 0], looked up
 * with 7-bit interpolation (Q0.15), and summed in int32; the sum is normalised by its leading zeros, its
 * reciprocal read from the 1 / (1 + x) table, and each exp times it, rounded, is the output in Q0.15
 * (scale 1/32768, zero point 0). The exps wait in the output row, so output must not overlap the input.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define SM16_LUT_CENTRE 256      /* table index of input 0: 512 segments of 128 steps */
#define SM16_SEGMENT_BITS 7
#define SM16_RECIPROCAL_OFFSET ((1 << 15) + (1 << 16)) /* the normalised sum in [1, 2) centred on 0 */

/* TFLM's LUTLookup: the high 9 bits of value pick the segment, the low 7 interpolate, rounded. */
static int16_t sm16_lookup(int32_t value, const int16_t *lut)
{
    const int32_t index = SM16_LUT_CENTRE + (value >> SM16_SEGMENT_BITS);
    const int32_t offset = value & ((1 << SM16_SEGMENT_BITS) - 1);
    const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);
    const int32_t delta = (slope * offset + (1 << (SM16_SEGMENT_BITS - 1))) >> SM16_SEGMENT_BITS;
    return (int16_t)(lut[index] + delta);
}

static int32_t sm16_count_leading_zeros(uint32_t x)
{
    int32_t n = 0;
    if (x == 0u) {
        return 32;
    }
    while ((x & 0x80000000u) == 0u) {
        x <<= 1;
        ++n;
    }
    return n;
}

void tinyaot_softmax_s16(const int16_t *input, const tinyaot_softmax16_params *params, int16_t *output)
{
    const int32_t outer = params->outer;
    const int32_t depth = params->depth;
    int32_t row;
    for (row = 0; row < outer; ++row) {
        const int16_t *in = input + row * depth;
        int16_t *out = output + row * depth;
        int32_t max_in_row = -32768;
        int32_t sum_of_exps = 0; /* Q16.15 */
        int32_t headroom_plus_one;
        int32_t shifted_sum;
        int32_t reciprocal;
        int32_t right_shift;
        int64_t rounding;
        int32_t c;
        for (c = 0; c < depth; ++c) {
            if (in[c] > max_in_row) {
                max_in_row = in[c];
            }
        }
        for (c = 0; c < depth; ++c) {
            const int32_t scaled = tinyaot_requantize((int32_t)in[c] - max_in_row, params->input_multiplier,
                                                      params->input_shift);
            out[c] = sm16_lookup(tinyaot_clamp(scaled + 32767, -32768, 32767), params->exp_lut);
            sum_of_exps += out[c];
        }
        headroom_plus_one = sm16_count_leading_zeros((uint32_t)sum_of_exps);
        shifted_sum = (int32_t)((((int64_t)sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
        reciprocal = sm16_lookup(tinyaot_clamp(shifted_sum - SM16_RECIPROCAL_OFFSET, -32768, 32767),
                                 params->one_over_one_plus_x_lut);
        right_shift = 31 - headroom_plus_one;
        rounding = (int64_t)1 << (right_shift - 1);
        for (c = 0; c < depth; ++c) {
            const int32_t v = (int32_t)(((int64_t)out[c] * reciprocal + rounding) >> right_shift);
            out[c] = (int16_t)tinyaot_clamp(v, 0, 32767);
        }
    }
}
