/*
 * conv2d_s8.c - int8 NHWC convolution; twin of ref/conv2d_s8.py (TFLite Micro's ConvPerChannel).
 *
 * acc = bias[oc] + sum over the taps inside the image of w * (x + input_offset), then per-channel
 * requantization, output offset and clamp. Taps outside the image are skipped, which is what padding
 * with the input zero point gives.
 *
 * Per output pixel the kernel picks one of three ways to reach the window, all giving the same sums:
 * - a 1x1 kernel reads the input pixel in place (in_c contiguous bytes);
 * - a small window (kh * kw * in_c <= CONV_PATCH_BYTES) whose rows are short is first copied into a patch
 *   on the stack, outside taps filled with the input zero point (they then add 0), so each output channel
 *   is one long dot product instead of kh short ones;
 * - otherwise each kernel row inside the image is one dot product of (valid kw) * in_c contiguous bytes
 *   (dilation_w == 1) or one per tap.
 * tinyaot_conv2d_1x1_s8 is the pointwise case the compiler picks when every pixel's tap is inside the image
 * (1x1, no padding): a matrix product over pixels whose bias already holds input_offset * sum(weights), so
 * the inner loop widens plain bytes.
 * On cores with the DSP extension four output channels share each input load: SXTAB16 adds the input
 * offset while widening four input bytes, SXTB16 widens the weights and SMLAD does two MACs per
 * instruction. Integer sums are exact, so every path gives the same bits. Output pixels are still written
 * one after another, row-major (the order plan/overlap.py's window_rules relies on).
 * A grouped convolution (groups > 1, TFLM's grouped ConvPerChannel) runs each group's output channels against
 * its in_c / groups input channels: one dot product per tap of the group's channels (conv2d_grouped), and the
 * pointwise and patch kernels loop over the groups the same way.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define CONV_PATCH_BYTES 96  /* stack bytes for one window: first layers (few channels) fit */
/* Rows shorter than TINYAOT_CONV_SHORT_ROW go through the patch (tinyaot_kernels.h: the compiler's choice of
 * tinyaot_conv2d_patch_s8 reads the same limit). */

#if TINYAOT_DSP
/* acc[i] += sum_k w[i * w_stride + k] * (x[k] + offset) for four output channels i: each input word is widened
 * once for all four. Not inlined: alone in its function the loop keeps every operand in a register. */
__attribute__((noinline)) static void dot4_offset_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t n,
                                                     int32_t offset, int32_t *acc)
{
    const int32_t offset2 = tinyaot_offset2(offset);
    const int8_t *w2 = w + 2 * w_stride;
    const int8_t *x_end = x + (n & ~3);
    int32_t a0 = acc[0];
    int32_t a1 = acc[1];
    int32_t a2 = acc[2];
    int32_t a3 = acc[3];
    int32_t k;
    while (x != x_end) {
        const int32_t vx = tinyaot_read_s8x4(x);
        const int32_t xe = __sxtab16(offset2, vx);
        const int32_t xo = tinyaot_sxtab16_ror8(offset2, vx);
        a0 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w), a0);
        a1 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + w_stride), a1);
        a2 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2), a2);
        a3 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2 + w_stride), a3);
        x += 4;
        w += 4;
        w2 += 4;
    }
    for (k = n & 3; k > 0; --k) {
        const int32_t xv = (int32_t)*x++ + offset;
        a0 += xv * w[0];
        a1 += xv * w[w_stride];
        a2 += xv * w2[0];
        a3 += xv * w2[w_stride];
        ++w;
        ++w2;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

static inline int32_t dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t offset, int32_t acc)
{
    const int32_t offset2 = tinyaot_offset2(offset);
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t vx = tinyaot_read_s8x4(x + k);
        acc = tinyaot_mac4_s8(__sxtab16(offset2, vx), tinyaot_sxtab16_ror8(offset2, vx), tinyaot_read_s8x4(w + k), acc);
    }
    for (; k < n; ++k) {
        acc += (int32_t)w[k] * ((int32_t)x[k] + offset);
    }
    return acc;
}
#else
static void dot4_offset_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t n, int32_t offset,
                           int32_t *acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        const int32_t xv = (int32_t)x[k] + offset;
        acc[0] += (int32_t)w[k] * xv;
        acc[1] += (int32_t)w[w_stride + k] * xv;
        acc[2] += (int32_t)w[2 * w_stride + k] * xv;
        acc[3] += (int32_t)w[3 * w_stride + k] * xv;
    }
}

