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
#include "tinyaot_dsp.h"
#include "tinyaot_kernels.h"

static inline void dw_valid_taps(int32_t origin, int32_t dilation, int32_t kernel, int32_t size, int32_t *first,
                                 int32_t *end)
{
    int32_t lo = 0;
    int32_t hi = 0;
    if (dilation == 1) {  /* no division */
        lo = origin < 0 ? -origin : 0;
        hi = size - origin > 0 ? size - origin : 0;
    } else if (origin < 0) {
        lo = (-origin + dilation - 1) / dilation;
    }
    if (dilation != 1 && size - 1 - origin >= 0) {
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

/* The taps of one output pixel that lie inside the image: rows x cols of them, starting at `in` / `w` (channel 0
 * of the first valid tap), one kernel row apart by the row steps, one column apart by the column steps. */
typedef struct {
    const int8_t *in;
    const int8_t *w;
    int32_t rows, cols;
    int32_t in_row_step, w_row_step;
    int32_t in_col_step, w_col_step;
} dw_window;

#if TINYAOT_DSP
/* Four channels of one tap: both words widened (the input offset added by SXTAB16), each lane accumulated by
 * SMLABB / SMLATT. One asm so that GCC keeps the four accumulators in registers. */
#define DW_TAP4(vx, vw)                                                                                          \
    do {                                                                                                         \
        int32_t vw_ = (vw);                                                                                      \
        int32_t xe_, xo_, we_;                                                                                   \
        __asm__("sxtab16 %[xe], %[o2], %[x]\n\t"                                                                 \
                "sxtab16 %[xo], %[o2], %[x], ror #8\n\t"                                                         \
                "sxtb16 %[we], %[w]\n\t"                                                                         \
                "sxtb16 %[w], %[w], ror #8\n\t"                                                                  \
                "smlabb %[a0], %[xe], %[we], %[a0]\n\t"                                                          \
                "smlatt %[a2], %[xe], %[we], %[a2]\n\t"                                                          \
                "smlabb %[a1], %[xo], %[w], %[a1]\n\t"                                                           \
                "smlatt %[a3], %[xo], %[w], %[a3]"                                                               \
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [w] "+r"(vw_), [xe] "=&r"(xe_),     \
                  [xo] "=&r"(xo_), [we] "=&r"(we_)                                                               \
                : [x] "r"(vx), [o2] "r"(offset2));                                                               \
    } while (0)

/* Widen and accumulate the words x (input, offset added) and w (weights) of four channels; x and w are consumed. */
#define DW_MAC4_ASM                                                                                              \
    "sxtab16 %[xe], %[o2], %[x]\n\t"                                                                             \
    "sxtab16 %[x], %[o2], %[x], ror #8\n\t"                                                                      \
    "sxtb16 %[we], %[w]\n\t"                                                                                     \
    "sxtb16 %[w], %[w], ror #8\n\t"                                                                              \
    "smlabb %[a0], %[xe], %[we], %[a0]\n\t"                                                                      \
    "smlatt %[a2], %[xe], %[we], %[a2]\n\t"                                                                      \
    "smlabb %[a1], %[x], %[w], %[a1]\n\t"                                                                        \
    "smlatt %[a3], %[x], %[w], %[a3]\n\t"

#define DW_ROW_OPERANDS                                                                                          \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x_), [w] "=&r"(w_), [xe] "=&r"(xe_), \
      [we] "=&r"(we_)                                                                                            \
    : [pi] "r"(pi), [pw] "r"(pw), [st] "r"(step), [o2] "r"(offset2)                                              \
    : "memory"

/* tinyaot_requantize_nonneg for shift < 0 in nine instructions: the doubled 64-bit product rounded to its high word
 * (SRDHM), then the rounding right shift by s = -shift as (h >> (s - 1)) halved with the carry added back. */
static inline int32_t dw_requantize_right(int32_t acc, int32_t multiplier, int32_t shift)
{
    int32_t lo, hi, t;
    __asm__("smull %[lo], %[hi], %[a], %[m]\n\t"
            "adds %[lo], %[lo], %[lo]\n\t"
            "adc %[hi], %[hi], %[hi]\n\t"
            "add %[hi], %[hi], %[lo], lsr #31\n\t"
            "add %[hi], %[hi], %[hi], asr #31\n\t"
            "mvn %[t], %[s]\n\t"
            "asr %[hi], %[hi], %[t]\n\t"
            "asrs %[hi], %[hi], #1\n\t"
            "adc %[hi], %[hi], #0"
            : [lo] "=&r"(lo), [hi] "=&r"(hi), [t] "=&r"(t)
            : [a] "r"(acc), [m] "r"(multiplier), [s] "r"(shift)
            : "cc");
    return hi;
}

static inline int32_t dw_requantize(int32_t acc, int32_t multiplier, int32_t shift)
{
    return __builtin_expect(shift < 0, 1) ? dw_requantize_right(acc, multiplier, shift)
                                          : tinyaot_requantize_nonneg(acc, multiplier, shift);
}

/* One window row of three (two) taps: loads at pi and pw plus 0, 1 (and 2) steps. */
#define DW_ROW3_ASM                                                                                              \
    "ldr %[x], [%[pi]]\n\t"                                                                                      \
    "ldr %[w], [%[pw]]\n\t" DW_MAC4_ASM "ldr %[x], [%[pi], %[st]]\n\t"                                           \
    "ldr %[w], [%[pw], %[st]]\n\t" DW_MAC4_ASM "ldr %[x], [%[pi], %[st], lsl #1]\n\t"                            \
    "ldr %[w], [%[pw], %[st], lsl #1]\n\t" DW_MAC4_ASM
#define DW_ROW2_ASM                                                                                              \
    "ldr %[x], [%[pi]]\n\t"                                                                                      \
    "ldr %[w], [%[pw]]\n\t" DW_MAC4_ASM "ldr %[x], [%[pi], %[st]]\n\t"                                           \
    "ldr %[w], [%[pw], %[st]]\n\t" DW_MAC4_ASM
/* To the next window row when the kernel is three taps wide: input one image row on, weights three steps on. */
#define DW_NEXT_ROW_ASM                                                                                          \
    "add %[pi], %[pi], %[irs]\n\t"                                                                               \
    "add %[pw], %[pw], %[st]\n\t"                                                                                \
    "add %[pw], %[pw], %[st], lsl #1\n\t"
#define DW_3ROWS_OPERANDS                                                                                        \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x_), [w] "=&r"(w_), [xe] "=&r"(xe_), \
      [we] "=&r"(we_), [pi] "+&r"(pi), [pw] "+&r"(pw)                                                            \
    : [st] "r"(step), [o2] "r"(offset2), [irs] "r"(in_row_step)                                                  \
    : "memory"

/* Add the output offset to four int32 results, clamp them to int8 with SSAT, pack them into one word, clamp all
 * four lanes to [lo, hi] (bytes replicated) with SSUB8 / SEL and store the word: one store instead of four. */
static inline void dw_store4(int8_t *out, int32_t r0, int32_t r1, int32_t r2, int32_t r3, int32_t offset,
                             int32_t lo, int32_t hi)
{
    __asm__ __volatile__("add %[r0], %[r0], %[off]\n\t"
            "add %[r1], %[r1], %[off]\n\t"
            "add %[r2], %[r2], %[off]\n\t"
            "add %[r3], %[r3], %[off]\n\t"
            "ssat %[r0], #8, %[r0]\n\t"
            "ssat %[r1], #8, %[r1]\n\t"
            "ssat %[r2], #8, %[r2]\n\t"
            "ssat %[r3], #8, %[r3]\n\t"
            "pkhbt %[r0], %[r0], %[r2], lsl #16\n\t"
            "pkhbt %[r1], %[r1], %[r3], lsl #16\n\t"
            "and %[r0], %[r0], #0x00ff00ff\n\t"
            "and %[r1], %[r1], #0x00ff00ff\n\t"
            "orr %[r0], %[r0], %[r1], lsl #8\n\t"
            "ssub8 %[r1], %[r0], %[lo]\n\t"
            "sel %[r0], %[r0], %[lo]\n\t"
            "ssub8 %[r1], %[r0], %[hi]\n\t"
            "sel %[r0], %[hi], %[r0]\n\t"
            "str %[r0], [%[out]]"
            : [r0] "+&r"(r0), [r1] "+&r"(r1), [r2] "+&r"(r2), [r3] "+&r"(r3)
            : [off] "r"(offset), [lo] "r"(lo), [hi] "r"(hi), [out] "r"(out)
            : "cc", "memory");
}

/* Channels [0, n4) (a multiple of 4) of one pixel with depth multiplier 1: four channels share each load of input
 * and of weights. `taps` 2 or 3: each window row is that many taps whose input and weight columns are equally far
 * apart (dilation 1), one asm block with the loads inside, so that GCC keeps accumulators and pointers in
 * registers; 0: any window. The four results are clamped and stored as one word. Inlined with a constant `taps`
 * into one loop per row width. */
static inline __attribute__((always_inline)) void dw_groups(const dw_window *win, int32_t n4, const int32_t *bias,
                                                            const int32_t *multiplier, const int32_t *shift,
                                                            const tinyaot_conv_params *params, int8_t *out,
                                                            int32_t taps)
{
    const int32_t input_offset = params->input_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t lo4 = (int32_t)((uint32_t)(uint8_t)params->act_min * 0x01010101u);
    const int32_t hi4 = (int32_t)((uint32_t)(uint8_t)params->act_max * 0x01010101u);
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)input_offset << 16) | (uint32_t)(uint16_t)input_offset);
    const int32_t rows = win->rows;
    const int32_t cols = win->cols;
    const int32_t in_row_step = win->in_row_step;
    const int32_t w_row_step = win->w_row_step;
    const int32_t in_col_step = win->in_col_step;
    const int32_t w_col_step = win->w_col_step;
    const int32_t step = in_col_step;
    const int32_t three_rows = rows == 3 && w_row_step == 3 * step;  /* whole 3-wide kernel rows */
    const int8_t *in = win->in;
    const int8_t *w = win->w;
    int32_t c;  /* one index for all arrays: the pointers stay put and need no registers of their own */
    for (c = 0; c < n4; c += 4) {
        int32_t a0 = bias[c];
        int32_t a1 = bias[c + 1];
        int32_t a2 = bias[c + 2];
        int32_t a3 = bias[c + 3];
        const int8_t *pi = in + c;
        const int8_t *pw = w + c;
        int32_t ky;
        if (taps == 3 && three_rows) {
            int32_t x_, w_, xe_, we_;
            __asm__(DW_ROW3_ASM DW_NEXT_ROW_ASM DW_ROW3_ASM DW_NEXT_ROW_ASM DW_ROW3_ASM DW_3ROWS_OPERANDS);
        } else if (taps == 2 && three_rows) {
            int32_t x_, w_, xe_, we_;
            __asm__(DW_ROW2_ASM DW_NEXT_ROW_ASM DW_ROW2_ASM DW_NEXT_ROW_ASM DW_ROW2_ASM DW_3ROWS_OPERANDS);
        } else if (taps == 3) {
            for (ky = rows; ky > 0; --ky) {
                int32_t x_, w_, xe_, we_;
                __asm__("ldr %[x], [%[pi]]\n\t"
                        "ldr %[w], [%[pw]]\n\t" DW_MAC4_ASM
                        "ldr %[x], [%[pi], %[st]]\n\t"
                        "ldr %[w], [%[pw], %[st]]\n\t" DW_MAC4_ASM
                        "ldr %[x], [%[pi], %[st], lsl #1]\n\t"
                        "ldr %[w], [%[pw], %[st], lsl #1]\n\t" DW_MAC4_ASM DW_ROW_OPERANDS);
                pi += in_row_step;
                pw += w_row_step;
            }
        } else if (taps == 2) {
            for (ky = rows; ky > 0; --ky) {
                int32_t x_, w_, xe_, we_;
                __asm__("ldr %[x], [%[pi]]\n\t"
                        "ldr %[w], [%[pw]]\n\t" DW_MAC4_ASM
                        "ldr %[x], [%[pi], %[st]]\n\t"
                        "ldr %[w], [%[pw], %[st]]\n\t" DW_MAC4_ASM DW_ROW_OPERANDS);
                pi += in_row_step;
                pw += w_row_step;
            }
        } else {
            for (ky = 0; ky < rows; ++ky) {
                const int8_t *in_tap = pi;
                const int8_t *w_tap = pw;
                int32_t kx;
                for (kx = 0; kx < cols; ++kx) {
                    DW_TAP4(tinyaot_read_s8x4(in_tap), tinyaot_read_s8x4(w_tap));
                    in_tap += in_col_step;
                    w_tap += w_col_step;
                }
                pi += in_row_step;
                pw += w_row_step;
            }
        }
        if ((shift[c] & shift[c + 1] & shift[c + 2] & shift[c + 3]) < 0) {  /* all four shift right */
            dw_store4(out + c, dw_requantize_right(a0, multiplier[c], shift[c]),
                      dw_requantize_right(a1, multiplier[c + 1], shift[c + 1]),
                      dw_requantize_right(a2, multiplier[c + 2], shift[c + 2]),
                      dw_requantize_right(a3, multiplier[c + 3], shift[c + 3]), output_offset, lo4, hi4);
        } else {
            dw_store4(out + c, dw_requantize(a0, multiplier[c], shift[c]),
                      dw_requantize(a1, multiplier[c + 1], shift[c + 1]),
                      dw_requantize(a2, multiplier[c + 2], shift[c + 2]),
                      dw_requantize(a3, multiplier[c + 3], shift[c + 3]), output_offset, lo4, hi4);
        }
    }
}

