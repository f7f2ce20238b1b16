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
 * widen them (adding the input offset) and SMLABB / SMLATT accumulate each lane on its own. Without dilation,
 * a window of at most 3x3 valid taps (a 3-wide kernel, or a single row) takes a hand-scheduled loop
 * (dw_loop_<rows>x<cols> below), one per window shape, whose accumulators, pointers and constants stay in
 * registers across the taps and whose requantization and store are branch-free; other windows take C. Integer
 * sums are exact and every requantization below equals tinyaot_requantize_nonneg for all inputs, so every
 * path gives the same bits.
 *
 * Memory order as before: pixel by pixel, within a pixel four channels at a time, each group's output written
 * after its window bytes were read (a group left to C is re-read before its output is written); the clamp
 * pass re-reads only the pixel's own output.
 */
#include <stddef.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_dsp.h"
#include "tinyaot_kernels.h"

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

/* Output channels [oc_first, oc_end) of one pixel, one at a time (any depth multiplier): the portable path. */
static void dw_pixel_generic(const dw_window *win, int32_t oc_first, int32_t oc_end, const tinyaot_conv_params *params,
                             int8_t *out)
{
    const int32_t mult = params->depth_multiplier;
    const int32_t input_offset = params->input_offset;
    const int32_t *bias = params->bias;
    const int32_t *multiplier = params->multiplier;
    const int32_t *shift = params->shift;
    int32_t oc;
    for (oc = oc_first; oc < oc_end; ++oc) {
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

#if TINYAOT_DSP
/*
 * The window loops. dw_loop_<r>x<k>(params, in, w, out, c) computes output channels [c, out_c & ~3) of one
 * pixel (depth multiplier 1, no dilation; a kernel 3 wide when r > 1) whose valid taps form r rows x k columns:
 * `in` / `w` point at channel c of the first valid tap, `out` at output channel c. Four channels per group:
 *   accumulators = bias (one LDM); per tap one LDR of 4 input bytes and one of 4 weight bytes, SXTAB16 x2 (input
 *   widened, input offset added), SXTB16 x2, SMLABB / SMLATT x2 (each lane on its own: exact);
 *   requantization, equal to tinyaot_requantize_nonneg for shift < 0 and every accumulator a with
 *   |a| < 2^30: high = SMMULR(2a, m) = (a * m + 2^30) >> 31, the same high; then (high + (a < 0 ? -1 : 0)
 *   + 2^(s-1)) >> s with s = -shift, which is the reference's round half away from zero (for a < 0 and
 *   high = 0 both give 0): ASRS by s leaves bit s - 1, the half, in the carry, and ADC adds it together with
 *   the output offset; SSAT #8 (a narrower [act_min, act_max] is applied by the caller); BFI x3, one STR.
 * A group with a shift >= 0 or a doubled accumulator that saturates (QADD sets Q) is not stored: the loop
 * returns the pointer to its output and the caller computes it in C. Otherwise returns out + (out_c & ~3) - c.
 * Registers: r0-r3 accumulators, r4-r7 tap temporaries, r8 input, r9 weights, r10 channels (the column step;
 * a kernel row is 3 of them), r11 input row step, r12 input offset in both halfwords, lr the frame (a local of
 * the C function, so that the compiler's call graph counts it): multiplier, shift, output_offset, out, bias,
 * end, channels, offset2 (this group's). The requantization holds multiplier / shift pointers, output offset
 * and output pointer in r4-r7 and uses r10 and r12, reloaded from the frame.
 */
#define DW_PARAM(field, off) typedef char dw_offset_##field[offsetof(tinyaot_conv_params, field) == (off) ? 1 : -1]
DW_PARAM(bias, 4);
DW_PARAM(multiplier, 8);
DW_PARAM(shift, 12);
DW_PARAM(input_offset, 16);
DW_PARAM(output_offset, 20);
DW_PARAM(in_w, 40);
DW_PARAM(out_c, 56);

/* The assembler macros of the loops, defined and purged inside each loop's asm statement (GCC may reorder
 * top-level asm against functions). */
#define DW_ASM_MACROS                                                                                            \
    ".macro DW_MAC4\n\t"                                                                                         \
    "sxtab16 r6, r12, r4\n\t"                                                                                    \
    "sxtab16 r4, r12, r4, ror #8\n\t"                                                                            \
    "sxtb16 r7, r5\n\t"                                                                                          \
    "sxtb16 r5, r5, ror #8\n\t"                                                                                  \
    "smlabb r0, r6, r7, r0\n\t"                                                                                  \
    "smlatt r2, r6, r7, r2\n\t"                                                                                  \
    "smlabb r1, r4, r5, r1\n\t"                                                                                  \
    "smlatt r3, r4, r5, r3\n"                                                                                    \
    ".endm\n"                                                                                                    \
    /* one window row of \cols taps at r8 / r9, r10 apart */                                                    \
    ".macro DW_ROW cols\n\t"                                                                                     \
    "ldr r4, [r8]\n\t"                                                                                           \
    "ldr r5, [r9]\n\t"                                                                                           \
    "DW_MAC4\n\t"                                                                                                \
    ".if \\cols > 1\n\t"                                                                                         \
    "ldr r4, [r8, r10]\n\t"                                                                                      \
    "ldr r5, [r9, r10]\n\t"                                                                                      \
    "DW_MAC4\n\t"                                                                                                \
    ".endif\n\t"                                                                                                 \
    ".if \\cols > 2\n\t"                                                                                         \
    "ldr r4, [r8, r10, lsl #1]\n\t"                                                                              \
    "ldr r5, [r9, r10, lsl #1]\n\t"                                                                              \
    "DW_MAC4\n\t"                                                                                                \
    ".endif\n"                                                                                                   \
    ".endm\n"                                                                                                    \
    /* to the next window row: input one image row on (r11), weights one kernel row (3 x r10) on */             \
    ".macro DW_DOWN\n\t"                                                                                         \
    "add r8, r8, r11\n\t"                                                                                        \
    "add r9, r9, r10\n\t"                                                                                        \
    "add r9, r9, r10, lsl #1\n"                                                                                  \
    ".endm\n"                                                                                                    \
    /* lane \a, already doubled: multiplier at [r4], shift at [r5], output offset r6; temporaries r10, r12 */    \
    ".macro DW_REQ a\n\t"                                                                                        \
    "ldr r10, [r4], #4\n\t"                                                                                      \
    "ldr r12, [r5], #4\n\t"                                                                                      \
    "smmulr r10, \\a, r10\n\t"                                                                                   \
    "add r10, r10, \\a, asr #31\n\t"                                                                             \
    "rsbs r12, r12, #0\n\t"                                                                                      \
    "ble 9f\n\t"                                                                                                 \
    "asrs r10, r10, r12\n\t"                                                                                     \
    "adc \\a, r6, r10\n\t"                                                                                       \
    "ssat \\a, #8, \\a\n"                                                                                        \
    ".endm\n"

/* The loop over the groups: r0 params, r1 in, r2 w, r3 out, r12 the frame (word 0: first channel). */
#define DW_ASM_LOOP(rows, cols)                                                                                  \
    DW_ASM_MACROS                                                                                                \
    "mov lr, r12\n\t"                                                                                            \
    "mov r8, r1\n\t"                                                                                             \
    "mov r9, r2\n\t"                                                                                             \
    "ldr r1, [lr]\n\t"                                                                                           \
    "add r2, r0, #4\n\t"                                                                                         \
    "ldm r2, {r2, r4, r5, r11, r12}\n\t" /* bias, multiplier, shift, input_offset, output_offset */              \
    "mov r6, r12\n\t"                                                                                            \
    "pkhbt r12, r11, r11, lsl #16\n\t"                                                                           \
    "add r2, r2, r1, lsl #2\n\t"                                                                                 \
    "add r4, r4, r1, lsl #2\n\t"                                                                                 \
    "add r5, r5, r1, lsl #2\n\t"                                                                                 \
    "mov r7, r3\n\t"                                                                                             \
    "ldr r10, [r0, #56]\n\t" /* out_c */                                                                         \
    "bic r3, r10, #3\n\t"                                                                                        \
    "sub r3, r3, r1\n\t"                                                                                         \
    "add r3, r3, r7\n\t" /* end */                                                                               \
    "ldr r11, [r0, #40]\n\t"                                                                                     \
    "mul r11, r11, r10\n\t" /* input row step: in_w * in_c */                                                    \
    "stm lr, {r4-r7}\n\t"                                                                                        \
    "strd r10, r12, [lr, #24]\n\t"                                                                               \
    "str r3, [lr, #20]\n\t"                                                                                      \
    "mov r4, r2\n\t"                                                                                             \
    "ldm r4!, {r0-r3}\n\t"                                                                                       \
    "str r4, [lr, #16]\n"                                                                                        \
    "1:\n\t"                                                                                                     \
    "msr APSR_nzcvq, r10\n\t" /* channels < 2^27: clears Q (SSAT sets it) */                                     \
    "DW_ROW " #cols "\n\t"                                                                                       \
    ".if " #rows " > 1\n\t"                                                                                      \
    "DW_DOWN\n\t"                                                                                                \
    "DW_ROW " #cols "\n\t"                                                                                       \
    ".endif\n\t"                                                                                                 \
    ".if " #rows " > 2\n\t"                                                                                      \
    "DW_DOWN\n\t"                                                                                                \
    "DW_ROW " #cols "\n\t"                                                                                       \
    "sub r8, r8, r11, lsl #1\n\t"                                                                                \
    "sub r9, r9, r10, lsl #2\n\t"                                                                                \
    "sub r9, r9, r10, lsl #1\n\t"                                                                                \
    ".elseif " #rows " > 1\n\t"                                                                                  \
    "sub r8, r8, r11\n\t"                                                                                        \
    "sub r9, r9, r10\n\t"                                                                                        \
    "sub r9, r9, r10, lsl #1\n\t"                                                                                \
    ".endif\n\t"                                                                                                 \
    "add r8, r8, #4\n\t"                                                                                         \
    "add r9, r9, #4\n\t"                                                                                         \
    "qadd r0, r0, r0\n\t"                                                                                        \
    "qadd r1, r1, r1\n\t"                                                                                        \
    "qadd r2, r2, r2\n\t"                                                                                        \
    "qadd r3, r3, r3\n\t"                                                                                        \
    "mrs r12, APSR\n\t"                                                                                          \
    "tst r12, #0x08000000\n\t" /* Q */                                                                           \
    "bne 9f\n\t"                                                                                                 \
    "ldm lr, {r4-r7}\n\t"                                                                                        \
    "DW_REQ r0\n\t"                                                                                              \
    "DW_REQ r1\n\t"                                                                                              \
    "DW_REQ r2\n\t"                                                                                              \
    "DW_REQ r3\n\t"                                                                                              \
    "bfi r0, r1, #8, #8\n\t"                                                                                     \
    "bfi r0, r2, #16, #8\n\t"                                                                                    \
    "bfi r0, r3, #24, #8\n\t"                                                                                    \
    "str r0, [r7], #4\n\t"                                                                                       \
    "ldrd r10, r12, [lr, #16]\n\t" /* bias, end */                                                               \
    "cmp r7, r12\n\t"                                                                                            \
    "it ne\n\t"                                                                                                  \
    "ldmne r10!, {r0-r3}\n\t"                                                                                    \
    "stm lr, {r4-r7, r10}\n\t"                                                                                   \
    "ldrd r10, r12, [lr, #24]\n\t"                                                                               \
    "bne 1b\n"                                                                                                   \
    "9:\n\t"                                                                                                     \
    "ldr r0, [lr, #12]\n\t"                                                                                      \
    ".purgem DW_REQ\n\t"                                                                                         \
    ".purgem DW_DOWN\n\t"                                                                                        \
    ".purgem DW_ROW\n\t"                                                                                         \
    ".purgem DW_MAC4\n"

/* One C function per window shape, so that the compiler's call graph sees its frame (the saved registers and
 * the 8-word frame) and its code. Frame: multiplier, shift, output_offset, out, bias, end, channels, offset2. */
#define DW_LOOP_FN(r, k)                                                                                         \
    __attribute__((noinline)) static int8_t *dw_loop_##r##x##k(const tinyaot_conv_params *params,               \
                                                               const int8_t *in, const int8_t *w, int8_t *out, \
                                                               int32_t first)                                   \
    {                                                                                                            \
        int32_t frame[8];                                                                                        \
        register const tinyaot_conv_params *a0 __asm__("r0") = params;                                           \
        register const int8_t *a1 __asm__("r1") = in;                                                            \
        register const int8_t *a2 __asm__("r2") = w;                                                             \
        register int8_t *a3 __asm__("r3") = out;                                                                 \
        register int32_t *a12 __asm__("r12") = frame;                                                            \
        frame[0] = first;                                                                                        \
        __asm__ volatile(DW_ASM_LOOP(r, k)                                                                       \
                         : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), "+r"(a12)                                     \
                         :                                                                                       \
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "cc", "memory");              \
        return (int8_t *)(uintptr_t)a0;                                                                          \
    }
