/*
 * depthwise_conv2d_rows_s8.c - int8 depthwise convolution (depth multiplier 1) two taps of one channel per SMLAD:
 * the kernel the compiler picks for optimize="speed" (ref/depthwise_conv2d_rows_s8.py). It gives the bytes
 * depthwise_conv2d_s8.c gives (TFLite Micro's DepthwiseConvPerChannel).
 *
 * Output row by output row: the input rows its windows read that are not in the ring yet are widened into the
 * work buffer, a ring of kernel_h rows (padded row y in slot y % slots), each row per channel `words` int32 words,
 * word t holding padded columns 2t and 2t + 1 as (x + input_offset) int16 halves, 0 for a column or row outside
 * the image (TFLM skips those taps: they add nothing); the DSP path widens four channels of a word at a time, a
 * pixel outside the image reading a zero-point pixel kept after the ring. Then each channel's output row: with
 * stride 1 output pair (2t, 2t + 1) reads words t .. t + pw - 1 of each kernel row, the even output with the
 * weights' even words E_j = (w[2j], w[2j + 1]), the odd one with the odd words O_j = (w[2j - 1], w[2j]) (widened,
 * doubled and laid out at compile time: codegen/emit_conv.py depthwise_rows_weights; a 3-wide kernel's compact
 * (E0, O1, R = (w2, w0)), SMLAD plus SMLABB / SMLATT); with stride 2 output t reads words t .. t + pw - 1 with the
 * even words. 3x3 kernels run hand-scheduled loops over every channel of a row, four outputs of a channel at a
 * time; narrow rows (TINYAOT_DEPTHWISE_ROWS_PAIRED) two output rows at a time, two columns of each, from a ring of
 * kernel_h + 1 rows. Integer sums are exact, so the DSP path and the portable one give the same bits.
 *
 * Requantization is the fast form (ref/per_channel.py, as the pairs kernels'): the accumulator holds 2 acc
 * (weights and bias doubled), SMMLAR(2 acc, multiplier, k) >> right, saturated to int8; k = floor(2^right / 2)
 * + (output_offset << right). The sign term (-1 for a negative accumulator) is added only where the layer's
 * clamp does not start at the zero point: under act_min >= output_offset a negative accumulator gives an output
 * at or below the zero point either way, which the clamp maps to act_min (and forms 2 and 3 are exact without it).
 * A clamp narrower than int8 is applied to the output row afterwards.
 *
 * Memory order: an output row (a pair of rows) is written after every input row its windows read was widened,
 * rows in order, so each output pixel is written after every window up to it was read (a pair's second row's
 * pixels come before some of its first row's, whose windows were read already): every plan valid for
 * depthwise_conv2d_s8.c's order (a pixel written once its window is read) is valid here.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#if TINYAOT_DSP
/* (lo halfword of a, lo halfword of b) and (hi halfword of a, hi halfword of b): PKHBT / PKHTB. */
static inline int32_t rows_pack_lo(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

static inline int32_t rows_pack_hi(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

static inline int32_t rows_smmlar(int32_t a, int32_t m, int32_t k)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(m), "r"(k));
    return r;
}
#define ROWS_MAC(d, w, acc) ((acc) = __smlad((d), (w), (acc)))
#else
static inline int32_t rows_smmlar(int32_t a, int32_t m, int32_t k)
{
    return (int32_t)((uint64_t)((int64_t)a * m + ((int64_t)1 << 31)) >> 32) + k;
}
#define ROWS_MAC(d, w, acc) \
    ((acc) += tinyaot_lo16(d) * tinyaot_lo16(w) + tinyaot_hi16(d) * tinyaot_hi16(w))
#endif

static inline int32_t rows_pack16(int32_t lo, int32_t hi)
{
    return (int32_t)(((uint32_t)hi << 16) | (uint32_t)(uint16_t)lo);
}

/* 2 acc -> int8 (before a narrower clamp): the fast form; sign: -1 to add the sign term, 0 not to. */
static inline int8_t rows_out(int32_t acc2, int32_t m, int32_t right, int32_t k, int32_t sign)
{
    return (int8_t)tinyaot_saturate_s8(rows_smmlar(acc2, m, k + ((acc2 >> 31) & sign)) >> right);
}

/* The layer's constants, computed once. */
typedef struct {
    int32_t c, in_w, pad_left, offset;
    int32_t words;   /* words of one channel's ring row */
    int32_t pw;      /* words a kernel row spans for one output */
    int32_t wpr;     /* weight words per kernel row: pw even (+ pw odd for stride 1); 3 when compact */
    int32_t compact; /* a 3-wide kernel at stride 1: weights (E0, O1, R) per row */
} rows_geom;

