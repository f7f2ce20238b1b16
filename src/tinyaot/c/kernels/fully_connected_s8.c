/*
 * fully_connected_s8.c - int8 fully connected layer; twin of ref/fully_connected_s8.py.
 *
 * The portable loop is the definition. On cores with the DSP extension (Cortex-M33, M4, M7) the
 * dot product runs four MACs per two SMLAD using SXTB16 to widen bytes; integer sums are exact,
 * so both paths give the same bits.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>

typedef int32_t __attribute__((aligned(1), may_alias)) tinyaot_unaligned_i32;

static inline int32_t read_s8x4(const int8_t *p)
{
    return *(const tinyaot_unaligned_i32 *)(const void *)p;
}

/* Dot product of two rows, four bytes per iteration (SXTB16 widens even and odd bytes). */
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t acc)
{
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const int32_t va = read_s8x4(a + k);
        const int32_t vb = read_s8x4(b + k);
        const int16x2_t a_even = __sxtb16(va);
        const int16x2_t a_odd = __sxtb16((int32_t)((uint32_t)va >> 8));
        const int16x2_t b_even = __sxtb16(vb);
        const int16x2_t b_odd = __sxtb16((int32_t)((uint32_t)vb >> 8));
        acc = __smlad(a_even, b_even, acc);
        acc = __smlad(a_odd, b_odd, acc);
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
        for (c = 0; c < out_features; ++c) {
            int32_t acc = dot_s8(row_in, weights + c * in_features, in_features, bias[c]);
            acc = tinyaot_requantize(acc, multiplier[c], shift[c]) + output_offset;
            row_out[c] = (int8_t)tinyaot_clamp(acc, act_min, act_max);
        }
    }
}
