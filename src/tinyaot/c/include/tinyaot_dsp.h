/*
 * tinyaot_dsp.h - the Cortex-M DSP building blocks the int8 kernels share (ACLE + the few forms GCC 12's
 * arm_acle.h lacks), and the small helpers both their paths use (halfwords, window taps). TINYAOT_DSP is 1
 * where the DSP forms exist (__ARM_FEATURE_DSP with GCC), else 0 and the kernels take their portable C paths.
 * Integer sums are exact, so both paths give the same bits.
 */
#ifndef TINYAOT_DSP_H
#define TINYAOT_DSP_H

#include <stdint.h>

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>
#define TINYAOT_DSP 1

typedef int32_t __attribute__((aligned(1), may_alias)) tinyaot_unaligned_i32;

/* Four int8 from any address (unaligned LDR is fine on M33; memcpy would be a call under -ffreestanding). */
static inline int32_t tinyaot_read_s8x4(const int8_t *p)
{
    return *(const tinyaot_unaligned_i32 *)(const void *)p;
}

/* Bytes 1 and 3 sign-extended to two halfwords: SXTB16 with its built-in rotation (arm_acle.h has no form). */
static inline int32_t tinyaot_sxtb16_ror8(int32_t x)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* Bytes 1 and 3 sign-extended and added to the two halfwords of a: SXTAB16 with its rotation. */
static inline int32_t tinyaot_sxtab16_ror8(int32_t a, int32_t x)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}

/* acc + four MACs: input bytes already widened (even, odd), weight bytes in one word. */
static inline int32_t tinyaot_mac4_s8(int32_t x_even, int32_t x_odd, int32_t w, int32_t acc)
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

/* acc[i] += sum_k w[i * w_stride + k] * x[k] for four rows i: each input word is widened once for all four.
 * Not inlined: alone in its function the loop keeps every operand in a register (two row pointers and the
 * stride; LDR's register offset reaches the odd rows). Unused in some kernels, hence `unused`. */
__attribute__((noinline, unused)) static void tinyaot_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride,
                                                              int32_t n, int32_t *acc)
{
    const int8_t *w2 = w + 2 * w_stride;
    const int8_t *x_end = x + (n & ~3);
    int32_t a0 = acc[0];
    int32_t a1 = acc[1];
    int32_t a2 = acc[2];
    int32_t a3 = acc[3];
    int32_t k;
    while (x != x_end) {
        const int32_t vx = tinyaot_read_s8x4(x);
        const int32_t xe = __sxtb16(vx);
        const int32_t xo = tinyaot_sxtb16_ror8(vx);
        a0 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w), a0);
        a1 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + w_stride), a1);
        a2 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2), a2);
        a3 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2 + w_stride), a3);
        x += 4;
        w += 4;
        w2 += 4;
    }
    for (k = n & 3; k > 0; --k) {
        const int32_t xv = *x++;
        a0 += xv * w[0];
        a1 += xv * w[w_stride];
        a2 += xv * w2[0];
        a3 += xv * w2[w_stride];
        ++w;
        ++w2;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
#define TINYAOT_DSP 0

/* Four int8 from any address, little-endian, as the LDR above reads them. */
static inline int32_t tinyaot_read_s8x4(const int8_t *p)
{
    return (int32_t)((uint32_t)(uint8_t)p[0] | ((uint32_t)(uint8_t)p[1] << 8) | ((uint32_t)(uint8_t)p[2] << 16)
                     | ((uint32_t)(uint8_t)p[3] << 24));
}

/* The portable definition of tinyaot_dot4_s8 above. */
static inline void tinyaot_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t n, int32_t *acc)
{
    int32_t k;
    for (k = 0; k < n; ++k) {
        const int32_t xv = x[k];
        acc[0] += (int32_t)w[k] * xv;
        acc[1] += (int32_t)w[w_stride + k] * xv;
        acc[2] += (int32_t)w[2 * w_stride + k] * xv;
        acc[3] += (int32_t)w[3 * w_stride + k] * xv;
    }
}
#endif

/* Low and high halfword of a word, sign-extended (the portable twins of what SMLAD reads). */
static inline int32_t tinyaot_lo16(int32_t v)
{
    return (int32_t)((uint32_t)v << 16) >> 16;
}

static inline int32_t tinyaot_hi16(int32_t v)
{
    return v >> 16;
}

/* `offset` in both halfwords: SXTAB16's addend, which adds the input offset while widening. */
static inline int32_t tinyaot_offset2(int32_t offset)
{
    return (int32_t)(((uint32_t)(uint16_t)offset << 16) | (uint32_t)(uint16_t)offset);
}

/* First and one-past-last kernel index whose tap origin + k * dilation lies in [0, size) (no division when
 * dilation is 1). */
static inline void tinyaot_valid_taps(int32_t origin, int32_t dilation, int32_t kernel, int32_t size,
                                      int32_t *first, int32_t *end)
{
    int32_t lo = 0;
    int32_t hi = 0;
    if (dilation == 1) {
        lo = origin < 0 ? -origin : 0;
        hi = size - origin > 0 ? size - origin : 0;
    } else {
        if (origin < 0) {
            lo = (-origin + dilation - 1) / dilation;
        }
        if (size - 1 - origin >= 0) {
            hi = (size - 1 - origin) / dilation + 1;
        }
    }
    *first = lo < kernel ? lo : kernel;
    *end = hi < kernel ? hi : kernel;
    if (*end < *first) {
        *end = *first;
    }
}

#endif /* TINYAOT_DSP_H */