static inline int32_t dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t offset, int32_t acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        acc += (int32_t)w[k] * ((int32_t)x[k] + offset);
    }
    return acc;
}
#endif

static inline int8_t conv_output(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                                 int32_t act_min, int32_t act_max)
{
    acc = tinyaot_requantize_nonneg(acc, multiplier, shift) + output_offset;
    return (int8_t)tinyaot_clamp(acc, act_min, act_max);
}

/* Four channels' accumulators to output bytes. */
static inline void conv_output4(const int32_t *acc, const int32_t *multiplier, const int32_t *shift,
                                int32_t output_offset, int32_t act_min, int32_t act_max, int8_t *out)
{
    int32_t i;
    for (i = 0; i < 4; ++i) {
        out[i] = conv_output(acc[i], multiplier[i], shift[i], output_offset, act_min, act_max);
    }
}

/* One output pixel from `count` contiguous window bytes (`x`) against every channel's first `count` weights. */
static void conv_pixel_contiguous(const int8_t *x, int32_t count, const int8_t *weights, int32_t w_per_oc,
                                  const int32_t *bias, const int32_t *multiplier, const int32_t *shift,
                                  int32_t out_c, int32_t input_offset, int32_t output_offset, int32_t act_min,
                                  int32_t act_max, int8_t *out)
{
    int32_t oc = 0;
    for (; oc + 4 <= out_c; oc += 4) {
        int32_t acc[4];
        acc[0] = bias[oc];
        acc[1] = bias[oc + 1];
        acc[2] = bias[oc + 2];
        acc[3] = bias[oc + 3];
        dot4_offset_s8(x, weights + oc * w_per_oc, w_per_oc, count, input_offset, acc);
        conv_output4(acc, multiplier + oc, shift + oc, output_offset, act_min, act_max, out + oc);
    }
    for (; oc < out_c; ++oc) {
        const int32_t acc = dot_offset_s8(x, weights + oc * w_per_oc, count, input_offset, bias[oc]);
        out[oc] = conv_output(acc, multiplier[oc], shift[oc], output_offset, act_min, act_max);
    }
}

/* tinyaot_conv2d_s8 for groups > 1: per output pixel and group, each tap inside the image is one dot product of
 * the group's in_c / groups contiguous input bytes, four output channels of the group at a time. */
