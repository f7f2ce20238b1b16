/*
 * conv2d_s8.c - int8 NHWC convolution; twin of ref/conv2d_s8.py (TFLite Micro's ConvPerChannel).
 *
 * acc = bias[oc] + sum over the taps inside the image of w * (x + input_offset), then per-channel
 * requantization, output offset and clamp. Taps outside the image are skipped, which is what padding
 * with the input zero point gives. With dilation_w == 1 the taps of one kernel row are contiguous in
 * both the input and the weights, so each row is one dot product of kw * in_c bytes.
 *
 * On cores with the DSP extension two output channels share each input load: SXTAB16 adds the input
 * offset while widening four input bytes, SXTB16 widens the weights and SMLAD does two MACs per
 * instruction. Integer sums are exact, so both paths give the same bits.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>

typedef int32_t __attribute__((aligned(1), may_alias)) conv_unaligned_i32;

static inline int32_t conv_read_s8x4(const int8_t *p)
{
    return *(const conv_unaligned_i32 *)(const void *)p;
}

/* acc0 += sum w0[k] * (x[k] + offset), acc1 likewise with w1: each input word is widened once. */
static void dot2_offset_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t offset,
                           int32_t *acc0, int32_t *acc1)
{
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)offset << 16) | (uint32_t)(uint16_t)offset);
    int32_t a0 = *acc0;
    int32_t a1 = *acc1;
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t vx = conv_read_s8x4(x + k);
        const int32_t vw0 = conv_read_s8x4(w0 + k);
        const int32_t vw1 = conv_read_s8x4(w1 + k);
        const int16x2_t x_even = __sxtab16(offset2, vx);
        const int16x2_t x_odd = __sxtab16(offset2, (int32_t)((uint32_t)vx >> 8));
        a0 = __smlad(x_even, __sxtb16(vw0), a0);
        a0 = __smlad(x_odd, __sxtb16((int32_t)((uint32_t)vw0 >> 8)), a0);
        a1 = __smlad(x_even, __sxtb16(vw1), a1);
        a1 = __smlad(x_odd, __sxtb16((int32_t)((uint32_t)vw1 >> 8)), a1);
    }
    for (; k < n; ++k) {
        const int32_t xv = (int32_t)x[k] + offset;
        a0 += (int32_t)w0[k] * xv;
        a1 += (int32_t)w1[k] * xv;
    }
    *acc0 = a0;
    *acc1 = a1;
}

static int32_t dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t offset, int32_t acc)
{
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)offset << 16) | (uint32_t)(uint16_t)offset);
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t vx = conv_read_s8x4(x + k);
        const int32_t vw = conv_read_s8x4(w + k);
        acc = __smlad(__sxtab16(offset2, vx), __sxtb16(vw), acc);
        acc = __smlad(__sxtab16(offset2, (int32_t)((uint32_t)vx >> 8)), __sxtb16((int32_t)((uint32_t)vw >> 8)), acc);
    }
    for (; k < n; ++k) {
        acc += (int32_t)w[k] * ((int32_t)x[k] + offset);
    }
    return acc;
}
#define CONV_PAIRED_CHANNELS 1
#else
static int32_t dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t offset, int32_t acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        acc += (int32_t)w[k] * ((int32_t)x[k] + offset);
    }
    return acc;
}
#define CONV_PAIRED_CHANNELS 0
#endif

/* First and one-past-last kernel index whose tap origin + k * dilation lies in [0, size). */
static void valid_taps(int32_t origin, int32_t dilation, int32_t kernel, int32_t size, int32_t *first,
                       int32_t *end)
{
    int32_t lo = 0;
    int32_t hi;
    if (origin < 0) {
        lo = (-origin + dilation - 1) / dilation;
    }
    if (size - 1 - origin < 0) {
        hi = 0;
    } else {
        hi = (size - 1 - origin) / dilation + 1;
    }
    *first = lo < kernel ? lo : kernel;
    *end = hi < kernel ? hi : kernel;
    if (*end < *first) {
        *end = *first;
    }
}