#define ROWS_WORD_CHANNELS 8  /* groups of four channels from which the widening goes a word at a time */

#if TINYAOT_DSP
/* Word t of channels [0, 4 n4) of one ring slot: pixels a and b (each 4 n4 channel bytes; a pixel outside the image
 * is the zero point, which widens to 0) to d, d + words, ... (words4 = 4 * words bytes apart): per four channels
 * two LDR, four SXTAB16, four PKH, four STR. */
static inline __attribute__((always_inline)) void rows_widen_word(const int8_t *a, const int8_t *b, int32_t *d,
                                                                  int32_t words4, int32_t offset2, int32_t n4)
{
    int32_t x, y, e, f, t;
    __asm__ volatile(
        "1:\n\t"
        "ldr %[x], [%[a]], #4\n\t"
        "ldr %[y], [%[b]], #4\n\t"
        "sxtab16 %[e], %[o2], %[x]\n\t"
        "sxtab16 %[f], %[o2], %[y]\n\t"
        "sxtab16 %[x], %[o2], %[x], ror #8\n\t"
        "sxtab16 %[y], %[o2], %[y], ror #8\n\t"
        "pkhbt %[t], %[e], %[f], lsl #16\n\t"
        "str %[t], [%[d]]\n\t"
        "pkhtb %[t], %[f], %[e], asr #16\n\t"
        "pkhbt %[e], %[x], %[y], lsl #16\n\t"
        "str %[e], [%[d], %[w4]]\n\t"
        "add %[e], %[d], %[w4], lsl #1\n\t"
        "str %[t], [%[e]]\n\t"
        "pkhtb %[t], %[y], %[x], asr #16\n\t"
        "str %[t], [%[e], %[w4]]\n\t"
        "add %[d], %[e], %[w4], lsl #1\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b"
        : [a] "+r"(a), [b] "+r"(b), [d] "+r"(d), [n] "+r"(n4), [x] "=&r"(x), [y] "=&r"(y), [e] "=&r"(e),
          [f] "=&r"(f), [t] "=&r"(t)
        : [w4] "r"(words4), [o2] "r"(offset2)
        : "memory", "cc");
}
#endif

/* One ring slot ([c][words]) from image row `row` (NULL: a row outside the image, all zero); zp: c bytes of the
 * input zero point (DSP: what a pixel outside the image reads). */
static void rows_widen(const int8_t *row, const rows_geom *g, int32_t *dst, const int8_t *zp)
{
    const int32_t c = g->c;
    const int32_t words = g->words;
    const int32_t offset = g->offset;
    int32_t t, ch = 0;
    if (row == 0) {
        int32_t *const end = dst + c * words;
        while (dst != end) {
            *dst++ = 0;
        }
        return;
    }
#if TINYAOT_DSP
    if (c >= 4) {
        const int32_t offset2 = tinyaot_offset2(offset);
        const int32_t n4 = c >> 2;
        int32_t t_lo = (g->pad_left + 1) / 2;        /* the first word whose two columns are both inside */
        int32_t t_hi = (g->in_w + g->pad_left) / 2;  /* past the last one */
        if (n4 >= ROWS_WORD_CHANNELS) {  /* many channels: every word with all of them, in one loop */
            t_lo = t_hi = 0;
        }
        t_hi = t_hi > words ? words : t_hi;
        t_lo = t_lo > t_hi ? t_hi : t_lo;
        ch = c & ~3;
        for (t = 0; t < words; ++t) {  /* (border) words a channel group after the other */
            const int32_t x0 = 2 * t - g->pad_left;
            const int32_t in0 = (uint32_t)x0 < (uint32_t)g->in_w;
            const int32_t in1 = (uint32_t)(x0 + 1) < (uint32_t)g->in_w;
            if (t == t_lo && t_lo < t_hi) {
                t = t_hi - 1;
                continue;
            }
            if (!in0 && !in1) {  /* both columns outside: zeros */
                int32_t *d = dst + t;
                int32_t k;
                for (k = 0; k < ch; ++k) {
                    *d = 0;
                    d += words;
                }
                continue;
            }
            rows_widen_word(in0 ? row + x0 * c : zp, in1 ? row + (x0 + 1) * c : zp, dst + t, 4 * words, offset2, n4);
        }
        for (t = 0; t < n4 && t_lo < t_hi; ++t) {  /* few channels: the inner words a word after the other */
            const int8_t *src = row + (2 * t_lo - g->pad_left) * c + 4 * t;
            int32_t *d = dst + 4 * t * words + t_lo;
            int32_t *const end = dst + 4 * t * words + t_hi;
            for (; d < end; ++d) {
                const int32_t a = tinyaot_read_s8x4(src);
                const int32_t b = tinyaot_read_s8x4(src + c);
                const int32_t ae = __sxtab16(offset2, a);
                const int32_t ao = tinyaot_sxtab16_ror8(offset2, a);
                const int32_t be = __sxtab16(offset2, b);
                const int32_t bo = tinyaot_sxtab16_ror8(offset2, b);
                d[0] = rows_pack_lo(ae, be);
                d[words] = rows_pack_lo(ao, bo);
                d[2 * words] = rows_pack_hi(ae, be);
                d[3 * words] = rows_pack_hi(ao, bo);
                src += 2 * c;
            }
        }
    }
#else
    (void)zp;
#endif
    for (t = 0; t < words && ch < c; ++t) {  /* the channels left (all of them without DSP), one at a time */
        const int32_t x0 = 2 * t - g->pad_left;
        int32_t k;
        for (k = ch; k < c; ++k) {
            const int32_t v0 = (uint32_t)x0 < (uint32_t)g->in_w ? row[x0 * c + k] + offset : 0;
            const int32_t v1 = (uint32_t)(x0 + 1) < (uint32_t)g->in_w ? row[(x0 + 1) * c + k] + offset : 0;
            dst[k * words + t] = rows_pack16(v0, v1);
        }
    }
}