static void conv2d_grouped(const int8_t *input, const tinyaot_conv_params *params, int8_t *output)
{
    const int8_t *const weights = (const int8_t *)params->weights;
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_h = params->out_h;
    const int32_t out_w = params->out_w;
    const int32_t out_c = params->out_c;
    const int32_t kernel_w = params->kernel_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t group_in = in_c / params->groups;
    const int32_t group_out = out_c / params->groups;
    const int32_t w_per_oc = params->kernel_h * kernel_w * group_in;
    int32_t b, oy, ox, g, oc, ky, kx;
    for (b = 0; b < params->batches; ++b) {
        const int8_t *in_image = input + b * in_h * in_w * in_c;
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t iy0 = oy * params->stride_h - params->pad_top;
            int32_t ky0;
            int32_t ky1;
            tinyaot_valid_taps(iy0, dilation_h, params->kernel_h, in_h, &ky0, &ky1);
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t ix0 = ox * params->stride_w - params->pad_left;
                int8_t *out = output + ((b * out_h + oy) * out_w + ox) * out_c;
                int32_t kx0;
                int32_t kx1;
                tinyaot_valid_taps(ix0, dilation_w, kernel_w, in_w, &kx0, &kx1);
                for (g = 0; g < params->groups; ++g) {
                    const int8_t *in_group = in_image + g * group_in;
                    const int32_t oc_end = (g + 1) * group_out;
                    for (oc = g * group_out; oc < oc_end; oc += 4) {
                        const int32_t n = oc_end - oc < 4 ? oc_end - oc : 4;
                        const int8_t *w_oc = weights + oc * w_per_oc;
                        int32_t acc[4];
                        int32_t i;
                        for (i = 0; i < n; ++i) {
                            acc[i] = bias[oc + i];
                        }
                        for (ky = ky0; ky < ky1; ++ky) {
                            const int8_t *in_row = in_group + (iy0 + ky * dilation_h) * in_w * in_c;
                            for (kx = kx0; kx < kx1; ++kx) {
                                const int8_t *x = in_row + (ix0 + kx * dilation_w) * in_c;
                                const int8_t *w_tap = w_oc + (ky * kernel_w + kx) * group_in;
                                if (n == 4) {
                                    dot4_offset_s8(x, w_tap, w_per_oc, group_in, input_offset, acc);
                                } else {
                                    for (i = 0; i < n; ++i) {
                                        acc[i] = dot_offset_s8(x, w_tap + i * w_per_oc, group_in, input_offset,
                                                               acc[i]);
                                    }
                                }
                            }
                        }
                        for (i = 0; i < n; ++i) {
                            out[oc + i] = conv_output(acc[i], multiplier[oc + i], shift[oc + i], output_offset,
                                                      act_min, act_max);
                        }
                    }
                }
            }
        }
    }
}

