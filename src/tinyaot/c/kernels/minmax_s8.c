/*
 * minmax_s8.c - element-wise int8 minimum / maximum; twin of ref/minmax_s8.py (TFLite Micro's MINIMUM / MAXIMUM
 * when the operands have the output's qparams: the bytes are compared as they are).
 *
 * An operand with other qparams is first requantized to the output's (TFLM's Requantize), which keeps the order
 * of the real values. tinyaot_minmax_s8: both operands have the output's shape; tinyaot_minmax_broadcast_s8
 * walks the 4-D output and reads each operand at its strides (0 where it broadcasts). Both may run in place over
 * an operand with the output's full shape: element i is read before it is written.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* An operand byte in the output's qparams: as it is, from its table (speed mode), or requantized. */
static inline int32_t in_output_qparams(int32_t q, int32_t rescale, const int8_t *table, int32_t multiplier,
                                        int32_t shift, int32_t zero_point, int32_t output_zero_point)
{
    if (!rescale) {
        return q;
    }
    if (table != 0) {
        return table[q + 128];
    }
    return tinyaot_clamp(tinyaot_requantize(q - zero_point, multiplier, shift) + output_zero_point, -128, 127);
}

static inline int8_t minmax_one(int32_t a, int32_t b, const tinyaot_minmax_params *p)
{
    const int32_t va = in_output_qparams(a, p->input1_rescale, p->input1_table, p->input1_multiplier,
                                         p->input1_shift, p->input1_zero_point, p->output_zero_point);
    const int32_t vb = in_output_qparams(b, p->input2_rescale, p->input2_table, p->input2_multiplier,
                                         p->input2_shift, p->input2_zero_point, p->output_zero_point);
    const int32_t v = p->is_max ? (va > vb ? va : vb) : (va < vb ? va : vb);
    return (int8_t)tinyaot_clamp(v, p->act_min, p->act_max);
}

void tinyaot_minmax_s8(const int8_t *input1, const int8_t *input2, const tinyaot_minmax_params *params,
                       int8_t *output)
{
    /* A local copy: the int8 stores cannot alias it, so its fields stay in registers. */
    const tinyaot_minmax_params local = *params;
    int32_t i;
    for (i = 0; i < local.size; ++i) {
        output[i] = minmax_one(input1[i], input2[i], &local);
    }
}

void tinyaot_minmax_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_minmax_params *params,
                                 int8_t *output)
{
    const tinyaot_minmax_params local = *params;
    const int32_t *const out_shape = local.out_shape;
    const int32_t *const a_strides = local.a_strides;
    const int32_t *const b_strides = local.b_strides;
    const int32_t row = out_shape[3];
    const int32_t step_a = a_strides[3], step_b = b_strides[3];  /* 1, or 0 where the operand broadcasts */
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int8_t *pa = input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int8_t *pb = input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                for (i3 = 0; i3 < row; ++i3) {
                    *output++ = minmax_one(*pa, *pb, &local);
                    pa += step_a;
                    pb += step_b;
                }
            }
        }
    }
}
