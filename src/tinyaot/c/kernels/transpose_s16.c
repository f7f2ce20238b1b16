/*
 * transpose_s16.c - permute the axes of an int16 (16x8) tensor (up to 4-D), TFLM's int16 TRANSPOSE; twin of
 * ref/transpose_s16.py.
 *
 * Walks the output in order; in_strides[k] is the input element stride along output axis k.
 * Output must not overlap the input.
 */
#include "tinyaot_kernels.h"

void tinyaot_transpose_s16(const int16_t *input, const tinyaot_transpose16_params *params, int16_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const in_strides = params->in_strides;
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int16_t *in = input + i0 * in_strides[0] + i1 * in_strides[1] + i2 * in_strides[2];
                for (i3 = 0; i3 < out_shape[3]; ++i3) {
                    *output++ = in[i3 * in_strides[3]];
                }
            }
        }
    }
}
