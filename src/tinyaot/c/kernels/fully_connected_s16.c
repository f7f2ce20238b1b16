/*
 * fully_connected_s16.c - the 16x8 fully connected layer (int16 activations, int8 weights); twin of
 * ref/fully_connected_s16.py (TFLM's int16 FULLY_CONNECTED).
 *
 * The sum of products is exact: in int64 in the portable loop; on cores with the DSP extension four output rows
 * share each group of four int16 inputs, repacked once into (x0, x2) and (x1, x3) halfword pairs (PKHBT /
 * PKHTB) to meet the weight bytes SXTB16 widens in place, two SMLAD per row (24 instructions per 16 MACs for a
 * word-aligned row); the int32
 * partial sums cover at most FC16_CHUNK inputs (each product is below 2^22 in magnitude, so a chunk cannot
 * overflow) and are added to int64 totals. In speed mode the weights also come widened to int16 (weights16):
 * two LDR and two SMLAD per row and four inputs, no unpacking (19 instructions per 16 MACs: about 1.45
 * instructions per MAC on a 256 -> 64 layer, requantization included). All paths give the same bits. The total
 * then takes TFLM's path for the bias type: int64 (tinyaot_requantize_64; its SMMLA form when the total fits
 * int32), or int32 wrapped (tinyaot_requantize, double rounding).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define FC16_CHUNK 508 /* inputs per int32 partial sum: 508 * 2^22 < 2^31, a multiple of 4 */

static inline int16_t fc16_output(int64_t acc, int32_t bias_bits, int32_t multiplier, int32_t shift,
                                  int32_t act_min, int32_t act_max)
{
    int32_t v;
    if (bias_bits == 64) {
        v = acc == (int32_t)acc ? tinyaot_requantize_64_int32((int32_t)acc, multiplier, shift)
                                : tinyaot_requantize_64(acc, multiplier, shift);
    } else {
        v = tinyaot_requantize((int32_t)(uint32_t)(uint64_t)acc, multiplier, shift); /* TFLM's int32 sum wraps */
    }
    return (int16_t)tinyaot_clamp(v, act_min, act_max);
}

#if TINYAOT_DSP
typedef int32_t __attribute__((aligned(2), may_alias)) fc16_halfword_pair;

/* Two int16 from a 2-byte aligned address, first in the low half. */
static inline int32_t fc16_read_s16x2(const int16_t *p)
{
    return *(const fc16_halfword_pair *)(const void *)p;
}

