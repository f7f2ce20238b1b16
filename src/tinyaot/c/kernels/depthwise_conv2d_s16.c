/*
 * depthwise_conv2d_s16.c - 16x8 NHWC depthwise convolution; twin of ref/depthwise_conv2d_s16.py
 * (TFLite Micro's int16 DepthwiseConvPerChannel).
 *
 * Output channel oc = ic * depth_multiplier + m reads input channel ic only: acc = sum over the taps inside the
 * image of w[ky][kx][oc] * x[iy][ix][ic], plus the int64 bias, then tinyaot_requantize_64 and the clamp (no
 * offsets: int16 zero points are 0). Per pixel the valid taps are found once.
 *
 * Each product is at most 2^22 in magnitude, so a window of at most EXACT_TAPS taps sums exactly in int32 (every
 * real kernel: 3x3 to 7x7); larger windows sum each tap's product into int64. Channels go in blocks of
 * DW16_BLOCK, each a pass over the image. A block whose channels all take the fast path (depth multiplier 1, a
 * shift in [-31, -2], a bias inside int32 with the window's bound to spare: dw16_fast_constants, once per call)
 * sums from the bias in int32 and requantizes with one SMMLA and one ASR per output, four channels at a time; on
 * cores with the DSP extension one load of four input halfwords (two words) and one of four weight bytes per tap,
 * SXTB16 widening the weights and SMLABB / SMLATB / SMLABT / SMLATT accumulating each lane on its own, and for
 * kernels up to 3x3 without dilation along w a hand-scheduled assembly run per window shape (a row's whole-kernel
 * pixels in one run). Other blocks take tinyaot_requantize_64 per output. Every path gives the same bits.
 */
#include <stddef.h>

#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define EXACT_TAPS 511 /* 511 * 2^22 < 2^31: int32 sums of at most this many taps are exact */
#define DW16_BLOCK 16  /* output channels per pass over the image: their requantization constants on the stack */

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
    const int64_t x = acc + params->bias[oc];
    const int32_t multiplier = params->multiplier[oc];
    const int32_t shift = params->shift[oc];
    const int32_t v = x == (int32_t)x ? tinyaot_requantize_64_int32((int32_t)x, multiplier, shift)
                                      : tinyaot_requantize_64(x, multiplier, shift);
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

/*
 * The fast path: depth multiplier 1, a shift in [-31, -2], and an int64 bias that fits int32 with the sum's bound
 * (taps * 2^22) to spare, so that bias + sum is exact in int32. For an int32 x and 17 <= total = 15 - shift <= 46,
 * tinyaot_requantize_64(x, m, shift) = floor((x * r + 2^(total - 1)) / 2^total) (r the reduced multiplier, |x * r|
 * < 2^46: nothing wraps) = floor((x * (r << 16) + 2^(total - 17) * 2^32) / 2^32) >> (total - 16): SMMLA (the high
 * word of a product plus an addend) and one ASR, each operand a 32-bit constant of the channel.
 *
 * The constants of a block of channels, made once per call, in groups of four: the four biases, then per channel
 * (r << 16, 2^(total - 17), total - 16); a group left partial by the block's end is laid out the same way.
 */
#define DW16_GROUP_WORDS 16

static inline int32_t dw16_bias(const int32_t *rq, int32_t c)
{
    return rq[(c >> 2) * DW16_GROUP_WORDS + (c & 3)];
}

static inline const int32_t *dw16_consts(const int32_t *rq, int32_t c)
{
    return rq + (c >> 2) * DW16_GROUP_WORDS + 4 + 3 * (c & 3);
}

static inline int32_t dw16_fast_output(int32_t acc, const int32_t *k)
{
    int32_t high;
#if TINYAOT_DSP
    __asm__("smmla %0, %1, %2, %3" : "=r"(high) : "r"(acc), "r"(k[0]), "r"(k[1]));
#else
    high = (int32_t)(((int64_t)acc * k[0] + ((int64_t)k[1] << 32)) >> 32);
#endif
    return high >> k[2];
}

