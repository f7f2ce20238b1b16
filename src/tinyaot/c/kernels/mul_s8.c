/*
 * mul_s8.c - int8 elementwise multiply; twin of ref/mul_s8.py (TFLM int8 MUL).
 *
 * out = clamp(requantize((input1 + input1_offset) * (input2 + input2_offset)) + output_offset). The compiler
 * picks tinyaot_mul_s8 when both operands have the output's shape and tinyaot_mul_broadcast_s8 otherwise.
 * Both may run in place over an operand with the output's full shape.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

static inline int8_t mul_one(int32_t a, int32_t b, int32_t input1_offset, int32_t input2_offset,
                             int32_t output_offset, int32_t multiplier, int32_t shift, int32_t act_min,
                             int32_t act_max)
{
    const int32_t prod = (a + input1_offset) * (b + input2_offset);
    const int32_t v = tinyaot_requantize(prod, multiplier, shift) + output_offset;
    return (int8_t)tinyaot_clamp(v, act_min, act_max);
}

void tinyaot_mul_s8(const int8_t *input1, const int8_t *input2, const tinyaot_mul_params *params, int8_t *output)
{
    const int32_t size = params->size;
    const int32_t input1_offset = params->input1_offset;
    const int32_t input2_offset = params->input2_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    for (i = 0; i < size; ++i) {
        output[i] = mul_one(input1[i], input2[i], input1_offset, input2_offset, output_offset, multiplier, shift,
                            act_min, act_max);
    }
}

void tinyaot_mul_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_mul_params *params,
                              int8_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const a_strides = params->a_strides;
    const int32_t *const b_strides = params->b_strides;
    const int32_t row = out_shape[3];
    const int32_t step_a = a_strides[3], step_b = b_strides[3];  /* 1, or 0 where the operand broadcasts */
    const int32_t input1_offset = params->input1_offset;
    const int32_t input2_offset = params->input2_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int8_t *pa = input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int8_t *pb = input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                for (i3 = 0; i3 < row; ++i3) {
                    *output++ = mul_one(*pa, *pb, input1_offset, input2_offset, output_offset, multiplier, shift,
                                        act_min, act_max);
                    pa += step_a;
                    pb += step_b;
                }
            }
        }
    }
}