/* (low half of a, low half of b): x0 and x2 of two halfword pairs. */
static inline int32_t fc16_pkhbt(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

/* (high half of b, high half of a): x1 and x3 of two halfword pairs. */
static inline int32_t fc16_pkhtb(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

/* part[i] += sum_k w[i * n + k] * x[k] over x[0..len), four rows, len a multiple of 4 (at most FC16_CHUNK).
 * Not inlined: alone in its function the loop keeps every operand in a register. */
__attribute__((noinline)) static void fc16_mac4(const int16_t *x, const int8_t *w, int32_t n, int32_t len,
                                                int32_t *part)
{
    const int8_t *w2 = w + 2 * n;
    const int16_t *const x_end = x + len;
    int32_t a0 = part[0];
    int32_t a1 = part[1];
    int32_t a2 = part[2];
    int32_t a3 = part[3];
    if (((uintptr_t)x & 3u) != 0u) {
        /* x not word aligned (a later batch row of odd length): LDRD would fault, two LDR per four inputs */
        while (x != x_end) {
            const int32_t v01 = fc16_read_s16x2(x);
            const int32_t v23 = fc16_read_s16x2(x + 2);
            const int32_t xe = fc16_pkhbt(v01, v23);
            const int32_t xo = fc16_pkhtb(v23, v01);
            a0 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w), a0);
            a1 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w + n), a1);
            a2 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2), a2);
            a3 = tinyaot_mac4_s8(xe, xo, tinyaot_read_s8x4(w2 + n), a3);
            x += 4;
            w += 4;
            w2 += 4;
        }
    } else if (x != x_end) {
        /* Per four inputs: LDRD of x, two PKH; per row one LDR (the even rows' post-incremented, after the odd
         * row's read at + n), two SXTB16, two SMLAD: 24 instructions for 16 MACs plus the loop test. */
        int32_t xe, xo, u, v;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[u], %[v], [%[x]], #8\n\t"
            "pkhbt %[xe], %[u], %[v], lsl #16\n\t"
            "pkhtb %[xo], %[v], %[u], asr #16\n\t"
            "ldr %[u], [%[w], %[n]]\n\t"
            "sxtb16 %[v], %[u]\n\t"
            "smlad %[a1], %[xe], %[v], %[a1]\n\t"
            "sxtb16 %[u], %[u], ror #8\n\t"
            "smlad %[a1], %[xo], %[u], %[a1]\n\t"
            "ldr %[u], [%[w]], #4\n\t"
            "sxtb16 %[v], %[u]\n\t"
            "smlad %[a0], %[xe], %[v], %[a0]\n\t"
            "sxtb16 %[u], %[u], ror #8\n\t"
            "smlad %[a0], %[xo], %[u], %[a0]\n\t"
            "ldr %[u], [%[w2], %[n]]\n\t"
            "sxtb16 %[v], %[u]\n\t"
            "smlad %[a3], %[xe], %[v], %[a3]\n\t"
            "sxtb16 %[u], %[u], ror #8\n\t"
            "smlad %[a3], %[xo], %[u], %[a3]\n\t"
            "ldr %[u], [%[w2]], #4\n\t"
            "sxtb16 %[v], %[u]\n\t"
            "smlad %[a2], %[xe], %[v], %[a2]\n\t"
            "sxtb16 %[u], %[u], ror #8\n\t"
            "smlad %[a2], %[xo], %[u], %[a2]\n\t"
            "cmp %[x], %[end]\n\t"
            "bne 1b"
            : [x] "+r"(x), [w] "+r"(w), [w2] "+r"(w2), [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2),
              [a3] "+r"(a3), [xe] "=&r"(xe), [xo] "=&r"(xo), [u] "=&r"(u), [v] "=&r"(v)
            : [n] "r"(n), [end] "r"(x_end)
            : "cc", "memory");
    }
    part[0] = a0;
    part[1] = a1;
    part[2] = a2;
    part[3] = a3;
}

/* fc16_mac4 with the weights widened to int16 at compile time (w16: row i at w16 + i * n): per four inputs one
 * LDRD of x (two LDR when x is not word aligned), per row two LDR (any alignment: the row pointers advance by
 * immediate post-increments) and two SMLAD straight on the halfword pairs: 19 instructions for 16 MACs with the
 * loop test. Not inlined, as fc16_mac4. */