/* The constants of channels [c0, c0 + n) into rq; 0 when one of them cannot take the fast path. */
static int32_t dw16_fast_constants(const tinyaot_depthwise_conv16_params *params, int32_t c0, int32_t n, int32_t *rq)
{
    const int32_t taps = params->kernel_h * params->kernel_w;
    int32_t bias_limit;
    int32_t c;
    if (params->depth_multiplier != 1 || taps > EXACT_TAPS) {
        return 0;
    }
    bias_limit = INT32_MAX - (taps << 22); /* |sum| <= taps * 2^22 */
    for (c = 0; c < n; ++c) {
        const int64_t bias = params->bias[c0 + c];
        const int32_t shift = params->shift[c0 + c];
        const int32_t total = 15 - shift;
        int32_t *k = rq + (c >> 2) * DW16_GROUP_WORDS + 4 + 3 * (c & 3);
        if (bias > bias_limit || bias < -bias_limit || shift < -31 || shift > -2) {
            return 0;
        }
        rq[(c >> 2) * DW16_GROUP_WORDS + (c & 3)] = (int32_t)bias;
        k[0] = (int32_t)((uint32_t)tinyaot_reduced_multiplier(params->multiplier[c0 + c]) << 16);
        k[1] = 1 << (total - 17);
        k[2] = total - 16;
    }
    return 1;
}

/* Four channels of one tap: acc[i] += w[i] * x[i]. On cores with the DSP extension one load of four input
 * halfwords (two words) and one of four weight bytes, SXTB16 widening the weights (lanes 0 and 2, 1 and 3) and
 * SMLABB / SMLATB / SMLABT / SMLATT accumulating each lane on its own; one asm, so that GCC keeps the
 * accumulators in place. */
static inline void dw16_tap4(const int16_t *x, const int8_t *w, int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3)
{
#if TINYAOT_DSP
    const int32_t x01 = *(const tinyaot_unaligned_i32 *)(const void *)x;
    const int32_t x23 = *(const tinyaot_unaligned_i32 *)(const void *)(x + 2);
    int32_t wv = tinyaot_read_s8x4(w);
    int32_t w02;
    __asm__("sxtb16 %[w02], %[w]\n\t"
            "sxtb16 %[w], %[w], ror #8\n\t"
            "smlabb %[a0], %[x01], %[w02], %[a0]\n\t"
            "smlatb %[a1], %[x01], %[w], %[a1]\n\t"
            "smlabt %[a2], %[x23], %[w02], %[a2]\n\t"
            "smlatt %[a3], %[x23], %[w], %[a3]"
            : [a0] "+r"(*a0), [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3), [w] "+r"(wv), [w02] "=&r"(w02)
            : [x01] "r"(x01), [x23] "r"(x23));
#else
    *a0 += (int32_t)w[0] * (int32_t)x[0];
    *a1 += (int32_t)w[1] * (int32_t)x[1];
    *a2 += (int32_t)w[2] * (int32_t)x[2];
    *a3 += (int32_t)w[3] * (int32_t)x[3];
#endif
}

/* Four int16 results clamped to [lo, hi] at out (any alignment). With the DSP extension: two saturated pairs
 * packed (SSAT, PKHBT), clamped per halfword (SSUB16 sets a GE flag per half, SEL picks), two word stores. */