/*
 * One channel's output row, stride 1: pairs (2t, 2t + 1) from the ring rows `rows` (this channel's words),
 * weights w [kh][2 pw], to out (channel stride c). PW is a constant where the caller specialises it.
 */
static inline __attribute__((always_inline)) void rows_channel_s1(const int32_t *const *rows, int32_t ch, int32_t kh,
                                                                  const int32_t *w, int32_t pw, int32_t bias2,
                                                                  const int32_t *rq, int32_t sign, int32_t out_w,
                                                                  int32_t c, int8_t *out, int32_t t)
{
    const int32_t m = rq[0];
    const int32_t right = rq[1];
    const int32_t k = rq[2];
    const int32_t words = 2 * pw;
    for (; 2 * t < out_w; ++t) {
        int32_t ae = bias2;
        int32_t ao = bias2;
        int32_t ky, j;
        for (ky = 0; ky < kh; ++ky) {
            const int32_t *r = rows[ky] + ch + t;
            const int32_t *we = w + ky * words;
            for (j = 0; j < pw; ++j) {
                const int32_t d = r[j];
                ROWS_MAC(d, we[j], ae);
                ROWS_MAC(d, we[pw + j], ao);
            }
        }
        out[2 * t * c] = rows_out(ae, m, right, k, sign);
        if (2 * t + 1 < out_w) {
            out[(2 * t + 1) * c] = rows_out(ao, m, right, k, sign);
        }
    }
}

/* One channel's output row, stride 2: output t from words t .. t + pw - 1, weights w [kh][pw]. */
static inline __attribute__((always_inline)) void rows_channel_s2(const int32_t *const *rows, int32_t ch, int32_t kh,
                                                                  const int32_t *w, int32_t pw, int32_t bias2,
                                                                  const int32_t *rq, int32_t sign, int32_t out_w,
                                                                  int32_t c, int8_t *out, int32_t t)
{
    const int32_t m = rq[0];
    const int32_t right = rq[1];
    const int32_t k = rq[2];
    for (; t < out_w; ++t) {
        int32_t ae = bias2;
        int32_t ky, j;
        for (ky = 0; ky < kh; ++ky) {
            const int32_t *r = rows[ky] + ch + t;
            const int32_t *we = w + ky * pw;
            for (j = 0; j < pw; ++j) {
                ROWS_MAC(r[j], we[j], ae);
            }
        }
        out[t * c] = rows_out(ae, m, right, k, sign);
    }
}

#if TINYAOT_DSP
/*
 * The 3x3 loops: outputs [0, 4 n) of one channel's row, four at a time, from ring rows r10-r12 (this channel's
 * word 0 in each) and the channel's weights at lr ([3][E0 E1 O0 O1] for stride 1, [3][E0 E1] for stride 2).
 * Accumulators r0-r3 start from the doubled bias; per kernel row one LDM (LDRD) of weights, the row's words
 * (three for stride 1: outputs 2t .. 2t + 3 read words t .. t + 2; five for stride 2) and eight SMLAD; then
 * SMMLAR, ASR, SSAT per output (and the sign term: ADD with ASR #31, where SIGN is 1) and four STRB, the channel
 * stride apart. Per four outputs of a 3x3 kernel (36 MACs), stride 1: 36 + 2 + 12 (16) + 9 + 3 instructions.
 */