DW_LOOP_FN(1, 1)
DW_LOOP_FN(1, 2)
DW_LOOP_FN(1, 3)
DW_LOOP_FN(2, 1)
DW_LOOP_FN(2, 2)
DW_LOOP_FN(2, 3)
DW_LOOP_FN(3, 1)
DW_LOOP_FN(3, 2)
DW_LOOP_FN(3, 3)

/* The loop of a window of rows x cols taps (1 to 3 each; more than one row: a kernel 3 wide). */
static inline __attribute__((always_inline)) int8_t *dw_loop(int32_t rows, int32_t cols, const tinyaot_conv_params *params, const int8_t *in,
                              const int8_t *w, int8_t *out, int32_t first)
{
    switch (rows * 4 + cols) {
    case 5: return dw_loop_1x1(params, in, w, out, first);
    case 6: return dw_loop_1x2(params, in, w, out, first);
    case 7: return dw_loop_1x3(params, in, w, out, first);
    case 9: return dw_loop_2x1(params, in, w, out, first);
    case 10: return dw_loop_2x2(params, in, w, out, first);
    case 11: return dw_loop_2x3(params, in, w, out, first);
    case 13: return dw_loop_3x1(params, in, w, out, first);
    case 14: return dw_loop_3x2(params, in, w, out, first);
    default: return dw_loop_3x3(params, in, w, out, first);
    }
}


