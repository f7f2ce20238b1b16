/*
 * prelu_s8.c - int8 PReLU and leaky ReLU; twin of ref/prelu_s8.py (TFLite Micro's PRELU and LEAKY_RELU).
 *
 * v = input + input_offset; v >= 0 is requantized by multiplier 1, a negative v times its alpha (alpha +
 * alpha_offset) by multiplier 2 (a negative one, a leaky ReLU's negative alpha: by its magnitude, negated). The
 * output walks out_shape (4-D, axes merged) and reads alpha at its strides
 * (0 where it broadcasts: one value, or one per channel along the last axis). Runs in place: element i is read
 * before it is written.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_prelu_s8(const int8_t *input, const tinyaot_prelu_params *params, int8_t *output)
{
    /* A local copy: the int8 stores cannot alias it, so its fields stay in registers. */
    const tinyaot_prelu_params p = *params;
    const int32_t *const out_shape = p.out_shape;
    const int32_t *const strides = p.alpha_strides;
    const int32_t step = strides[3];  /* 1, or 0 where alpha broadcasts along the row */
    /* Multiplier 2's sign, decided once: a negative one requantizes by its magnitude and negates. */
    const int32_t sign_2 = p.output_multiplier_2 >= 0 ? 1 : -1;
    const int32_t multiplier_2 = sign_2 * p.output_multiplier_2;
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int8_t *alpha = p.alpha + i0 * strides[0] + i1 * strides[1] + i2 * strides[2];
                for (i3 = 0; i3 < out_shape[3]; ++i3) {
                    const int32_t v = (int32_t)*input++ + p.input_offset;
                    int32_t out;
                    if (v >= 0) {
                        out = tinyaot_requantize(v, p.output_multiplier_1, p.output_shift_1);
                    } else {
                        out = sign_2 * tinyaot_requantize(v * ((int32_t)*alpha + p.alpha_offset), multiplier_2,
                                                          p.output_shift_2);
                    }
                    *output++ = (int8_t)tinyaot_clamp(out + p.output_offset, -128, 127);
                    alpha += step;
                }
            }
        }
    }
}
