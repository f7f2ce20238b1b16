/*
 * max_pool2d_s16.c - int16 (16x8) NHWC max pooling; twin of ref/max_pool2d_s16.py (TFLM's int16 reference
 * MaxPool).
 *
 * Each window is clipped to the input, so padding never wins. The output row of one pixel is the running
 * max over the window's pixels, starting from act_min (which also applies the lower clamp), then clamped
 * above. On the Cortex-M33 two channels go at once (SSUB16 + SEL); the max is exact, so both paths give the
 * same bits. Output must not overlap the input.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_kernels.h"

#if TINYAOT_DSP
/* Halfword-wise max of two int16 pairs: SSUB16 sets a GE flag per halfword where a >= b, SEL takes those from a.
 * One asm, so that the flags SEL reads are SSUB16's. */
static inline int32_t mp16_max2(int32_t a, int32_t b)
{
    int32_t diff;
    int32_t r;
    __asm__("ssub16 %0, %2, %3\n\t"
            "sel %1, %2, %3"
            : "=&r"(diff), "=r"(r)
            : "r"(a), "r"(b)
            : "cc");
    (void)diff;
    return r;
}
#endif

/* out[c] = max(out[c], in[c]) for the pixel's channels. */
static void mp16_max_row(int16_t *out, const int16_t *in, int32_t channels)
{
    int32_t c = 0;
#if TINYAOT_DSP
    for (; c + 1 < channels; c += 2) {
        tinyaot_unaligned_i32 *o = (tinyaot_unaligned_i32 *)(void *)(out + c);
        *o = mp16_max2(*(const tinyaot_unaligned_i32 *)(const void *)(in + c), *o);
    }
#endif
    for (; c < channels; ++c) {
        if (in[c] > out[c]) {
            out[c] = in[c];
        }
    }
}

void tinyaot_max_pool2d_s16(const int16_t *input, const tinyaot_max_pool2d16_params *params, int16_t *output)
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
                int16_t *out = output + ((b * out_h + oy) * out_w + ox) * channels;
                for (c = 0; c < channels; ++c) {
                    out[c] = (int16_t)act_min;
                }
                for (ky = ky_start; ky < ky_end; ++ky) {
                    for (kx = kx_start; kx < kx_end; ++kx) {
                        mp16_max_row(out, input + ((b * in_h + y0 + ky) * in_w + x0 + kx) * channels, channels);
                    }
                }
                for (c = 0; c < channels; ++c) {
                    if (out[c] > act_max) {
                        out[c] = (int16_t)act_max;
                    }
                }
            }
        }
    }
}
