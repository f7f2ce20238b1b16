/*
 * conv2d_pairs_s8.c - int8 conv2d two output pixels at a time through an int16 matrix microkernel: the kernel
 * the compiler picks when optimizing for speed. Twin of ref/conv2d_s8.py (TFLite Micro's ConvPerChannel); it
 * gives the bytes conv2d_s8.c gives.
 *
 * Per pair of output pixels (row-major; an odd last pixel is paired with itself), both windows are widened
 * once into the work buffer, an arena tensor the memory plan sizes per layer: word m of a pixel holds the
 * taps (4j, 4j + 2) for m = 2j and (4j + 1, 4j + 3) for m = 2j + 1 (what SXTAB16 makes of four bytes), each
 * x + input_offset as int16, taps outside the image and the tail up to taps_padded 0. A window wholly inside
 * the image whose kernel rows are whole quads (channels a multiple of four, or KWS's 10x4 on one channel) is
 * widened straight from the image, row by row, both pixels' at once where both are whole (widen_rows2; the
 * pairs of a row whose windows are all whole run as a tight loop, the window pointer stepped); a stem's (kernel
 * rows not of whole quads, no dilation: an RGB 3x3x3) takes its own tap order (stem_pair: the rows' whole quads
 * straight from the image, then the rows' leftover bytes; stem9_rows2 for 3x3x3); windows over the border widen
 * their valid runs and zero the rest. The words of the two pixels are interleaved, so one LDRD reads word m of
 * both. The weights were widened (and, in speed mode, doubled) and laid out the same way at compile time:
 * [out_c / 4][taps_padded / 2][4 channels] words. Then mat4x2 accumulates four output channels of both pixels:
 * per word pair of each channel pair, one LDRD of weights and four SMLAD; the groups whose activation range is
 * all of int8 are requantized in registers too, all of a pair's in one call (mat4x2_s16_groups, its loop
 * unrolled as far as the layer's words allow: 4, 8, 14, 16 or 24 words a pass). The size mode's variant
 * (tinyaot_conv2d_pairs_w8_s8) reads int8 weights, two channels at a time, widening them as it reads.
 *
 * Both windows are in the work buffer before either output pixel is written, so every plan that is valid for
 * conv2d_s8.c's order (an output pixel written while its own window is read) is valid here.
 *
 * Requantization is tinyaot_requantize_right: the compiler picks this kernel only when it gives TFLM's bytes for
 * every channel (ref/per_channel.py: a right shift with every accumulator provably below 2^30, where it is TFLM's
 * double rounding; a zero or left shift under a clamp at the zero point, the channel's weights and bias scaled at
 * compile time; a constant channel); params->shift holds the right shifts, positive, 0 for a zero or left shift
 * (codegen/emit_conv.py negates them at compile time).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#if TINYAOT_DSP
/*
 * acc[0..3] (pixel 0, channels 0..3) and acc[4..7] (pixel 1) += the dot products of `words` (a multiple of 4)
 * interleaved activation words with the group's weight words. Every register is in use (8 accumulators, two
 * pointers, two activation and two weight words), so the end pointer lives on the stack and is reloaded into
 * a free register once per four words. Per four words: 12 LDRD, 32 SMLAD, 3 loop instructions (64 MACs).
 */
/* The accumulation of mat4x2_s16: r0 = activation words, r1 = weight words, r2 = words,
 * r3 = what the end stores (acc or out0), accumulators r4-r11 from %[init]. */
#define MAT4X2_S16_LOOP \
        "add r2, r0, r2, lsl #3\n\t" \
        "strd r2, r3, %[end]\n\t" \
        "ldr r4, %[init]\n\t" \
        "ldm r4, {r4-r11}\n" \
        "1:\n\t" \
        ".rept 4\n\t" \
        "ldrd r2, r3, [r0], #8\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r4, r2, r12, r4\n\t" \
        "smlad r8, r3, r12, r8\n\t" \
        "smlad r5, r2, lr, r5\n\t" \
        "smlad r9, r3, lr, r9\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r6, r2, r12, r6\n\t" \
        "smlad r10, r3, r12, r10\n\t" \
        "smlad r7, r2, lr, r7\n\t" \
        "smlad r11, r3, lr, r11\n\t" \
        ".endr\n\t" \
        "ldr r2, %[end]\n\t" \
        "cmp r0, r2\n\t" \
        "bne 1b\n\t"

