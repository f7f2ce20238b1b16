/*
 * conv2d_pairs_s8.c - int8 conv2d two output pixels at a time through an int16 matrix microkernel: the kernel
 * the compiler picks when optimizing for speed. Twin of ref/conv2d_s8.py (TFLite Micro's ConvPerChannel); it
 * gives the bytes conv2d_s8.c gives.
 *
 * Per pair of output pixels (row-major; an odd last pixel is paired with itself), both windows are widened
 * once into the work buffer, an arena tensor the memory plan sizes per layer: word m of a pixel holds the
 * taps (4j, 4j + 2) for m = 2j and (4j + 1, 4j + 3) for m = 2j + 1 (what SXTAB16 makes of four bytes), each
 * x + input_offset as int16, taps outside the image and the tail up to taps_padded 0. The words of the two
 * pixels are interleaved, so one LDRD reads word m of both. The weights were widened and laid out the same
 * way at compile time: [out_c / 4][taps_padded / 2][4 channels] words. Then mat4x2 accumulates four output
 * channels of both pixels: per word pair of each channel pair, one LDRD of weights and four SMLAD; a group whose
 * activation range is all of int8 is requantized in registers too (mat4x2_s16_requant). The size mode's
 * variant (tinyaot_conv2d_pairs_w8_s8) reads int8 weights, two channels at a time, widening them as it reads.
 *
 * Both windows are in the work buffer before either output pixel is written, so every plan that is valid for
 * conv2d_s8.c's order (an output pixel written while its own window is read) is valid here.
 *
 * Requantization is tinyaot_requantize_right: the compiler picks this kernel only when every channel's shift
 * is a right shift and every accumulator provably fits in 31 bits, where it equals TFLM's double rounding;
 * params->shift holds those right shifts, positive (codegen/emit_conv.py negates them at compile time).
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
/* The accumulation of mat4x2_s16 and mat4x2_s16_requant: r0 = activation words, r1 = weight words, r2 = words,
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

/* Channel `i` of both pixels in mat4x2_s16_requant: accumulators p0 (pixel 0) and p1 (pixel 1), the channel's
 * (multiplier, right, k) read from r0, the bytes stored at out0 + i (r1) and out1 + i. */
#define MAT4X2_REQUANT(p0, p1, i) \
        "ldm r0!, {r3, r12, lr}\n\t" \
        "add r2, lr, " p0 ", asr #31\n\t" \
        "add " p0 ", " p0 ", " p0 "\n\t" \
        "smmlar " p0 ", " p0 ", r3, r2\n\t" \
        "asr " p0 ", " p0 ", r12\n\t" \
        "ssat " p0 ", #8, " p0 "\n\t" \
        "strb " p0 ", [r1, #" i "]\n\t" \
        "add r2, lr, " p1 ", asr #31\n\t" \
        "add " p1 ", " p1 ", " p1 "\n\t" \
        "smmlar " p1 ", " p1 ", r3, r2\n\t" \
        "asr " p1 ", " p1 ", r12\n\t" \
        "ssat " p1 ", #8, " p1 "\n\t" \
        "ldr " p0 ", %[out1]\n\t" \
        "strb " p1 ", [" p0 ", #" i "]\n\t"

/*
 * mat4x2_s16 for a whole group of four channels whose activation range is all of int8, requantized in registers
 * into out0[0..3] and out1[0..3], as the wide fully connected kernel does (k = 2^(right - 1) + (zero point <<
 * right) rounds and offsets before the shift; the compiler checked that k fits): 7 instructions per output.
 */