/* After the window loop stopped at `reached`: the groups it leaves (a left shift, an accumulator of 2^30 or more) in
 * C and the loop again after each; the channels past out_c & ~3 in C; the clamp to a range narrower than int8 per
 * byte. Not inlined: the common pixel needs none of it. */
__attribute__((noinline)) static void dw_pixel_rest(const dw_window *win, const tinyaot_conv_params *params,
                                                    int8_t *out, int8_t *reached)
{
    const int32_t out_c = params->out_c;
    const int32_t n4 = out_c & ~3;
    int32_t c = (int32_t)(reached - out);
    while (c < n4) {
        dw_pixel_generic(win, c, c + 4, params, out);
        c += 4;
        if (c < n4) {
            c = (int32_t)(dw_loop(win->rows, win->cols, params, win->in + c, win->w + c, out + c, c) - out);
        }
    }
    dw_pixel_generic(win, n4, out_c, params, out);
    if (params->act_min > -128 || params->act_max < 127) {
        const int32_t lo4 = (int32_t)((uint32_t)(uint8_t)params->act_min * 0x01010101u);
        const int32_t hi4 = (int32_t)((uint32_t)(uint8_t)params->act_max * 0x01010101u);
        tinyaot_unaligned_i32 *word = (tinyaot_unaligned_i32 *)(void *)out;
        for (c = 0; c < n4; c += 4) {  /* per byte: max with act_min (SSUB8 / SEL), then min with act_max */
            int32_t v = *word;
            int32_t t;
            __asm__("ssub8 %[t], %[v], %[lo]\n\t"
                    "sel %[v], %[v], %[lo]\n\t"
                    "ssub8 %[t], %[v], %[hi]\n\t"
                    "sel %[v], %[hi], %[v]"
                    : [v] "+r"(v), [t] "=&r"(t)
                    : [lo] "r"(lo4), [hi] "r"(hi4)
                    : "cc");
            *word++ = v;
        }
    }
}

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