#define ROWS_REQ(a, sign) \
    ".if " #sign "\n\t" \
    "add r8, r6, " a ", asr #31\n\t" \
    "smmlar " a ", " a ", r4, r8\n\t" \
    ".else\n\t" \
    "smmlar " a ", " a ", r4, r6\n\t" \
    ".endif\n\t" \
    "asr " a ", " a ", r5\n\t" \
    "ssat " a ", #8, " a "\n\t"

#define ROWS_ROW_S1(p) \
    "ldm lr!, {r4-r6}\n\t" \
    "ldr r8, [" p "], #8\n\t" \
    "ldr r9, [" p ", #-4]\n\t" \
    "smlad r0, r8, r4, r0\n\t" \
    "smlatt r1, r8, r6, r1\n\t" \
    "smlabb r0, r9, r6, r0\n\t" \
    "smlad r1, r9, r5, r1\n\t" \
    "smlad r2, r9, r4, r2\n\t" \
    "smlatt r3, r9, r6, r3\n\t" \
    "ldr r8, [" p "]\n\t" \
    "smlabb r2, r8, r6, r2\n\t" \
    "smlad r3, r8, r5, r3\n\t"

#define ROWS_ROW_S2(p) \
    "ldrd r4, r5, [lr], #8\n\t" \
    "ldr r8, [" p "], #16\n\t" \
    "ldr r9, [" p ", #-12]\n\t" \
    "smlad r0, r8, r4, r0\n\t" \
    "smlad r0, r9, r5, r0\n\t" \
    "smlad r1, r9, r4, r1\n\t" \
    "ldr r8, [" p ", #-8]\n\t" \
    "smlad r1, r8, r5, r1\n\t" \
    "smlad r2, r8, r4, r2\n\t" \
    "ldr r9, [" p ", #-4]\n\t" \
    "smlad r2, r9, r5, r2\n\t" \
    "smlad r3, r9, r4, r3\n\t" \
    "ldr r8, [" p "]\n\t" \
    "smlad r3, r8, r5, r3\n\t"

/*
 * Every channel of one output row: r10-r12 the ring rows (channel 0's word 0), lr channel 0's weights; per
 * channel its (multiplier, right, k, bias2) from q, then groups of four outputs until out_w are done (the last
 * group's words exist: the ring rows are padded to whole groups; it stores only the outputs left), then the next
 * channel: ring rows `words` on, weights one channel on, output one byte on. State beyond the registers lives in
 * this frame (the call graph counts it).
 */
