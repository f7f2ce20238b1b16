/*
 * transpose_s16.c - permute the axes of an int16 (16x8) tensor (the reduced permutation of
 * ref/transpose_s8.py, at most 6 axes), TFLM's int16 TRANSPOSE; twin of
 * ref/transpose_s16.py.
 *
 * Walks the output in order; in_strides[k] is the input element stride along output axis k.
 * Output must not overlap the input.
 */
#include "tinyaot_kernels.h"

void tinyaot_transpose_s16(const int16_t *input, const tinyaot_transpose16_params *params, int16_t *output)
{
    const int32_t *const n = params->out_shape;
    const int32_t *const st = params->in_strides;
    int32_t i0, i1, i2, i3, i4, i5;
    for (i0 = 0; i0 < n[0]; ++i0) {
        for (i1 = 0; i1 < n[1]; ++i1) {
            for (i2 = 0; i2 < n[2]; ++i2) {
                for (i3 = 0; i3 < n[3]; ++i3) {
                    for (i4 = 0; i4 < n[4]; ++i4) {
                        const int16_t *in = input + i0 * st[0] + i1 * st[1] + i2 * st[2] + i3 * st[3] + i4 * st[4];
                        for (i5 = 0; i5 < n[5]; ++i5) {
                            *output++ = in[i5 * st[5]];
                        }
                    }
                }
            }
        }
    }
}