/* Not inlined: alone in its function each loop keeps its registers. */
__attribute__((noinline)) static void dw_pixel_dm1(const dw_window *win, int32_t n4, const int32_t *bias,
                                                   const int32_t *multiplier, const int32_t *shift,
                                                   const tinyaot_conv_params *params, int8_t *out)
{
    if (win->in_col_step == win->w_col_step && win->cols == 3) {
        dw_groups(win, n4, bias, multiplier, shift, params, out, 3);
    } else if (win->in_col_step == win->w_col_step && win->cols == 2) {
        dw_groups(win, n4, bias, multiplier, shift, params, out, 2);
    } else {
        dw_groups(win, n4, bias, multiplier, shift, params, out, 0);
    }
}
#endif

/* Output channels [oc_first, out_c) of one pixel, one at a time (any depth multiplier): the portable path. */
static void dw_pixel_generic(const dw_window *win, int32_t oc_first, const int32_t *bias, const int32_t *multiplier,
                             const int32_t *shift, const tinyaot_conv_params *params, int8_t *out)
{
    const int32_t mult = params->depth_multiplier;
    const int32_t out_c = params->out_c;
    const int32_t input_offset = params->input_offset;
    int32_t oc;
    for (oc = oc_first; oc < out_c; ++oc) {
        const int32_t ic = mult == 1 ? oc : oc / mult;
        int32_t acc = bias[oc];
        int32_t ky;
        for (ky = 0; ky < win->rows; ++ky) {
            const int8_t *in_tap = win->in + ky * win->in_row_step + ic;
            const int8_t *w_tap = win->w + ky * win->w_row_step + oc;
            int32_t kx;
            for (kx = 0; kx < win->cols; ++kx) {
                acc += (int32_t)*w_tap * ((int32_t)*in_tap + input_offset);
                in_tap += win->in_col_step;
                w_tap += win->w_col_step;
            }
        }
        out[oc] = dw_output(acc, multiplier[oc], shift[oc], params->output_offset, params->act_min,
                            params->act_max);
    }
}

