/*
 * add_s16.c - the 16x8 element-wise add and subtract; twin of ref/add_s16.py (TFLM's int16 ADD / SUB: the
 * general rescaling path with a left shift of 15).
 *
 * Each element: both inputs shifted left, scaled by their multipliers, added (or subtracted), the sum rescaled
 * and clamped; the zero points are 0. The output is walked in order over out_shape, each operand read at its
 * strides (0 along the axes it broadcasts), so the kernel may run in place over an operand with the output's
 * full shape: every element is read before it is written. Each output row (the last axis) runs in a function
 * of its own, one for add and one for subtract, so that the loop keeps every constant in a register.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* TFLM's MultiplyByQuantizedMultiplierSmallerThanOneExp for its multipliers (in [0, 2^31), right = -shift >= 0):
 * tinyaot_requantize_nonneg without its left-shift case. */
static inline int32_t add16_scale(int32_t x, int32_t multiplier, int32_t right)
{
    int32_t high = (int32_t)((uint64_t)((int64_t)x * multiplier + ((int64_t)1 << 30)) >> 31);
    if (right == 0) {
        return high;
    }
    high += high >> 31;
    return (high >> right) + ((high >> (right - 1)) & 1);
}

static inline void add16_row(const int16_t *pa, const int16_t *pb, int32_t step_a, int32_t step_b, int32_t row,
                             const tinyaot_add16_params *params, int16_t *out, int32_t subtract)
{
    const int32_t scale = (int32_t)1 << params->left_shift; /* |x| <= 2^15, so x * 2^15 fits */
    const int32_t m1 = params->input1_multiplier;
    const int32_t r1 = -params->input1_shift;
    const int32_t m2 = params->input2_multiplier;
    const int32_t r2 = -params->input2_shift;
    const int32_t mo = params->output_multiplier;
    const int32_t ro = -params->output_shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    for (i = 0; i < row; ++i) {
        const int32_t a = add16_scale((int32_t)*pa * scale, m1, r1); /* at most 2^29 in magnitude */
        const int32_t b = add16_scale((int32_t)*pb * scale, m2, r2);
        const int32_t v = add16_scale(subtract ? a - b : a + b, mo, ro);
        out[i] = (int16_t)tinyaot_clamp(v, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}

__attribute__((noinline)) static void add16_row_add(const int16_t *pa, const int16_t *pb, int32_t step_a,
                                                    int32_t step_b, int32_t row, const tinyaot_add16_params *params,
                                                    int16_t *out)
{
    add16_row(pa, pb, step_a, step_b, row, params, out, 0);
}

__attribute__((noinline)) static void add16_row_sub(const int16_t *pa, const int16_t *pb, int32_t step_a,
                                                    int32_t step_b, int32_t row, const tinyaot_add16_params *params,
                                                    int16_t *out)
{
    add16_row(pa, pb, step_a, step_b, row, params, out, 1);
}

void tinyaot_add_s16(const int16_t *input1, const int16_t *input2, const tinyaot_add16_params *params,
                     int16_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const a_strides = params->a_strides;
    const int32_t *const b_strides = params->b_strides;
    const int32_t row = out_shape[3];
    const int32_t step_a = a_strides[3], step_b = b_strides[3]; /* 1, or 0 where the operand broadcasts */
    const int32_t subtract = params->subtract;
    int32_t i0, i1, i2;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int16_t *pa = input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int16_t *pb = input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                if (subtract) {
                    add16_row_sub(pa, pb, step_a, step_b, row, params, output);
                } else {
                    add16_row_add(pa, pb, step_a, step_b, row, params, output);
                }
                output += row;
            }
        }
    }
}
