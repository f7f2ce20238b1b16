/*
 * fully_connected_s8.c - int8 fully connected layer; twin of ref/fully_connected_s8.py.
 *
 * The portable loop is the definition. On cores with the DSP extension (Cortex-M33, M4, M7) four output
 * rows share each input word: SXTB16 widens the even and odd bytes once, then every row does two SMLAD per
 * four weight bytes; the loop takes eight bytes per pass. Integer sums are exact, so both paths give the
 * same bits.
 *
 * Requantization is tinyaot_requantize_nonneg (tinyaot_fixedpoint.h): TFLM's double rounding for the
 * multipliers QuantizeMultiplier makes.
 *
 * tinyaot_fully_connected_wide_s8 and _wide_w8_s8 are the speed and size kernels the plan picks
 * (plan/kernels.py): eight outputs at a time over weights laid out for them at compile time (int16 pairs, or
 * int8 widened as read), requantized with tinyaot_requantize_right, which the plan proved exact for the layer.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

static inline int8_t fc_output(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                               int32_t act_min, int32_t act_max)
{
    acc = tinyaot_requantize_nonneg(acc, multiplier, shift) + output_offset;
    return (int8_t)tinyaot_clamp(acc, act_min, act_max);
}

#if TINYAOT_DSP
/* Dot product of two rows (the last out_features % 4 rows), four bytes per pass. */
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t acc)
{
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t va = tinyaot_read_s8x4(a + k);
        acc = tinyaot_mac4_s8(__sxtb16(va), tinyaot_sxtb16_ror8(va), tinyaot_read_s8x4(b + k), acc);
    }
    for (; k < n; ++k) {
        acc += (int32_t)a[k] * (int32_t)b[k];
    }
    return acc;
}
#else
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        acc += (int32_t)a[k] * (int32_t)b[k];
    }
    return acc;
}
#endif

void tinyaot_fully_connected_s8(const int8_t *input, const tinyaot_fully_connected_params *params, int8_t *output)
{
    const int8_t *const weights = (const int8_t *)params->weights;
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t batches = params->batches;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    int32_t b;
    int32_t c;
    for (b = 0; b < batches; ++b) {
        const int8_t *row_in = input + b * in_features;
        int8_t *row_out = output + b * out_features;
        c = 0;
#if TINYAOT_DSP
        for (; c + 4 <= out_features; c += 4) {
            int32_t acc[4];
            int32_t i;
            acc[0] = bias[c];
            acc[1] = bias[c + 1];
            acc[2] = bias[c + 2];
            acc[3] = bias[c + 3];
            tinyaot_dot4_s8(row_in, weights + c * in_features, in_features, in_features, acc);
            for (i = 0; i < 4; ++i) {
                row_out[c + i] = fc_output(acc[i], multiplier[c + i], shift[c + i], output_offset, act_min,
                                           act_max);
            }
        }
#endif
        for (; c < out_features; ++c) {
            const int32_t acc = dot_s8(row_in, weights + c * in_features, in_features, bias[c]);
            row_out[c] = fc_output(acc, multiplier[c], shift[c], output_offset, act_min, act_max);
        }
    }
}

#if TINYAOT_DSP
/*
 * acc[0..7] += eight output channels' dot products over `quads` (a multiple of 2) four-byte groups of x with
 * the widened weights: per group one LDR and two SXTB16 widen x, eight LDRD read the 16 weight words (even
 * taps of the eight channels, then odd), sixteen SMLAD. The end pointer is on the stack (every register is in
 * use) and reloaded into a free one every four groups; a count of 2 mod 4 enters the loop half way.
 */