static inline void dw16_store4(int32_t v0, int32_t v1, int32_t v2, int32_t v3, int32_t lo, int32_t hi, int16_t *out)
{
#if TINYAOT_DSP
    const int32_t lo2 = tinyaot_offset2(lo);
    const int32_t hi2 = tinyaot_offset2(hi);
    int32_t t;
    __asm__("ssat %[a], #16, %[a]\n\t"
            "ssat %[b], #16, %[b]\n\t"
            "ssat %[c], #16, %[c]\n\t"
            "ssat %[d], #16, %[d]\n\t"
            "pkhbt %[a], %[a], %[b], lsl #16\n\t"
            "pkhbt %[c], %[c], %[d], lsl #16\n\t"
            "ssub16 %[t], %[a], %[lo]\n\t"
            "sel %[a], %[a], %[lo]\n\t"
            "ssub16 %[t], %[a], %[hi]\n\t"
            "sel %[a], %[hi], %[a]\n\t"
            "ssub16 %[t], %[c], %[lo]\n\t"
            "sel %[c], %[c], %[lo]\n\t"
            "ssub16 %[t], %[c], %[hi]\n\t"
            "sel %[c], %[hi], %[c]"
            : [a] "+r"(v0), [b] "+r"(v1), [c] "+r"(v2), [d] "+r"(v3), [t] "=&r"(t)
            : [lo] "r"(lo2), [hi] "r"(hi2)
            : "cc");
    *(tinyaot_unaligned_i32 *)(void *)out = v0;
    *(tinyaot_unaligned_i32 *)(void *)(out + 2) = v2;
#else
    out[0] = (int16_t)tinyaot_clamp(v0, lo, hi);
    out[1] = (int16_t)tinyaot_clamp(v1, lo, hi);
    out[2] = (int16_t)tinyaot_clamp(v2, lo, hi);
    out[3] = (int16_t)tinyaot_clamp(v3, lo, hi);
#endif
}

/* Channels [0, n & ~3) of one pixel on the fast path, four at a time from their biases (rq: the block's constants;
 * win->in, win->w and out at the block's first channel), any window. */
static void dw16_groups(const dw16_window *win, const int32_t *rq, int32_t n, int32_t lo, int32_t hi, int16_t *out)
{
    const int32_t rows = win->rows;
    const int32_t cols = win->cols;
    int32_t c;
    for (c = 0; c + 4 <= n; c += 4) {
        const int32_t *g = rq + (c >> 2) * DW16_GROUP_WORDS;
        int32_t a0 = g[0];
        int32_t a1 = g[1];
        int32_t a2 = g[2];
        int32_t a3 = g[3];
        const int16_t *xr = win->in + c;
        const int8_t *wr = win->w + c;
        int32_t r;
        for (r = 0; r < rows; ++r) {
            const int16_t *x = xr;
            const int8_t *w = wr;
            int32_t k;
            for (k = 0; k < cols; ++k) {
                dw16_tap4(x, w, &a0, &a1, &a2, &a3);
                x += win->in_col_step;
                w += win->w_col_step;
            }
            xr += win->in_row_step;
            wr += win->w_row_step;
        }
        dw16_store4(dw16_fast_output(a0, g + 4), dw16_fast_output(a1, g + 7), dw16_fast_output(a2, g + 10),
                    dw16_fast_output(a3, g + 13), lo, hi, out + c);
    }
}

#if TINYAOT_DSP
/*
 * A run of output pixels of one row whose windows are 3 x 3 taps inside the image (a 3x3 kernel, no dilation along
 * w), every channel of the block in groups of four, in assembly. Registers: r0-r3 the four accumulators (from the
 * biases, one LDM), r4-r7 a tap's input pair words, weight word and widened weights, r8 / r11 the input (channels
 * c, c + 2) and r9 the weights at the current kernel row, r10 in_c (a column of weights; two bytes per input
 * value: a column of inputs is r10 << 1), r12 the constants, lr the frame. Per tap nine instructions (three LDR with
 * register offsets, SXTB16 x2, SMLAxy x4); per group the rows are walked down and back, then SMMLA + ASR per
 * channel, SSAT x4, PKHBT x2, the clamp per halfword (SSUB16 sets a GE flag per half, SEL picks), two STR; per
 * pixel the input moves one stride on and the weights and constants start over.
 */
typedef struct {
    int32_t in_row, w_row;     /* 0: bytes from one kernel row to the next */
    int32_t in_back, w_back;   /* 8: bytes from the last row back to the first row of the next group */
    int32_t lo2, hi2;          /* 16: act_min, act_max in both halfwords */
    int16_t *out, *end;        /* 24: the next group's output; the end of the pixel's groups */
    int32_t channels;          /* 32: in_c */
    int32_t pixels;            /* 36: left in the run, >= 1 (counted down) */
    const int16_t *in;         /* 40: the pixel's input, window tap (0, 0), the block's first channel */
    int32_t in_pixel;          /* 44: bytes from one pixel's input to the next */
    const int8_t *w;           /* 48: the block's first weights */
    const int32_t *rq;         /* 52: the block's constants */
    int32_t out_skip;          /* 56: bytes from the end of a pixel's groups to the next pixel's */
    int32_t out_pixel;         /* 60: bytes from one output pixel to the next */
} dw16_frame;

