/*
 * layer_norm_s8.c - int8 layer normalization over the last axis and group normalization of channels-last data;
 * twin of ref/layer_norm_s8.py, which is the definition (TFLite has no LAYER_NORM or GROUP_NORM kernel).
 *
 * Per set of D values q normalized together (a row; a group of channels over all positions of a sample): d_i = D * q_i - sum(q) and U = D * sum(q^2) - sum(q)^2 + eps_q are exact integers
 * (D * (q_i - mean) and D^2 * (variance + eps)); 1 / sqrt(U) comes from a table and Newton steps in Q28 on U
 * normalized into [2^30, 2^32); n_i = d_i / sqrt(U) in Q16; the per-channel affine is a requantization of n_i
 * plus a bias, both in output units times 2^8, rounded once at the end.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define LN_NORM_BITS 16    /* n_i is Q16 */
#define LN_RSQRT_BITS 28   /* 1 / sqrt(x) is Q28 for x = u / 2^32 in [1/4, 1) */
#define LN_AFFINE_BITS 8   /* bits below the output step until the final rounding */
#define LN_NEWTON_STEPS 3
#define LN_TABLE_BASE 8    /* u >> 27 is in [8, 32) */

/* 2^28 * sqrt(64 / (2i + 17)), rounded down: 1 / sqrt(x) at the middle of the 24 intervals of x. */
static const int32_t ln_rsqrt_table[24] = {
    520841288, 492666537, 468619350, 447781294, 429496729, 413283420, 398777702, 385699449,
    373828919, 362990988, 353044136, 343872591, 335380599, 327488186, 320127961, 313242684,
    306783378, 300707858, 294979564, 289566636, 284441157, 279578557, 274957105, 270557508,
};

/* x / 2^exponent for int64 x, rounding half away from zero (rounding_divide_by_pot on 64 bits). */
static int64_t ln_rounding_divide_by_pot64(int64_t x, int32_t exponent)
{
    const int64_t mask = ((int64_t)1 << exponent) - 1;
    const int64_t remainder = x & mask;
    const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static int32_t ln_bit_length(uint64_t u)
{
    int32_t n = 0;
    while (u != 0u) {
        u >>= 1;
        ++n;
    }
    return n;
}

/* y (Q28) and s with 1 / sqrt(big_u) = y * 2^-(s + 16 + 28); big_u >= 1. */
static int32_t ln_rsqrt(int64_t big_u, int32_t *s_out)
{
    const int32_t bits = ln_bit_length((uint64_t)big_u);
    const int32_t s = bits >= 31 ? (bits - 31) / 2 : -((32 - bits) / 2);
    const int64_t u = s >= 0 ? (big_u >> (2 * s)) : (big_u << (-2 * s)); /* in [2^30, 2^32) */
    int64_t y = ln_rsqrt_table[(u >> 27) - LN_TABLE_BASE];
    int32_t step;
    for (step = 0; step < LN_NEWTON_STEPS; ++step) {
        const int64_t y2 = (y * y) >> LN_RSQRT_BITS;
        const int64_t xy2 = (u * y2) >> 32;
        y = (y * (((int64_t)3 << LN_RSQRT_BITS) - xy2)) >> (LN_RSQRT_BITS + 1);
    }
    *s_out = s;
    return (int32_t)y;
}

void tinyaot_layer_norm_s8(const int8_t *input, const tinyaot_layer_norm_params *params, int8_t *output)
{
    const int32_t positions = params->positions;
    const int32_t depth = params->depth;
    const int32_t group_depth = depth / params->groups;
    const int32_t values = positions * group_depth;
    const int64_t eps_q = ((int64_t)params->eps_high << 31) + params->eps_low;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t *const bias = params->bias;
    const int32_t output_zero_point = params->output_zero_point;
    int32_t r, g, p, i;
    for (r = 0; r < params->rows; ++r) {
        const int8_t *const row = input + r * positions * depth;
        int8_t *const out = output + r * positions * depth;
        for (g = 0; g < params->groups; ++g) {
            const int32_t first = g * group_depth;
            int32_t sum = 0;
            int32_t sum_sq = 0;
            int64_t big_u;
            int32_t y = 0;
            int32_t s = 0;
            for (p = 0; p < positions; ++p) {
                const int8_t *const x = row + p * depth + first;
                for (i = 0; i < group_depth; ++i) {
                    sum += x[i];
                    sum_sq += (int32_t)x[i] * x[i];
                }
            }
            big_u = (int64_t)values * sum_sq - (int64_t)sum * sum + eps_q;
            if (big_u > 0) {
                y = ln_rsqrt(big_u, &s);
            }
            for (p = 0; p < positions; ++p) {
                const int8_t *const x = row + p * depth + first;
                int8_t *const o = out + p * depth + first;
                for (i = 0; i < group_depth; ++i) {
                    const int32_t c = first + i;
                    const int32_t d = values * x[i] - sum;
                    const int32_t n = (int32_t)ln_rounding_divide_by_pot64((int64_t)d * y, s + LN_RSQRT_BITS);
                    const int32_t v = tinyaot_requantize(n, multiplier[c], shift[c]) + bias[c];
                    o[i] = (int8_t)tinyaot_saturate_s8(tinyaot_rounding_divide_by_pot(v, LN_AFFINE_BITS) +
                                                       output_zero_point);
                }
            }
        }
    }
}
