/*
 * depthwise_conv2d_inplace_s8.c - int8 NHWC depthwise convolution whose output may sit over its own input;
 * twin of the ring emulation in ref/inplace.py, with the integer results of depthwise_conv2d_s8.c (TFLite
 * Micro's DepthwiseConvPerChannel).
 *
 * Output pixel q (row-major over batches, rows, columns) is computed into slot q % ring_pixels of a scratch
 * ring, then pixel q - (ring_pixels - 1) is copied from its slot to the output; the last ring_pixels - 1
 * pixels are copied after the loop. The compiler sizes the ring so that no copy reaches input bytes a later
 * pixel still reads (plan/inplace.py): a 3x3 depthwise with padding 1 holds one row + one pixel back.
 *
 * Each pixel is one call of tinyaot_depthwise_conv2d_pixel_s8, the step of the plain kernel, so the pixel gets
 * that kernel's bits and speed.
 */
#include <string.h>

#include "tinyaot_kernels.h"

void tinyaot_depthwise_conv2d_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                                         int32_t ring_pixels, int8_t *output)
{
    const int32_t out_c = params->out_c;
    const int32_t delay = ring_pixels - 1;
    const int32_t image = params->in_h * params->in_w * params->in_c;
    int32_t pixel = 0;
    int32_t slot = 0;
    int32_t b, oy, ox, q;
    for (b = 0; b < params->batches; ++b) {
        for (oy = 0; oy < params->out_h; ++oy) {
            for (ox = 0; ox < params->out_w; ++ox) {
                tinyaot_depthwise_conv2d_pixel_s8(input + b * image, params, oy, ox, ring + slot * out_c);
                slot = slot + 1 == ring_pixels ? 0 : slot + 1;  /* also the slot of pixel - delay */
                if (pixel >= delay) {
                    memcpy(output + (pixel - delay) * out_c, ring + slot * out_c, (size_t)out_c);
                }
                ++pixel;
            }
        }
    }
    for (q = pixel - delay < 0 ? 0 : pixel - delay; q < pixel; ++q) {
        memcpy(output + q * out_c, ring + (q % ring_pixels) * out_c, (size_t)out_c);
    }
}
