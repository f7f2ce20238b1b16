/*
 * conv2d_inplace_s8.c - int8 NHWC convolution whose output may sit over its own input; twin of the ring
 * emulation in ref/inplace.py, with the integer results of conv2d_s8.c (TFLite Micro's ConvPerChannel).
 *
 * Output pixel q (row-major over batches, rows, columns) is computed into slot q % ring_pixels of a scratch
 * ring, then pixel q - (ring_pixels - 1) is copied from its slot to the output; the last ring_pixels - 1
 * pixels are copied after the loop. The compiler sizes the ring so that no copy reaches input bytes a later
 * pixel still reads (plan/inplace.py): a 1x1 conv with equal channels needs a ring of one pixel.
 * Plain loops: this variant buys memory, not speed.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

static void conv_ring_flush(const int8_t *ring, int32_t ring_pixels, int32_t out_c, int32_t pixel, int8_t *output)
{
    memcpy(output + pixel * out_c, ring + (pixel % ring_pixels) * out_c, (size_t)out_c);
}

void tinyaot_conv2d_inplace_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                               const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                               int8_t *ring, int32_t ring_pixels, int8_t *output)
{
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t kernel_h = params->kernel_h;
    const int32_t kernel_w = params->kernel_w;
    const int32_t input_offset = params->input_offset;
    const int32_t delay = ring_pixels - 1;
    int32_t pixel = 0;
    int32_t b, oy, ox, oc, ky, kx, ic;
    for (b = 0; b < params->batches; ++b) {
        for (oy = 0; oy < params->out_h; ++oy) {
            for (ox = 0; ox < params->out_w; ++ox) {
                int8_t *slot = ring + (pixel % ring_pixels) * out_c;
                const int32_t y0 = oy * params->stride_h - params->pad_top;
                const int32_t x0 = ox * params->stride_w - params->pad_left;
                for (oc = 0; oc < out_c; ++oc) {
                    int32_t acc = bias[oc];
                    for (ky = 0; ky < kernel_h; ++ky) {
                        const int32_t iy = y0 + ky * params->dilation_h;
                        if (iy < 0 || iy >= in_h) {
                            continue;
                        }
                        for (kx = 0; kx < kernel_w; ++kx) {
                            const int32_t ix = x0 + kx * params->dilation_w;
                            const int8_t *x;
                            const int8_t *w;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            x = input + ((b * in_h + iy) * in_w + ix) * in_c;
                            w = weights + ((oc * kernel_h + ky) * kernel_w + kx) * in_c;
                            for (ic = 0; ic < in_c; ++ic) {
                                acc += ((int32_t)x[ic] + input_offset) * (int32_t)w[ic];
                            }
                        }
                    }
                    acc = tinyaot_requantize(acc, multiplier[oc], shift[oc]) + params->output_offset;
                    slot[oc] = (int8_t)tinyaot_clamp(acc, params->act_min, params->act_max);
                }
                if (pixel >= delay) {
                    conv_ring_flush(ring, ring_pixels, out_c, pixel - delay, output);
                }
                ++pixel;
            }
        }
    }
    for (b = pixel - delay < 0 ? 0 : pixel - delay; b < pixel; ++b) {
        conv_ring_flush(ring, ring_pixels, out_c, b, output);
    }
}