__attribute__((noinline)) static void mat4x2_s16(const int32_t *a, const int32_t *w, int32_t words, int32_t *acc,
                                                  const int32_t *init)
{
    /* AAPCS registers for the asm; it uses every other register too (clobbered: GCC saves them, so the call
     * graph's stack frame holds them), and keeps its end pointer and acc in two stack slots of this frame. The
     * accumulators start from init (the layer's bias, laid out per group at compile time) and end in acc. */
    register const int32_t *r0 __asm__("r0") = a;
    register const int32_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = words;
    register int32_t *r3 __asm__("r3") = acc;
    int32_t *slots[2];  /* the end pointer and acc, stored together */
    __asm__ volatile(
        MAT4X2_S16_LOOP
        "ldr r3, %[accp]\n\t"
        "stm r3, {r4-r11}\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/* Channel pair (p0 of pixel 0, p1 of pixel 1) in mat4x2_s16_groups: the channel's (multiplier, right, k) read
 * from r0 by one LDM, then SMMLAR(2 acc, multiplier, k + sign) >> right, saturated to int8 (the accumulators
 * hold 2 acc: weights and bias were doubled at compile time; k = floor(2^right / 2) + (zero point << right)
 * rounds and offsets before the shift; the compiler checked that k fits). r2, r3, r12 and lr are free here. */
#define MAT4X2_REQUANT(p0, p1) \
        "ldm r0!, {r3, r12, lr}\n\t" \
        "add r2, lr, " p0 ", asr #31\n\t" \
        "smmlar " p0 ", " p0 ", r3, r2\n\t" \
        "asr " p0 ", " p0 ", r12\n\t" \
        "ssat " p0 ", #8, " p0 "\n\t" \
        "add r2, lr, " p1 ", asr #31\n\t" \
        "smmlar " p1 ", " p1 ", r3, r2\n\t" \
        "asr " p1 ", " p1 ", r12\n\t" \
        "ssat " p1 ", #8, " p1 "\n\t"

/*
 * mat4x2_s16 and the in-register requantization for `groups` (at least 1) consecutive whole groups of four
 * channels whose activation range is all of int8, in one call per pair: per group the accumulators start from
 * the group's bias, the `words` activation words (a multiple of 4 * unroll) are read again from `a`, the weights
 * run on, and each pixel's four bytes are packed (BFI) into one word stored at out0 / out1 (which advance by 4;
 * unaligned stores are fine on the M33). The loop state that does not fit in registers lives in this frame
 * (the call graph counts it): a, the end of a, the bias, the requantization words, both outputs, groups left.
 */
#define MAT4X2_GROUPS_FN(name, steps) \
    __attribute__((noinline)) static void name(const int32_t *a, const int32_t *w, int32_t words, int8_t *out0, \
                                               const int32_t *init, const int32_t *requant, int8_t *out1, \
                                               int32_t groups) \
    { \
        register const int32_t *r1 __asm__("r1") = w; \
        const int32_t *a_start = a; \
        const int32_t *a_end = a + 2 * words; \
        int8_t *outs[2] = {out0, out1}; \
        __asm__ volatile( \
            "2:\n\t" \
            "ldr r0, %[a]\n\t" \
            "ldr r2, %[init]\n\t" \
            "ldm r2!, {r4-r11}\n\t" \
            "str r2, %[init]\n" \
            "1:\n\t" \
            ".rept " #steps "\n\t" \
            "ldrd r2, r3, [r0], #8\n\t" \
            "ldrd r12, lr, [r1], #8\n\t" \
            "smlad r4, r2, r12, r4\n\t" \
            "smlad r8, r3, r12, r8\n\t" \
            "smlad r5, r2, lr, r5\n\t" \
            "smlad r9, r3, lr, r9\n\t" \
            "ldrd r12, lr, [r1], #8\n\t" \
            "smlad r6, r2, r12, r6\n\t" \
            "smlad r10, r3, r12, r10\n\t" \
            "smlad r7, r2, lr, r7\n\t" \
            "smlad r11, r3, lr, r11\n\t" \
            ".endr\n\t" \
            "ldr r2, %[end]\n\t" \
            "cmp r0, r2\n\t" \
            "bne 1b\n\t" \
            "ldr r0, %[requant]\n\t" \
            MAT4X2_REQUANT("r4", "r8") MAT4X2_REQUANT("r5", "r9") \
            MAT4X2_REQUANT("r6", "r10") MAT4X2_REQUANT("r7", "r11") \
            "str r0, %[requant]\n\t" \
            "bfi r4, r5, #8, #8\n\t" \
            "bfi r8, r9, #8, #8\n\t" \
            "bfi r4, r6, #16, #8\n\t" \
            "bfi r8, r10, #16, #8\n\t" \
            "bfi r4, r7, #24, #8\n\t" \
            "bfi r8, r11, #24, #8\n\t" \
            "ldrd r2, r3, %[outs]\n\t" \
            "str r4, [r2], #4\n\t" \
            "str r8, [r3], #4\n\t" \
            "strd r2, r3, %[outs]\n\t" \
            "ldr r2, %[left]\n\t" \
            "subs r2, r2, #1\n\t" \
            "str r2, %[left]\n\t" \
            "bne 2b\n\t" \
            : "+r"(r1), [init] "+m"(init), [requant] "+m"(requant), [outs] "+m"(outs), [left] "+m"(groups) \
            : [a] "m"(a_start), [end] "m"(a_end) \
            : "r0", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc"); \
    }
MAT4X2_GROUPS_FN(mat4x2_s16_groups, 4)
MAT4X2_GROUPS_FN(mat4x2_s16_groups_x2, 8)
MAT4X2_GROUPS_FN(mat4x2_s16_groups_x4, 16)
MAT4X2_GROUPS_FN(mat4x2_s16_groups_x6, 24)  /* 3x3 convs of 16, 32, 64 channels: 72, 144, 288 words */
MAT4X2_GROUPS_FN(mat4x2_s16_groups_x14, 14)  /* RGB 3x3 stems: 27 taps in 28, 14 words */

/*
 * The size mode's microkernel (int8 weights, [out_c / 2][taps_padded / 4][2 channels][4 bytes]): acc[0..1]
 * (pixel 0, channels 0..1) and acc[2..3] (pixel 1) += the dot products over `quads` (a multiple of 2) groups of
 * four taps. Per group two LDRD read the pixels' even and odd activation words, one LDRD the two channels' four
 * weight bytes, four SXTB16 widen them and eight SMLAD accumulate: 15 instructions per 16 MACs.
 */
__attribute__((noinline)) static void mat2x2_s8w(const int32_t *a, const int8_t *w, int32_t quads, int32_t *acc,
                                                  const int32_t *init)
{
    /* AAPCS registers for the asm; it uses every other register too (clobbered: GCC saves them, so the call
     * graph's stack frame holds them), and keeps its end pointer and acc in two stack slots of this frame. The
     * accumulators start from init (the layer's bias, laid out per group at compile time) and end in acc. */
    register const int32_t *r0 __asm__("r0") = a;
    register const int8_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = quads;
    register int32_t *r3 __asm__("r3") = acc;
    int32_t *slots[2];  /* the end pointer and acc, stored together */
    __asm__ volatile(
        "add r2, r0, r2, lsl #4\n\t"
        "str r3, %[accp]\n\t"
        "ldr r4, %[init]\n\t"
        "ldm r4, {r4-r7}\n"
        "1:\n\t"
        ".rept 2\n\t"
        "ldrd r8, r9, [r0], #8\n\t"
        "ldrd r10, r11, [r0], #8\n\t"
        "ldrd r12, lr, [r1], #8\n\t"
        "sxtb16 r3, r12\n\t"
        "smlad r4, r8, r3, r4\n\t"
        "smlad r6, r9, r3, r6\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r4, r10, r12, r4\n\t"
        "smlad r6, r11, r12, r6\n\t"
        "sxtb16 r3, lr\n\t"
        "smlad r5, r8, r3, r5\n\t"
        "smlad r7, r9, r3, r7\n\t"
        "sxtb16 lr, lr, ror #8\n\t"
        "smlad r5, r10, lr, r5\n\t"
        "smlad r7, r11, lr, r7\n\t"
        ".endr\n\t"
        "cmp r0, r2\n\t"
        "bne 1b\n\t"
        "ldr r3, %[accp]\n\t"
        "stm r3, {r4-r7}\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/*
 * `rows` runs (at least 1) of `quads` (at least 1) groups of four window bytes, `step` bytes apart from run start
 * to run start in the image, widened into one pixel's activation words from dst on (dst[0], dst[2], dst[4], ...;
 * + input_offset, the SXTAB16 pairing), `skip` words left between the runs (the caller zeroed them). Two quads
 * per iteration (two LDR, unaligned is fine; four SXTAB16; four STR), an odd first quad alone: 6 instructions
 * per quad.
 */
__attribute__((noinline)) static void widen_rows(const int8_t *src, int32_t quads, int32_t rows, int32_t step,
                                                 int32_t offset2, int32_t *dst, int32_t skip)
{
    register const int8_t *r0 __asm__("r0") = src;
    register int32_t r1 __asm__("r1") = quads;
    register int32_t r2 __asm__("r2") = rows;
    register int32_t r3 __asm__("r3") = step - 4 * quads;  /* from a run's end to the next run's start */
    register int32_t r4 __asm__("r4") = offset2;
    register int32_t *r5 __asm__("r5") = dst;
    register int32_t r6 __asm__("r6") = 4 * skip;  /* bytes */
    __asm__ volatile(
        "1:\n\t"
        "add r7, r0, r1, lsl #2\n\t"  /* the run's end */
        "tst r1, #1\n\t"
        "beq 2f\n\t"
        "ldr r8, [r0], #4\n\t"
        "sxtab16 r9, r4, r8\n\t"
        "sxtab16 r8, r4, r8, ror #8\n\t"
        "str r9, [r5], #16\n\t"
        "str r8, [r5, #-8]\n\t"
        "cmp r0, r7\n\t"
        "beq 3f\n"
        "2:\n\t"
        "ldr r8, [r0], #4\n\t"
        "ldr r10, [r0], #4\n\t"
        "sxtab16 r9, r4, r8\n\t"
        "sxtab16 r8, r4, r8, ror #8\n\t"
        "sxtab16 r11, r4, r10\n\t"
        "sxtab16 r10, r4, r10, ror #8\n\t"
        "str r9, [r5], #32\n\t"
        "str r8, [r5, #-24]\n\t"
        "str r11, [r5, #-16]\n\t"
        "str r10, [r5, #-8]\n\t"
        "cmp r0, r7\n\t"
        "bne 2b\n"
        "3:\n\t"
        "add r0, r0, r3\n\t"
        "add r5, r5, r6\n\t"
        "subs r2, r2, #1\n\t"
        "bne 1b\n\t"
        : "+r"(r0), "+r"(r2), "+r"(r5)
        : "r"(r1), "r"(r3), "r"(r4), "r"(r6)
        : "r7", "r8", "r9", "r10", "r11", "memory", "cc");
}

/* One quad of both pixels (r1 bytes apart) into the pair's four interleaved words at r5. */
#define WIDEN2_QUAD \
        "ldr r10, [r0, r1]\n\t" \
        "ldr r8, [r0], #4\n\t" \
        "sxtab16 r9, r4, r10\n\t" \
        "sxtab16 r11, r4, r10, ror #8\n\t" \
        "sxtab16 r10, r4, r8, ror #8\n\t" \
        "sxtab16 r8, r4, r8\n\t" \
        "stm r5!, {r8-r11}\n\t"

/*
 * widen_rows for both pixels of a pair at once (a stem's whole windows, pixel 1's `delta` bytes after pixel 0's):
 * per quad one LDR of each, four SXTAB16 and one STM of the four interleaved words (pixel 0 even, pixel 1 even,
 * pixel 0 odd, pixel 1 odd); two quads an iteration, an odd first one alone: 8 instructions per quad of the
 * pair. quads and rows at least 1.
 */
__attribute__((noinline)) static void widen_rows2(const int8_t *src, int32_t delta, int32_t quads, int32_t rows,
                                                  int32_t step, int32_t offset2, int32_t *dst)
{
    register const int8_t *r0 __asm__("r0") = src;
    register int32_t r1 __asm__("r1") = delta;
    register int32_t r2 __asm__("r2") = rows;
    register int32_t r3 __asm__("r3") = step - 4 * quads;  /* from a run's end to the next run's start */
    register int32_t r4 __asm__("r4") = offset2;
    register int32_t *r5 __asm__("r5") = dst;
    register int32_t r6 __asm__("r6") = 4 * quads;  /* bytes of a run */
    __asm__ volatile(
        "1:\n\t"
        "add r7, r0, r6\n\t"
        "tst r6, #4\n\t"
        "beq 2f\n\t"
        WIDEN2_QUAD
        "cmp r0, r7\n\t"
        "beq 3f\n"
        "2:\n\t"
        WIDEN2_QUAD WIDEN2_QUAD
        "cmp r0, r7\n\t"
        "bne 2b\n"
        "3:\n\t"
        "add r0, r0, r3\n\t"
        "subs r2, r2, #1\n\t"
        "bne 1b\n\t"
        : "+r"(r0), "+r"(r2), "+r"(r5)
        : "r"(r1), "r"(r3), "r"(r4), "r"(r6)
        : "r7", "r8", "r9", "r10", "r11", "memory", "cc");
}

/* One quad of both pixels (pixel 1 r1 bytes after pixel 0) widened into the pair's four interleaved words. */
#define STEM9_QUAD \
        "ldr r10, [r0, r1]\n\t" \
        "ldr r8, [r0], #4\n\t" \
        "sxtab16 r9, r4, r10\n\t" \
        "sxtab16 r11, r4, r10, ror #8\n\t" \
        "sxtab16 r10, r4, r8, ror #8\n\t" \
        "sxtab16 r8, r4, r8\n\t" \
        "stm r3!, {r8-r11}\n\t"

/*
 * Both pixels' whole stem windows of three rows of 9 bytes (an RGB 3x3 stem), in the stem order: each row's two
 * quads (STEM9_QUAD), its ninth byte of each pixel gathered into byte `row` of a word (r12, lr), widened last:
 * 59 instructions for the pair's 28 taps.
 */
__attribute__((noinline)) static void stem9_rows2(const int8_t *src, int32_t delta, int32_t step, int32_t *dst,
                                                  int32_t offset2)
{
    register const int8_t *r0 __asm__("r0") = src;
    register int32_t r1 __asm__("r1") = delta;
    register int32_t r2 __asm__("r2") = step - 8;  /* from a row's ninth byte to the next row's start */
    register int32_t *r3 __asm__("r3") = dst;
    register int32_t r4 __asm__("r4") = offset2;
    __asm__ volatile(
        STEM9_QUAD STEM9_QUAD
        "ldrb lr, [r0, r1]\n\t"
        "ldrb r12, [r0]\n\t"
        "add r0, r0, r2\n\t"
        STEM9_QUAD STEM9_QUAD
        "ldrb r5, [r0, r1]\n\t"
        "ldrb r6, [r0]\n\t"
        "orr lr, lr, r5, lsl #8\n\t"
        "orr r12, r12, r6, lsl #8\n\t"
        "add r0, r0, r2\n\t"
        STEM9_QUAD STEM9_QUAD
        "ldrb r5, [r0, r1]\n\t"
        "ldrb r6, [r0]\n\t"
        "orr lr, lr, r5, lsl #16\n\t"
        "orr r12, r12, r6, lsl #16\n\t"
        "sxtab16 r9, r4, lr\n\t"
        "sxtab16 r11, r4, lr, ror #8\n\t"
        "sxtab16 r10, r4, r12, ror #8\n\t"
        "sxtab16 r8, r4, r12\n\t"
        "stm r3!, {r8-r11}\n\t"
        : "+r"(r0), "+r"(r3)
        : "r"(r1), "r"(r2), "r"(r4)
        : "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/* `quads` groups of four window bytes -> their activation words at dst[0], dst[2], dst[4], ... of one pixel. */
static inline void widen_quads(const int8_t *src, int32_t quads, int32_t offset2, int32_t *dst)
{
    int32_t j;
    for (j = 0; j < quads; ++j) {
        const int32_t x = tinyaot_read_s8x4(src + 4 * j);
        dst[4 * j] = __sxtab16(offset2, x);
        dst[4 * j + 2] = tinyaot_sxtab16_ror8(offset2, x);
    }
}

/* A quad's even and odd activation words (bytes 0, 2 and 1, 3, + the input offset). */
static inline int32_t stem_even(int32_t offset2, uint32_t quad)
{
    return __sxtab16(offset2, (int32_t)quad);
}

static inline int32_t stem_odd(int32_t offset2, uint32_t quad)
{
    return tinyaot_sxtab16_ror8(offset2, (int32_t)quad);
}

/* n window bytes to the patch, a word at a time (unaligned LDR / STR are fine on the M33), then the tail. */
static inline int8_t *patch_copy(int8_t *b, const int8_t *src, int32_t n)
{
    int8_t *const end = b + n;
    while (end - b >= 4) {
        *(tinyaot_unaligned_i32 *)(void *)b = tinyaot_read_s8x4(src);
        b += 4;
        src += 4;
    }
    while (b != end) {
        *b++ = *src++;
    }
    return end;
}

/* n bytes of `fill4` (the pad value in every byte) to the patch, a word at a time, then the tail. */
static inline int8_t *patch_fill(int8_t *b, int32_t fill4, int32_t n)
{
    int8_t *const end = b + n;
    while (end - b >= 4) {
        *(tinyaot_unaligned_i32 *)(void *)b = fill4;
        b += 4;
    }
    if (end - b >= 2) {  /* the tail in at most two stores (as a loop, GCC would call memset) */
        *(int16_t __attribute__((aligned(1), may_alias)) *)(void *)b = (int16_t)fill4;
        b += 2;
    }
    if (b != end) {
        *b = (int8_t)fill4;
    }
    return end;
}
#else
/* The portable definition of mat4x2_s16 above. */
static void mat4x2_s16(const int32_t *a, const int32_t *w, int32_t words, int32_t *acc, const int32_t *init)
{
    int32_t m;
    int32_t i;
    int32_t p;
    for (i = 0; i < 8; ++i) {
        acc[i] = init[i];
    }
    for (m = 0; m < words; ++m) {
        for (p = 0; p < 2; ++p) {
            for (i = 0; i < 4; ++i) {
                acc[4 * p + i] += tinyaot_lo16(a[2 * m + p]) * tinyaot_lo16(w[4 * m + i])
                                  + tinyaot_hi16(a[2 * m + p]) * tinyaot_hi16(w[4 * m + i]);
            }
        }
    }
}

/* The portable definition of mat4x2_s16_groups above. */
static void mat4x2_s16_groups(const int32_t *a, const int32_t *w, int32_t words, int8_t *out0, const int32_t *init,
                              const int32_t *requant, int8_t *out1, int32_t groups)
{
    int32_t acc[8];
    int32_t g, i;
    for (g = 0; g < groups; ++g) {
        mat4x2_s16(a, w + 4 * words * g, words, acc, init + 8 * g);
        for (i = 0; i < 8; ++i) {
            const int32_t *r = requant + 12 * g + 3 * (i & 3);
            /* acc holds 2 * the sum: (2 sum * m + 2^31) >> 32 is the high half of sum * m, rounded */
            const int32_t high = (int32_t)((uint64_t)((int64_t)acc[i] * r[0] + ((int64_t)1 << 31)) >> 32);
            (i < 4 ? out0 : out1)[4 * g + (i & 3)] = (int8_t)tinyaot_saturate_s8((high + r[2] + (acc[i] >> 31))
                                                                                 >> r[1]);
        }
    }
}
#define mat4x2_s16_groups_x2 mat4x2_s16_groups
#define mat4x2_s16_groups_x4 mat4x2_s16_groups
#define mat4x2_s16_groups_x6 mat4x2_s16_groups
#define mat4x2_s16_groups_x14 mat4x2_s16_groups

/* The portable definition of mat2x2_s8w above. */
static void mat2x2_s8w(const int32_t *a, const int8_t *w, int32_t quads, int32_t *acc, const int32_t *init)
{
    int32_t j, p, i;
    for (i = 0; i < 4; ++i) {
        acc[i] = init[i];
    }
    for (j = 0; j < quads; ++j) {
        for (p = 0; p < 2; ++p) {
            const int32_t even = a[4 * j + p];
            const int32_t odd = a[4 * j + 2 + p];
            for (i = 0; i < 2; ++i) {
                const int8_t *t = w + 8 * j + 4 * i;
                acc[2 * p + i] += tinyaot_lo16(even) * t[0] + tinyaot_hi16(even) * t[2] + tinyaot_lo16(odd) * t[1]
                                  + tinyaot_hi16(odd) * t[3];
            }
        }
    }
}

static inline int32_t pairs_pack16(int32_t lo, int32_t hi)
{
    return (int32_t)(((uint32_t)hi << 16) | (uint32_t)(uint16_t)lo);
}

/* The portable definitions of stem_even and stem_odd above. */
static inline int32_t stem_even(int32_t offset2, uint32_t quad)
{
    return pairs_pack16((int8_t)quad + tinyaot_lo16(offset2), (int8_t)(quad >> 16) + tinyaot_lo16(offset2));
}

static inline int32_t stem_odd(int32_t offset2, uint32_t quad)
{
    return pairs_pack16((int8_t)(quad >> 8) + tinyaot_lo16(offset2), (int8_t)(quad >> 24) + tinyaot_lo16(offset2));
}

/* `quads` groups of four window bytes -> their activation words at dst[0], dst[2], dst[4], ... of one pixel. */
static void widen_quads(const int8_t *src, int32_t quads, int32_t offset2, int32_t *dst)
{
    const int32_t offset = tinyaot_lo16(offset2);
    int32_t j;
    for (j = 0; j < quads; ++j) {
        dst[4 * j] = pairs_pack16(src[4 * j] + offset, src[4 * j + 2] + offset);
        dst[4 * j + 2] = pairs_pack16(src[4 * j + 1] + offset, src[4 * j + 3] + offset);
    }
}

/* The portable definitions of widen_rows, widen_rows2, patch_copy and patch_fill above. */
static void widen_rows(const int8_t *src, int32_t quads, int32_t rows, int32_t step, int32_t offset2, int32_t *dst,
                       int32_t skip)
{
    int32_t r;
    for (r = 0; r < rows; ++r) {
        widen_quads(src + r * step, quads, offset2, dst + r * (4 * quads + skip));
    }
}

static void widen_rows2(const int8_t *src, int32_t delta, int32_t quads, int32_t rows, int32_t step,
                        int32_t offset2, int32_t *dst)
{
    widen_rows(src, quads, rows, step, offset2, dst, 0);
    widen_rows(src + delta, quads, rows, step, offset2, dst + 1, 0);
}

/* The portable definition of stem9_rows2 above: the stem order of three rows of 9 bytes, both pixels. */
static void stem9_rows2(const int8_t *src, int32_t delta, int32_t step, int32_t *dst, int32_t offset2)
{
    int32_t p, r;
    widen_rows2(src, delta, 2, 3, step, offset2, dst);
    for (p = 0; p < 2; ++p) {
        const int8_t *s = src + p * delta + 8;
        int8_t left[4] = {0, 0, 0, 0};
        for (r = 0; r < 3; ++r) {
            left[r] = s[r * step];
        }
        widen_quads(left, 1, offset2, dst + 4 * 6 + p);
    }
}

static int8_t *patch_copy(int8_t *b, const int8_t *src, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        b[i] = src[i];
    }
    return b + n;
}

static int8_t *patch_fill(int8_t *b, int32_t fill4, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        b[i] = (int8_t)fill4;
    }
    return b + n;
}
#endif

/* `quads` zero activation words pairs (taps outside the image, the tail) at dst[0], dst[2], ... of one pixel. */
static inline int32_t *zero_quads(int32_t *dst, int32_t quads)
{
    int32_t *const end = dst + 4 * quads;
    while (dst != end) {
        dst[0] = 0;
        dst[2] = 0;
        dst += 4;
    }
    return end;
}

/* What every window of a layer shares, computed once per layer (pairs_geometry). */
typedef struct {
    int32_t offset2;     /* the input offset in both halfwords */
    int32_t whole_ok;    /* 1: no dilation, the kernel fits the image: whole windows take the fast paths */
    int32_t full;        /* 1: kernel rows of whole quads too: whole windows go straight to widen_rows */
    int32_t fill4;       /* the input zero point (which widens to 0) in every byte: the patch's padding */
    uint32_t iy_max;     /* a window whose first row and column are in [0, iy_max] x [0, ix_max] is whole */
    uint32_t ix_max;
    int32_t row_quads;   /* quads of a kernel row */
    int32_t row_step;    /* bytes from one image row to the next */
    int32_t tail_quads;  /* zero quads past the taps, up to taps_padded */
    int32_t stem;        /* 1: kernel rows not of whole quads, no dilation: the stem window order (below) */
    int32_t row_left;    /* stem: the bytes of a kernel row past its whole quads (1..3) */
    int32_t left_quads;  /* stem: the quads holding every row's leftover bytes, then the input zero point */
} pairs_geom;

static pairs_geom pairs_geometry(const tinyaot_conv_params *p, int32_t taps_padded)
{
    pairs_geom g;
    g.offset2 = tinyaot_offset2(p->input_offset);
    g.whole_ok = p->dilation_h == 1 && p->dilation_w == 1 && p->kernel_h <= p->in_h && p->kernel_w <= p->in_w;
    g.full = g.whole_ok && ((p->kernel_w * p->in_c) & 3) == 0;
    g.fill4 = (int32_t)((uint32_t)(uint8_t)(int8_t)(-p->input_offset) * 0x01010101u);
    g.iy_max = (uint32_t)(p->in_h - p->kernel_h);
    g.ix_max = (uint32_t)(p->in_w - p->kernel_w);
    g.row_quads = p->kernel_w * p->in_c / 4;
    g.row_step = p->in_w * p->in_c;
    g.tail_quads = (taps_padded - p->kernel_h * p->kernel_w * p->in_c) / 4;
    g.stem = p->dilation_h == 1 && p->dilation_w == 1 && ((p->kernel_w * p->in_c) & 3) != 0;
    g.row_left = (p->kernel_w * p->in_c) & 3;
    g.left_quads = (p->kernel_h * g.row_left + 3) / 4;
    return g;
}

/*
 * The activation words of output pixel `pixel` (0 or 1 of the pair) into `a`, for the windows pairs_pixel does
 * not take. A whole window (rows not of whole quads, as a 3-channel stem's): its rows copied into `patch` a word
 * at a time, then widened. Channels a multiple of four and no column dilation: straight from the input, the
 * taps inside the image widened and the others zero. Otherwise the window's bytes go through `patch`, a row's
 * valid run at a time (outside taps and the tail hold the input zero point, which widens to 0).
 */
__attribute__((noinline)) static void pairs_window(const int8_t *image, const tinyaot_conv_params *p,
                                                   const pairs_geom *g, int32_t taps_padded, int32_t oy, int32_t ox,
                                                   int32_t pixel, int8_t *patch, int32_t *a)
{
    const int32_t in_c = p->in_c;
    const int32_t in_w = p->in_w;
    const int32_t offset2 = g->offset2;
    const int32_t iy0 = oy * p->stride_h - p->pad_top;
    const int32_t ix0 = ox * p->stride_w - p->pad_left;
    const int32_t row_bytes = p->kernel_w * in_c;
    int32_t ky, kx, ky0, ky1, kx0, kx1;
    if (g->whole_ok && (uint32_t)iy0 <= g->iy_max && (uint32_t)ix0 <= g->ix_max) {  /* the whole window inside */
        const int8_t *src = image + (iy0 * in_w + ix0) * in_c;
        int8_t *b = patch;
        for (ky = 0; ky < p->kernel_h; ++ky) {
            b = patch_copy(b, src, row_bytes);
            src += g->row_step;
        }
        patch_fill(b, g->fill4, taps_padded - p->kernel_h * row_bytes);
        widen_rows(patch, taps_padded / 4, 1, 0, offset2, a + pixel, 0);
        return;
    }
    tinyaot_valid_taps(iy0, p->dilation_h, p->kernel_h, p->in_h, &ky0, &ky1);
    tinyaot_valid_taps(ix0, p->dilation_w, p->kernel_w, in_w, &kx0, &kx1);
    if ((in_c & 3) == 0 && p->dilation_w == 1) {
        const int32_t c4 = in_c / 4;
        const int32_t run = (kx1 - kx0) * c4;  /* quads of a row's taps inside the image */
        const int32_t row_quads = p->kernel_w * c4;
        int32_t *dst = a + pixel + 4 * ky0 * row_quads;
        zero_quads(a + pixel, ky0 * row_quads);
        if (run != row_quads) {  /* columns outside the image: zero the valid rows first */
            zero_quads(dst, (ky1 - ky0) * row_quads);
        }
        if (run > 0 && ky1 > ky0) {
            widen_rows(image + ((iy0 + ky0 * p->dilation_h) * in_w + ix0 + kx0) * in_c, run, ky1 - ky0,
                       p->dilation_h * in_w * in_c, offset2, dst + 4 * kx0 * c4, 4 * (row_quads - run));
        }
        zero_quads(dst + 4 * (ky1 - ky0) * row_quads, (taps_padded - ky1 * row_bytes) / 4);
        return;
    }
    {
        const int32_t fill4 = g->fill4;
        int8_t *b = patch_fill(patch, fill4, ky0 * row_bytes);
        for (ky = ky0; ky < ky1; ++ky) {
            const int8_t *src = image + ((iy0 + ky * p->dilation_h) * in_w + ix0) * in_c;
            if (p->dilation_w == 1) {  /* padding, the taps inside (contiguous), padding */
                b = patch_fill(b, fill4, kx0 * in_c);
                b = patch_copy(b, src + kx0 * in_c, (kx1 - kx0) * in_c);
                b = patch_fill(b, fill4, (p->kernel_w - kx1) * in_c);
                continue;
            }
            b = patch_fill(b, fill4, kx0 * in_c);
            for (kx = kx0; kx < kx1; ++kx) {
                b = patch_copy(b, src + kx * p->dilation_w * in_c, in_c);
            }
            b = patch_fill(b, fill4, (p->kernel_w - kx1) * in_c);
        }
        patch_fill(b, fill4, taps_padded - ky1 * row_bytes);
        widen_rows(patch, taps_padded / 4, 1, 0, offset2, a + pixel, 0);
    }
}

/* pairs_window, with the common case inline: a whole window of whole-quad kernel rows, widened row by row
 * straight from the image. */
static inline __attribute__((always_inline)) void pairs_pixel(const int8_t *image, const tinyaot_conv_params *p,
                                                              const pairs_geom *g, int32_t taps_padded, int32_t oy,
                                                              int32_t ox, int32_t pixel, int8_t *patch, int32_t *a)
{
    const int32_t iy0 = oy * p->stride_h - p->pad_top;
    const int32_t ix0 = ox * p->stride_w - p->pad_left;
    if (g->full && (uint32_t)iy0 <= g->iy_max && (uint32_t)ix0 <= g->ix_max) {
        widen_rows(image + (iy0 * p->in_w + ix0) * p->in_c, g->row_quads, p->kernel_h, g->row_step, g->offset2,
                   a + pixel, 0);  /* the tail past the rows stays zero (pairs_run) */
        return;
    }
    pairs_window(image, p, g, taps_padded, oy, ox, pixel, patch, a);
}

/* Both pixels' windows: when both are whole windows of whole-quad kernel rows, widened together straight from the
 * image (one call, one STM per quad of the pair); else one pixel at a time. */
static inline __attribute__((always_inline)) void pairs_pair(const int8_t *image, const tinyaot_conv_params *p,
                                                             const pairs_geom *g, int32_t taps_padded, int32_t oy0,
                                                             int32_t ox0, int32_t oy1, int32_t ox1, int8_t *patch,
                                                             int32_t *a)
{
    const int32_t iy0 = oy0 * p->stride_h - p->pad_top;
    const int32_t ix0 = ox0 * p->stride_w - p->pad_left;
    const int32_t iy1 = oy1 * p->stride_h - p->pad_top;
    const int32_t ix1 = ox1 * p->stride_w - p->pad_left;
    if (g->full && (uint32_t)iy0 <= g->iy_max && (uint32_t)ix0 <= g->ix_max && (uint32_t)iy1 <= g->iy_max
        && (uint32_t)ix1 <= g->ix_max) {
        const int8_t *s0 = image + (iy0 * p->in_w + ix0) * p->in_c;
        const int8_t *s1 = image + (iy1 * p->in_w + ix1) * p->in_c;
        widen_rows2(s0, (int32_t)(s1 - s0), g->row_quads, p->kernel_h, g->row_step, g->offset2, a);
        return;
    }
    pairs_pixel(image, p, g, taps_padded, oy0, ox0, 0, patch, a);
    pairs_pixel(image, p, g, taps_padded, oy1, ox1, 1, patch, a);
}

/*
 * Stem windows (kernel rows not of whole quads: an RGB stem's 3x3x3, 9 bytes a row; no dilation) take their own
 * tap order, which the weights follow (codegen/emit_conv.py, ref/conv2d_pairs_s8.py window_order): each kernel
 * row's whole quads, row after row, then the rows' leftover bytes together (row after row), the input zero point
 * up to a whole quad, zeros up to taps_padded (pairs_run zeroes that tail once per call). So a 27-tap window is 7
 * quads, widened straight from the image, and no byte goes through the patch but the 3 leftovers.
 */

/* The leftover bytes of a stem window's rows (`src` its first row's start), four at a time into a word (the
 * last word's missing bytes 0: their weights are 0), each word widened to its pixel's two activation words. */
static inline void stem_left(const int8_t *src, const tinyaot_conv_params *p, const pairs_geom *g, int32_t *dst)
{
    const int32_t left = g->row_left;
    const int32_t offset2 = g->offset2;
    const int8_t *s = src + 4 * g->row_quads;
    const int32_t step = g->row_step;
    uint32_t word = 0;
    int32_t k = 0;
    int32_t ky, l;
    if (left == 1) {  /* one byte a row (3x3x3, 7x7x3): a row's byte straight to its place in the word */
        for (ky = p->kernel_h; ky >= 4; ky -= 4) {
            word = (uint32_t)(uint8_t)s[0] | (uint32_t)(uint8_t)s[step] << 8 | (uint32_t)(uint8_t)s[2 * step] << 16
                   | (uint32_t)(uint8_t)s[3 * step] << 24;
            dst[0] = stem_even(offset2, word);
            dst[2] = stem_odd(offset2, word);
            dst += 4;
            s += 4 * step;
        }
        if (ky != 0) {
            word = (uint32_t)(uint8_t)s[0];
            if (ky > 1) {
                word |= (uint32_t)(uint8_t)s[step] << 8;
            }
            if (ky > 2) {
                word |= (uint32_t)(uint8_t)s[2 * step] << 16;
            }
            dst[0] = stem_even(offset2, word);
            dst[2] = stem_odd(offset2, word);
        }
        return;
    }
    for (ky = 0; ky < p->kernel_h; ++ky) {
        for (l = 0; l < left; ++l) {
            word |= (uint32_t)(uint8_t)s[l] << (8 * (k & 3));
            if ((++k & 3) == 0) {
                dst[0] = stem_even(offset2, word);
                dst[2] = stem_odd(offset2, word);
                dst += 4;
                word = 0;
            }
        }
        s += step;
    }
    if ((k & 3) != 0) {
        dst[0] = stem_even(offset2, word);
        dst[2] = stem_odd(offset2, word);
    }
}

/* One pixel's stem window whatever its place: its bytes in the plain order into `patch` (the input zero point
 * outside the image), then widened in the stem order: the rows' whole quads, then the leftovers moved down. */
__attribute__((noinline)) static void stem_window(const int8_t *image, const tinyaot_conv_params *p,
                                                  const pairs_geom *g, int32_t oy, int32_t ox, int32_t pixel,
                                                  int8_t *patch, int32_t *a)
{
    const int32_t in_c = p->in_c;
    const int32_t iy0 = oy * p->stride_h - p->pad_top;
    const int32_t ix0 = ox * p->stride_w - p->pad_left;
    const int32_t row_bytes = p->kernel_w * in_c;
    const int32_t fill4 = g->fill4;
    int32_t ky, ky0, ky1, kx0, kx1;
    int8_t *b;
    tinyaot_valid_taps(iy0, 1, p->kernel_h, p->in_h, &ky0, &ky1);
    tinyaot_valid_taps(ix0, 1, p->kernel_w, p->in_w, &kx0, &kx1);
    b = patch_fill(patch, fill4, ky0 * row_bytes);
    for (ky = ky0; ky < ky1; ++ky) {
        const int8_t *src = image + ((iy0 + ky) * p->in_w + ix0) * in_c;
        b = patch_fill(b, fill4, kx0 * in_c);
        b = patch_copy(b, src + kx0 * in_c, (kx1 - kx0) * in_c);
        b = patch_fill(b, fill4, (p->kernel_w - kx1) * in_c);
    }
    patch_fill(b, fill4, (p->kernel_h - ky1) * row_bytes);
    if (g->row_quads != 0) {
        widen_rows(patch, g->row_quads, p->kernel_h, row_bytes, g->offset2, a + pixel, 0);
    }
    {
        const int32_t left = g->row_left;
        const int8_t *s = patch + 4 * g->row_quads;
        b = patch;
        for (ky = 0; ky < p->kernel_h; ++ky) {  /* moved down: b never passes s */
            int32_t l;
            for (l = 0; l < left; ++l) {
                b[l] = s[l];
            }
            b += left;
            s += row_bytes;
        }
        patch_fill(b, fill4, 4 * g->left_quads - p->kernel_h * left);
        widen_quads(patch, g->left_quads, g->offset2, a + pixel + 4 * p->kernel_h * g->row_quads);
    }
}

/* One pixel's stem window: straight from the image when it is whole, else through the patch. */
static inline __attribute__((always_inline)) void stem_pixel(const int8_t *image, const tinyaot_conv_params *p,
                                                             const pairs_geom *g, int32_t iy0, int32_t ix0,
                                                             int32_t pixel, int8_t *patch, int32_t *a)
{
    if (g->whole_ok && (uint32_t)iy0 <= g->iy_max && (uint32_t)ix0 <= g->ix_max) {
        const int8_t *src = image + (iy0 * p->in_w + ix0) * p->in_c;
        if (g->row_quads != 0) {
            widen_rows(src, g->row_quads, p->kernel_h, g->row_step, g->offset2, a + pixel, 0);
        }
        stem_left(src, p, g, a + pixel + 4 * p->kernel_h * g->row_quads);
        return;
    }
    stem_window(image, p, g, (iy0 + p->pad_top) / p->stride_h, (ix0 + p->pad_left) / p->stride_w, pixel, patch, a);
}

/* Both pixels' stem windows: when both are wholly inside the image, their rows' quads widened together straight
 * from the image and their leftovers gathered; else one window at a time. */
__attribute__((noinline)) static void stem_pair(const int8_t *image, const tinyaot_conv_params *p,
                                                const pairs_geom *g, int32_t oy0, int32_t ox0, int32_t oy1,
                                                int32_t ox1, int8_t *patch, int32_t *a)
{
    const int32_t iy0 = oy0 * p->stride_h - p->pad_top;
    const int32_t ix0 = ox0 * p->stride_w - p->pad_left;
    const int32_t iy1 = oy1 * p->stride_h - p->pad_top;
    const int32_t ix1 = ox1 * p->stride_w - p->pad_left;
    if (g->whole_ok && (uint32_t)iy0 <= g->iy_max && (uint32_t)ix0 <= g->ix_max && (uint32_t)iy1 <= g->iy_max
        && (uint32_t)ix1 <= g->ix_max) {
        const int8_t *s0 = image + (iy0 * p->in_w + ix0) * p->in_c;
        const int8_t *s1 = image + (iy1 * p->in_w + ix1) * p->in_c;
        const int32_t *left = a + 4 * p->kernel_h * g->row_quads;
        if (g->row_quads != 0) {
            widen_rows2(s0, (int32_t)(s1 - s0), g->row_quads, p->kernel_h, g->row_step, g->offset2, a);
        }
        stem_left(s0, p, g, (int32_t *)left);
        stem_left(s1, p, g, (int32_t *)left + 1);
        return;
    }
    stem_pixel(image, p, g, iy0, ix0, 0, patch, a);
    stem_pixel(image, p, g, iy1, ix1, 1, patch, a);
}

/* Every output channel of the pair whose windows are in `a`, to out0 and out1 (the same pointer when the
 * pair's second pixel is a copy of the first). Locals, not p->...: the int8 stores may alias the struct. */
typedef void (*pairs_groups_fn)(const int32_t *a, const int32_t *w, int32_t words, int8_t *out0,
                                const int32_t *init, const int32_t *requant, int8_t *out1, int32_t groups);

/* The mat4x2_s16_groups form for a layer's words: its loop unrolled as far as they allow (chosen once a call). */
static pairs_groups_fn pairs_groups(int32_t words)
{
    if (words % 24 == 0) {
        return mat4x2_s16_groups_x6;
    }
    if (words % 16 == 0) {
        return mat4x2_s16_groups_x4;
    }
    if (words % 14 == 0) {
        return mat4x2_s16_groups_x14;
    }
    return words % 8 == 0 ? mat4x2_s16_groups_x2 : mat4x2_s16_groups;
}

static void pairs_channels(const int32_t *a, const tinyaot_conv_params *p, int32_t taps_padded, int8_t *out0,
                           int8_t *out1, pairs_groups_fn groups_fn)
{
    const int32_t *w = (const int32_t *)p->weights;
    const int32_t *const bias = p->bias;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int32_t words = taps_padded / 2;
    const int32_t out_c = p->out_c;
    const int32_t output_offset = p->output_offset;
    const int32_t act_min = p->act_min;
    const int32_t act_max = p->act_max;
    const int full_range = act_min == -128 && act_max == 127;
    int32_t oc = 0;
    int32_t i;
    if (full_range && out_c >= 4) {  /* whole groups requantized in registers, straight to both pixels' outputs */
        const int32_t groups = out_c / 4;
        groups_fn(a, w, words, out0, bias, multiplier, out1, groups);
        oc = 4 * groups;
        w += 4 * words * groups;
    }
    for (; oc < out_c; oc += 4) {
        const int32_t n = out_c - oc < 4 ? out_c - oc : 4;
        int32_t acc[8];
        mat4x2_s16(a, w, words, acc, bias + 2 * oc);  /* bias [out_c / 4][2 pixels][4], both pixels' start */
        w += 4 * words;
        for (i = 0; i < 8; ++i) {
            acc[i] >>= 1;  /* the doubled weights' sums, halved: exact */
        }
        if (full_range) {  /* one SSAT per output */
            for (i = 0; i < n; ++i) {
                const int32_t m = multiplier[3 * (oc + i)];
                const int32_t right = shift[oc + i];
                out0[oc + i] = (int8_t)tinyaot_saturate_s8(tinyaot_requantize_right(acc[i], m, right) + output_offset);
                out1[oc + i] = (int8_t)tinyaot_saturate_s8(tinyaot_requantize_right(acc[4 + i], m, right)
                                                           + output_offset);
            }
            continue;
        }
        for (i = 0; i < n; ++i) {
            const int32_t m = multiplier[3 * (oc + i)];
            const int32_t right = shift[oc + i];
            const int32_t y0 = tinyaot_requantize_right(acc[i], m, right) + output_offset;
            const int32_t y1 = tinyaot_requantize_right(acc[4 + i], m, right) + output_offset;
            out0[oc + i] = (int8_t)tinyaot_clamp(y0, act_min, act_max);
            out1[oc + i] = (int8_t)tinyaot_clamp(y1, act_min, act_max);
        }
    }
}

/* As pairs_channels, with the size mode's int8 weights, two channels at a time. */
static void pairs_channels_w8(const int32_t *a, const tinyaot_conv_params *p, int32_t taps_padded, int8_t *out0,
                              int8_t *out1)
{
    const int8_t *w = (const int8_t *)p->weights;
    const int32_t *const bias = p->bias;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int32_t quads = taps_padded / 4;
    const int32_t out_c = p->out_c;
    const int32_t output_offset = p->output_offset;
    const int32_t act_min = p->act_min;
    const int32_t act_max = p->act_max;
    int32_t oc, i;
    for (oc = 0; oc < out_c; oc += 2) {
        const int32_t n = out_c - oc < 2 ? out_c - oc : 2;
        int32_t acc[4];
        mat2x2_s8w(a, w, quads, acc, bias + 2 * oc);  /* bias [out_c / 2][2 pixels][2] */
        w += 2 * taps_padded;
        for (i = 0; i < n; ++i) {
            const int32_t m = multiplier[oc + i];
            const int32_t right = shift[oc + i];
            const int32_t y0 = tinyaot_requantize_right(acc[i], m, right) + output_offset;
            const int32_t y1 = tinyaot_requantize_right(acc[2 + i], m, right) + output_offset;
            out0[oc + i] = (int8_t)tinyaot_clamp(y0, act_min, act_max);
            out1[oc + i] = (int8_t)tinyaot_clamp(y1, act_min, act_max);
        }
    }
}

/* One output pixel of a layer whose constant channels the kernel skips: the constant channels' bytes (fill),
 * then the live channels' results at their places. */
static void sparse_scatter(const int8_t *live_out, const tinyaot_conv_sparse_params *s, int8_t *out)
{
    const int16_t *const live = s->live;
    const int32_t n = s->conv.out_c;
    int32_t j;
    patch_copy(out, s->fill, s->out_c);
    for (j = 0; j < n; ++j) {
        out[live[j]] = live_out[j];
    }
}

/* A window's taps rounded up to whole groups of 8 (what every microkernel takes), or, a stem whose layer calls the
 * microkernel straight (`direct`), to whole quads when their words are a multiple of 14, which the 14-word
 * microkernel takes: an RGB 3x3 stem's 27 taps are 28, not 32 (ref/conv2d_pairs_s8.py pairs_taps). */
static int32_t pairs_taps(const tinyaot_conv_params *p, int direct)
{
    const int32_t taps = p->kernel_h * p->kernel_w * p->in_c;
    const int stem = p->dilation_h == 1 && p->dilation_w == 1 && ((p->kernel_w * p->in_c) & 3) != 0;
    if (direct && stem && ((taps + 3) & ~3) % 28 == 0) {
        return (taps + 3) & ~3;
    }
    return (taps + 7) & ~7;
}

/* A pair's windows are in `work`: its channels, and (sparse) the constant channels placed, (conv2d_add) the
 * residual added, to the outputs of pixels q and q + 1 (q alone when `second` is 0). */
static inline __attribute__((always_inline)) void pairs_finish(
    int32_t *work, const tinyaot_conv_params *p, int32_t taps_padded, int int8_weights, pairs_groups_fn groups_fn,
    int direct,
    int32_t q, int second, int8_t *out, int32_t out_c, int8_t *sums, int32_t sums_c,
    const tinyaot_conv_sparse_params *sparse, const tinyaot_conv_add_params *add, tinyaot_add_params *both,
    const int8_t *skip)
{
    int8_t *dst = add != 0 || sparse != 0 ? sums : out + q * out_c;
    if (direct) {  /* whole groups requantized in registers: the microkernel called straight */
        groups_fn(work, (const int32_t *)p->weights, taps_padded / 2, dst, p->bias, p->multiplier,
                  second ? dst + sums_c : dst, sums_c / 4);
    } else if (int8_weights) {
        pairs_channels_w8(work, p, taps_padded, dst, second ? dst + sums_c : dst);
    } else {
        pairs_channels(work, p, taps_padded, dst, second ? dst + sums_c : dst, groups_fn);
    }
    if (sparse != 0) {
        sparse_scatter(sums, sparse, out + q * out_c);
        if (second) {
            sparse_scatter(sums + sums_c, sparse, out + (q + 1) * out_c);
        }
    }
    if (add != 0) {
        const int8_t *s = skip + q * out_c;
        both->size = (second ? 2 : 1) * out_c;
        if (add->skip_input == 1) {
            tinyaot_add_s8(s, sums, both, out + q * out_c);
        } else {
            tinyaot_add_s8(sums, s, both, out + q * out_c);
        }
    }
}

/* Work buffer: the pair's activation words (4 * taps_padded bytes), then a window's bytes (taps_padded), then
 * (conv2d_add, or a layer whose constant channels are skipped) the pair's own int8 results. */
/* Inlined into each entry point with `int8_weights` a constant, so a firmware links only the microkernel and
 * channel loop its mode calls. */
__attribute__((always_inline)) static inline void pairs_run(const int8_t *input, const tinyaot_conv_params *p,
                                                            int32_t *work, int8_t *output, const int8_t *skip,
                                                            const tinyaot_conv_add_params *add, int int8_weights,
                                                            const tinyaot_conv_sparse_params *sparse)
{
    /* speed, every channel in a whole group, the activation range all of int8: pairs_channels' first branch alone */
    const int direct = !int8_weights && p->act_min == -128 && p->act_max == 127 && (p->out_c & 3) == 0;
    const int32_t taps_padded = pairs_taps(p, direct);
    const int32_t pixels = p->out_h * p->out_w;
    const int32_t out_c = sparse != 0 ? sparse->out_c : p->out_c;
    const int32_t sums_c = p->out_c;  /* the channels the pair computes: all of them, or the live ones */
    int8_t *const patch = (int8_t *)(work + taps_padded);
    int8_t *const sums = patch + taps_padded;  /* conv2d_add, sparse: the pair's own int8 results */
    const pairs_geom geom = pairs_geometry(p, taps_padded);
    const int stem = geom.stem;
    const int stem9 = stem && p->kernel_h == 3 && p->kernel_w * p->in_c == 9;  /* an RGB 3x3 stem: stem9_rows2 */
    const pairs_groups_fn groups_fn = int8_weights ? 0 : pairs_groups(taps_padded / 2);
    /* whole windows of whole-quad rows (or a stem's) on one row run as a tight loop: the columns ox_lo..ox_end - 1 */
    const int fast_rows = geom.whole_ok && (stem || geom.full);
    const int32_t ox_lo = (p->pad_left + p->stride_w - 1) / p->stride_w;
    const int32_t ox_hi = fast_rows ? ((int32_t)geom.ix_max + p->pad_left) / p->stride_w + 1 : 0;
    const int32_t ox_end = ox_hi < p->out_w ? ox_hi : p->out_w;
    tinyaot_add_params both;
    int32_t b, q;
    if (add != 0) {
        both = add->add;
    }
    if (stem || geom.full) {  /* the tail past the windows' quads stays zero: zeroed once */
        int32_t i;
        for (i = 4 * (p->kernel_h * geom.row_quads + (stem ? geom.left_quads : 0)); i < taps_padded; ++i) {
            work[i] = 0;
        }
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *image = input + b * p->in_h * p->in_w * p->in_c;
        int8_t *out = output + b * pixels * out_c;
        const int8_t *skip_b = add != 0 ? skip + b * pixels * out_c : 0;
        int32_t oy = 0;
        int32_t ox = 0;
        q = 0;
        while (q < pixels) {
            int second = q + 1 < pixels;
            int32_t run = 0;  /* pairs from here on this row whose windows are whole: straight from the image */
            if (fast_rows && ox >= ox_lo && (uint32_t)(oy * p->stride_h - p->pad_top) <= geom.iy_max) {
                run = (ox_end - ox) / 2;
            }
            if (run > 0) {
                const int32_t delta = p->stride_w * p->in_c;
                const int8_t *src = image + ((oy * p->stride_h - p->pad_top) * p->in_w + ox * p->stride_w
                                             - p->pad_left) * p->in_c;
                ox += 2 * run;
                if (ox == p->out_w) {
                    ox = 0;
                    ++oy;
                }
                for (; run > 0; --run, src += 2 * delta, q += 2) {
                    if (stem9) {
                        stem9_rows2(src, delta, geom.row_step, work, geom.offset2);
                    } else if (geom.row_quads != 0) {
                        widen_rows2(src, delta, geom.row_quads, p->kernel_h, geom.row_step, geom.offset2, work);
                    }
                    if (stem && !stem9) {
                        stem_left(src, p, &geom, work + 4 * p->kernel_h * geom.row_quads);
                        stem_left(src + delta, p, &geom, work + 4 * p->kernel_h * geom.row_quads + 1);
                    }
                    pairs_finish(work, p, taps_padded, int8_weights, groups_fn, direct, q, 1, out, out_c, sums,
                                 sums_c, sparse, add, &both, skip_b);
                }
                continue;
            }
            {
                const int32_t oy0 = oy;
                const int32_t ox0 = ox;
                int32_t oy1 = oy0;
                int32_t ox1 = ox0;
                if (second) {  /* an odd last pixel is paired with itself */
                    if (++ox == p->out_w) {  /* the pair's second pixel may start the next row */
                        ox = 0;
                        ++oy;
                    }
                    oy1 = oy;
                    ox1 = ox;
                }
                if (++ox == p->out_w) {
                    ox = 0;
                    ++oy;
                }
                if (stem) {
                    stem_pair(image, p, &geom, oy0, ox0, oy1, ox1, patch, work);
                } else {
                    pairs_pair(image, p, &geom, taps_padded, oy0, ox0, oy1, ox1, patch, work);
                }
                pairs_finish(work, p, taps_padded, int8_weights, groups_fn, direct, q, second, out, out_c, sums,
                             sums_c, sparse, add, &both, skip_b);
                q += 2;
            }
        }
    }
}

void tinyaot_conv2d_pairs_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work, int8_t *output)
{
    pairs_run(input, params, work, output, 0, 0, 0, 0);
}

void tinyaot_conv2d_add_pairs_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                 int32_t *work, int8_t *output)
{
    pairs_run(input, &params->conv, work, output, skip, params, 0, 0);
}

void tinyaot_conv2d_pairs_w8_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work,
                                int8_t *output)
{
    pairs_run(input, params, work, output, 0, 0, 1, 0);
}

void tinyaot_conv2d_add_pairs_w8_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                    int32_t *work, int8_t *output)
{
    pairs_run(input, &params->conv, work, output, skip, params, 1, 0);
}

void tinyaot_conv2d_pairs_sparse_s8(const int8_t *input, const tinyaot_conv_sparse_params *params, int32_t *work,
                                    int8_t *output)
{
    pairs_run(input, &params->conv, work, output, 0, 0, 0, params);
}

void tinyaot_conv2d_pairs_sparse_w8_s8(const int8_t *input, const tinyaot_conv_sparse_params *params, int32_t *work,
                                       int8_t *output)
{
    pairs_run(input, &params->conv, work, output, 0, 0, 1, params);
}