void tinyaot_conv2d_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output)
{
    /* Locals, not params->...: stores through int8_t * may alias the struct, which would force reloads. */
    const int8_t *const weights = (const int8_t *)params->weights;
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t batches = params->batches;
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_h = params->out_h;
    const int32_t out_w = params->out_w;
    const int32_t out_c = params->out_c;
    const int32_t kernel_h = params->kernel_h;
    const int32_t kernel_w = params->kernel_w;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t pad_top = params->pad_top;
    const int32_t pad_left = params->pad_left;
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t w_per_oc = kernel_h * kernel_w * in_c;
    const int use_patch = w_per_oc <= CONV_PATCH_BYTES && kernel_h * kernel_w > 1
                          && (kernel_w * in_c < TINYAOT_CONV_SHORT_ROW || dilation_w != 1);
    int8_t patch[CONV_PATCH_BYTES];
    int32_t b;
    int32_t oy;
    int32_t ox;
    if (params->groups > 1) {
        conv2d_grouped(input, params, output);
        return;
    }
    for (b = 0; b < batches; ++b) {
        const int8_t *in_image = input + b * in_h * in_w * in_c;
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t iy0 = oy * stride_h - pad_top;
            int32_t ky0;
            int32_t ky1;
            tinyaot_valid_taps(iy0, dilation_h, kernel_h, in_h, &ky0, &ky1);
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t ix0 = ox * stride_w - pad_left;
                int8_t *out = output + ((b * out_h + oy) * out_w + ox) * out_c;
                int32_t kx0;
                int32_t kx1;
                int32_t oc;
                int32_t ky;
                int32_t kx;
                tinyaot_valid_taps(ix0, dilation_w, kernel_w, in_w, &kx0, &kx1);
                if (kernel_h * kernel_w == 1 && ky0 < ky1 && kx0 < kx1) {
                    conv_pixel_contiguous(in_image + (iy0 * in_w + ix0) * in_c, in_c, weights, w_per_oc, bias,
                                          multiplier, shift, out_c, input_offset, output_offset, act_min, act_max,
                                          out);
                    continue;
                }
                if (use_patch) {
                    const int8_t pad_value = (int8_t)(-input_offset);  /* the zero point: adds 0 */
                    int8_t *dst = patch;
                    for (ky = 0; ky < kernel_h; ++ky) {
                        const int32_t iy = iy0 + ky * dilation_h;
                        for (kx = 0; kx < kernel_w; ++kx) {
                            const int32_t ix = ix0 + kx * dilation_w;
                            int32_t c;
                            if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
                                const int8_t *src = in_image + (iy * in_w + ix) * in_c;
                                for (c = 0; c < in_c; ++c) {
                                    dst[c] = src[c];
                                }
                            } else {
                                for (c = 0; c < in_c; ++c) {
                                    dst[c] = pad_value;
                                }
                            }
                            dst += in_c;
                        }
                    }
                    conv_pixel_contiguous(patch, w_per_oc, weights, w_per_oc, bias, multiplier, shift, out_c,
                                          input_offset, output_offset, act_min, act_max, out);
                    continue;
                }
                oc = 0;
                if (dilation_w == 1) {
                    const int32_t run = (kx1 - kx0) * in_c;
                    for (; oc + 4 <= out_c; oc += 4) {
                        const int8_t *w0 = weights + oc * w_per_oc;
                        int32_t acc[4];
                        acc[0] = bias[oc];
                        acc[1] = bias[oc + 1];
                        acc[2] = bias[oc + 2];
                        acc[3] = bias[oc + 3];
                        for (ky = ky0; ky < ky1; ++ky) {
                            dot4_offset_s8(in_image + ((iy0 + ky * dilation_h) * in_w + ix0 + kx0) * in_c,
                                           w0 + (ky * kernel_w + kx0) * in_c, w_per_oc, run, input_offset, acc);
                        }
                        conv_output4(acc, multiplier + oc, shift + oc, output_offset, act_min, act_max, out + oc);
                    }
                }
                for (; oc < out_c; ++oc) {
                    const int8_t *w_oc = weights + oc * w_per_oc;
                    int32_t acc = bias[oc];
                    for (ky = ky0; ky < ky1; ++ky) {
                        const int8_t *in_row = in_image + (iy0 + ky * dilation_h) * in_w * in_c;
                        for (kx = kx0; kx < kx1; ++kx) {
                            acc = dot_offset_s8(in_row + (ix0 + kx * dilation_w) * in_c, w_oc + (ky * kernel_w + kx)
                                                * in_c, in_c, input_offset, acc);
                        }
                    }
                    out[oc] = conv_output(acc, multiplier[oc], shift[oc], output_offset, act_min, act_max);
                }
            }
        }
    }
}

void tinyaot_conv2d_1x1_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output)
{
    const int8_t *const weights = (const int8_t *)params->weights;
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t batches = params->batches;
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_h = params->out_h;
    const int32_t out_w = params->out_w;
    const int32_t out_c = params->out_c;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t groups = params->groups;
    const int32_t group_in = in_c / groups;
    const int32_t group_out = out_c / groups;
    int8_t *out = output;
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t g;
    for (b = 0; b < batches; ++b) {
        for (oy = 0; oy < out_h; ++oy) {
            const int8_t *x = input + ((b * in_h + oy * stride_h) * in_w) * in_c;
            for (ox = 0; ox < out_w; ++ox) {
                for (g = 0; g < groups; ++g) {  /* one group when groups = 1 */
                    const int8_t *xg = x + g * group_in;
                    const int32_t oc_end = (g + 1) * group_out;
                    int32_t oc = g * group_out;
                    for (; oc + 4 <= oc_end; oc += 4) {
                        int32_t acc[4];
                        acc[0] = bias[oc];
                        acc[1] = bias[oc + 1];
                        acc[2] = bias[oc + 2];
                        acc[3] = bias[oc + 3];
                        tinyaot_dot4_s8(xg, weights + oc * group_in, group_in, group_in, acc);
                        conv_output4(acc, multiplier + oc, shift + oc, output_offset, act_min, act_max, out + oc);
                    }
                    for (; oc < oc_end; ++oc) {
                        const int32_t acc = dot_offset_s8(xg, weights + oc * group_in, group_in, 0, bias[oc]);
                        out[oc] = conv_output(acc, multiplier[oc], shift[oc], output_offset, act_min, act_max);
                    }
                }
                x += stride_w * in_c;
                out += out_c;
            }
        }
    }
}

