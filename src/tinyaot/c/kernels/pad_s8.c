/*
 * pad_s8.c - constant spatial padding of NHWC int8 with the zero point; twin of ref/pad_s8.py.
 *
 * Row by row: padding rows and columns are memset to pad_value, input rows memcpy'd between them.
 * Output must not overlap the input.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_pad_s8(const int8_t *input, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,
                    int32_t pad_top, int32_t pad_bottom, int32_t pad_left, int32_t pad_right, int32_t pad_value,
                    int8_t *output)
{
    const size_t row_in = (size_t)in_w * (size_t)channels;
    const size_t left = (size_t)pad_left * (size_t)channels;
    const size_t right = (size_t)pad_right * (size_t)channels;
    const size_t row_out = left + row_in + right;
    const int fill = (int)(uint8_t)(int8_t)pad_value;
    int32_t b, y;
    for (b = 0; b < batches; ++b) {
        memset(output, fill, row_out * (size_t)pad_top);
        output += row_out * (size_t)pad_top;
        for (y = 0; y < in_h; ++y) {
            memset(output, fill, left);
            memcpy(output + left, input, row_in);
            memset(output + left + row_in, fill, right);
            input += row_in;
            output += row_out;
        }
        memset(output, fill, row_out * (size_t)pad_bottom);
        output += row_out * (size_t)pad_bottom;
    }
}