#define ROWS_3X3_FN(name, row, wbytes, step, sign) \
    __attribute__((noinline)) static void name(const int32_t *p0, const int32_t *p1, const int32_t *p2, \
                                               const int32_t *w, const int32_t *q, int32_t channels, \
                                               int32_t out_w, int32_t c, int32_t words, int8_t *out) \
    { \
        register const int32_t *r10 __asm__("r10") = p0; \
        register const int32_t *r11 __asm__("r11") = p1; \
        register const int32_t *r12 __asm__("r12") = p2; \
        register const int32_t *lr __asm__("lr") = w; \
        int32_t bias2[2] = {0, 0}; \
        int32_t mr[2] = {0, 0}; \
        int32_t kc[2] = {0, c}; \
        int32_t ro[2] = {0, 0}; /* outputs left in this channel, the next group's first output */ \
        int32_t och = (int32_t)(uintptr_t)out; \
        int32_t left = channels; \
        const int32_t delta = 4 * words - (step) * ((out_w + 3) / 4); \
        __asm__ volatile( \
            "ldr r9, %[och]\n\t" \
            "b 5f\n" \
            "1:\n\t" \
            "ldrd r0, r1, %[bias]\n\t" \
            "ldrd r2, r3, %[bias]\n\t" \
            row("r10") row("r11") row("r12") \
            "sub lr, lr, #" #wbytes "\n\t" \
            "ldrd r4, r5, %[mr]\n\t" \
            "ldrd r6, r7, %[kc]\n\t" \
            ROWS_REQ("r0", sign) ROWS_REQ("r1", sign) ROWS_REQ("r2", sign) ROWS_REQ("r3", sign) \
            "ldrd r8, r9, %[ro]\n\t" \
            "strb r0, [r9]\n\t" \
            "cmp r8, #4\n\t" \
            "blt 3f\n\t" \
            "strb r1, [r9, r7]\n\t" \
            "add r9, r9, r7, lsl #1\n\t" \
            "strb r2, [r9]\n\t" \
            "strb r3, [r9, r7]\n\t" \
            "add r9, r9, r7, lsl #1\n\t" \
            "subs r8, r8, #4\n\t" \
            "strd r8, r9, %[ro]\n\t" \
            "bne 1b\n\t" \
            "b 4f\n" \
            "3:\n\t" \
            "cmp r8, #2\n\t" \
            "it ge\n\t" \
            "strbge r1, [r9, r7]\n\t" \
            "cmp r8, #3\n\t" \
            "itt ge\n\t" \
            "addge r9, r9, r7, lsl #1\n\t" \
            "strbge r2, [r9]\n" \
            "4:\n\t" \
            "ldr r8, %[delta]\n\t" \
            "add r10, r10, r8\n\t" \
            "add r11, r11, r8\n\t" \
            "add r12, r12, r8\n\t" \
            "add lr, lr, #" #wbytes "\n\t" \
            "ldr r9, %[och]\n\t" \
            "add r9, r9, #1\n\t" \
            "str r9, %[och]\n" \
            "5:\n\t" \
            "ldr r8, %[left]\n\t" \
            "subs r8, r8, #1\n\t" \
            "blt 6f\n\t" \
            "str r8, %[left]\n\t" \
            "ldr r8, %[ow]\n\t" \
            "strd r8, r9, %[ro]\n\t" \
            "ldr r9, %[q]\n\t" \
            "ldm r9!, {r4-r7}\n\t" \
            "str r9, %[q]\n\t" \
            "strd r4, r5, %[mr]\n\t" \
            "str r6, %[kc]\n\t" \
            "strd r7, r7, %[bias]\n\t" \
            "b 1b\n" \
            "6:\n\t" \
            : "+r"(r10), "+r"(r11), "+r"(r12), "+r"(lr), [bias] "+m"(bias2), [mr] "+m"(mr), [kc] "+m"(kc), \
              [ro] "+m"(ro), [och] "+m"(och), [left] "+m"(left), [q] "+m"(q) \
            : [ow] "m"(out_w), [delta] "m"(delta) \
            : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "memory", "cc"); \
    }
ROWS_3X3_FN(rows_3x3_s1, ROWS_ROW_S1, 36, 8, 0)
ROWS_3X3_FN(rows_3x3_s1_sign, ROWS_ROW_S1, 36, 8, 1)
ROWS_3X3_FN(rows_3x3_s2, ROWS_ROW_S2, 24, 16, 0)
ROWS_3X3_FN(rows_3x3_s2_sign, ROWS_ROW_S2, 24, 16, 1)

/*
 * Narrow rows, stride 1: every channel of two output rows (oy, oy + 1), two columns of each per group, from the
 * four ring rows r10, r11, r12, lr (oy .. oy + 3), weights at [w] (r7). Per kernel row one LDM of (E0, O1, R),
 * both output rows' two words of their input row, four MACs per output row: 42 instructions for the 36 MACs of
 * a group; no group is more than half used (an odd out_w's last stores its even column only).
 */
#define ROWS_PAIR(a, b) \
    "smlad " a ", r8, r4, " a "\n\t" \
    "smlabb " a ", r9, r6, " a "\n\t" \
    "smlatt " b ", r8, r6, " b "\n\t" \
    "smlad " b ", r9, r5, " b "\n\t"

/* the even output of a pair alone: words r8 (t), r9 (t + 1) */
#define ROWS_EVEN(a) \
    "smlad " a ", r8, r4, " a "\n\t" \
    "smlabb " a ", r9, r6, " a "\n\t"

