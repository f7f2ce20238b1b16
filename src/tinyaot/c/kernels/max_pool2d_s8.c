/*
 * max_pool2d_s8.c - int8 NHWC max pooling; twin of ref/max_pool2d_s8.py (TFLM reference MaxPool).
 *
 * Each window is clipped to the input, so padding never wins. The output row of one pixel is the running
 * max over the window's pixels, starting from act_min (which also applies the lower clamp), then clamped
 * above. Output must not overlap the input.
 */
#include "tinyaot_kernels.h"

void tinyaot_max_pool2d_s8(const int8_t *input, const tinyaot_max_pool2d_params *params, int8_t *output)
{
    const int32_t batches = params->batches;
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t channels = params->channels;
    const int32_t kernel_h = params->kernel_h;
    const int32_t kernel_w = params->kernel_w;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t pad_top = params->pad_top;
    const int32_t pad_left = params->pad_left;
    const int32_t out_h = params->out_h;
    const int32_t out_w = params->out_w;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t b, oy, ox, ky, kx, c;
    for (b = 0; b < batches; ++b) {
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t y0 = oy * stride_h - pad_top;
            const int32_t ky_start = y0 < 0 ? -y0 : 0;
            const int32_t ky_end = in_h - y0 < kernel_h ? in_h - y0 : kernel_h;
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t x0 = ox * stride_w - pad_left;
                const int32_t kx_start = x0 < 0 ? -x0 : 0;
                const int32_t kx_end = in_w - x0 < kernel_w ? in_w - x0 : kernel_w;
                int8_t *out = output + ((b * out_h + oy) * out_w + ox) * channels;
                for (c = 0; c < channels; ++c) {
                    out[c] = (int8_t)act_min;
                }
                for (ky = ky_start; ky < ky_end; ++ky) {
                    for (kx = kx_start; kx < kx_end; ++kx) {
                        const int8_t *in = input + ((b * in_h + y0 + ky) * in_w + x0 + kx) * channels;
                        for (c = 0; c < channels; ++c) {
                            if (in[c] > out[c]) {
                                out[c] = in[c];
                            }
                        }
                    }
                }
                for (c = 0; c < channels; ++c) {
                    if (out[c] > act_max) {
                        out[c] = (int8_t)act_max;
                    }
                }
            }
        }
    }
}
