/*
 * conv2d_add_s8.c - a conv2d whose int8 output is added to a skip tensor in the conv's epilogue (ResNet
 * blocks); twin of ref/conv2d_add_s8.py: tinyaot_conv2d_s8 to the conv's own int8 output, then
 * tinyaot_add_s8 (TFLite Micro's int8 Add) with the skip, operands in the add's order.
 *
 * Pixel by pixel, CONV_ADD_CHUNK output channels at a time: one call of the conv kernel for a 1x1 output
 * (window origin moved through the padding fields, weights / bias / multipliers offset to the chunk's first
 * channel) into a small stack buffer, then the add of that chunk and the skip's bytes of the same pixel,
 * written to the output. The output may therefore be the skip itself (each skip byte is read right before
 * its sum is written over it), or sit below the conv's input as for tinyaot_conv2d_s8.
 */
#include "tinyaot_kernels.h"

#define CONV_ADD_CHUNK 32 /* output channels per conv call: the stack buffer's size */

void tinyaot_conv2d_add_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                           const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *conv_params,
                           const int8_t *skip, const tinyaot_add_params *add_params, int32_t skip_input,
                           int8_t *output)
{
    const int32_t out_c = conv_params->out_c;
    const int32_t image = conv_params->in_h * conv_params->in_w * conv_params->in_c;
    const int32_t taps = conv_params->kernel_h * conv_params->kernel_w * conv_params->in_c;
    tinyaot_conv_params one = *conv_params;
    tinyaot_add_params chunk_add = *add_params;
    int8_t sum_in[CONV_ADD_CHUNK];
    int32_t b, oy, ox, c0;
    int32_t pixel = 0;
    one.batches = 1;
    one.out_h = 1;
    one.out_w = 1;
    for (b = 0; b < conv_params->batches; ++b) {
        for (oy = 0; oy < conv_params->out_h; ++oy) {
            one.pad_top = conv_params->pad_top - oy * conv_params->stride_h;
            for (ox = 0; ox < conv_params->out_w; ++ox) {
                one.pad_left = conv_params->pad_left - ox * conv_params->stride_w;
                for (c0 = 0; c0 < out_c; c0 += CONV_ADD_CHUNK) {
                    const int32_t n = out_c - c0 < CONV_ADD_CHUNK ? out_c - c0 : CONV_ADD_CHUNK;
                    const int8_t *s = skip + pixel * out_c + c0;
                    one.out_c = n;
                    chunk_add.size = n;
                    tinyaot_conv2d_s8(input + b * image, weights + c0 * taps, bias + c0, multiplier + c0, shift + c0,
                                      &one, sum_in);
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