#define DW16_FRAME(field, off) typedef char dw16_offset_##field[offsetof(dw16_frame, field) == (off) ? 1 : -1]
DW16_FRAME(lo2, 16);
DW16_FRAME(out, 24);
DW16_FRAME(channels, 32);
DW16_FRAME(in, 40);
DW16_FRAME(w, 48);
DW16_FRAME(out_skip, 56);

#define DW16_ASM_RUN(rows, cols)                                                                                 \
    ".macro DW16_TAP xoff, woff\n\t"                                                                             \
    "ldr r4, [r8\\xoff]\n\t"                                                                                     \
    "ldr r5, [r11\\xoff]\n\t"                                                                                    \
    "ldr r6, [r9\\woff]\n\t"                                                                                     \
    "sxtb16 r7, r6\n\t"                                                                                          \
    "sxtb16 r6, r6, ror #8\n\t"                                                                                  \
    "smlabb r0, r4, r7, r0\n\t"                                                                                  \
    "smlatb r1, r4, r6, r1\n\t"                                                                                  \
    "smlabt r2, r5, r7, r2\n\t"                                                                                  \
    "smlatt r3, r5, r6, r3\n"                                                                                    \
    ".endm\n"                                                                                                    \
    ".macro DW16_ROW\n\t"                                                                                        \
    "DW16_TAP \"\", \"\"\n\t"                                                                                    \
    ".if " #cols " > 1\n\t"                                                                                      \
    "DW16_TAP \", r10, lsl #1\", \", r10\"\n\t"                                                                  \
    ".endif\n\t"                                                                                                 \
    ".if " #cols " > 2\n\t"                                                                                      \
    "DW16_TAP \", r10, lsl #2\", \", r10, lsl #1\"\n\t"                                                          \
    ".endif\n"                                                                                                   \
    ".endm\n"                                                                                                    \
    ".macro DW16_DOWN\n\t"                                                                                       \
    "ldrd r6, r7, [lr]\n\t"                                                                                      \
    "add r8, r8, r6\n\t"                                                                                         \
    "add r11, r11, r6\n\t"                                                                                       \
    "add r9, r9, r7\n"                                                                                           \
    ".endm\n"                                                                                                    \
    ".macro DW16_REQ a\n\t"                                                                                      \
    "ldm r12!, {r4-r6}\n\t"                                                                                      \
    "smmla \\a, \\a, r4, r5\n\t"                                                                                 \
    "asr \\a, \\a, r6\n"                                                                                         \
    ".endm\n"                                                                                                    \
    ".macro DW16_CLAMP2 a\n\t"                                                                                   \
    "ssub16 r7, \\a, r4\n\t"                                                                                     \
    "sel \\a, \\a, r4\n\t"                                                                                       \
    "ssub16 r7, \\a, r5\n\t"                                                                                     \
    "sel \\a, r5, \\a\n"                                                                                         \
    ".endm\n"                                                                                                    \
    "mov lr, r3\n\t"                                                                                             \
    "ldr r10, [lr, #32]\n"                                                                                       \
    "2:\n\t"                                                                                                     \
    "ldr r8, [lr, #40]\n\t"                                                                                      \
    "add r11, r8, #4\n\t"                                                                                        \
    "ldrd r9, r12, [lr, #48]\n"                                                                                  \
    "1:\n\t"                                                                                                     \
    "ldm r12!, {r0-r3}\n\t"                                                                                      \
    "DW16_ROW\n\t"                                                                                               \
    ".if " #rows " > 1\n\t"                                                                                      \
    "DW16_DOWN\n\t"                                                                                              \
    "DW16_ROW\n\t"                                                                                               \
    ".endif\n\t"                                                                                                 \
    ".if " #rows " > 2\n\t"                                                                                      \
    "DW16_DOWN\n\t"                                                                                              \
    "DW16_ROW\n\t"                                                                                               \
    ".endif\n\t"                                                                                                 \
    "ldrd r6, r7, [lr, #8]\n\t"                                                                                  \
    "sub r8, r8, r6\n\t"                                                                                         \
    "sub r11, r11, r6\n\t"                                                                                       \
    "sub r9, r9, r7\n\t"                                                                                         \
    "DW16_REQ r0\n\t"                                                                                            \
    "DW16_REQ r1\n\t"                                                                                            \
    "DW16_REQ r2\n\t"                                                                                            \
    "DW16_REQ r3\n\t"                                                                                            \
    "ldrd r4, r5, [lr, #16]\n\t"                                                                                 \
    "ldr r6, [lr, #24]\n\t"                                                                                      \
    "ssat r0, #16, r0\n\t"                                                                                       \
    "ssat r1, #16, r1\n\t"                                                                                       \
    "ssat r2, #16, r2\n\t"                                                                                       \
    "ssat r3, #16, r3\n\t"                                                                                       \
    "pkhbt r0, r0, r1, lsl #16\n\t"                                                                              \
    "pkhbt r2, r2, r3, lsl #16\n\t"                                                                              \
    "DW16_CLAMP2 r0\n\t"                                                                                         \
    "DW16_CLAMP2 r2\n\t"                                                                                         \
    "str r0, [r6], #4\n\t"                                                                                       \
    "str r2, [r6], #4\n\t"                                                                                       \
    "ldr r7, [lr, #28]\n\t"                                                                                      \
    "str r6, [lr, #24]\n\t"                                                                                      \
    "cmp r6, r7\n\t"                                                                                             \
    "bne 1b\n\t"                                                                                                 \
    "ldr r0, [lr, #36]\n\t" /* the next pixel */                                                                 \
    "subs r0, r0, #1\n\t"                                                                                        \
    "beq 9f\n\t"                                                                                                 \
    "str r0, [lr, #36]\n\t"                                                                                      \
    "ldrd r0, r1, [lr, #40]\n\t"                                                                                 \
    "add r0, r0, r1\n\t"                                                                                         \
    "str r0, [lr, #40]\n\t"                                                                                      \
    "ldrd r0, r1, [lr, #56]\n\t"                                                                                 \
    "add r6, r6, r0\n\t"                                                                                         \
    "add r7, r7, r1\n\t"                                                                                         \
    "strd r6, r7, [lr, #24]\n\t"                                                                                 \
    "b 2b\n"                                                                                                     \
    "9:\n\t"                                                                                                     \
    ".purgem DW16_CLAMP2\n\t"                                                                                    \
    ".purgem DW16_REQ\n\t"                                                                                       \
    ".purgem DW16_DOWN\n\t"                                                                                      \
    ".purgem DW16_ROW\n\t"                                                                                       \
    ".purgem DW16_TAP\n"

