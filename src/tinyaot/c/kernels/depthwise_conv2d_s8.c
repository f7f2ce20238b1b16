/*
 * depthwise_conv2d_s8.c - int8 NHWC depthwise convolution; twin of ref/depthwise_conv2d_s8.py
 * (TFLite Micro's DepthwiseConvPerChannel).
 *
 * Output channel oc = ic * depth_multiplier + m reads input channel ic only:
 * acc = bias[oc] + sum over the taps inside the image of w[ky][kx][oc] * (x[iy][ix][ic] + input_offset),
 * then per-channel requantization, output offset and clamp. Weights are [1][kh][kw][out_c].
 *
 * With depth_multiplier 1 input and weight channels line up, so channels are the inner, contiguous loop:
 * on cores with the DSP extension four channels share one load of input and of weights, SXTAB16 / SXTB16
 * widen them (adding the input offset) and SMLABB / SMLATT accumulate each lane on its own. Integer sums
 * are exact, so every path gives the same bits.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>
#define DW_DSP 1
typedef int32_t __attribute__((aligned(1), may_alias)) dw_unaligned_i32;

static inline int32_t dw_read_s8x4(const int8_t *p)
{
    return *(const dw_unaligned_i32 *)(const void *)p;
}

/* Bytes 1 and 3 sign-extended to two halfwords: SXTB16 with its built-in rotation (arm_acle.h has no form). */
static inline int32_t dw_sxtb16_ror8(int32_t x)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* Bytes 1 and 3 sign-extended and added to the two halfwords of a: SXTAB16 with its rotation. */
static inline int32_t dw_sxtab16_ror8(int32_t a, int32_t x)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
#else
#define DW_DSP 0
#endif

static void dw_valid_taps(int32_t origin, int32_t dilation, int32_t kernel, int32_t size, int32_t *first,
                          int32_t *end)
{
    int32_t lo = 0;
    int32_t hi = 0;
    if (origin < 0) {
        lo = (-origin + dilation - 1) / dilation;
    }
    if (size - 1 - origin >= 0) {
        hi = (size - 1 - origin) / dilation + 1;
    }
    *first = lo < kernel ? lo : kernel;
    *end = hi < kernel ? hi : kernel;
    if (*end < *first) {
        *end = *first;
    }
}

static inline int8_t dw_output(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                               int32_t act_min, int32_t act_max)
{
    acc = tinyaot_requantize_nonneg(acc, multiplier, shift) + output_offset;
    return (int8_t)tinyaot_clamp(acc, act_min, act_max);
}