__attribute__((noinline)) static void fc16_mac4_wide(const int16_t *x, const int16_t *w16, int32_t n, int32_t len,
                                                     int32_t *part)
{
    const int16_t *w0 = w16;
    const int16_t *w1 = w16 + n;
    const int16_t *w2 = w16 + 2 * n;
    const int16_t *w3 = w16 + 3 * n;
    const int16_t *const x_end = x + len;
    int32_t a0 = part[0];
    int32_t a1 = part[1];
    int32_t a2 = part[2];
    int32_t a3 = part[3];
    int32_t u, v, t;
    if (x == x_end) {
        return;
    }
    if (((uintptr_t)x & 3u) != 0u) {
        __asm__ volatile(
            "1:\n\t"
            "ldr %[u], [%[x]], #4\n\t"
            "ldr %[v], [%[x]], #4\n\t"
            "ldr %[t], [%[w0]], #4\n\t"
            "smlad %[a0], %[u], %[t], %[a0]\n\t"
            "ldr %[t], [%[w0]], #4\n\t"
            "smlad %[a0], %[v], %[t], %[a0]\n\t"
            "ldr %[t], [%[w1]], #4\n\t"
            "smlad %[a1], %[u], %[t], %[a1]\n\t"
            "ldr %[t], [%[w1]], #4\n\t"
            "smlad %[a1], %[v], %[t], %[a1]\n\t"
            "ldr %[t], [%[w2]], #4\n\t"
            "smlad %[a2], %[u], %[t], %[a2]\n\t"
            "ldr %[t], [%[w2]], #4\n\t"
            "smlad %[a2], %[v], %[t], %[a2]\n\t"
            "ldr %[t], [%[w3]], #4\n\t"
            "smlad %[a3], %[u], %[t], %[a3]\n\t"
            "ldr %[t], [%[w3]], #4\n\t"
            "smlad %[a3], %[v], %[t], %[a3]\n\t"
            "cmp %[x], %[end]\n\t"
            "bne 1b"
            : [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3), [a0] "+r"(a0),
              [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
            : [end] "r"(x_end)
            : "cc", "memory");
    } else {
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[u], %[v], [%[x]], #8\n\t"
            "ldr %[t], [%[w0]], #4\n\t"
            "smlad %[a0], %[u], %[t], %[a0]\n\t"
            "ldr %[t], [%[w0]], #4\n\t"
            "smlad %[a0], %[v], %[t], %[a0]\n\t"
            "ldr %[t], [%[w1]], #4\n\t"
            "smlad %[a1], %[u], %[t], %[a1]\n\t"
            "ldr %[t], [%[w1]], #4\n\t"
            "smlad %[a1], %[v], %[t], %[a1]\n\t"
            "ldr %[t], [%[w2]], #4\n\t"
            "smlad %[a2], %[u], %[t], %[a2]\n\t"
            "ldr %[t], [%[w2]], #4\n\t"
            "smlad %[a2], %[v], %[t], %[a2]\n\t"
            "ldr %[t], [%[w3]], #4\n\t"
            "smlad %[a3], %[u], %[t], %[a3]\n\t"
            "ldr %[t], [%[w3]], #4\n\t"
            "smlad %[a3], %[v], %[t], %[a3]\n\t"
            "cmp %[x], %[end]\n\t"
            "bne 1b"
            : [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3), [a0] "+r"(a0),
              [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
            : [end] "r"(x_end)
            : "cc", "memory");
    }
    part[0] = a0;
    part[1] = a1;
    part[2] = a2;
    part[3] = a3;
}

/* acc[0..4) += four rows' exact sums over x[0..n) (row i at w + i * n; w16: the same widened, or NULL): int32
 * partial sums of at most FC16_CHUNK inputs added to the int64 totals, then the n % 4 last inputs. */
static void fc16_dot4(const int16_t *x, const int8_t *w, const int16_t *w16, int32_t n, int64_t *acc)
{
    const int32_t quads = n & ~3;
    int32_t start;
    int32_t i;
    int32_t k;
    for (start = 0; start < quads; start += FC16_CHUNK) {
        const int32_t len = quads - start > FC16_CHUNK ? FC16_CHUNK : quads - start;
        int32_t part[4] = {0, 0, 0, 0};
        if (w16 != 0) {
            fc16_mac4_wide(x + start, w16 + start, n, len, part);
        } else {
            fc16_mac4(x + start, w + start, n, len, part);
        }
        for (i = 0; i < 4; ++i) {
            acc[i] += part[i];
        }
    }
    for (k = quads; k < n; ++k) {
        for (i = 0; i < 4; ++i) {
            acc[i] += (int32_t)x[k] * (int32_t)w[i * n + k];
        }
    }
}

/* The same for one row. */
static void fc16_dot1(const int16_t *x, const int8_t *w, int32_t n, int64_t *acc)
{
    const int32_t quads = n & ~3;
    int32_t start;
    int32_t k;
    for (start = 0; start < quads; start += FC16_CHUNK) {
        const int32_t end = quads - start > FC16_CHUNK ? start + FC16_CHUNK : quads;
        int32_t a = 0;
        for (k = start; k < end; k += 4) {
            const int32_t v01 = fc16_read_s16x2(x + k);
            const int32_t v23 = fc16_read_s16x2(x + k + 2);
            a = tinyaot_mac4_s8(fc16_pkhbt(v01, v23), fc16_pkhtb(v23, v01), tinyaot_read_s8x4(w + k), a);
        }
        *acc += a;
    }
    for (k = quads; k < n; ++k) {
        *acc += (int32_t)x[k] * (int32_t)w[k];
    }
}
#else
/* acc[0..rows) += the rows' exact sums over x[0..n) (row i at w + i * n). */
static void fc16_rows(const int16_t *x, const int8_t *w, int32_t n, int32_t rows, int64_t *acc)
{
    int32_t i;
    int32_t k;
    for (i = 0; i < rows; ++i) {
        int64_t sum = 0;
        for (k = 0; k < n; ++k) {
            sum += (int32_t)x[k] * (int32_t)w[i * n + k];
        }
        acc[i] += sum;
    }
}

static void fc16_dot4(const int16_t *x, const int8_t *w, const int16_t *w16, int32_t n, int64_t *acc)
{
    (void)w16; /* the same values as w */
    fc16_rows(x, w, n, 4, acc);
}

static void fc16_dot1(const int16_t *x, const int8_t *w, int32_t n, int64_t *acc)
{
    fc16_rows(x, w, n, 1, acc);
}
#endif

void tinyaot_fully_connected_s16(const int16_t *input, const tinyaot_fully_connected16_params *params,
                                 int16_t *output)
{
    const int8_t *const weights = params->weights;
    const int16_t *const weights16 = params->weights16;
    const int64_t *const bias = params->bias;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t bias_bits = params->bias_bits;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t batches = params->batches;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    int32_t b;
    for (b = 0; b < batches; ++b) {
        const int16_t *row_in = input + b * in_features;
        int16_t *row_out = output + b * out_features;
        int32_t c = 0;
        for (; c + 4 <= out_features; c += 4) {
            int64_t acc[4];
            int32_t i;
            for (i = 0; i < 4; ++i) {
                acc[i] = bias[c + i];
            }
            fc16_dot4(row_in, weights + c * in_features, weights16 != 0 ? weights16 + c * in_features : 0,
                      in_features, acc);
            for (i = 0; i < 4; ++i) {
                row_out[c + i] = fc16_output(acc[i], bias_bits, multiplier[c + i], shift[c + i], act_min, act_max);
            }
        }
        for (; c < out_features; ++c) {
            int64_t acc = bias[c];
            fc16_dot1(row_in, weights + c * in_features, in_features, &acc);
            row_out[c] = fc16_output(acc, bias_bits, multiplier[c], shift[c], act_min, act_max);
        }
    }
}

/*
 * Up to four rows of a 16x8 fully connected layer with int64 sums and the full int16 range (the 16x8 LSTM's gates,
 * lstm_s16.c): out[i] = sat16(requantize_64((bias ? bias[i] : 0) + sum_k x[k] * w[i * n + k], multiplier[i],
 * shift[i])), i < count <= 4; w16: the rows widened to int16 (speed mode), or NULL.
 */
void tinyaot_fc16_rows(const int16_t *x, const int8_t *w, const int16_t *w16, int32_t n, int32_t count,
                       const int64_t *bias, const int32_t *multiplier, const int32_t *shift, int32_t *out);

void tinyaot_fc16_rows(const int16_t *x, const int8_t *w, const int16_t *w16, int32_t n, int32_t count,
                       const int64_t *bias, const int32_t *multiplier, const int32_t *shift, int32_t *out)
{
    int64_t acc[4];
    int32_t i;
    for (i = 0; i < count; ++i) {
        acc[i] = bias != 0 ? bias[i] : 0;
    }
    if (count == 4) {
        fc16_dot4(x, w, w16, n, acc);
    } else {
        for (i = 0; i < count; ++i) {
            fc16_dot1(x, w + i * n, n, &acc[i]);
        }
    }
    for (i = 0; i < count; ++i) {
        out[i] = fc16_output(acc[i], 64, multiplier[i], shift[i], -32768, 32767);
    }
}