/* Channels [0, n4) of one pixel with depth multiplier 1 and any window (larger kernels, dilation): four channels
 * share each load of input and of weights, each lane requantized in C. Not inlined: alone in its function the
 * loop keeps its registers. */
__attribute__((noinline)) static void dw_pixel_groups(const dw_window *win, int32_t n4,
                                                      const tinyaot_conv_params *params, int8_t *out)
{
    const int32_t input_offset = params->input_offset;
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)input_offset << 16) | (uint32_t)(uint16_t)input_offset);
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t *bias = params->bias;
    const int32_t *multiplier = params->multiplier;
    const int32_t *shift = params->shift;
    const int32_t rows = win->rows;
    const int32_t cols = win->cols;
    int32_t c;
    for (c = 0; c < n4; c += 4) {
        int32_t a0 = bias[c];
        int32_t a1 = bias[c + 1];
        int32_t a2 = bias[c + 2];
        int32_t a3 = bias[c + 3];
        const int8_t *pi = win->in + c;
        const int8_t *pw = win->w + c;
        int32_t ky;
        for (ky = 0; ky < rows; ++ky) {
            const int8_t *in_tap = pi;
            const int8_t *w_tap = pw;
            int32_t kx;
            for (kx = 0; kx < cols; ++kx) {
                DW_TAP4(tinyaot_read_s8x4(in_tap), tinyaot_read_s8x4(w_tap));
                in_tap += win->in_col_step;
                w_tap += win->w_col_step;
            }
            pi += win->in_row_step;
            pw += win->w_row_step;
        }
        out[c] = dw_output(a0, multiplier[c], shift[c], output_offset, act_min, act_max);
        out[c + 1] = dw_output(a1, multiplier[c + 1], shift[c + 1], output_offset, act_min, act_max);
        out[c + 2] = dw_output(a2, multiplier[c + 2], shift[c + 2], output_offset, act_min, act_max);
        out[c + 3] = dw_output(a3, multiplier[c + 3], shift[c + 3], output_offset, act_min, act_max);
    }
}
#endif

