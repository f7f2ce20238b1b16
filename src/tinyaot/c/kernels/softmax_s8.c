/*
 * softmax_s8.c - int8 softmax over the last axis; twin of ref/softmax_s8.py (TFLite Micro's reference
 * int8 Softmax, the gemmlowp fixed-point path).
 *
 * Differences to the row maximum are scaled to Q5.26 (input_multiplier, input_left_shift); exp() of
 * each is evaluated in fixed point (gemmlowp's exp_on_negative_values), summed in Q12.19, inverted
 * with a Newton-Raphson 1 / (1 + x), and each output is exp * (1 / sum) in units of 1/256, minus 128
 * (int16 output: in units of 1/65536, minus 32768). Differences below diff_min contribute 0 and output the
 * minimum.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent: a saturating left shift. */
static int32_t sm_saturating_left_shift(int32_t x, int32_t exponent)
{
    const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/* (a + b) / 2 rounded half away from zero, as gemmlowp's RoundingHalfSum. */
static int32_t sm_rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + (int64_t)b;
    const int64_t sign = sum >= 0 ? 1 : -1;
    return (int32_t)((sum + sign) / 2);
}

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series around -1/8. */
static int32_t sm_exp_on_interval(int32_t a)
{
    const int32_t constant_term = 1895147668; /* exp(-1/8) */
    const int32_t constant_1_over_3 = 715827883;
    const int32_t x = a + (1 << 28);
    const int32_t x2 = tinyaot_srdhm(x, x);
    const int32_t x3 = tinyaot_srdhm(x2, x);
    const int32_t x4 = tinyaot_srdhm(x2, x2);
    const int32_t x4_over_4 = tinyaot_rounding_divide_by_pot(x4, 2);
    const int32_t poly = tinyaot_rounding_divide_by_pot(tinyaot_srdhm(x4_over_4 + x3, constant_1_over_3) + x2, 1);
    return constant_term + tinyaot_srdhm(constant_term, x + poly);
}

/* exp(a) for a <= 0 in Q5.26; result Q0.31 (gemmlowp's exp_on_negative_values, 5 integer bits). */
static int32_t sm_exp_on_negative_values(int32_t a)
{
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t one_quarter = (int32_t)1 << 24;
    const int32_t a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter;
    const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
    int32_t result = sm_exp_on_interval(sm_saturating_left_shift(a_mod_quarter_minus_one_quarter, 5));
    int32_t i;
    for (i = 0; i < 7; ++i) {
        /* exponents -2 .. 4: bit 26 + exponent of the remainder selects exp(-2^exponent) */
        if (remainder & ((int32_t)1 << (24 + i))) {
            result = tinyaot_srdhm(result, barrel[i]);
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + a) for a in [0, 1), Q0.31 in and out: Newton-Raphson in Q2.29. */
static int32_t sm_one_over_one_plus_x(int32_t a)
{
    const int32_t half_denominator = sm_rounding_half_sum(a, INT32_MAX);
    int32_t x = 1515870810 + tinyaot_srdhm(half_denominator, -1010580540); /* 48/17 - 32/17 * d */
    int32_t i;
    for (i = 0; i < 3; ++i) {
        const int32_t one_minus = ((int32_t)1 << 29) - tinyaot_srdhm(half_denominator, x);
        x = x + sm_saturating_left_shift(tinyaot_srdhm(x, one_minus), 2);
    }
    return sm_saturating_left_shift(x, 1);
}

static int32_t sm_count_leading_zeros(uint32_t x)
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

void tinyaot_softmax_s8(const int8_t *input, const tinyaot_softmax_params *params, void *output)
{
    const int32_t outer = params->outer;
    const int32_t depth = params->depth;
    const int32_t input_multiplier = params->input_multiplier;
    const int32_t input_left_shift = params->input_left_shift;
    const int32_t diff_min = params->diff_min;
    const int32_t bits = params->output_bits;
    const int32_t out_min = bits == 16 ? -32768 : -128;
    const int32_t out_max = bits == 16 ? 32767 : 127;
    int8_t *const out8 = (int8_t *)output;
    int16_t *const out16 = (int16_t *)output;
    int32_t i;
    for (i = 0; i < outer; ++i) {
        const int8_t *row = input + i * depth;
        int32_t max_in_row = -128;
        int32_t sum_of_exps = 0;
        int32_t headroom_plus_one;
        int32_t shifted_scale;
        int32_t exponent;
        int32_t c;
        for (c = 0; c < depth; ++c) {
            max_in_row = row[c] > max_in_row ? row[c] : max_in_row;
        }
        for (c = 0; c < depth; ++c) {
            const int32_t diff = (int32_t)row[c] - max_in_row;
            if (diff >= diff_min) {
                const int32_t scaled = tinyaot_srdhm((int32_t)((uint32_t)diff << input_left_shift), input_multiplier);
                sum_of_exps += tinyaot_rounding_divide_by_pot(sm_exp_on_negative_values(scaled), 12);
            }
        }
        /* GetReciprocal: normalize the Q12.19 sum to [1, 2), invert, remember the bits above one. */
        headroom_plus_one = sm_count_leading_zeros((uint32_t)sum_of_exps);
        shifted_scale = sm_one_over_one_plus_x(
            (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - ((uint32_t)1 << 31)));
        exponent = (12 - headroom_plus_one) + 31 - bits;
        for (c = 0; c < depth; ++c) {
            const int32_t diff = (int32_t)row[c] - max_in_row;
            int32_t value = out_min;
            if (diff >= diff_min) {
                const int32_t scaled = tinyaot_srdhm((int32_t)((uint32_t)diff << input_left_shift), input_multiplier);
                const int32_t e = sm_exp_on_negative_values(scaled);
                value = tinyaot_rounding_divide_by_pot(tinyaot_srdhm(shifted_scale, e), exponent) + out_min;
                value = tinyaot_clamp(value, out_min, out_max);
            }
            if (bits == 16) {
                out16[i * depth + c] = (int16_t)value;
            } else {
                out8[i * depth + c] = (int8_t)value;
            }
        }
    }
}