/* The accumulator of one output channel at one output pixel, bias not included. */
static int32_t conv_taps(const int8_t *in_image, const int8_t *w_oc, const tinyaot_conv_params *p, int32_t iy0,
                         int32_t ix0, int32_t ky0, int32_t ky1, int32_t kx0, int32_t kx1, int32_t acc)
{
    int32_t ky;
    int32_t kx;
    for (ky = ky0; ky < ky1; ++ky) {
        const int8_t *in_row = in_image + (iy0 + ky * p->dilation_h) * p->in_w * p->in_c;
        const int8_t *w_row = w_oc + ky * p->kernel_w * p->in_c;
        if (p->dilation_w == 1) {
            acc = dot_offset_s8(in_row + (ix0 + kx0) * p->in_c, w_row + kx0 * p->in_c, (kx1 - kx0) * p->in_c,
                                p->input_offset, acc);
        } else {
            for (kx = kx0; kx < kx1; ++kx) {
                acc = dot_offset_s8(in_row + (ix0 + kx * p->dilation_w) * p->in_c, w_row + kx * p->in_c, p->in_c,
                                    p->input_offset, acc);
            }
        }
    }
    return acc;
}

static int8_t conv_output(int32_t acc, int32_t multiplier, int32_t shift, const tinyaot_conv_params *p)
{
    acc = tinyaot_requantize(acc, multiplier, shift) + p->output_offset;
    return (int8_t)tinyaot_clamp(acc, p->act_min, p->act_max);
}

void tinyaot_conv2d_s8(const int8_t *input, const int8_t *weights, const int32_t *bias, const int32_t *multiplier,
                       const int32_t *shift, const tinyaot_conv_params *params, int8_t *output)
{
    const tinyaot_conv_params *p = params;
    const int32_t w_per_oc = p->kernel_h * p->kernel_w * p->in_c;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t oc;
    for (b = 0; b < p->batches; ++b) {
        const int8_t *in_image = input + b * p->in_h * p->in_w * p->in_c;
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t iy0 = oy * p->stride_h - p->pad_top;
            int32_t ky0;
            int32_t ky1;
            valid_taps(iy0, p->dilation_h, p->kernel_h, p->in_h, &ky0, &ky1);
            for (ox = 0; ox < p->out_w; ++ox) {
                const int32_t ix0 = ox * p->stride_w - p->pad_left;
                int8_t *out = output + ((b * p->out_h + oy) * p->out_w + ox) * p->out_c;
                int32_t kx0;
                int32_t kx1;
                valid_taps(ix0, p->dilation_w, p->kernel_w, p->in_w, &kx0, &kx1);
                oc = 0;
#if CONV_PAIRED_CHANNELS
                if (p->dilation_w == 1) {
                    for (; oc + 2 <= p->out_c; oc += 2) {
                        const int8_t *w0 = weights + oc * w_per_oc;
                        int32_t acc0 = bias[oc];
                        int32_t acc1 = bias[oc + 1];
                        int32_t ky;
                        for (ky = ky0; ky < ky1; ++ky) {
                            const int32_t row = ky * p->kernel_w * p->in_c + kx0 * p->in_c;
                            dot2_offset_s8(in_image + ((iy0 + ky * p->dilation_h) * p->in_w + ix0 + kx0) * p->in_c,
                                           w0 + row, w0 + w_per_oc + row, (kx1 - kx0) * p->in_c, p->input_offset,
                                           &acc0, &acc1);
                        }
                        out[oc] = conv_output(acc0, multiplier[oc], shift[oc], p);
                        out[oc + 1] = conv_output(acc1, multiplier[oc + 1], shift[oc + 1], p);
                    }
                }
#endif
                for (; oc < p->out_c; ++oc) {
                    const int32_t acc = conv_taps(in_image, weights + oc * w_per_oc, p, iy0, ix0, ky0, ky1, kx0, kx1,
                                                  bias[oc]);
                    out[oc] = conv_output(acc, multiplier[oc], shift[oc], p);
                }
            }
        }
    }
}
