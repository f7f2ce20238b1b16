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
    const int8_t *const weights = params->weights;
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