#define ROWS_2X2_FN(name, sign) \
    __attribute__((noinline)) static void name(const int32_t *const *rows, const int32_t *w, const int32_t *q, \
                                               const int32_t *geom, int8_t *out) \
    { \
        register const int32_t *r10 __asm__("r10") = rows[0]; \
        register const int32_t *r11 __asm__("r11") = rows[1]; \
        register const int32_t *r12 __asm__("r12") = rows[2]; \
        register const int32_t *lr __asm__("lr") = rows[3]; \
        int32_t bias2[2] = {0, 0}; \
        int32_t mr[2] = {0, 0}; \
        int32_t k = 0; \
        int32_t ro[2] = {0, 0}; /* output columns left in this channel - 1, the next group's first output */ \
        int32_t strides[2] = {geom[0], geom[1]}; /* channels (bytes), one output row (bytes) */ \
        int32_t och = (int32_t)(uintptr_t)out; \
        int32_t left = geom[0]; \
        const int32_t out_w = geom[2]; \
        const int32_t out_w1 = out_w - 1; \
        const int32_t delta = 4 * geom[3] - 4 * (out_w / 2); /* the odd column does not advance */ \
        const int32_t *wp = w; \
        __asm__ volatile( \
            "ldr r7, %[wp]\n\t" \
            "ldr r9, %[och]\n\t" \
            "b 5f\n" \
            "1:\n\t" \
            "ldrd r0, r1, %[bias]\n\t" \
            "ldrd r2, r3, %[bias]\n\t" \
            "ldm r7!, {r4-r6}\n\t" \
            "ldr r8, [r10], #4\n\t" \
            "ldr r9, [r10]\n\t" \
            ROWS_PAIR("r0", "r1") \
            "ldr r8, [r11]\n\t" \
            "ldr r9, [r11, #4]\n\t" \
            ROWS_PAIR("r2", "r3") \
            "ldm r7!, {r4-r6}\n\t" \
            "ldr r8, [r11], #4\n\t" \
            "ldr r9, [r11]\n\t" \
            ROWS_PAIR("r0", "r1") \
            "ldr r8, [r12]\n\t" \
            "ldr r9, [r12, #4]\n\t" \
            ROWS_PAIR("r2", "r3") \
            "ldm r7!, {r4-r6}\n\t" \
            "ldr r8, [r12], #4\n\t" \
            "ldr r9, [r12]\n\t" \
            ROWS_PAIR("r0", "r1") \
            "ldr r8, [lr], #4\n\t" \
            "ldr r9, [lr]\n\t" \
            ROWS_PAIR("r2", "r3") \
            "sub r7, r7, #36\n\t" \
            "ldrd r4, r5, %[mr]\n\t" \
            "ldr r6, %[k]\n\t" \
            ROWS_REQ("r0", sign) ROWS_REQ("r1", sign) ROWS_REQ("r2", sign) ROWS_REQ("r3", sign) \
            "ldrd r8, r9, %[ro]\n\t" \
            "ldrd r4, r5, %[strides]\n\t" \
            "strb r0, [r9]\n\t" \
            "strb r2, [r9, r5]\n\t" \
            "strb r1, [r9, r4]\n\t" \
            "add r6, r9, r5\n\t" \
            "strb r3, [r6, r4]\n\t" \
            "add r9, r9, r4, lsl #1\n\t" \
            "subs r8, r8, #2\n\t" \
            "strd r8, r9, %[ro]\n\t" \
            "bgt 1b\n\t" /* two or more columns left */ \
            "blt 4f\n" /* none left; one left: */ \
            "7:\n\t" /* an odd out_w's last column, both rows: the even outputs alone */ \
            "ldrd r0, r2, %[bias]\n\t" \
            "ldm r7!, {r4-r6}\n\t" \
            "ldrd r8, r9, [r10]\n\t" \
            ROWS_EVEN("r0") \
            "ldrd r8, r9, [r11]\n\t" \
            ROWS_EVEN("r2") \
            "ldm r7!, {r4-r6}\n\t" \
            "ldrd r8, r9, [r11]\n\t" \
            ROWS_EVEN("r0") \
            "ldrd r8, r9, [r12]\n\t" \
            ROWS_EVEN("r2") \
            "ldm r7!, {r4-r6}\n\t" \
            "ldrd r8, r9, [r12]\n\t" \
            ROWS_EVEN("r0") \
            "ldrd r8, r9, [lr]\n\t" \
            ROWS_EVEN("r2") \
            "sub r7, r7, #36\n\t" \
            "ldrd r4, r5, %[mr]\n\t" \
            "ldr r6, %[k]\n\t" \
            ROWS_REQ("r0", sign) ROWS_REQ("r2", sign) \
            "ldrd r8, r9, %[ro]\n\t" \
            "ldrd r4, r5, %[strides]\n\t" \
            "strb r0, [r9]\n\t" \
            "strb r2, [r9, r5]\n" \
            "4:\n\t" \
            "ldr r8, %[delta]\n\t" \
            "add r10, r10, r8\n\t" \
            "add r11, r11, r8\n\t" \
            "add r12, r12, r8\n\t" \
            "add lr, lr, r8\n\t" \
            "add r7, r7, #36\n\t" \
            "ldr r9, %[och]\n\t" \
            "add r9, r9, #1\n\t" \
            "str r9, %[och]\n" \
            "5:\n\t" \
            "ldr r8, %[left]\n\t" \
            "subs r8, r8, #1\n\t" \
            "blt 6f\n\t" \
            "str r8, %[left]\n\t" \
            "ldr r8, %[ow]\n\t" \
            "strd r8, r9, %[ro]\n\t" \
            "ldr r9, %[q]\n\t" \
            "ldm r9!, {r4-r6, r8}\n\t" \
            "str r9, %[q]\n\t" \
            "strd r4, r5, %[mr]\n\t" \
            "str r6, %[k]\n\t" \
            "strd r8, r8, %[bias]\n\t" \
            "ldr r8, %[ow]\n\t" \
            "cmp r8, #0\n\t" \
            "bgt 1b\n\t" \
            "b 7b\n" \
            "6:\n\t" \
            : "+r"(r10), "+r"(r11), "+r"(r12), "+r"(lr), [bias] "+m"(bias2), [mr] "+m"(mr), [k] "+m"(k), \
              [ro] "+m"(ro), [och] "+m"(och), [left] "+m"(left), [q] "+m"(q) \
            : [ow] "m"(out_w1), [delta] "m"(delta), [strides] "m"(strides), [wp] "m"(wp) \
            : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "memory", "cc"); \
    }