/* One group of four inputs of mat8x1_s16: x widened (LDR, two SXTB16), 8 LDRD of weights, 16 SMLAD. */
#define MAT8X1_S16_QUAD \
        "ldr r3, [r0], #4\n\t" \
        "sxtb16 r2, r3, ror #8\n\t" \
        "sxtb16 r3, r3\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r4, r3, r12, r4\n\t" \
        "smlad r5, r3, lr, r5\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r6, r3, r12, r6\n\t" \
        "smlad r7, r3, lr, r7\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r8, r3, r12, r8\n\t" \
        "smlad r9, r3, lr, r9\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r10, r3, r12, r10\n\t" \
        "smlad r11, r3, lr, r11\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r4, r2, r12, r4\n\t" \
        "smlad r5, r2, lr, r5\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r6, r2, r12, r6\n\t" \
        "smlad r7, r2, lr, r7\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r8, r2, r12, r8\n\t" \
        "smlad r9, r2, lr, r9\n\t" \
        "ldrd r12, lr, [r1], #8\n\t" \
        "smlad r10, r2, r12, r10\n\t" \
        "smlad r11, r2, lr, r11\n\t"

/* The accumulation of mat8x1_s16 and mat8x1_s16_requant: r0 = x, r1 = weights, r2 = quads, r3 = what the end
 * stores (acc or out), accumulators r4-r11 from %[init]. */
#define MAT8X1_S16_LOOP \
        "tst r2, #2\n\t" \
        "add r2, r0, r2, lsl #2\n\t" \
        "strd r2, r3, %[end]\n\t" \
        "ldr r4, %[init]\n\t" \
        "ldm r4, {r4-r11}\n\t" \
        "bne 2f\n" \
        "1:\n\t" MAT8X1_S16_QUAD MAT8X1_S16_QUAD \
        "2:\n\t" MAT8X1_S16_QUAD MAT8X1_S16_QUAD \
        "ldr r2, %[end]\n\t" \
        "cmp r0, r2\n\t" \
        "bne 1b\n\t"