/* Any pixel: its valid taps (any dilation), four channels at a time where the DSP extension has SIMD, else one. */
__attribute__((noinline)) static void dw_pixel_any(const int8_t *image, const tinyaot_conv_params *params, int32_t oy,
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
    tinyaot_valid_taps(iy0, dilation_h, params->kernel_h, params->in_h, &ky0, &ky1);
    tinyaot_valid_taps(ix0, dilation_w, params->kernel_w, in_w, &kx0, &kx1);
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
    win.w = (const int8_t *)params->weights + (ky0 * params->kernel_w + kx0) * out_c;
    win.in_row_step = dilation_h * in_w * in_c;
    win.w_row_step = params->kernel_w * out_c;
    win.in_col_step = dilation_w * in_c;
    win.w_col_step = out_c;
#if TINYAOT_DSP
    if (params->depth_multiplier == 1 && out_c >= 4 && params->act_min >= -128 && params->act_max <= 127 &&
        params->act_min <= params->act_max) {  /* the lanes are requantized in C, the clamp is exact */
        oc_first = out_c & ~3;
        dw_pixel_groups(&win, oc_first, params, out);
    }
#endif
    dw_pixel_generic(&win, oc_first, out_c, params, out);
}

void tinyaot_depthwise_conv2d_pixel_s8(const int8_t *image, const tinyaot_conv_params *params, int32_t oy,
                                       int32_t ox, int8_t *out)
{
#if TINYAOT_DSP
    /* depth multiplier 1, no dilation, int8 clamp, a window of at most 3x3 valid taps: the window loops */
    if ((params->depth_multiplier | params->dilation_h | params->dilation_w) == 1 && params->out_c >= 4 &&
        params->act_min >= -128 && params->act_max <= 127 && params->act_min <= params->act_max) {
        const int32_t in_w = params->in_w;
        const int32_t out_c = params->out_c;
        const int32_t kernel_w = params->kernel_w;
        const int32_t iy0 = oy * params->stride_h - params->pad_top;
        const int32_t ix0 = ox * params->stride_w - params->pad_left;
        const int32_t bottom = params->in_h - iy0;
        const int32_t right = in_w - ix0;
        const int32_t ky0 = iy0 < 0 ? -iy0 : 0;
        const int32_t kx0 = ix0 < 0 ? -ix0 : 0;
        const int32_t rows = (bottom < params->kernel_h ? bottom : params->kernel_h) - ky0;
        const int32_t cols = (right < kernel_w ? right : kernel_w) - kx0;
        if ((uint32_t)(rows - 1) < 3u && (uint32_t)(cols - 1) < 3u && (rows == 1 || kernel_w == 3)) {
            const int8_t *in = image + ((iy0 + ky0) * in_w + ix0 + kx0) * out_c;  /* in_c == out_c */
            const int8_t *w = (const int8_t *)params->weights + (ky0 * kernel_w + kx0) * out_c;
            int8_t *reached = dw_loop(rows, cols, params, in, w, out, 0);
            if (reached != out + (out_c & ~3) || (out_c & 3) != 0 || params->act_min > -128 ||
                params->act_max < 127) {
                dw_window win;
                win.in = in;
                win.w = w;
                win.rows = rows;
                win.cols = cols;
                win.in_row_step = in_w * out_c;
                win.w_row_step = kernel_w * out_c;
                win.in_col_step = out_c;
                win.w_col_step = out_c;
                dw_pixel_rest(&win, params, out, reached);
            }
            return;
        }
    }
#endif
    dw_pixel_any(image, params, oy, ox, out);
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