ROWS_2X2_FN(rows_2x2, 0)
ROWS_2X2_FN(rows_2x2_sign, 1)
#endif

/* Every channel's output row: the channel loops, specialised for the common spans (3x3 and 5x5 kernels). */
/* One channel's output row, a 3-wide kernel at stride 1 whose weights are the compact (E0, O1, R) per row:
 * E0 = (w0, w1), O1 = (w1, w2), R = (w2, w0): the even output takes E0 and R's low half, the odd one R's high half
 * and O1. */
static void rows_channel_3w_s1(const int32_t *const *rows, int32_t ch, int32_t kh, const int32_t *w, const int32_t *rq,
                               int32_t sign, int32_t out_w, int32_t c, int8_t *out)
{
    int32_t t;
    for (t = 0; 2 * t < out_w; ++t) {
        int32_t ae = rq[3];
        int32_t ao = rq[3];
        int32_t ky;
        for (ky = 0; ky < kh; ++ky) {
            const int32_t *r = rows[ky] + ch + t;
            const int32_t *wk = w + 3 * ky;
            ROWS_MAC(r[0], wk[0], ae);
            ae += tinyaot_lo16(r[1]) * tinyaot_lo16(wk[2]);
            ao += tinyaot_hi16(r[0]) * tinyaot_hi16(wk[2]);
            ROWS_MAC(r[1], wk[1], ao);
        }
        out[2 * t * c] = rows_out(ae, rq[0], rq[1], rq[2], sign);
        if (2 * t + 1 < out_w) {
            out[(2 * t + 1) * c] = rows_out(ao, rq[0], rq[1], rq[2], sign);
        }
    }
}

/* Every channel's output row: the 3x3 loops (every channel in one call), else per channel in C. */
static void rows_output_row(const int32_t *const *rows, const tinyaot_conv_params *p, const rows_geom *g, int32_t sign,
                            int8_t *out)
{
    const int32_t c = g->c;
    const int32_t kh = p->kernel_h;
    const int32_t out_w = p->out_w;
    const int32_t words = g->words;
    const int32_t wpr = g->wpr;
    const int32_t *const w = (const int32_t *)p->weights;
    const int32_t *const rq = p->multiplier;
    const int32_t s1 = p->stride_w == 1;
    int32_t ch;
#if TINYAOT_DSP
    if (kh == 3 && p->kernel_w == 3) {
        void (*loop)(const int32_t *, const int32_t *, const int32_t *, const int32_t *, const int32_t *, int32_t,
                     int32_t, int32_t, int32_t, int8_t *) = s1 ? (sign ? rows_3x3_s1_sign : rows_3x3_s1)
                                                               : (sign ? rows_3x3_s2_sign : rows_3x3_s2);
        loop(rows[0], rows[1], rows[2], w, rq, c, out_w, c, words, out);
        return;
    }
#endif
    for (ch = 0; ch < c; ++ch) {
        const int32_t *wc = w + ch * kh * wpr;
        const int32_t off = ch * words;
        const int32_t *r = rq + 4 * ch;
        int8_t *o = out + ch;
        if (g->compact) {
            rows_channel_3w_s1(rows, off, kh, wc, r, sign, out_w, c, o);
        } else if (s1) {
            switch (g->pw) {
            case 2: rows_channel_s1(rows, off, kh, wc, 2, r[3], r, sign, out_w, c, o, 0); break;
            case 3: rows_channel_s1(rows, off, kh, wc, 3, r[3], r, sign, out_w, c, o, 0); break;
            default: rows_channel_s1(rows, off, kh, wc, g->pw, r[3], r, sign, out_w, c, o, 0); break;
            }
        } else {
            switch (g->pw) {
            case 2: rows_channel_s2(rows, off, kh, wc, 2, r[3], r, sign, out_w, c, o, 0); break;
            case 3: rows_channel_s2(rows, off, kh, wc, 3, r[3], r, sign, out_w, c, o, 0); break;
            default: rows_channel_s2(rows, off, kh, wc, g->pw, r[3], r, sign, out_w, c, o, 0); break;
            }
        }
    }
}

