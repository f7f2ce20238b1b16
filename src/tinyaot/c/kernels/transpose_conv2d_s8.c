/*
 * transpose_conv2d_s8.c - int8 NHWC transposed convolution; twin of ref/transpose_conv2d_s8.py (TFLite Micro's
 * TRANSPOSE_CONV, int8 with per-channel weights).
 *
 * TFLM scatters every input pixel into an int32 scratch the size of the output. Integer sums do not depend on
 * their order, so this kernel gathers instead and needs no scratch: output pixel (oy, ox) sums, over the taps
 * (ky, kx) with oy + pad_top = iy * stride_h + ky (columns likewise) for an input pixel (iy, ix) inside the image,
 * weights[oc][ky][kx][ic] * (input[iy][ix][ic] + input_offset), then bias, per-channel requantization, output
 * offset and clamp, as conv2d. Output pixels are written one after another, row-major, channels innermost
 * (the order plan/overlap.py's transposed_rules relies on when it places the output over the input).
 * On cores with the DSP extension four output channels share each input load (SXTAB16 adds the input offset
 * while widening, SMLAD does two MACs).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define TCONV_LANES 4  /* output channels per pass over an input pixel */

#if TINYAOT_DSP
/* acc[i] += sum_k w[i * w_stride + k] * (x[k] + offset) for four output channels i. */
__attribute__((noinline)) static void tconv_dot4(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t n,
                                                 int32_t offset, int32_t *acc)
{
    const int32_t offset2 = tinyaot_offset2(offset);
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t vx = tinyaot_read_s8x4(x + k);
        const int32_t xe = __sxtab16(offset2, vx);
        const int32_t xo = tinyaot_sxtab16_ror8(offset2, vx);
        acc[0] = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + k), acc[0]);
        acc[1] = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + w_stride + k), acc[1]);
        acc[2] = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + 2 * w_stride + k), acc[2]);
        acc[3] = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + 3 * w_stride + k), acc[3]);
    }
    for (; k < n; ++k) {
        const int32_t xv = (int32_t)x[k] + offset;
        acc[0] += xv * w[k];
        acc[1] += xv * w[w_stride + k];
        acc[2] += xv * w[2 * w_stride + k];
        acc[3] += xv * w[3 * w_stride + k];
    }
}
#else
static void tconv_dot4(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t n, int32_t offset, int32_t *acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        const int32_t xv = (int32_t)x[k] + offset;
        acc[0] += xv * w[k];
        acc[1] += xv * w[w_stride + k];
        acc[2] += xv * w[2 * w_stride + k];
        acc[3] += xv * w[3 * w_stride + k];
    }
}
#endif

static int32_t tconv_dot1(const int8_t *x, const int8_t *w, int32_t n, int32_t offset, int32_t acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        acc += ((int32_t)x[k] + offset) * w[k];
    }
    return acc;
}

/* The first tap index k (of this stride's residue) whose input index (t - k) / stride is below size, and the
 * limit past the last one whose input index is >= 0: taps k, k + stride, ... below *end. */
static void tconv_taps(int32_t t, int32_t stride, int32_t kernel, int32_t size, int32_t *first, int32_t *end)
{
    int32_t k = t % stride;
    const int32_t lowest = t - (size - 1) * stride;  /* input index size - 1 */
    if (k < lowest) {
        k = lowest;  /* same residue: lowest = t mod stride */
    }
    *first = k;
    *end = t + 1 < kernel ? t + 1 : kernel;
}

void tinyaot_transpose_conv2d_s8(const int8_t *input, const tinyaot_transpose_conv_params *params, int8_t *output)
{
    const int8_t *const weights = params->weights;
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
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t w_per_oc = params->kernel_h * kernel_w * in_c;
    int8_t *out = output;
    int32_t b, oy, ox, oc, ky, kx, i;
    for (b = 0; b < params->batches; ++b) {
        const int8_t *in_image = input + b * in_h * in_w * in_c;
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t ty = oy + params->pad_top;  /* = iy * stride_h + ky */
            int32_t ky0;
            int32_t ky1;
            tconv_taps(ty, stride_h, params->kernel_h, in_h, &ky0, &ky1);
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t tx = ox + params->pad_left;
                int32_t kx0;
                int32_t kx1;
                tconv_taps(tx, stride_w, kernel_w, in_w, &kx0, &kx1);
                for (oc = 0; oc < out_c; oc += TCONV_LANES) {
                    const int32_t n = out_c - oc < TCONV_LANES ? out_c - oc : TCONV_LANES;
                    const int8_t *w_oc = weights + oc * w_per_oc;
                    int32_t acc[TCONV_LANES];
                    for (i = 0; i < n; ++i) {
                        acc[i] = bias[oc + i];
                    }
                    for (ky = ky0; ky < ky1; ky += stride_h) {
                        const int8_t *in_row = in_image + ((ty - ky) / stride_h) * in_w * in_c;
                        for (kx = kx0; kx < kx1; kx += stride_w) {
                            const int8_t *x = in_row + ((tx - kx) / stride_w) * in_c;
                            const int8_t *w_tap = w_oc + (ky * kernel_w + kx) * in_c;
                            if (n == TCONV_LANES) {
                                tconv_dot4(x, w_tap, w_per_oc, in_c, input_offset, acc);
                            } else {
                                for (i = 0; i < n; ++i) {
                                    acc[i] = tconv_dot1(x, w_tap + i * w_per_oc, in_c, input_offset, acc[i]);
                                }
                            }
                        }
                    }
                    for (i = 0; i < n; ++i) {
                        const int32_t v = tinyaot_requantize_nonneg(acc[i], multiplier[oc + i], shift[oc + i]);
                        out[oc + i] = (int8_t)tinyaot_clamp(v + output_offset, act_min, act_max);
                    }
                }
                out += out_c;
            }
        }
    }
}