#if TINYAOT_DSP
/* acc[i] += the dot product of `words` widened patch word pairs with output channel i's widened weights:
 * per four taps one LDRD of the patch, then per channel one LDRD of weights and two SMLAD. */
__attribute__((noinline)) static void dot4_s16(const int32_t *x, const int32_t *w, int32_t words, int32_t *acc)
{
    const int32_t *x_end = x + 2 * words;
    int32_t a0 = acc[0];
    int32_t a1 = acc[1];
    int32_t a2 = acc[2];
    int32_t a3 = acc[3];
    while (x != x_end) {
        const int32_t xe = x[0];
        const int32_t xo = x[1];
        a0 = __smlad(xe, w[0], a0);
        a0 = __smlad(xo, w[1], a0);
        a1 = __smlad(xe, w[2], a1);
        a1 = __smlad(xo, w[3], a1);
        a2 = __smlad(xe, w[4], a2);
        a2 = __smlad(xo, w[5], a2);
        a3 = __smlad(xe, w[6], a3);
        a3 = __smlad(xo, w[7], a3);
        x += 2;
        w += 8;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* One output channel's share of dot4_s16: its word pair sits at w[0], w[1] of each group of eight words. */
static int32_t dot1_s16(const int32_t *x, const int32_t *w, int32_t words, int32_t acc)
{
    int32_t j;
    for (j = 0; j < words; ++j) {
        acc = __smlad(x[2 * j], w[8 * j], acc);
        acc = __smlad(x[2 * j + 1], w[8 * j + 1], acc);
    }
    return acc;
}
#else
static int32_t dot1_s16(const int32_t *x, const int32_t *w, int32_t words, int32_t acc)
{
    int32_t j;
    for (j = 0; j < words; ++j) {
        acc += tinyaot_lo16(x[2 * j]) * tinyaot_lo16(w[8 * j]) + tinyaot_hi16(x[2 * j]) * tinyaot_hi16(w[8 * j])
               + tinyaot_lo16(x[2 * j + 1]) * tinyaot_lo16(w[8 * j + 1])
               + tinyaot_hi16(x[2 * j + 1]) * tinyaot_hi16(w[8 * j + 1]);
    }
    return acc;
}

static void dot4_s16(const int32_t *x, const int32_t *w, int32_t words, int32_t *acc)
{
    int32_t j;
    int32_t i;
    for (j = 0; j < words; ++j) {
        for (i = 0; i < 4; ++i) {
            acc[i] += tinyaot_lo16(x[0]) * tinyaot_lo16(w[0]) + tinyaot_hi16(x[0]) * tinyaot_hi16(w[0])
                      + tinyaot_lo16(x[1]) * tinyaot_lo16(w[1]) + tinyaot_hi16(x[1]) * tinyaot_hi16(w[1]);
            w += 2;
        }
        x += 2;
    }
}
#endif

void tinyaot_conv2d_patch_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output)
{
    const int32_t *const weights16 = (const int32_t *)params->weights;  /* widened at compile time */
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t in_h = params->in_h;
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t kernel_h = params->kernel_h;
    const int32_t kernel_w = params->kernel_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t groups = params->groups;
    const int32_t group_in = in_c / groups;
    const int32_t group_out = out_c / groups;
    const int32_t taps = kernel_h * kernel_w * group_in;
    const int32_t words = (taps + 3) / 4;
    const int8_t pad_value = (int8_t)(-input_offset);  /* the zero point: widens to 0 */
    int8_t patch[TINYAOT_CONV_PATCH16_TAPS];
    int32_t patch16[TINYAOT_CONV_PATCH16_TAPS / 2];
    int8_t *out = output;
    int32_t b, oy, ox, ky, kx, c, j, oc, g, n, i;
    for (b = 0; b < params->batches; ++b) {
        const int8_t *in_image = input + b * in_h * in_w * in_c;
        for (oy = 0; oy < params->out_h; ++oy) {
            const int32_t iy0 = oy * params->stride_h - params->pad_top;
            for (ox = 0; ox < params->out_w; ++ox) {
                const int32_t ix0 = ox * params->stride_w - params->pad_left;
                for (g = 0; g < groups; ++g) {  /* the window of the group's input channels; one group usually */
                    const int32_t oc_end = (g + 1) * group_out;
                    int8_t *dst = patch;
                    for (ky = 0; ky < kernel_h; ++ky) {
                        const int32_t iy = iy0 + ky * dilation_h;
                        for (kx = 0; kx < kernel_w; ++kx) {
                            const int32_t ix = ix0 + kx * dilation_w;
                            if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
                                const int8_t *src = in_image + (iy * in_w + ix) * in_c + g * group_in;
                                for (c = 0; c < group_in; ++c) {
                                    dst[c] = src[c];
                                }
                            } else {
                                for (c = 0; c < group_in; ++c) {
                                    dst[c] = pad_value;
                                }
                            }
                            dst += group_in;
                        }
                    }
                    for (; dst < patch + 4 * words; ++dst) {
                        *dst = pad_value;
                    }
                    /* widen with the offset: word 2j holds taps 4j and 4j + 2, word 2j + 1 taps 4j + 1 and 4j + 3 */
                    for (j = 0; j < words; ++j) {
#if TINYAOT_DSP
                        const int32_t v = tinyaot_read_s8x4(patch + 4 * j);
                        const int32_t offset2 = tinyaot_offset2(input_offset);
                        patch16[2 * j] = __sxtab16(offset2, v);
                        patch16[2 * j + 1] = tinyaot_sxtab16_ror8(offset2, v);
#else
                        const int8_t *p = patch + 4 * j;
                        patch16[2 * j] = (int32_t)(((uint32_t)(p[2] + input_offset) << 16)
                                                   | (uint32_t)(uint16_t)(p[0] + input_offset));
                        patch16[2 * j + 1] = (int32_t)(((uint32_t)(p[3] + input_offset) << 16)
                                                       | (uint32_t)(uint16_t)(p[1] + input_offset));
#endif
                    }
                    /* Whole quads of the weights' layout through dot4_s16 (lanes past the group are computed and
                     * dropped); a group that starts inside a quad takes its first channels one at a time. */
                    for (oc = g * group_out; oc < oc_end; oc += n) {
                        const int32_t lane = oc & 3;
                        const int32_t *w_quad = weights16 + (oc - lane) * words * 2;
                        int32_t acc[4] = {0, 0, 0, 0};
                        n = oc_end - oc < 4 - lane ? oc_end - oc : 4 - lane;
                        if (lane == 0) {
                            for (i = 0; i < n; ++i) {
                                acc[i] = bias[oc + i];
                            }
                            dot4_s16(patch16, w_quad, words, acc);
                        } else {
                            for (i = 0; i < n; ++i) {
                                acc[i] = dot1_s16(patch16, w_quad + 2 * (lane + i), words, bias[oc + i]);
                            }
                        }
                        if (n == 4) {
                            conv_output4(acc, multiplier + oc, shift + oc, output_offset, act_min, act_max, out + oc);
                        } else {
                            for (i = 0; i < n; ++i) {
                                out[oc + i] = conv_output(acc[i], multiplier[oc + i], shift[oc + i], output_offset,
                                                          act_min, act_max);
                            }
                        }
                    }
                }
                out += out_c;
            }
        }
    }
}
