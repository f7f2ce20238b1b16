/*
 * mul_s16.c - the 16x8 element-wise multiply; twin of ref/mul_s16.py (TFLM's int16 MUL).
 *
 * out = clamp(requantize(input1 * input2, multiplier, shift)), zero points 0, the int32 product (at most 2^30
 * in magnitude) rescaled with TFLM's double rounding. The output is walked in order over out_shape, each operand
 * read at its strides (0 along the axes it broadcasts), so the kernel may run in place over an operand with the
 * output's full shape: every element is read before it is written. On cores with the DSP extension a right shift
 * takes one SMMLAR per element (tinyaot_requantize_right; the one product it cannot take goes the general way).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* One output row, any multiplier and shift: tinyaot_requantize, TFLM's double rounding. */
__attribute__((noinline)) static void mul16_row(const int16_t *pa, const int16_t *pb, int32_t step_a, int32_t step_b,
                                                int32_t row, const tinyaot_mul16_params *params, int16_t *out)
{
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    for (i = 0; i < row; ++i) {
        const int32_t v = tinyaot_requantize((int32_t)*pa * (int32_t)*pb, multiplier, shift);
        out[i] = (int16_t)tinyaot_clamp(v, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}

#if TINYAOT_DSP
/* One output row for a multiplier in [0, 2^31) and a right shift (QuantizeMultiplier's for a product scale below
 * 1/2): tinyaot_requantize_right, one SMMLAR and one ASR, for every product but 2^30 (both inputs -32768, where 2x
 * would not fit int32), which takes tinyaot_requantize_nonneg. */
__attribute__((noinline)) static void mul16_row_right(const int16_t *pa, const int16_t *pb, int32_t step_a,
                                                      int32_t step_b, int32_t row, const tinyaot_mul16_params *params,
                                                      int16_t *out)
{
    const int32_t multiplier = params->multiplier;
    const int32_t right = -params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int16_t *const end = out + row;
    while (out != end) {
        const int32_t x = (int32_t)*pa * (int32_t)*pb;
        const int32_t v = x != (1 << 30) ? tinyaot_requantize_right(x, multiplier, right)
                                         : tinyaot_requantize_nonneg(x, multiplier, -right);
        *out++ = (int16_t)tinyaot_clamp(v, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}
#endif

void tinyaot_mul_s16(const int16_t *input1, const int16_t *input2, const tinyaot_mul16_params *params,
                     int16_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const a_strides = params->a_strides;
    const int32_t *const b_strides = params->b_strides;
    const int32_t row = out_shape[3];
    const int32_t step_a = a_strides[3], step_b = b_strides[3]; /* 1, or 0 where the operand broadcasts */
    int32_t i0, i1, i2;
    void (*row_fn)(const int16_t *, const int16_t *, int32_t, int32_t, int32_t, const tinyaot_mul16_params *,
                   int16_t *) = mul16_row;
#if TINYAOT_DSP
    if (params->multiplier >= 0 && params->shift < 0) {
        row_fn = mul16_row_right;
    }
#endif
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int16_t *pa = input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int16_t *pb = input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                row_fn(pa, pb, step_a, step_b, row, params, output);
                output += row;
            }
        }
    }
}
