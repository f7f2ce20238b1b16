/*
 * conv2d_add_s8.c - a conv2d whose int8 output is added to a skip tensor in the conv's epilogue (ResNet
 * blocks); twin of ref/conv2d_add_s8.py: tinyaot_conv2d_s8 to the conv's own int8 output, then
 * tinyaot_add_s8 (TFLite Micro's int8 Add) with the skip, operands in the add's order.
 *
 * Pixel by pixel, CONV_ADD_CHUNK output channels at a time: one call of the conv kernel for a 1x1 output
 * (window origin moved through the padding fields, weights / bias / multipliers offset to the chunk's first
 * channel, in a copy of the conv params) into a small stack buffer, then the add of that chunk and the skip's
 * bytes of the same pixel, written to the output. The output may therefore be the skip itself (each skip byte
 * is read right before its sum is written over it), or sit below the conv's input as for tinyaot_conv2d_s8.
 */
#include "tinyaot_kernels.h"

#define CONV_ADD_CHUNK 32 /* output channels per conv call: the stack buffer's size */

void tinyaot_conv2d_add_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                           int8_t *output)
{
    const tinyaot_conv_params *const conv = &params->conv;
    const int8_t *const weights = (const int8_t *)conv->weights;
    const int32_t *const bias = conv->bias;
    const int32_t *const multiplier = conv->multiplier;
    const int32_t *const shift = conv->shift;
    const int32_t out_c = conv->out_c;
    const int32_t image = conv->in_h * conv->in_w * conv->in_c;
    const int32_t taps = conv->kernel_h * conv->kernel_w * conv->in_c;
    const int32_t skip_input = params->skip_input;
    tinyaot_conv_params one = *conv;
    tinyaot_add_params chunk_add = params->add;
    int8_t sum_in[CONV_ADD_CHUNK];
    int32_t b, oy, ox, c0;
    int32_t pixel = 0;
    one.batches = 1;
    one.out_h = 1;
    one.out_w = 1;
    for (b = 0; b < conv->batches; ++b) {
        for (oy = 0; oy < conv->out_h; ++oy) {
            one.pad_top = conv->pad_top - oy * conv->stride_h;
            for (ox = 0; ox < conv->out_w; ++ox) {
                one.pad_left = conv->pad_left - ox * conv->stride_w;
                for (c0 = 0; c0 < out_c; c0 += CONV_ADD_CHUNK) {
                    const int32_t n = out_c - c0 < CONV_ADD_CHUNK ? out_c - c0 : CONV_ADD_CHUNK;
                    const int8_t *s = skip + pixel * out_c + c0;
                    one.weights = weights + c0 * taps;
                    one.bias = bias + c0;
                    one.multiplier = multiplier + c0;
                    one.shift = shift + c0;
                    one.out_c = n;
                    chunk_add.size = n;
                    tinyaot_conv2d_s8(input + b * image, &one, sum_in);
                    if (skip_input == 1) {
                        tinyaot_add_s8(s, sum_in, &chunk_add, output + pixel * out_c + c0);
                    } else {
                        tinyaot_add_s8(sum_in, s, &chunk_add, output + pixel * out_c + c0);
                    }
                }
                ++pixel;
            }
        }
    }
}
