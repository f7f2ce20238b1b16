/*
 * depthwise_conv2d_s16.c - 16x8 NHWC depthwise convolution; twin of ref/depthwise_conv2d_s16.py
 * (TFLite Micro's int16 DepthwiseConvPerChannel).
 *
 * Output channel oc = ic * depth_multiplier + m reads input channel ic only: acc = sum over the taps inside the
 * image of w[ky][kx][oc] * x[iy][ix][ic], plus the int64 bias, then tinyaot_requantize_64 and the clamp (no
 * offsets: int16 zero points are 0). Per pixel the valid taps are found once.
 *
 * Each product is at most 2^22 in magnitude, so a window of at most EXACT_TAPS taps sums exactly in int32 (every
 * real kernel: 3x3 to 7x7); larger windows sum each tap's product into int64. With depth multiplier 1 input and
 * weight channels line up, so four channels are summed at once: on cores with the DSP extension one load of four
 * input halfwords (two words) and one of four weight bytes, SXTB16 widens the weights and SMLABB / SMLATB /
 * SMLABT / SMLATT accumulate each lane on its own. Every path gives the same bits.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define EXACT_TAPS 511 /* 511 * 2^22 < 2^31: int32 sums of at most this many taps are exact */

/* The valid taps of one output pixel: rows x cols of them; `in` / `w` point at channel 0 of the first, one kernel
 * row apart by the row steps, one column apart by the column steps (in elements). */
typedef struct {
    const int16_t *in;
    const int8_t *w;
    int32_t rows, cols;
    int32_t in_row_step, w_row_step;
    int32_t in_col_step, w_col_step;
} dw16_window;

static int16_t dw16_output(int64_t acc, int32_t oc, const tinyaot_depthwise_conv16_params *params)
{
    const int32_t v = tinyaot_requantize_64(acc + params->bias[oc], params->multiplier[oc], params->shift[oc]);
    return (int16_t)tinyaot_clamp(v, params->act_min, params->act_max);
}

/* Output channel oc summed tap by tap in int64: any window, any depth multiplier. */
static int64_t dw16_sum64(const dw16_window *win, int32_t oc, int32_t ic)
{
    int64_t acc = 0;
    int32_t r;
    for (r = 0; r < win->rows; ++r) {
        const int16_t *x = win->in + r * win->in_row_step + ic;
        const int8_t *w = win->w + r * win->w_row_step + oc;
        int32_t k;
        for (k = 0; k < win->cols; ++k) {
            acc += (int32_t)*w * (int32_t)*x;
            x += win->in_col_step;
            w += win->w_col_step;
        }
    }
    return acc;
}

/* Output channel oc in int32 (exact: at most EXACT_TAPS taps). */
static int32_t dw16_sum32(const dw16_window *win, int32_t oc, int32_t ic)
{
    int32_t acc = 0;
    int32_t r;
    for (r = 0; r < win->rows; ++r) {
        const int16_t *x = win->in + r * win->in_row_step + ic;
        const int8_t *w = win->w + r * win->w_row_step + oc;
        int32_t k;
        for (k = 0; k < win->cols; ++k) {
            acc += (int32_t)*w * (int32_t)*x;
            x += win->in_col_step;
            w += win->w_col_step;
        }
    }
    return acc;
}

/* Channels c .. c + 3 (depth multiplier 1) in int32 (exact: at most EXACT_TAPS taps) into acc[0..3]. */
static void dw16_quad(const dw16_window *win, int32_t c, int32_t *acc)
{
    int32_t a0 = 0;
    int32_t a1 = 0;
    int32_t a2 = 0;
    int32_t a3 = 0;
    int32_t r;
    for (r = 0; r < win->rows; ++r) {
        const int16_t *x = win->in + r * win->in_row_step + c;
        const int8_t *w = win->w + r * win->w_row_step + c;
        int32_t k;
        for (k = 0; k < win->cols; ++k) {
#if TINYAOT_DSP
            const int32_t x01 = *(const tinyaot_unaligned_i32 *)(const void *)x;
            const int32_t x23 = *(const tinyaot_unaligned_i32 *)(const void *)(x + 2);
            const int32_t wv = tinyaot_read_s8x4(w);
            const int32_t w02 = __sxtb16(wv);
            const int32_t w13 = tinyaot_sxtb16_ror8(wv);
            a0 = __smlabb(x01, w02, a0);
            a1 = __smlatb(x01, w13, a1);
            a2 = __smlabt(x23, w02, a2);
            a3 = __smlatt(x23, w13, a3);
#else
            a0 += (int32_t)w[0] * (int32_t)x[0];
            a1 += (int32_t)w[1] * (int32_t)x[1];
            a2 += (int32_t)w[2] * (int32_t)x[2];
            a3 += (int32_t)w[3] * (int32_t)x[3];
#endif
            x += win->in_col_step;
            w += win->w_col_step;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Every output channel of one pixel into out (out_c values). */
static void dw16_pixel(const dw16_window *win, const tinyaot_depthwise_conv16_params *params, int16_t *out)
{
    const int32_t mult = params->depth_multiplier;
    const int32_t exact32 = win->rows * win->cols <= EXACT_TAPS;
    int32_t oc = 0;
    if (mult == 1 && exact32) {
        for (; oc + 4 <= params->out_c; oc += 4) {
            int32_t acc[4];
            int32_t i;
            dw16_quad(win, oc, acc);
            for (i = 0; i < 4; ++i) {
                out[oc + i] = dw16_output(acc[i], oc + i, params);
            }
        }
    }
    for (; oc < params->out_c; ++oc) {
        const int32_t ic = mult == 1 ? oc : oc / mult;
        const int64_t acc = exact32 ? (int64_t)dw16_sum32(win, oc, ic) : dw16_sum64(win, oc, ic);
        out[oc] = dw16_output(acc, oc, params);
    }
}

void tinyaot_depthwise_conv2d_s16(const int16_t *input, const tinyaot_depthwise_conv16_params *params,
                                  int16_t *output)
{
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t image_size = params->in_h * params->in_w * in_c;
    int16_t *out = output;
    int32_t b;
    for (b = 0; b < params->batches; ++b) {
        const int16_t *image = input + b * image_size;
        int32_t oy;
        for (oy = 0; oy < params->out_h; ++oy) {
            const int32_t iy0 = oy * params->stride_h - params->pad_top;
            int32_t ky0;
            int32_t ky1;
            int32_t ox;
            tinyaot_valid_taps(iy0, params->dilation_h, params->kernel_h, params->in_h, &ky0, &ky1);
            for (ox = 0; ox < params->out_w; ++ox) {
                const int32_t ix0 = ox * params->stride_w - params->pad_left;
                dw16_window win;
                int32_t kx0;
                int32_t kx1;
                tinyaot_valid_taps(ix0, params->dilation_w, params->kernel_w, params->in_w, &kx0, &kx1);
                win.rows = ky1 - ky0;
                win.cols = kx1 - kx0;
                win.in = image;
                win.w = params->weights;
                if (win.rows > 0 && win.cols > 0) {  /* else no tap inside the image: every sum is 0 */
                    win.in = image + ((iy0 + ky0 * params->dilation_h) * params->in_w
                                      + ix0 + kx0 * params->dilation_w) * in_c;
                    win.w = params->weights + (ky0 * params->kernel_w + kx0) * out_c;
                }
                win.in_row_step = params->dilation_h * params->in_w * in_c;
                win.w_row_step = params->kernel_w * out_c;
                win.in_col_step = params->dilation_w * in_c;
                win.w_col_step = out_c;
                dw16_pixel(&win, params, out);
                out += out_c;
            }
        }
    }
}
