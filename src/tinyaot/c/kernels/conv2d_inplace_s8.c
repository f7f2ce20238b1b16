/*
 * conv2d_inplace_s8.c - int8 NHWC convolution whose output may sit over its own input; twin of the ring
 * emulation in ref/inplace.py, with the integer results of conv2d_s8.c (TFLite Micro's ConvPerChannel).
 *
 * Output pixel q (row-major over batches, rows, columns) is computed into slot q % ring_pixels of a scratch
 * ring, then pixel q - (ring_pixels - 1) is copied from its slot to the output; the last ring_pixels - 1
 * pixels are copied after the loop. The compiler sizes the ring so that no copy reaches input bytes a later
 * pixel still reads (plan/inplace.py): a 1x1 conv with equal channels needs a ring of one pixel.
 *
 * Each pixel is one call of tinyaot_conv2d_s8 on a 1x1 output whose window origin is moved by the padding
 * fields (the kernel takes any pad, negative included), so the pixel gets that kernel's bits and speed.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_conv2d_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                               int32_t ring_pixels, int8_t *output)
{
    const int32_t out_c = params->out_c;
    const int32_t delay = ring_pixels - 1;
    const int32_t image = params->in_h * params->in_w * params->in_c;
    tinyaot_conv_params one = *params;
    int32_t pixel = 0;
    int32_t b, oy, ox, q;
    one.batches = 1;
    one.out_h = 1;
    one.out_w = 1;
    for (b = 0; b < params->batches; ++b) {
        for (oy = 0; oy < params->out_h; ++oy) {
            one.pad_top = params->pad_top - oy * params->stride_h;
            for (ox = 0; ox < params->out_w; ++ox) {
                one.pad_left = params->pad_left - ox * params->stride_w;
                tinyaot_conv2d_s8(input + b * image, &one, ring + (pixel % ring_pixels) * out_c);
                if (pixel >= delay) {
                    q = pixel - delay;
                    memcpy(output + q * out_c, ring + (q % ring_pixels) * out_c, (size_t)out_c);
                }
                ++pixel;
            }
        }
    }
    for (q = pixel - delay < 0 ? 0 : pixel - delay; q < pixel; ++q) {
        memcpy(output + q * out_c, ring + (q % ring_pixels) * out_c, (size_t)out_c);
    }
}

/*
 * The pointwise case (1x1 kernel, no padding, every tap inside the image), bias with the input offset folded in
 * as tinyaot_conv2d_1x1_s8 takes it: each pixel is one call of that kernel on the one input pixel it reads.
 */
void tinyaot_conv2d_1x1_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                                   int32_t ring_pixels, int8_t *output)
{
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t delay = ring_pixels - 1;
    tinyaot_conv_params one = *params;
    int32_t pixel = 0;
    int32_t b, oy, ox, q;
    one.batches = 1;
    one.in_h = 1;
    one.in_w = 1;
    one.out_h = 1;
    one.out_w = 1;
    for (b = 0; b < params->batches; ++b) {
        for (oy = 0; oy < params->out_h; ++oy) {
            const int8_t *row = input + (b * params->in_h + oy * params->stride_h) * params->in_w * in_c;
            for (ox = 0; ox < params->out_w; ++ox) {
                tinyaot_conv2d_1x1_s8(row + ox * params->stride_w * in_c, &one, ring + (pixel % ring_pixels) * out_c);
                if (pixel >= delay) {
                    q = pixel - delay;
                    memcpy(output + q * out_c, ring + (q % ring_pixels) * out_c, (size_t)out_c);
                }
                ++pixel;
            }
        }
    }
    for (q = pixel - delay < 0 ? 0 : pixel - delay; q < pixel; ++q) {
        memcpy(output + q * out_c, ring + (q % ring_pixels) * out_c, (size_t)out_c);
    }
}
