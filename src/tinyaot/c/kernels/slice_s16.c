/*
 * slice_s16.c - x[begin:end:step] of an int16 (16x8) tensor; twin of ref/slice_s16.py (the walk of slice_s8.c
 * over int16 values).
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_slice_s16(const int16_t *input, const tinyaot_slice16_params *params, int16_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const in_strides = params->in_strides;
    const int16_t *const first = input + params->offset;
    const int32_t run = out_shape[3];
    const int32_t step = in_strides[3];
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int16_t *in = first + i0 * in_strides[0] + i1 * in_strides[1] + i2 * in_strides[2];
                if (step == 1) {
                    memmove(output, in, (size_t)run * sizeof(int16_t));
                    output += run;
                } else {
                    for (i3 = 0; i3 < run; ++i3) {
                        *output++ = in[i3 * step];
                    }
                }
            }
        }
    }
}