/* The narrow-row form (TINYAOT_DEPTHWISE_ROWS_PAIRED): 3x3, strides 1, output rows narrower than
 * TINYAOT_DEPTHWISE_ROWS_WIDE, two output rows at a time from a ring of four input rows. */
static int32_t rows_paired(const tinyaot_conv_params *p)
{
    return TINYAOT_DEPTHWISE_ROWS_PAIRED(p->kernel_h, p->kernel_w, p->stride_h, p->stride_w, p->out_w);
}

void tinyaot_depthwise_conv2d_rows_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work,
                                      int8_t *output)
{
    const int32_t c = params->out_c;
    const int32_t in_h = params->in_h;
    const int32_t kh = params->kernel_h;
    const int32_t row_bytes = params->in_w * c;
    const int32_t out_row = params->out_w * c;
    const int32_t lo = params->act_min;
    const int32_t hi = params->act_max;
    const int32_t sign = lo >= params->output_offset ? 0 : -1;
    const int32_t narrow = lo > -128 || hi < 127;
    const int32_t paired = rows_paired(params);
    const int32_t slots = kh + paired;  /* ring slots: kernel_h rows, one more for two output rows at a time */
    const int32_t *rows[TINYAOT_DEPTHWISE_ROWS_MAX_KERNEL + 1];
    rows_geom g;
    int8_t *zp;
    int32_t b, oy, ky;
    g.c = c;
    g.in_w = params->in_w;
    g.pad_left = params->pad_left;
    g.offset = params->input_offset;
    g.pw = params->stride_w == 1 ? params->kernel_w / 2 + 1 : (params->kernel_w + 1) / 2;
    g.compact = params->kernel_w == 3 && params->stride_w == 1;
    g.wpr = g.compact ? 3 : params->stride_w == 1 ? 2 * g.pw : g.pw;
    /* whole groups of four outputs; paired, whole pairs (a last odd row's group of four may read one word past its
     * channel's row: the next row's or the zero point's, for outputs it does not store) */
    g.words = (paired ? (params->out_w + 1) / 2 : (params->stride_w == 1 ? 2 : 4) * ((params->out_w + 3) / 4))
              + g.pw - 1;
    zp = (int8_t *)(work + slots * c * g.words);
    for (b = 0; b < c; ++b) {
        zp[b] = (int8_t)(-params->input_offset);
    }
    for (b = 0; b < params->batches; ++b) {
        const int8_t *image = input + b * in_h * row_bytes;
        int32_t made = 0;  /* the next padded row to widen */
        for (oy = 0; oy < params->out_h; ++oy) {
            const int32_t y0 = oy * params->stride_h;
            const int32_t two = paired && oy + 1 < params->out_h;  /* rows oy and oy + 1 together */
            const int32_t need = y0 + kh + two;
            int32_t y = made > y0 ? made : y0;
            int8_t *out = output + (b * params->out_h + oy) * out_row;
            for (; y < need; ++y) {
                const int32_t iy = y - params->pad_top;
                rows_widen((uint32_t)iy < (uint32_t)in_h ? image + iy * row_bytes : 0, &g,
                           work + (y % slots) * c * g.words, zp);
            }
            made = need;
            for (ky = 0; ky < kh + two; ++ky) {
                rows[ky] = work + ((y0 + ky) % slots) * c * g.words;
            }
#if TINYAOT_DSP
            if (two) {
                const int32_t geom[4] = {c, out_row, params->out_w, g.words};
                (sign ? rows_2x2_sign : rows_2x2)(rows, (const int32_t *)params->weights, params->multiplier, geom,
                                                  out);
            }
#endif
            if (!TINYAOT_DSP || !two) {
                rows_output_row(rows, params, &g, sign, out);
            }
            if (two && !TINYAOT_DSP) {
                rows_output_row(rows + 1, params, &g, sign, out + out_row);
            }
            if (narrow) {
                int32_t i;
                for (i = 0; i < (1 + two) * out_row; ++i) {
                    out[i] = (int8_t)tinyaot_clamp(out[i], lo, hi);
                }
            }
            oy += two;
        }
    }
}