void tinyaot_depthwise_conv2d_pixel_s8(const int8_t *image, const tinyaot_conv_params *params, int32_t oy,
                                       int32_t ox, int8_t *out)
{
    const int32_t in_w = params->in_w;
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t iy0 = oy * params->stride_h - params->pad_top;
    const int32_t ix0 = ox * params->stride_w - params->pad_left;
    dw_window win;
    int32_t ky0, ky1, kx0, kx1;
    int32_t oc_first = 0;
    dw_valid_taps(iy0, dilation_h, params->kernel_h, params->in_h, &ky0, &ky1);
    dw_valid_taps(ix0, dilation_w, params->kernel_w, in_w, &kx0, &kx1);
    win.rows = ky1 - ky0;
    win.cols = kx1 - kx0;
    if (win.rows <= 0 || win.cols <= 0) {  /* no tap inside the image: the sums are the biases */
        win.rows = 0;
        win.cols = 0;
    }
    /* first valid tap of channel 0 (not read when the window holds no tap) */
    win.in = image;
    if (win.rows > 0) {
        win.in += ((iy0 + ky0 * dilation_h) * in_w + ix0 + kx0 * dilation_w) * in_c;
    }
    /* The arrays are read from params where they are used: held in locals, GCC would spill them every pixel. */
    win.w = (const int8_t *)params->weights + (ky0 * params->kernel_w + kx0) * out_c;
    win.in_row_step = dilation_h * in_w * in_c;
    win.w_row_step = params->kernel_w * out_c;
    win.in_col_step = dilation_w * in_c;
    win.w_col_step = out_c;
#if TINYAOT_DSP
    if (params->depth_multiplier == 1 && out_c >= 4 && params->act_min >= -128 && params->act_max <= 127 &&
        params->act_min <= params->act_max) {  /* the word store clamps int8 lanes */
        oc_first = out_c & ~3;
        dw_pixel_dm1(&win, oc_first, params->bias, params->multiplier, params->shift, params, out);
    }
#endif
    dw_pixel_generic(&win, oc_first, params->bias, params->multiplier, params->shift, params, out);
}

void tinyaot_depthwise_conv2d_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output)
{
    const int32_t image = params->in_h * params->in_w * params->in_c;
    const int32_t out_c = params->out_c;
    int8_t *out = output;
    int32_t b, oy, ox;
    for (b = 0; b < params->batches; ++b) {
        for (oy = 0; oy < params->out_h; ++oy) {
            for (ox = 0; ox < params->out_w; ++ox) {
                tinyaot_depthwise_conv2d_pixel_s8(input + b * image, params, oy, ox, out);
                out += out_c;
            }
        }
    }
}
