/*
 * pad_s8.c - constant spatial padding of NHWC int8 with the zero point; twin of ref/pad_s8.py.
 *
 * Row by row: padding rows and columns are memset to pad_value, input rows memcpy'd between them.
 * Output must not overlap the input.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_pad_s8(const int8_t *input, const tinyaot_pad_params *params, int8_t *output)
{
    const int32_t batches = params->batches;
    const int32_t in_h = params->in_h;
    const size_t top = (size_t)params->pad_top;
    const size_t bottom = (size_t)params->pad_bottom;
    const size_t row_in = (size_t)params->in_w * (size_t)params->channels;
    const size_t left = (size_t)params->pad_left * (size_t)params->channels;
    const size_t right = (size_t)params->pad_right * (size_t)params->channels;
    const size_t row_out = left + row_in + right;
    const int fill = (int)(uint8_t)(int8_t)params->pad_value;
    int32_t b, y;
    for (b = 0; b < batches; ++b) {
        memset(output, fill, row_out * top);
        output += row_out * top;
        for (y = 0; y < in_h; ++y) {
            memset(output, fill, left);
            memcpy(output + left, input, row_in);
            memset(output + left + row_in, fill, right);
            input += row_in;
            output += row_out;
        }
        memset(output, fill, row_out * bottom);
        output += row_out * bottom;
    }
}
