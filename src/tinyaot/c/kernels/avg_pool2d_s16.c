/*
 * avg_pool2d_s16.c - int16 (16x8) NHWC average pooling; twin of ref/avg_pool2d_s16.py (TFLM's int16 reference
 * AveragePool).
 *
 * The window is clipped to the image; the int32 sum is divided by the taps inside it (or, when count_include_pad is
 * set, by the taps inside the padded input: padded taps are real 0, zero point 0; a ceil_mode window's overhang past
 * the padding counts nowhere), rounding half away from zero with C's truncating division, then clamped. Input and
 * output share the scale, so there is no requantization.
 * The sums of up to AP16_BLOCK channels are kept at once, so each tap's pixel is read front to back.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define AP16_BLOCK 16 /* channels summed at once: 64 bytes of int32 sums on the stack */

/* The rounded average of one block of n channels of the window at `window` (its first tap inside the image). */
static void ap16_block(const int16_t *window, int32_t row_stride, int32_t channels, int32_t taps_h, int32_t taps_w,
                       int32_t n, int32_t count, int32_t act_min, int32_t act_max, int16_t *out)
{
    int32_t acc[AP16_BLOCK];
    int32_t ky;
    int32_t kx;
    int32_t c;
    for (c = 0; c < n; ++c) {
        acc[c] = 0;
    }
    for (ky = 0; ky < taps_h; ++ky) {
        const int16_t *pixel = window + ky * row_stride;
        for (kx = 0; kx < taps_w; ++kx) {
            for (c = 0; c < n; ++c) {
                acc[c] += pixel[c];
            }
            pixel += channels;
        }
    }
    for (c = 0; c < n; ++c) {
        const int32_t avg = acc[c] > 0 ? (acc[c] + count / 2) / count : (acc[c] - count / 2) / count;
        out[c] = (int16_t)tinyaot_clamp(avg, act_min, act_max);
    }
}

void tinyaot_avg_pool2d_s16(const int16_t *input, const tinyaot_avg_pool2d16_params *params, int16_t *output)
{
    const tinyaot_avg_pool2d16_params *p = params;
    const int32_t channels = p->channels;
    const int32_t row_stride = p->in_w * channels;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t c0;
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
                const int16_t *window = input + ((b * p->in_h + iy0 + ky0) * p->in_w + ix0 + kx0) * channels;
                int16_t *out = output + ((b * p->out_h + oy) * p->out_w + ox) * channels;
                for (c0 = 0; c0 < channels; c0 += AP16_BLOCK) {
                    const int32_t n = channels - c0 < AP16_BLOCK ? channels - c0 : AP16_BLOCK;
                    ap16_block(window + c0, row_stride, channels, ky1 - ky0, kx1 - kx0, n, count, p->act_min,
                               p->act_max, out + c0);
                }
            }
        }
    }
}
