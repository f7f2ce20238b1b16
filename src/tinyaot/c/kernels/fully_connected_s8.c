/*
 * fully_connected_s8.c - int8 fully connected layer; twin of ref/fully_connected_s8.py.
 *
 * The portable loop is the definition. On cores with the DSP extension (Cortex-M33, M4, M7) four output
 * rows share each input word: SXTB16 widens the even and odd bytes once, then every row does two SMLAD per
 * four weight bytes; the loop takes eight bytes per pass. Integer sums are exact, so both paths give the
 * same bits.
 *
 * Requantization is tinyaot_requantize (TFLM's double rounding) written for the range QuantizeMultiplier
 * gives, multiplier in [0, 2^31): then a * multiplier can never be the one saturating case of
 * SaturatingRoundingDoublingHighMul, and its rounding is ((a * multiplier + 2^30) >> 31) for both signs
 * (C's truncating division with the sign-dependent nudge equals this floor), one SMLAL.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

static inline int8_t fc_output(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                               int32_t act_min, int32_t act_max)
{
    acc = tinyaot_requantize_nonneg(acc, multiplier, shift) + output_offset;
    return (int8_t)tinyaot_clamp(acc, act_min, act_max);
}

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>
#define FC_DSP 1

typedef int32_t __attribute__((aligned(1), may_alias)) tinyaot_unaligned_i32;

static inline int32_t read_s8x4(const int8_t *p)
{
    return *(const tinyaot_unaligned_i32 *)(const void *)p;
}

/* Bytes 1 and 3 sign-extended to two halfwords: SXTB16 with its built-in rotation (arm_acle.h has no form). */
static inline int32_t fc_sxtb16_ror8(int32_t x)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* acc + four MACs: input bytes already widened (even, odd), weight bytes in one word. */
static inline int32_t fc_mac4(int32_t x_even, int32_t x_odd, int32_t w, int32_t acc)
{
    /* One asm so that GCC accumulates in place; as separate intrinsics it spills accumulators to the stack. */
    int32_t t;
    __asm__("sxtb16 %[t], %[w]\n\t"
            "smlad %[acc], %[xe], %[t], %[acc]\n\t"
            "sxtb16 %[w], %[w], ror #8\n\t"
            "smlad %[acc], %[xo], %[w], %[acc]"
            : [acc] "+r"(acc), [w] "+r"(w), [t] "=&r"(t)
            : [xe] "r"(x_even), [xo] "r"(x_odd));
    return acc;
}

/* Four dot products of x with rows w, w + n, w + 2n, w + 3n, added to acc[0..3]. Two row pointers and the
 * row stride in registers (LDR's register offset reaches the odd rows), so nothing spills to the stack. */
__attribute__((noinline)) static void dot4_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t *acc)
{
    const int8_t *w2 = w + 2 * n;
    const int8_t *x_end = x + (n & ~3);
    int32_t a0 = acc[0];
    int32_t a1 = acc[1];
    int32_t a2 = acc[2];
    int32_t a3 = acc[3];
    int32_t k;
    while (x != x_end) {
        const int32_t vx = read_s8x4(x);
        const int32_t xe = __sxtb16(vx);
        const int32_t xo = fc_sxtb16_ror8(vx);
        a0 = fc_mac4(xe, xo, read_s8x4(w), a0);
        a1 = fc_mac4(xe, xo, read_s8x4(w + n), a1);
        a2 = fc_mac4(xe, xo, read_s8x4(w2), a2);
        a3 = fc_mac4(xe, xo, read_s8x4(w2 + n), a3);
        x += 4;
        w += 4;
        w2 += 4;
    }
    for (k = n & 3; k > 0; --k) {
        const int32_t xv = *x++;
        a0 += xv * w[0];
        a1 += xv * w[n];
        a2 += xv * w2[0];
        a3 += xv * w2[n];
        ++w;
        ++w2;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Dot product of two rows (the last out_features % 4 rows), four bytes per pass. */
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t acc)
{
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t va = read_s8x4(a + k);
        acc = fc_mac4(__sxtb16(va), fc_sxtb16_ror8(va), read_s8x4(b + k), acc);
    }
    for (; k < n; ++k) {
        acc += (int32_t)a[k] * (int32_t)b[k];
    }
    return acc;
}
#else
#define FC_DSP 0
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        acc += (int32_t)a[k] * (int32_t)b[k];
    }
    return acc;
}
#endif

void tinyaot_fully_connected_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                const int32_t *multiplier, const int32_t *shift,
                                int32_t output_offset, int32_t act_min, int32_t act_max,
                                int32_t batches, int32_t in_features, int32_t out_features,
                                int8_t *output)
{
    int32_t b;
    int32_t c;
    for (b = 0; b < batches; ++b) {
        const int8_t *row_in = input + b * in_features;
        int8_t *row_out = output + b * out_features;
        c = 0;
#if FC_DSP
        for (; c + 4 <= out_features; c += 4) {
            int32_t acc[4];
            int32_t i;
            acc[0] = bias[c];
            acc[1] = bias[c + 1];
            acc[2] = bias[c + 2];
            acc[3] = bias[c + 3];
            dot4_s8(row_in, weights + c * in_features, in_features, acc);
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