__attribute__((noinline)) static void mat8x1_s16(const int8_t *a, const int32_t *w, int32_t quads, int32_t *acc,
                                                 const int32_t *init)
{
    /* AAPCS registers for the asm; it uses every other register too (clobbered: GCC saves them, so the call
     * graph's stack frame holds them), and keeps its end pointer and acc in two stack slots of this frame. The
     * accumulators start from init (the bias, read in place) and end in acc. */
    register const int8_t *r0 __asm__("r0") = a;
    register const int32_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = quads;
    register int32_t *r3 __asm__("r3") = acc;
    int32_t *slots[2];  /* the end pointer and acc, stored together */
    __asm__ volatile(
        MAT8X1_S16_LOOP
        "ldr r3, %[accp]\n\t"
        "stm r3, {r4-r11}\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/* One output of mat8x1_s16_requant: accumulator `acc` with its channel's (multiplier, right, k) read from r0. */
#define MAT8X1_REQUANT(acc) \
        "ldm r0!, {r3, r12, lr}\n\t" \
        "add lr, lr, " acc ", asr #31\n\t" \
        "add " acc ", " acc ", " acc "\n\t" \
        "smmlar " acc ", " acc ", r3, lr\n\t" \
        "asr " acc ", " acc ", r12\n\t" \
        "ssat " acc ", #8, " acc "\n\t" \
        "strb " acc ", [r1], #1\n\t"

/*
 * mat8x1_s16 for a whole group of eight outputs whose activation range is all of int8, requantized in registers
 * into out[0..7]: per output one LDM of (multiplier, right shift, k), then SMMLAR, the shift and SSAT (7
 * instructions). k = floor(2^right / 2) + (output zero point << right), so one add before the shift both rounds and
 * offsets (tinyaot_requantize_right with the zero point added exactly: a multiple of 2^right does not change the
 * floor of the division; the compiler checked that k fits).
 */
__attribute__((noinline)) static void mat8x1_s16_requant(const int8_t *a, const int32_t *w, int32_t quads, int8_t *out,
                                                         const int32_t *init, const int32_t *requant)
{
    register const int8_t *r0 __asm__("r0") = a;
    register const int32_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = quads;
    register int8_t *r3 __asm__("r3") = out;
    int8_t *slots[2];  /* the end pointer and out, stored together */
    __asm__ volatile(
        MAT8X1_S16_LOOP
        "ldr r0, %[requant]\n\t"
        "ldr r1, %[accp]\n\t"
        MAT8X1_REQUANT("r4") MAT8X1_REQUANT("r5") MAT8X1_REQUANT("r6") MAT8X1_REQUANT("r7")
        MAT8X1_REQUANT("r8") MAT8X1_REQUANT("r9") MAT8X1_REQUANT("r10") MAT8X1_REQUANT("r11")
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init), [requant] "m"(requant)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/*
 * The size mode's twin of mat8x1_s16: int8 weights [quads][8 channels][4 bytes] widened as they are read (two
 * SXTB16 per channel and group), so the weights take no more flash than the int8 model: 43 instructions per
 * 32 MACs, plus 3 per two groups for the loop (kept short: the size mode's code is flash too).
 */
__attribute__((noinline)) static void mat8x1_s8w(const int8_t *a, const int8_t *w, int32_t quads, int32_t *acc,
                                                 const int32_t *init)
{
    /* AAPCS registers for the asm; it uses every other register too (clobbered: GCC saves them, so the call
     * graph's stack frame holds them), and keeps its end pointer and acc in two stack slots of this frame. The
     * accumulators start from init (the bias, read in place) and end in acc. */
    register const int8_t *r0 __asm__("r0") = a;
    register const int8_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = quads;
    register int32_t *r3 __asm__("r3") = acc;
    int32_t *slots[2];  /* the end pointer and acc, stored together */
    __asm__ volatile(
        "add r2, r0, r2, lsl #2\n\t"
        "strd r2, r3, %[end]\n\t"
        "ldr r4, %[init]\n\t"
        "ldm r4, {r4-r11}\n"
        "1:\n\t"
        ".rept 2\n\t"
        "ldr r3, [r0], #4\n\t"
        "sxtb16 r2, r3, ror #8\n\t"
        "sxtb16 r3, r3\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r4, r3, lr, r4\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r4, r2, r12, r4\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r5, r3, lr, r5\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r5, r2, r12, r5\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r6, r3, lr, r6\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r6, r2, r12, r6\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r7, r3, lr, r7\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r7, r2, r12, r7\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r8, r3, lr, r8\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r8, r2, r12, r8\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r9, r3, lr, r9\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r9, r2, r12, r9\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r10, r3, lr, r10\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r10, r2, r12, r10\n\t"
        "ldr r12, [r1], #4\n\t"
        "sxtb16 lr, r12\n\t"
        "smlad r11, r3, lr, r11\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "smlad r11, r2, r12, r11\n\t"
        ".endr\n\t"
        "ldr r2, %[end]\n\t"
        "cmp r0, r2\n\t"
        "bne 1b\n\t"
        "ldr r3, %[accp]\n\t"
        "stm r3, {r4-r11}\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/*
 * Six outputs at a time (the speed mode's groups but the last, codegen/emit_conv.py wide_fc_weights): per group of
 * four inputs one LDR and two SXTB16 widen x, three LDM read the 12 weight words (even taps of the six outputs,
 * then odd), twelve SMLAD: 18 instructions per 24 MACs, against 27 per 32 with eight accumulators and LDRD (the
 * four registers eight accumulators leave are what lets LDM take four words).
 */
#define MAT6X1_S16_QUAD \
        "ldr r3, [r0], #4\n\t" \
        "sxtb16 r2, r3, ror #8\n\t" \
        "sxtb16 r3, r3\n\t" \
        "ldm r1!, {r10, r11, r12, lr}\n\t" \
        "smlad r4, r3, r10, r4\n\t" \
        "smlad r5, r3, r11, r5\n\t" \
        "smlad r6, r3, r12, r6\n\t" \
        "smlad r7, r3, lr, r7\n\t" \
        "ldm r1!, {r10, r11, r12, lr}\n\t" \
        "smlad r8, r3, r10, r8\n\t" \
        "smlad r9, r3, r11, r9\n\t" \
        "smlad r4, r2, r12, r4\n\t" \
        "smlad r5, r2, lr, r5\n\t" \
        "ldm r1!, {r10, r11, r12, lr}\n\t" \
        "smlad r6, r2, r10, r6\n\t" \
        "smlad r7, r2, r11, r7\n\t" \
        "smlad r8, r2, r12, r8\n\t" \
        "smlad r9, r2, lr, r9\n\t"

/* The accumulation of one group of six: r0 = x, r1 = weights, r2 = quads (a multiple of 2), `end` the x end
 * (written here, or by the caller: MAT6X1_S16_ENTER skips that), accumulators r4-r9 already loaded. Four groups
 * of inputs per pass; a count of 2 mod 4 enters half way. */
#define MAT6X1_S16_LOOP \
        "tst r2, #2\n\t" \
        "bne 2f\n" \
        "1:\n\t" MAT6X1_S16_QUAD MAT6X1_S16_QUAD \
        "2:\n\t" MAT6X1_S16_QUAD MAT6X1_S16_QUAD \
        "ldr r2, %[end]\n\t" \
        "cmp r0, r2\n\t" \
        "bne 1b\n\t"

/* mat8x1_s16's twin for a group of six outputs: acc[0..5] = init[0..5] + the six dot products. */
__attribute__((noinline)) static void mat6x1_s16(const int8_t *a, const int32_t *w, int32_t quads, int32_t *acc,
                                                 const int32_t *init)
{
    register const int8_t *r0 __asm__("r0") = a;
    register const int32_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = quads;
    register int32_t *r3 __asm__("r3") = acc;
    int32_t *slots[2];  /* the end pointer and acc, stored together */
    __asm__ volatile(
        "add r12, r0, r2, lsl #2\n\t"
        "strd r12, r3, %[end]\n\t"
        "ldr r4, %[init]\n\t"
        "ldm r4, {r4-r9}\n\t"
        MAT6X1_S16_LOOP
        "ldr r3, %[accp]\n\t"
        "stm r3, {r4-r9}\n\t"
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

/* One output of mat6_s16_requant_groups: accumulator `acc` with its channel's (multiplier, right, k) read from
 * r0, stored through r2 (MAT8X1_REQUANT's steps). */
#define MAT6X1_REQUANT(acc) \
        "ldm r0!, {r3, r12, lr}\n\t" \
        "add lr, lr, " acc ", asr #31\n\t" \
        "add " acc ", " acc ", " acc "\n\t" \
        "smmlar " acc ", " acc ", r3, lr\n\t" \
        "asr " acc ", " acc ", r12\n\t" \
        "ssat " acc ", #8, " acc "\n\t" \
        "strb " acc ", [r2], #1\n\t"

/*
 * `groups` whole groups of six outputs whose activation range is all of int8, requantized in registers
 * (mat8x1_s16_requant's way) into out[0..6 * groups), in one call: the group loop is in the asm too, its state
 * (x, its end, the group's bias, requantization and output pointers, the weights' end) in a frame slot array, so
 * a group costs 14 instructions beside its MACs and requantization. Returns the weights after the groups.
 */
__attribute__((noinline)) static const int32_t *mat6_s16_requant_groups(const int8_t *a, const int32_t *w,
                                                                        int32_t quads, int8_t *out,
                                                                        const int32_t *init, const int32_t *requant,
                                                                        int32_t groups)
{
    register const int32_t *r1 __asm__("r1") = w;
    const void *slots[7];  /* x, x end, bias, requant, out, weights end, quads */
    slots[0] = a;
    slots[1] = a + 4 * quads;
    slots[2] = init;
    slots[3] = requant;
    slots[4] = out;
    slots[5] = w + 12 * quads * groups;
    slots[6] = (const void *)(intptr_t)quads;
    __asm__ volatile(
        "3:\n\t"
        "ldr r0, %[x]\n\t"
        "ldr lr, %[init]\n\t"
        "ldm lr!, {r4-r9}\n\t"
        "str lr, %[init]\n\t"
        "ldr r2, %[quads]\n\t"
        MAT6X1_S16_LOOP
        "ldr r0, %[req]\n\t"
        "ldr r2, %[out]\n\t"
        MAT6X1_REQUANT("r4") MAT6X1_REQUANT("r5") MAT6X1_REQUANT("r6")
        MAT6X1_REQUANT("r7") MAT6X1_REQUANT("r8") MAT6X1_REQUANT("r9")
        "str r0, %[req]\n\t"
        "str r2, %[out]\n\t"
        "ldr r3, %[wend]\n\t"
        "cmp r1, r3\n\t"
        "bne 3b\n\t"
        : "+r"(r1), [init] "+m"(slots[2]), [req] "+m"(slots[3]), [out] "+m"(slots[4])
        : [x] "m"(slots[0]), [end] "m"(slots[1]), [wend] "m"(slots[5]), [quads] "m"(slots[6])
        : "r0", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
    return r1;
}

#else
/* The portable definition of mat8x1_s16 above. */
static void mat8x1_s16(const int8_t *x, const int32_t *w, int32_t quads, int32_t *acc, const int32_t *init)
{
    int32_t j, i;
    for (i = 0; i < 8; ++i) {
        acc[i] = init[i];
    }
    for (j = 0; j < quads; ++j) {
        const int8_t *q = x + 4 * j;
        for (i = 0; i < 8; ++i) {
            const int32_t even = w[i];
            const int32_t odd = w[8 + i];
            const int32_t dot = q[0] * tinyaot_lo16(even) + q[2] * (even >> 16) + q[1] * tinyaot_lo16(odd)
                                + q[3] * (odd >> 16);
            acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)dot);  /* wrapping, as SMLAD and TFLM's sums */
        }
        w += 16;
    }
}

/* The portable definition of mat8x1_s16_requant above. */
static void mat8x1_s16_requant(const int8_t *x, const int32_t *w, int32_t quads, int8_t *out, const int32_t *init,
                               const int32_t *requant)
{
    int32_t acc[8];
    int32_t i;
    mat8x1_s16(x, w, quads, acc, init);
    for (i = 0; i < 8; ++i) {
        const int32_t *r = requant + 3 * i;
        const int32_t high = (int32_t)((uint64_t)((int64_t)acc[i] * r[0] + ((int64_t)1 << 30)) >> 31);
        out[i] = (int8_t)tinyaot_saturate_s8((high + r[2] + (acc[i] >> 31)) >> r[1]);
    }
}

/* The portable definition of mat6x1_s16 above (mat8x1_s16's for six outputs, weights [quads][2][6]). */
static void mat6x1_s16(const int8_t *x, const int32_t *w, int32_t quads, int32_t *acc, const int32_t *init)
{
    int32_t j, i;
    for (i = 0; i < 6; ++i) {
        acc[i] = init[i];
    }
    for (j = 0; j < quads; ++j) {
        const int8_t *q = x + 4 * j;
        for (i = 0; i < 6; ++i) {
            const int32_t even = w[i];
            const int32_t odd = w[6 + i];
            const int32_t dot = q[0] * tinyaot_lo16(even) + q[2] * (even >> 16) + q[1] * tinyaot_lo16(odd)
                                + q[3] * (odd >> 16);
            acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)dot);  /* wrapping, as SMLAD and TFLM's sums */
        }
        w += 12;
    }
}

/* The portable definition of mat6_s16_requant_groups above. */
static const int32_t *mat6_s16_requant_groups(const int8_t *x, const int32_t *w, int32_t quads, int8_t *out,
                                              const int32_t *init, const int32_t *requant, int32_t groups)
{
    int32_t acc[6];
    int32_t g, i;
    for (g = 0; g < groups; ++g) {
        mat6x1_s16(x, w, quads, acc, init + 6 * g);
        w += 12 * quads;
        for (i = 0; i < 6; ++i) {
            const int32_t *r = requant + 3 * (6 * g + i);
            const int32_t high = (int32_t)((uint64_t)((int64_t)acc[i] * r[0] + ((int64_t)1 << 30)) >> 31);
            out[6 * g + i] = (int8_t)tinyaot_saturate_s8((high + r[2] + (acc[i] >> 31)) >> r[1]);
        }
    }
    return w;
}

/* The portable definition of mat8x1_s8w above. */
static void mat8x1_s8w(const int8_t *x, const int8_t *w, int32_t quads, int32_t *acc, const int32_t *init)
{
    int32_t j, i, t;
    for (i = 0; i < 8; ++i) {
        acc[i] = init[i];
    }
    for (j = 0; j < quads; ++j) {
        for (i = 0; i < 8; ++i) {
            for (t = 0; t < 4; ++t) {
                acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)(x[4 * j + t] * w[4 * i + t]));  /* wrapping */
            }
        }
        w += 32;
    }
}
#endif

/* The rows the speed kernel computes in groups of six, before its groups of eight (a multiple of 6, which may pass
 * out_features: its last group of six is then partial, and no group of eight follows): the most whose rest is whole
 * groups of eight; else, one or two rows left over from a multiple of 6 (and at least 8 rows), one group of six
 * less, the last group of eight holding seven or eight; else out_features rounded up to a multiple of 6 (a group
 * of six reads 18 instructions per four inputs, one of eight 27). codegen/emit_conv.py wide_six_rows is the same
 * rule. */
static int32_t fc_six_rows(int32_t out_features)
{
    const int32_t left = out_features % 6;
    int32_t six = out_features - left;
    int32_t k;
    for (k = 0; k < 4 && six >= 0; ++k, six -= 6) {
        if ((out_features - six) % 8 == 0) {
            return six;
        }
    }
    six = out_features - left;
    return (left == 1 || left == 2) && six >= 6 ? six - 6 : six + (left ? 6 : 0);
}

/* out[c..c + n) from the accumulators, each channel requantized its way: the speed mode's triples or the size
 * mode's multipliers, shift the right shift, or (mixed) a channel on TFLM's exact requantization (shift < 0:
 * TFLM's shift - TINYAOT_FC_EXACT, on the raw accumulator); a fused activation clamps last. */
__attribute__((always_inline)) static inline void fc_requant(const int32_t *acc, int32_t n, int32_t c,
                                                             const int32_t *multiplier, const int32_t *shift,
                                                             int32_t output_offset, int32_t act_min, int32_t act_max,
                                                             int8_t *row_out, int int8_weights, int mixed)
{
    const int narrow = act_min != -128 || act_max != 127;
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t m = int8_weights ? multiplier[c + i] : multiplier[3 * (c + i)];
        const int32_t s = shift[c + i];
        int32_t y;
        if (mixed && s < 0) {
            y = tinyaot_requantize(acc[i], m, s + TINYAOT_FC_EXACT) + output_offset;
        } else {
            y = tinyaot_saturate_s8(tinyaot_requantize_right(acc[i], m, s) + output_offset);
        }
        row_out[c + i] = (int8_t)(narrow || mixed ? tinyaot_clamp(y, act_min, act_max) : y);
    }
}

/* acc[0..group) = init + a group's dot products over `quads` groups of four inputs (a multiple of 2). */
__attribute__((always_inline)) static inline void fc_mac(const int8_t *x, const void *w, int32_t quads, int32_t *acc,
                                                         const int32_t *init, int32_t group, int int8_weights)
{
    if (group == 6) {
        mat6x1_s16(x, (const int32_t *)w, quads, acc, init);
    } else if (int8_weights) {
        mat8x1_s8w(x, (const int8_t *)w, quads, acc, init);
    } else {
        mat8x1_s16(x, (const int32_t *)w, quads, acc, init);
    }
}

/* `int8_weights` picks the size mode's microkernel and weight layout (groups of eight: its flash stays at the
 * plain kernel's), else the speed mode's (groups of six, then of eight); `mixed` a layer with channels on TFLM's
 * exact requantization. Inlined into each entry point with the flags constants, so a firmware links only the
 * microkernels its mode calls. */
__attribute__((always_inline)) static inline void fc_groups(const int8_t *input,
                                                            const tinyaot_fully_connected_params *params,
                                                            int8_t *output, int int8_weights, int mixed)
{
    const int32_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t output_offset = params->output_offset;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    const int short_row = in_features < 8;  /* fewer than 8 features (one batch): read from a padded copy */
    const int32_t quads = short_row ? 2 : in_features / 4;
    const int32_t six = int8_weights ? 0 : fc_six_rows(out_features);
    const int32_t row_bytes = (int8_weights ? 1 : 2) * 4 * quads;  /* one output's weights: int16 or int8 */
    /* requantized in registers, straight to the output: speed mode, every channel fast, all of int8 */
    const int in_registers = !int8_weights && !mixed && act_min == -128 && act_max == 127;
    int32_t padded[2];  /* a short row's features, then zeros: the group of eight the kernels read */
    int32_t b, c, i;
    for (b = 0; b < params->batches; ++b) {
        const int8_t *row_in = input + b * in_features;
        int8_t *row_out = output + b * out_features;
        const int8_t *w = (const int8_t *)params->weights;
        int32_t acc[8];
        if (short_row) {
            for (i = 0; i < 8; ++i) {
                ((int8_t *)padded)[i] = i < in_features ? row_in[i] : 0;
            }
            row_in = (const int8_t *)padded;
        }
        c = 0;
        if (in_registers && six >= 6 && out_features >= 6) {  /* the whole groups of six */
            c = (six <= out_features ? six : six - 6);
            w = (const int8_t *)mat6_s16_requant_groups(row_in, (const int32_t *)w, quads, row_out, bias, multiplier,
                                                        c / 6);
        }
        while (c < out_features) {
            const int32_t group = !int8_weights && c < six ? 6 : 8;
            const int32_t n = out_features - c < group ? out_features - c : group;
            const int32_t *init = bias + c;  /* a whole group starts from the bias in place */
            if (n < group) {
                for (i = 0; i < group; ++i) {
                    acc[i] = i < n ? bias[c + i] : 0;
                }
                init = acc;
            }
            if (in_registers && n == 8) {
                mat8x1_s16_requant(row_in, (const int32_t *)w, quads, row_out + c, init, multiplier + 3 * c);
            } else {
                fc_mac(row_in, w, quads, acc, init, group, int8_weights);
                fc_requant(acc, n, c, multiplier, shift, output_offset, act_min, act_max, row_out, int8_weights,
                           mixed);
            }
            w += group * row_bytes;
            c += group;
        }
    }
}

void tinyaot_fully_connected_wide_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                     int8_t *output)
{
    fc_groups(input, params, output, 0, 0);
}

void tinyaot_fully_connected_wide_w8_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                        int8_t *output)
{
    fc_groups(input, params, output, 1, 0);
}

void tinyaot_fully_connected_wide_mixed_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                           int8_t *output)
{
    fc_groups(input, params, output, 0, 1);
}

void tinyaot_fully_connected_wide_w8_mixed_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                              int8_t *output)
{
    fc_groups(input, params, output, 1, 1);
}