void tinyaot_depthwise_conv2d_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                 const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                                 int8_t *output)
{
    /* Locals, not params->...: stores through int8_t * may alias the struct, which would force reloads. */
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
    const int32_t mult = params->depth_multiplier;
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t in_row_step = dilation_h * in_w * in_c;
    const int32_t in_col_step = dilation_w * in_c;
    const int32_t w_row_step = kernel_w * out_c;
    const int32_t w_col_step = out_c;
#if DW_DSP
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)input_offset << 16) | (uint32_t)(uint16_t)input_offset);
#endif
    int32_t b;
    int32_t oy;
    int32_t ox;
    for (b = 0; b < batches; ++b) {
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t iy0 = oy * stride_h - pad_top;
            int32_t ky0;
            int32_t ky1;
            dw_valid_taps(iy0, dilation_h, kernel_h, in_h, &ky0, &ky1);
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t ix0 = ox * stride_w - pad_left;
                int8_t *out = output + ((b * out_h + oy) * out_w + ox) * out_c;
                const int8_t *in_origin;
                const int8_t *w_origin;
                int32_t kx0;
                int32_t kx1;
                int32_t ic = 0;
                dw_valid_taps(ix0, dilation_w, kernel_w, in_w, &kx0, &kx1);
                /* first valid tap of channel 0 (unused when the window holds no tap) */
                in_origin = input;
                if (ky0 < ky1 && kx0 < kx1) {
                    in_origin += ((b * in_h + iy0 + ky0 * dilation_h) * in_w + ix0 + kx0 * dilation_w) * in_c;
                }
                w_origin = weights + ky0 * w_row_step + kx0 * w_col_step;
                if (mult == 1) {
#if DW_DSP
                    for (; ic + 4 <= in_c; ic += 4) {
                        int32_t acc0 = bias[ic];
                        int32_t acc1 = bias[ic + 1];
                        int32_t acc2 = bias[ic + 2];
                        int32_t acc3 = bias[ic + 3];
                        int32_t ky;
                        for (ky = ky0; ky < ky1; ++ky) {
                            const int8_t *in_tap = in_origin + (ky - ky0) * in_row_step + ic;
                            const int8_t *w_tap = w_origin + (ky - ky0) * w_row_step + ic;
                            int32_t kx;
                            for (kx = kx0; kx < kx1; ++kx) {
                                const int32_t vx = dw_read_s8x4(in_tap);
                                const int32_t vw = dw_read_s8x4(w_tap);
                                const int32_t x_even = __sxtab16(offset2, vx);
                                const int32_t x_odd = dw_sxtab16_ror8(offset2, vx);
                                const int32_t w_even = __sxtb16(vw);
                                const int32_t w_odd = dw_sxtb16_ror8(vw);
                                acc0 = __smlabb(x_even, w_even, acc0);
                                acc2 = __smlatt(x_even, w_even, acc2);
                                acc1 = __smlabb(x_odd, w_odd, acc1);
                                acc3 = __smlatt(x_odd, w_odd, acc3);
                                in_tap += in_col_step;
                                w_tap += w_col_step;
                            }
                        }
                        out[ic] = dw_output(acc0, multiplier[ic], shift[ic], output_offset, act_min, act_max);
                        out[ic + 1] = dw_output(acc1, multiplier[ic + 1], shift[ic + 1], output_offset, act_min,
                                                act_max);
                        out[ic + 2] = dw_output(acc2, multiplier[ic + 2], shift[ic + 2], output_offset, act_min,
                                                act_max);
                        out[ic + 3] = dw_output(acc3, multiplier[ic + 3], shift[ic + 3], output_offset, act_min,
                                                act_max);
                    }
#endif
                    for (; ic < in_c; ++ic) {
                        int32_t acc = bias[ic];
                        int32_t ky;
                        for (ky = ky0; ky < ky1; ++ky) {
                            const int8_t *in_tap = in_origin + (ky - ky0) * in_row_step + ic;
                            const int8_t *w_tap = w_origin + (ky - ky0) * w_row_step + ic;
                            int32_t kx;
                            for (kx = kx0; kx < kx1; ++kx) {
                                acc += (int32_t)*w_tap * ((int32_t)*in_tap + input_offset);
                                in_tap += in_col_step;
                                w_tap += w_col_step;
                            }
                        }
                        out[ic] = dw_output(acc, multiplier[ic], shift[ic], output_offset, act_min, act_max);
                    }
                } else {
                    for (ic = 0; ic < in_c; ++ic) {
                        int32_t m;
                        for (m = 0; m < mult; ++m) {
                            const int32_t oc = ic * mult + m;
                            int32_t acc = bias[oc];
                            int32_t ky;
                            for (ky = ky0; ky < ky1; ++ky) {
                                const int8_t *in_tap = in_origin + (ky - ky0) * in_row_step + ic;
                                const int8_t *w_tap = w_origin + (ky - ky0) * w_row_step + oc;
                                int32_t kx;
                                for (kx = kx0; kx < kx1; ++kx) {
                                    acc += (int32_t)*w_tap * ((int32_t)*in_tap + input_offset);
                                    in_tap += in_col_step;
                                    w_tap += w_col_step;
                                }
                            }
                            out[oc] = dw_output(acc, multiplier[oc], shift[oc], output_offset, act_min, act_max);
                        }
                    }
                }
            }
        }
    }
}
