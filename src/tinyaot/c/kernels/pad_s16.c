/*
 * pad_s16.c - spatial padding of NHWC int16 (16x8), TFLM's int16 PAD; twin of ref/pad_s16.py.
 *
 * As pad_s8.c on 2-byte elements. Constant mode, row by row: padding rows and columns are zeroed (int16
 * activations are symmetric, so 0 is real 0), input rows memcpy'd between them. The mirror and replicate modes
 * build each output row from the input row it maps to (its middle memcpy'd, each padded pixel copied from the
 * column it maps to). Output must not overlap the input.
 */
#include <string.h>

#include "tinyaot_kernels.h"

/* The input index that output index i (of an axis padded by `before`) copies: valid for the prepared padding. */
static int32_t pad16_source_index(int32_t i, int32_t before, int32_t size, int32_t mode)
{
    const int32_t s = i - before;
    if (s < 0) {
        return mode == TINYAOT_PAD_REFLECT ? -s : mode == TINYAOT_PAD_SYMMETRIC ? -s - 1 : 0;
    }
    if (s >= size) {
        return mode == TINYAOT_PAD_REFLECT ? 2 * size - 2 - s
             : mode == TINYAOT_PAD_SYMMETRIC ? 2 * size - 1 - s : size - 1;
    }
    return s;
}

static void pad16_constant(const int16_t *input, const tinyaot_pad16_params *params, int16_t *output)
{
    const size_t element = sizeof(int16_t);
    const size_t row_in = (size_t)params->in_w * (size_t)params->channels;
    const size_t left = (size_t)params->pad_left * (size_t)params->channels;
    const size_t right = (size_t)params->pad_right * (size_t)params->channels;
    const size_t row_out = left + row_in + right;
    const size_t above = row_out * (size_t)params->pad_top;
    const size_t below = row_out * (size_t)params->pad_bottom;
    int32_t b, y;
    for (b = 0; b < params->batches; ++b) {
        memset(output, 0, above * element);
        output += above;
        for (y = 0; y < params->in_h; ++y) {
            memset(output, 0, left * element);
            memcpy(output + left, input, row_in * element);
            memset(output + left + row_in, 0, right * element);
            input += row_in;
            output += row_out;
        }
        memset(output, 0, below * element);
        output += below;
    }
}

/* reflect, symmetric, replicate: every output pixel is a copy of an input pixel. */
static void pad16_from_input(const int16_t *input, const tinyaot_pad16_params *params, int16_t *output)
{
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t left = params->pad_left;
    const int32_t out_h = params->pad_top + in_h + params->pad_bottom;
    const int32_t out_w = left + in_w + params->pad_right;
    const size_t channels = (size_t)params->channels;
    const size_t pixel_bytes = channels * sizeof(int16_t);
    const size_t row_in = (size_t)in_w * channels;
    int32_t b, y, x;
    for (b = 0; b < params->batches; ++b) {
        const int16_t *const image = input + (size_t)b * (size_t)in_h * row_in;
        for (y = 0; y < out_h; ++y) {
            const int16_t *const row = image + (size_t)pad16_source_index(y, params->pad_top, in_h, params->mode) *
                                                   row_in;
            for (x = 0; x < left; ++x) {
                memcpy(output, row + (size_t)pad16_source_index(x, left, in_w, params->mode) * channels,
                       pixel_bytes);
                output += channels;
            }
            memcpy(output, row, row_in * sizeof(int16_t));
            output += row_in;
            for (x = left + in_w; x < out_w; ++x) {
                memcpy(output, row + (size_t)pad16_source_index(x, left, in_w, params->mode) * channels,
                       pixel_bytes);
                output += channels;
            }
        }
    }
}

void tinyaot_pad_s16(const int16_t *input, const tinyaot_pad16_params *params, int16_t *output)
{
    if (params->mode == TINYAOT_PAD_CONSTANT) {
        pad16_constant(input, params, output);
    } else {
        pad16_from_input(input, params, output);
    }
}
