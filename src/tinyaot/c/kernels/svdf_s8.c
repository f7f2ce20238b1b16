/*
 * svdf_s8.c - TFLite's SVDF with TFLite Micro's integer semantics; twin of ref/svdf_s8.py.
 *
 * Per batch row, as TFLM: the state ([filters][memory], int16 or int8: the weights_time's type) moves on by one
 * value, flat (each row's last value is rewritten next); each filter's last value becomes its requantized feature
 * dot product (the input offset folded into feature_bias at compile time) clamped to the state's type plus the
 * state's zero point; then each unit is one dot product of weights_time and the state over its rank filters' rows
 * (contiguous in both), plus unit_bias (the bias with the state offset folded in), requantized and clamped to int8.
 * TFLM's scratch buffers are not needed. The int32 sums wrap as TFLM's do (formed in uint32 here).
 *
 * On cores with the DSP extension four filters share each input word in the feature dot products
 * (tinyaot_dot4_s8), an int16 time dot product takes two values per SMLAD and the shift moves words; integer sums
 * are exact modulo 2^32, so both paths give the same bits.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* s[i] = s[i + by] for i in [0, n - by): the state moving on by one value (by = its bytes). Forward, so every
 * byte is read before it is written. */
static void svdf_shift(uint8_t *s, int32_t n, int32_t by)
{
    int32_t i = 0;
#if TINYAOT_DSP
    for (; i + 8 <= n - by; i += 8) {
        const int32_t a = *(const tinyaot_unaligned_i32 *)(const void *)(s + i + by);
        const int32_t b = *(const tinyaot_unaligned_i32 *)(const void *)(s + i + by + 4);
        *(tinyaot_unaligned_i32 *)(void *)(s + i) = a;
        *(tinyaot_unaligned_i32 *)(void *)(s + i + 4) = b;
    }
#endif
    for (; i < n - by; ++i) {
        s[i] = s[i + by];
    }
}

/* The feature dot products of the next filters: four at a time where the core has the DSP extension and four
 * remain, else one. Returns how many it wrote to dots. */
static int32_t svdf_feature(const int8_t *x, const int8_t *w, int32_t n, const int32_t *feature_bias,
                            int32_t remaining, int32_t *dots)
{
    uint32_t sum;
    int32_t k;
#if TINYAOT_DSP
    if (remaining >= 4) {
        for (k = 0; k < 4; ++k) {
            dots[k] = feature_bias[k];
        }
        tinyaot_dot4_s8(x, w, n, n, dots);
        return 4;
    }
#else
    (void)remaining;
#endif
    sum = (uint32_t)feature_bias[0];
    for (k = 0; k < n; ++k) {
        sum += (uint32_t)((int32_t)w[k] * (int32_t)x[k]);
    }
    dots[0] = (int32_t)sum;
    return 1;
}

/* acc + sum_j a[j] * w[j] over int16, wrapping. */
static int32_t svdf_dot16(const int16_t *a, const int16_t *w, int32_t n, int32_t acc)
{
    uint32_t sum = (uint32_t)acc;
    int32_t j = 0;
#if TINYAOT_DSP
    for (; j + 4 <= n; j += 4) {
        sum = (uint32_t)__smlad(*(const tinyaot_unaligned_i32 *)(const void *)(a + j),
                                *(const tinyaot_unaligned_i32 *)(const void *)(w + j), (int32_t)sum);
        sum = (uint32_t)__smlad(*(const tinyaot_unaligned_i32 *)(const void *)(a + j + 2),
                                *(const tinyaot_unaligned_i32 *)(const void *)(w + j + 2), (int32_t)sum);
    }
#endif
    for (; j < n; ++j) {
        sum += (uint32_t)((int32_t)a[j] * (int32_t)w[j]);
    }
    return (int32_t)sum;
}

/* acc + sum_j a[j] * w[j] over int8, wrapping. */
static int32_t svdf_dot8(const int8_t *a, const int8_t *w, int32_t n, int32_t acc)
{
    uint32_t sum = (uint32_t)acc;
    int32_t j;
    for (j = 0; j < n; ++j) {
        sum += (uint32_t)((int32_t)a[j] * (int32_t)w[j]);
    }
    return (int32_t)sum;
}

/* The new feature value of every filter at the end of its row. */
static void svdf_features(const int8_t *x, const tinyaot_svdf_params *params, uint8_t *state)
{
    const int32_t inputs = params->input_size;
    const int32_t filters = params->filters;
    const int32_t memory = params->memory;
    const int32_t multiplier = params->feature_multiplier;
    const int32_t shift = params->feature_shift;
    const int32_t zero_point = params->state_zero_point;
    const int32_t wide = params->state_bits == 16;
    const int32_t lo = wide ? -32768 : -128;
    const int32_t hi = wide ? 32767 : 127;
    int32_t f = 0;
    while (f < filters) {
        int32_t dots[4];
        const int32_t n = svdf_feature(x, params->weights_feature + f * inputs, inputs, params->feature_bias + f,
                                       filters - f, dots);
        int32_t k;
        for (k = 0; k < n; ++k, ++f) {
            const int32_t value = tinyaot_clamp(tinyaot_requantize_nonneg(dots[k], multiplier, shift), lo, hi)
                                  + zero_point;
            if (wide) {
                ((int16_t *)(void *)state)[f * memory + memory - 1] = (int16_t)value;
            } else {
                ((int8_t *)state)[f * memory + memory - 1] = (int8_t)value; /* an int8 state's zero point may
                                                                             * leave int8: it wraps, as TFLM's */
            }
        }
    }
}

void tinyaot_svdf_s8(const int8_t *input, const tinyaot_svdf_params *params, int8_t *output, void *state)
{
    const int32_t batches = params->batches;
    const int32_t filters = params->filters;
    const int32_t rank = params->rank;
    const int32_t memory = params->memory;
    const int32_t units = filters / rank;
    const int32_t span = rank * memory; /* a unit's rows, contiguous in the state and in weights_time */
    const int32_t wide = params->state_bits == 16;
    const int32_t value_bytes = wide ? 2 : 1;
    const int32_t output_multiplier = params->output_multiplier;
    const int32_t output_shift = params->output_shift;
    const int32_t output_zero_point = params->output_zero_point;
    int32_t b;
    for (b = 0; b < batches; ++b) {
        uint8_t *const s = (uint8_t *)state + b * filters * memory * value_bytes;
        int32_t u;
        svdf_shift(s, filters * memory * value_bytes, value_bytes);
        svdf_features(input + b * params->input_size, params, s);
        for (u = 0; u < units; ++u) {
            int32_t acc;
            if (wide) {
                acc = svdf_dot16((const int16_t *)(const void *)s + u * span,
                                 (const int16_t *)params->weights_time + u * span, span, params->unit_bias[u]);
            } else {
                acc = svdf_dot8((const int8_t *)s + u * span, (const int8_t *)params->weights_time + u * span, span,
                                params->unit_bias[u]);
            }
            acc = tinyaot_requantize_nonneg(acc, output_multiplier, output_shift) + output_zero_point;
            output[b * units + u] = (int8_t)tinyaot_clamp(acc, -128, 127);
        }
    }
}