__attribute__((noinline)) static void mat4x2_s16_requant(const int32_t *a, const int32_t *w, int32_t words,
                                                          int8_t *out0, const int32_t *init,
                                                          const int32_t *requant, int8_t *out1)
{
    register const int32_t *r0 __asm__("r0") = a;
    register const int32_t *r1 __asm__("r1") = w;
    register int32_t r2 __asm__("r2") = words;
    register int8_t *r3 __asm__("r3") = out0;
    int8_t *slots[2];  /* the end pointer and out0, stored together */
    __asm__ volatile(
        MAT4X2_S16_LOOP
        "ldr r0, %[requant]\n\t"
        "ldr r1, %[accp]\n\t"
        MAT4X2_REQUANT("r4", "r8", "0") MAT4X2_REQUANT("r5", "r9", "1")
        MAT4X2_REQUANT("r6", "r10", "2") MAT4X2_REQUANT("r7", "r11", "3")
        : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), [end] "=m"(slots[0]), [accp] "=m"(slots[1])
        : [init] "m"(init), [requant] "m"(requant), [out1] "m"(out1)
        : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "memory", "cc");
}

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

/* Four window bytes -> their two activation words (+ input_offset, the SXTAB16 pairing). */
static inline void widen4(int32_t v, int32_t offset2, int32_t *dst)
{
    dst[0] = __sxtab16(offset2, v);
    dst[2] = tinyaot_sxtab16_ror8(offset2, v);
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

/* The portable definition of mat4x2_s16_requant above. */
static void mat4x2_s16_requant(const int32_t *a, const int32_t *w, int32_t words, int8_t *out0, const int32_t *init,
                               const int32_t *requant, int8_t *out1)
{
    int32_t acc[8];
    int32_t i;
    mat4x2_s16(a, w, words, acc, init);
    for (i = 0; i < 8; ++i) {
        const int32_t *r = requant + 3 * (i & 3);
        const int32_t high = (int32_t)((uint64_t)((int64_t)acc[i] * r[0] + ((int64_t)1 << 30)) >> 31);
        (i < 4 ? out0 : out1)[i & 3] = (int8_t)tinyaot_saturate_s8((high + r[2] + (acc[i] >> 31)) >> r[1]);
    }
}

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

static inline void widen4(int32_t v, int32_t offset2, int32_t *dst)
{
    const int32_t offset = tinyaot_lo16(offset2);
    const int32_t b0 = (int32_t)(int8_t)(v & 0xFF);
    const int32_t b1 = (int32_t)(int8_t)((v >> 8) & 0xFF);
    const int32_t b2 = (int32_t)(int8_t)((v >> 16) & 0xFF);
    const int32_t b3 = (int32_t)(int8_t)(((uint32_t)v >> 24) & 0xFF);
    dst[0] = pairs_pack16(b0 + offset, b2 + offset);
    dst[2] = pairs_pack16(b1 + offset, b3 + offset);
}
#endif

/*
 * The activation words of output pixel `pixel` (0 or 1 of the pair) into `a`. Channels a multiple of four:
 * straight from the input, a tap row at a time. Otherwise the window's bytes go through `patch` first (outside
 * taps and the tail hold the input zero point, which widens to 0).
 */
static void pairs_window(const int8_t *image, const tinyaot_conv_params *p, int32_t taps_padded, int32_t oy,
                         int32_t ox, int32_t pixel, int8_t *patch, int32_t *a)
{
    const int32_t in_c = p->in_c;
    const int32_t offset2 = tinyaot_offset2(p->input_offset);
    const int32_t iy0 = oy * p->stride_h - p->pad_top;
    const int32_t ix0 = ox * p->stride_w - p->pad_left;
    int32_t *dst = a + pixel;
    int32_t ky, kx, c, ky0, ky1, kx0, kx1;
    tinyaot_valid_taps(iy0, p->dilation_h, p->kernel_h, p->in_h, &ky0, &ky1);
    tinyaot_valid_taps(ix0, p->dilation_w, p->kernel_w, p->in_w, &kx0, &kx1);
    if ((in_c & 3) == 0 && p->dilation_w == 1 && ky0 == 0 && ky1 == p->kernel_h && kx0 == 0 && kx1 == p->kernel_w) {
        /* the whole window inside the image: each kernel row is kernel_w * in_c contiguous bytes */
        const int32_t row_quads = p->kernel_w * in_c / 4;
        const int32_t row_step = p->dilation_h * p->in_w * in_c;
        const int8_t *row = image + (iy0 * p->in_w + ix0) * in_c;
        for (ky = 0; ky < p->kernel_h; ++ky) {
            const int8_t *src = row;
            for (c = 0; c < row_quads; ++c) {
                widen4(tinyaot_read_s8x4(src), offset2, dst);
                src += 4;
                dst += 4;
            }
            row += row_step;
        }
        for (c = p->kernel_h * p->kernel_w * in_c; c < taps_padded; c += 4) {
            dst[0] = 0;
            dst[2] = 0;
            dst += 4;
        }
        return;
    }
    if ((in_c & 3) == 0) {
        for (ky = 0; ky < p->kernel_h; ++ky) {
            for (kx = 0; kx < p->kernel_w; ++kx) {
                if (ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1) {
                    const int8_t *src = image + ((iy0 + ky * p->dilation_h) * p->in_w + ix0 + kx * p->dilation_w)
                                                * in_c;
                    for (c = 0; c < in_c; c += 4) {
                        widen4(tinyaot_read_s8x4(src + c), offset2, dst);
                        dst += 4;
                    }
                } else {
                    for (c = 0; c < in_c; c += 4) {
                        dst[0] = 0;
                        dst[2] = 0;
                        dst += 4;
                    }
                }
            }
        }
        for (c = p->kernel_h * p->kernel_w * in_c; c < taps_padded; c += 4) {
            dst[0] = 0;
            dst[2] = 0;
            dst += 4;
        }
        return;
    }
    {
        const int8_t pad_value = (int8_t)(-p->input_offset);
        const int32_t row_bytes = p->kernel_w * in_c;
        int8_t *b = patch;
        for (ky = 0; ky < p->kernel_h; ++ky) {
            int8_t *const row_end = b + row_bytes;
            if (ky < ky0 || ky >= ky1) {  /* a padding row */
                while (b < row_end) {
                    *b++ = pad_value;
                }
                continue;
            }
            if (p->dilation_w == 1) {  /* padding, the taps inside (contiguous), padding */
                int8_t *const run = b + kx0 * in_c;
                int8_t *const run_end = b + kx1 * in_c;
                while (b < run) {
                    *b++ = pad_value;
                }
                if (kx0 < kx1) {
                    const int8_t *src = image + ((iy0 + ky * p->dilation_h) * p->in_w + ix0 + kx0) * in_c;
                    while (b < run_end) {
                        *b++ = *src++;
                    }
                }
                while (b < row_end) {
                    *b++ = pad_value;
                }
                continue;
            }
            for (kx = 0; kx < p->kernel_w; ++kx) {
                if (kx >= kx0 && kx < kx1) {
                    const int8_t *src = image + ((iy0 + ky * p->dilation_h) * p->in_w + ix0 + kx * p->dilation_w)
                                                * in_c;
                    for (c = 0; c < in_c; ++c) {
                        *b++ = src[c];
                    }
                } else {
                    for (c = 0; c < in_c; ++c) {
                        *b++ = pad_value;
                    }
                }
            }
        }
        while (b < patch + taps_padded) {
            *b++ = pad_value;
        }
        for (c = 0; c < taps_padded; c += 4) {
            widen4(tinyaot_read_s8x4(patch + c), offset2, dst);
            dst += 4;
        }
    }
}

/* Every output channel of the pair whose windows are in `a`, to out0 and out1 (the same pointer when the
 * pair's second pixel is a copy of the first). Locals, not p->...: the int8 stores may alias the struct. */
static void pairs_channels(const int32_t *a, const tinyaot_conv_params *p, int32_t taps_padded, int8_t *out0,
                           int8_t *out1)
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
    int32_t oc, i;
    for (oc = 0; oc < out_c; oc += 4) {
        const int32_t n = out_c - oc < 4 ? out_c - oc : 4;
        int32_t acc[8];
        if (full_range && n == 4) {  /* requantized in registers, straight to both pixels' outputs */
            mat4x2_s16_requant(a, w, words, out0 + oc, bias + 2 * oc, multiplier + 3 * oc, out1 + oc);
            w += 4 * words;
            continue;
        }
        mat4x2_s16(a, w, words, acc, bias + 2 * oc);  /* bias [out_c / 4][2 pixels][4], both pixels' start */
        w += 4 * words;
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

/* Work buffer: the pair's activation words (4 * taps_padded bytes), then a window's bytes (taps_padded). */
/* Inlined into each entry point with `int8_weights` a constant, so a firmware links only the microkernel and
 * channel loop its mode calls. */
__attribute__((always_inline)) static inline void pairs_run(const int8_t *input, const tinyaot_conv_params *p,
                                                            int32_t *work, int8_t *output, const int8_t *skip,
                                                            const tinyaot_conv_add_params *add, int int8_weights)
{
    const int32_t taps_padded = (p->kernel_h * p->kernel_w * p->in_c + 7) & ~7;
    const int32_t pixels = p->out_h * p->out_w;
    const int32_t out_c = p->out_c;
    int8_t *const patch = (int8_t *)(work + taps_padded);
    int8_t *const sums = patch + taps_padded;  /* conv2d_add: the conv's own int8 output of the pair */
    tinyaot_add_params both;
    int32_t b, q;
    if (add != 0) {
        both = add->add;
    }
    for (b = 0; b < p->batches; ++b) {
        const int8_t *image = input + b * p->in_h * p->in_w * p->in_c;
        int8_t *out = output + b * pixels * out_c;
        int32_t oy = 0;
        int32_t ox = 0;
        for (q = 0; q < pixels; q += 2) {
            const int second = q + 1 < pixels;
            int8_t *dst = add != 0 ? sums : out + q * out_c;
            pairs_window(image, p, taps_padded, oy, ox, 0, patch, work);
            if (++ox == p->out_w) {  /* the pair's second pixel may start the next row */
                ox = 0;
                ++oy;
            }
            if (second) {
                pairs_window(image, p, taps_padded, oy, ox, 1, patch, work);
                if (++ox == p->out_w) {
                    ox = 0;
                    ++oy;
                }
            } else {
                pairs_window(image, p, taps_padded, oy - (ox == 0), ox == 0 ? p->out_w - 1 : ox - 1, 1, patch,
                             work);
            }
            if (int8_weights) {
                pairs_channels_w8(work, p, taps_padded, dst, second ? dst + out_c : dst);
            } else {
                pairs_channels(work, p, taps_padded, dst, second ? dst + out_c : dst);
            }
            if (add != 0) {
                const int8_t *s = skip + (b * pixels + q) * out_c;
                both.size = (second ? 2 : 1) * out_c;
                if (add->skip_input == 1) {
                    tinyaot_add_s8(s, sums, &both, out + q * out_c);
                } else {
                    tinyaot_add_s8(sums, s, &both, out + q * out_c);
                }
            }
        }
    }
}

void tinyaot_conv2d_pairs_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work, int8_t *output)
{
    pairs_run(input, params, work, output, 0, 0, 0);
}

void tinyaot_conv2d_add_pairs_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                 int32_t *work, int8_t *output)
{
    pairs_run(input, &params->conv, work, output, skip, params, 0);
}

void tinyaot_conv2d_pairs_w8_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work,
                                int8_t *output)
{
    pairs_run(input, params, work, output, 0, 0, 1);
}

void tinyaot_conv2d_add_pairs_w8_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                    int32_t *work, int8_t *output)
{
    pairs_run(input, &params->conv, work, output, skip, params, 1);
}