/* One C function per window shape (rows x cols, 1 to 3 each), so that the compiler's call graph sees each. */
#define DW16_RUN_FN(r, k)                                                                                        \
    __attribute__((noinline)) static void dw16_run_##r##x##k(dw16_frame *frame)                                  \
    {                                                                                                            \
        register dw16_frame *r3 __asm__("r3") = frame;                                                           \
        __asm__ volatile(DW16_ASM_RUN(r, k)                                                                      \
                         : "+r"(r3)                                                                              \
                         :                                                                                       \
                         : "r0", "r1", "r2", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr",     \
                           "cc", "memory");                                                                      \
    }
DW16_RUN_FN(1, 1)
DW16_RUN_FN(1, 2)
DW16_RUN_FN(1, 3)
DW16_RUN_FN(2, 1)
DW16_RUN_FN(2, 2)
DW16_RUN_FN(2, 3)
DW16_RUN_FN(3, 1)
DW16_RUN_FN(3, 2)
DW16_RUN_FN(3, 3)

/* The run of the frame's pixels, their windows rows x cols taps (1 to 3 each). */
static void dw16_run(int32_t rows, int32_t cols, dw16_frame *frame)
{
    switch (rows * 4 + cols) {
    case 5: dw16_run_1x1(frame); break;
    case 6: dw16_run_1x2(frame); break;
    case 7: dw16_run_1x3(frame); break;
    case 9: dw16_run_2x1(frame); break;
    case 10: dw16_run_2x2(frame); break;
    case 11: dw16_run_2x3(frame); break;
    case 13: dw16_run_3x1(frame); break;
    case 14: dw16_run_3x2(frame); break;
    default: dw16_run_3x3(frame); break;
    }
}

/* The first and one-past-last output column whose window columns all lie inside the image. */
static void dw16_inner_columns(const tinyaot_depthwise_conv16_params *params, int32_t *first, int32_t *end)
{
    const int32_t span = (params->kernel_w - 1) * params->dilation_w;
    const int32_t lo = (params->pad_left + params->stride_w - 1) / params->stride_w;
    const int32_t last = params->in_w - 1 - span + params->pad_left; /* ox * stride_w <= last */
    int32_t hi = last < 0 ? 0 : last / params->stride_w + 1;
    hi = hi < params->out_w ? hi : params->out_w;
    *first = lo < hi ? lo : hi;
    *end = hi;
}
#endif

/* Channels [c0, c0 + n) of one pixel on the fast path (rq: their constants): four at a time, the last n % 4 one
 * at a time. Not inlined: alone in its function the loop keeps its registers. */
__attribute__((noinline)) static void dw16_pixel_fast(const dw16_window *win, const int32_t *rq, int32_t c0,
                                                      int32_t n, int32_t lo, int32_t hi, int16_t *out)
{
    dw16_window at = *win;
    int32_t c;
    at.in += c0;
    at.w += c0;
    dw16_groups(&at, rq, n, lo, hi, out + c0);
    for (c = n & ~3; c < n; ++c) {
        const int32_t acc = dw16_bias(rq, c) + dw16_sum32(win, c0 + c, c0 + c);
        out[c0 + c] = (int16_t)tinyaot_clamp(dw16_fast_output(acc, dw16_consts(rq, c)), lo, hi);
    }
}

/* Output channels [c0, c0 + n) of one pixel, one at a time (any depth multiplier, any bias and shift). */
static void dw16_pixel_generic(const dw16_window *win, const tinyaot_depthwise_conv16_params *params, int32_t c0,
                               int32_t n, int16_t *out)
{
    const int32_t mult = params->depth_multiplier;
    const int32_t exact32 = win->rows * win->cols <= EXACT_TAPS;
    int32_t oc;
    for (oc = c0; oc < c0 + n; ++oc) {
        const int32_t ic = mult == 1 ? oc : oc / mult;
        const int64_t acc = exact32 ? (int64_t)dw16_sum32(win, oc, ic) : dw16_sum64(win, oc, ic);
        out[oc] = dw16_output(acc, oc, params);
    }
}

/* One output pixel's window (ky0 .. ky1 the rows of its valid taps), channel 0. */
static void dw16_pixel_window(const int16_t *image, const tinyaot_depthwise_conv16_params *params, int32_t iy0,
                              int32_t ky0, int32_t ky1, int32_t ox, dw16_window *win)
{
    const int32_t in_c = params->in_c;
    const int32_t out_c = params->out_c;
    const int32_t ix0 = ox * params->stride_w - params->pad_left;
    int32_t kx0;
    int32_t kx1;
    tinyaot_valid_taps(ix0, params->dilation_w, params->kernel_w, params->in_w, &kx0, &kx1);
    win->rows = ky1 - ky0;
    win->cols = kx1 - kx0;
    win->in = image;
    win->w = params->weights;
    if (win->rows > 0 && win->cols > 0) {  /* else no tap inside the image: every sum is 0 */
        win->in = image + ((iy0 + ky0 * params->dilation_h) * params->in_w + ix0 + kx0 * params->dilation_w) * in_c;
        win->w = params->weights + (ky0 * params->kernel_w + kx0) * out_c;
    } else {
        win->rows = 0;
        win->cols = 0;
    }
    win->in_row_step = params->dilation_h * params->in_w * in_c;
    win->w_row_step = params->kernel_w * out_c;
    win->in_col_step = params->dilation_w * in_c;
    win->w_col_step = out_c;
}

#if TINYAOT_DSP
/* The frame of a run of `pixels` output pixels of one row from the one whose window is `win` (the same shape for
 * every pixel of the run), channels [c0, c0 + n). */
static void dw16_frame_run(dw16_frame *frame, const dw16_window *win, int32_t c0, int32_t n, int32_t pixels,
                           int16_t *out)
{
    frame->pixels = pixels;
    frame->in = win->in + c0;
    frame->w = win->w + c0;
    frame->in_back = (win->rows - 1) * frame->in_row - 8;
    frame->w_back = (win->rows - 1) * frame->w_row - 4;
    frame->out = out + c0;
    frame->end = out + c0 + n;
}
#endif

/* Output channels [c0, c0 + n) of every pixel (n <= DW16_BLOCK), on the fast path if the block takes it. Where the
 * DSP extension is and the block's channels are whole groups of four, a kernel of at most 3 x 3 without dilation
 * along w runs in assembly: the pixels of a row whose windows are whole kernels in one run, each border pixel in
 * a run of its own (its window's shape). */
static void dw16_block(const int16_t *input, const tinyaot_depthwise_conv16_params *params, int32_t c0, int32_t n,
                       int16_t *output)
{
    const int32_t out_c = params->out_c;
    const int32_t image_size = params->in_h * params->in_w * params->in_c;
    int32_t rq[DW16_BLOCK / 4 * DW16_GROUP_WORDS];
    const int32_t fast = dw16_fast_constants(params, c0, n, rq);
    int16_t *out = output;
    int32_t b;
#if TINYAOT_DSP
    const int32_t runs = fast && (n & 3) == 0 && params->kernel_h <= 3 && params->kernel_w <= 3
                         && params->dilation_w == 1;
    int32_t run_first = 0;
    int32_t run_end = 0;
    dw16_frame frame;
    if (runs) {
        dw16_inner_columns(params, &run_first, &run_end);
        frame.in_row = params->dilation_h * params->in_w * params->in_c * 2;
        frame.w_row = params->kernel_w * out_c;
        frame.lo2 = tinyaot_offset2(params->act_min);
        frame.hi2 = tinyaot_offset2(params->act_max);
        frame.channels = out_c;
        frame.in_pixel = params->stride_w * params->in_c * 2;
        frame.rq = rq;
        frame.out_skip = (out_c - n) * 2;
        frame.out_pixel = out_c * 2;
    }
#endif
    for (b = 0; b < params->batches; ++b) {
        const int16_t *image = input + b * image_size;
        int32_t oy;
        for (oy = 0; oy < params->out_h; ++oy) {
            const int32_t iy0 = oy * params->stride_h - params->pad_top;
            int32_t ky0;
            int32_t ky1;
            int32_t ox = 0;
            tinyaot_valid_taps(iy0, params->dilation_h, params->kernel_h, params->in_h, &ky0, &ky1);
            while (ox < params->out_w) {
                dw16_window win;
                dw16_pixel_window(image, params, iy0, ky0, ky1, ox, &win);
#if TINYAOT_DSP
                if (runs && win.rows > 0 && win.cols > 0) {
                    const int32_t pixels = ox == run_first && run_end > run_first ? run_end - run_first : 1;
                    dw16_frame_run(&frame, &win, c0, n, pixels, out);
                    dw16_run(win.rows, win.cols, &frame);
                    out += pixels * out_c;
                    ox += pixels;
                    continue;
                }
#endif
                if (fast) {
                    dw16_pixel_fast(&win, rq, c0, n, params->act_min, params->act_max, out);
                } else {
                    dw16_pixel_generic(&win, params, c0, n, out);
                }
                out += out_c;
                ++ox;
            }
        }
    }
}

void tinyaot_depthwise_conv2d_s16(const int16_t *input, const tinyaot_depthwise_conv16_params *params,
                                  int16_t *output)
{
    int32_t c0;
    for (c0 = 0; c0 < params->out_c; c0 += DW16_BLOCK) {
        const int32_t n = params->out_c - c0 < DW16_BLOCK ? params->out_c - c0 : DW16_BLOCK;
        dw16_block(input, params, c0, n, output);
    }
}
