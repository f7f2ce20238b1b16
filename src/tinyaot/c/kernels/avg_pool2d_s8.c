/*
 * avg_pool2d_s8.c - int8 NHWC average pooling; twin of ref/avg_pool2d_s8.py (TFLite Micro's AveragePool).
 *
 * The window is clipped to the image; the sum is divided by the taps inside it (or, when count_include_pad is set,
 * by the taps inside the padded input: PyTorch's rule, a ceil_mode window's overhang past the padding counts
 * nowhere), rounding half away from zero with C's truncating division.
 * Input and output share scale and zero point, so there is no requantization.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_avg_pool2d_s8(const int8_t *input, const tinyaot_pool_params *params, int8_t *output)
{
    const tinyaot_pool_params *p = params;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t c;
    for (b = 0; b < p->batches; ++b) {
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t iy0 = oy * p->stride_h - p->pad_top;
            const int32_t ky0 = iy0 < 0 ? -iy0 : 0;
            const int32_t ky1 = p->kernel_h < p->in_h - iy0 ? p->kernel_h : p->in_h - iy0;
            /* count_include_pad: the rows inside the padded input (a ceil_mode window may hang over) */
            const int32_t span_h = p->in_h + p->pad_bottom - iy0;
            const int32_t rows = p->kernel_h < span_h ? p->kernel_h : span_h;
            for (ox = 0; ox < p->out_w; ++ox) {
                const int32_t ix0 = ox * p->stride_w - p->pad_left;
                const int32_t kx0 = ix0 < 0 ? -ix0 : 0;
                const int32_t kx1 = p->kernel_w < p->in_w - ix0 ? p->kernel_w : p->in_w - ix0;
                const int32_t span_w = p->in_w + p->pad_right - ix0;
                const int32_t cols = p->kernel_w < span_w ? p->kernel_w : span_w;
                const int32_t count = p->count_include_pad ? rows * cols : (ky1 - ky0) * (kx1 - kx0);
                int8_t *out = output + ((b * p->out_h + oy) * p->out_w + ox) * p->channels;
                for (c = 0; c < p->channels; ++c) {
                    /* May be negative at the border; every index actually read is inside the image. */
                    const int32_t base = ((b * p->in_h + iy0) * p->in_w + ix0) * p->channels + c;
                    /* Padded taps hold the zero point (real 0); they count only with count_include_pad. */
                    int32_t acc = (count - (ky1 - ky0) * (kx1 - kx0)) * p->zero_point;
                    int32_t ky;
                    int32_t kx;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            acc += input[base + (ky * p->in_w + kx) * p->channels];
                        }
                    }
                    acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    out[c] = (int8_t)tinyaot_clamp(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}
