/*
 * resize_nearest_s16.c - nearest-neighbour resize of NHWC int16 (16x8), TFLM's int16 RESIZE_NEAREST_NEIGHBOR;
 * twin of ref/resize_nearest_s16.py.
 *
 * The source row and column of every output pixel were fixed at compile time (src_y, src_x), so the kernel
 * only copies pixels; an output row whose source row is the previous one's is a copy of that output row.
 * Output must not overlap the input.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_resize_nearest_s16(const int16_t *input, const tinyaot_resize_nearest16_params *params,
                                int16_t *output)
{
    const size_t channels = (size_t)params->channels;
    const size_t pixel_bytes = channels * sizeof(int16_t);
    const size_t row_in = (size_t)params->in_w * channels;
    const size_t row_out = (size_t)params->out_w * channels;
    const int32_t *const src_y = params->src_y;
    const int32_t *const src_x = params->src_x;
    int32_t b, y, x;
    for (b = 0; b < params->batches; ++b) {
        const int16_t *const image = input + (size_t)b * (size_t)params->in_h * row_in;
        for (y = 0; y < params->out_h; ++y) {
            if (y > 0 && src_y[y] == src_y[y - 1]) {
                memcpy(output, output - row_out, row_out * sizeof(int16_t));  /* upsampling: the row again */
            } else {
                const int16_t *const row = image + (size_t)src_y[y] * row_in;
                for (x = 0; x < params->out_w; ++x) {
                    memcpy(output + (size_t)x * channels, row + (size_t)src_x[x] * channels, pixel_bytes);
                }
            }
            output += row_out;
        }
    }
}
