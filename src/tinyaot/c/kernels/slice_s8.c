/*
 * slice_s8.c - x[begin:end:step] of an int8 tensor; twin of ref/slice_s8.py.
 *
 * Walks the output in order from input + offset at in_strides (up to 4 axes, merged at compile time). A run
 * with unit stride moves at once with memmove: the plan may put the output over input bytes already read.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_slice_s8(const int8_t *input, const tinyaot_slice_params *params, int8_t *output)
{
    const int32_t *const out_shape = params->out_shape;
    const int32_t *const in_strides = params->in_strides;
    const int8_t *const first = input + params->offset;
    const int32_t run = out_shape[3];
    const int32_t step = in_strides[3];
    int32_t i0, i1, i2, i3;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                const int8_t *in = first + i0 * in_strides[0] + i1 * in_strides[1] + i2 * in_strides[2];
                if (step == 1) {
                    memmove(output, in, (size_t)run);
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
