/*
 * resize_bilinear_s8.c - bilinear resize of NHWC int8, TFLM's ResizeBilinearInteger; twin of
 * ref/resize_bilinear_s8.py.
 *
 * Source coordinates are integers in units of 1/1024 pixel (RESIZE_ONE): output index o maps to
 * o * scale_10 (+ scale_10 / 2 - 512 with half-pixel centres), between input indices lower and upper with
 * fraction f = coordinate - 1024 * lower (C's division truncates toward zero, as TFLM's does, so just below 0
 * gives lower 0 and f < 0). An output value is sum(input * weight) over the four neighbours, the weights
 * products of (1024 - f) and f that sum to 2^20, divided by 2^20 rounding half away from zero (TFLM's default
 * double rounding). int32 holds every sum: |input| <= 128 and f in [-512, 1024) bound it by 128 * 2048^2 = 2^29.
 * Output must not overlap the input.
 */
#include "tinyaot_kernels.h"

#define RESIZE_FRACTION_BITS 10
#define RESIZE_ONE (1 << RESIZE_FRACTION_BITS)
#define RESIZE_ROUND_BITS (2 * RESIZE_FRACTION_BITS)
#define RESIZE_HALF (1 << (RESIZE_ROUND_BITS - 1))

typedef struct {
    int32_t lower, upper;   /* input indices */
    int32_t fraction;       /* weight of `upper` in 1/1024; `lower` weighs RESIZE_ONE - fraction */
} source_point;

static source_point source_of(int32_t o, int32_t scale_10, int32_t half_pixel_centers, int32_t in_size)
{
    source_point p;
    const int32_t value = half_pixel_centers ? o * scale_10 + scale_10 / 2 - RESIZE_ONE / 2 : o * scale_10;
    const int32_t lower = value / RESIZE_ONE;
    const int32_t upper = (value + RESIZE_ONE - 1) / RESIZE_ONE;
    p.lower = lower > 0 ? lower : 0;
    p.upper = upper < in_size - 1 ? upper : in_size - 1;
    p.fraction = value - RESIZE_ONE * p.lower;
    return p;
}

void tinyaot_resize_bilinear_s8(const int8_t *input, const tinyaot_resize_bilinear_params *params,
                                int8_t *output)
{
    const int32_t channels = params->channels;
    const int32_t row_in = params->in_w * channels;
    int32_t b, y, x, c;
    for (b = 0; b < params->batches; ++b) {
        const int8_t *const image = input + b * params->in_h * row_in;
        for (y = 0; y < params->out_h; ++y) {
            const source_point sy = source_of(y, params->height_scale_10, params->half_pixel_centers, params->in_h);
            const int8_t *const top = image + sy.lower * row_in;
            const int8_t *const bottom = image + sy.upper * row_in;
            for (x = 0; x < params->out_w; ++x) {
                const source_point sx = source_of(x, params->width_scale_10, params->half_pixel_centers,
                                                  params->in_w);
                const int32_t w_top_left = (RESIZE_ONE - sy.fraction) * (RESIZE_ONE - sx.fraction);
                const int32_t w_bottom_left = sy.fraction * (RESIZE_ONE - sx.fraction);
                const int32_t w_top_right = (RESIZE_ONE - sy.fraction) * sx.fraction;
                const int32_t w_bottom_right = sy.fraction * sx.fraction;
                const int8_t *const tl = top + sx.lower * channels;
                const int8_t *const tr = top + sx.upper * channels;
                const int8_t *const bl = bottom + sx.lower * channels;
                const int8_t *const br = bottom + sx.upper * channels;
                for (c = 0; c < channels; ++c) {
                    const int32_t sum = tl[c] * w_top_left + bl[c] * w_bottom_left + tr[c] * w_top_right
                                      + br[c] * w_bottom_right;
                    *output++ = (int8_t)((sum + (sum > 0 ? RESIZE_HALF : -RESIZE_HALF)) / (1 << RESIZE_ROUND_BITS));
                }
            }
        }
    }
}
