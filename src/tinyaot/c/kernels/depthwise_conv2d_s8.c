/*
 * depthwise_conv2d_s8.c - int8 NHWC depthwise convolution; twin of ref/depthwise_conv2d_s8.py
 * (TFLite Micro's DepthwiseConvPerChannel).
 *
 * Output channel oc = ic * depth_multiplier + m reads input channel ic only:
 * acc = bias[oc] + sum over the taps inside the image of w[ky][kx][oc] * (x[iy][ix][ic] + input_offset),
 * then per-channel requantization, output offset and clamp. Weights are [1][kh][kw][out_c].
 * Each output needs only kh * kw MACs with strided loads, so one portable loop serves every core.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

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

void tinyaot_depthwise_conv2d_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                 const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                                 int8_t *output)
{
    const tinyaot_conv_params *p = params;
    const int32_t in_row_step = p->dilation_h * p->in_w * p->in_c;
    const int32_t in_col_step = p->dilation_w * p->in_c;
    const int32_t w_row_step = p->kernel_w * p->out_c;
    int32_t b;
    int32_t oy;
    int32_t ox;
    for (b = 0; b < p->batches; ++b) {
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t iy0 = oy * p->stride_h - p->pad_top;
            int32_t ky0;
            int32_t ky1;
            dw_valid_taps(iy0, p->dilation_h, p->kernel_h, p->in_h, &ky0, &ky1);
            for (ox = 0; ox < p->out_w; ++ox) {
                const int32_t ix0 = ox * p->stride_w - p->pad_left;
                int8_t *out = output + ((b * p->out_h + oy) * p->out_w + ox) * p->out_c;
                const int8_t *in_origin;
                int32_t kx0;
                int32_t kx1;
                int32_t ic;
                dw_valid_taps(ix0, p->dilation_w, p->kernel_w, p->in_w, &kx0, &kx1);
                in_origin = input + ((b * p->in_h + iy0 + ky0 * p->dilation_h) * p->in_w + ix0 + kx0 * p->dilation_w)
                                        * p->in_c;
                for (ic = 0; ic < p->in_c; ++ic) {
                    int32_t m;
                    for (m = 0; m < p->depth_multiplier; ++m) {
                        const int32_t oc = ic * p->depth_multiplier + m;
                        const int8_t *w_tap0 = weights + ky0 * w_row_step + kx0 * p->out_c + oc;
                        const int8_t *in_tap0 = in_origin + ic;
                        int32_t acc = bias[oc];
                        int32_t ky;
                        for (ky = ky0; ky < ky1; ++ky) {
                            const int8_t *in_tap = in_tap0 + (ky - ky0) * in_row_step;
                            const int8_t *w_tap = w_tap0 + (ky - ky0) * w_row_step;
                            int32_t kx;
                            for (kx = kx0; kx < kx1; ++kx) {
                                acc += (int32_t)*w_tap * ((int32_t)*in_tap + p->input_offset);
                                in_tap += in_col_step;
                                w_tap += p->out_c;
                            }
                        }
                        acc = tinyaot_requantize(acc, multiplier[oc], shift[oc]) + p->output_offset;
                        out[oc] = (int8_t)tinyaot_clamp(acc, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
