/*
 * svdf_s8.c - TFLite's SVDF with TFLite Micro's integer semantics; twin of ref/svdf_s8.py.
 *
 * Per batch row and filter f, in one pass over the filter's state row (int16, or int8: the weights_time's type):
 * the row moves on by one value, its last value becomes the requantized feature dot product (the input offset
 * folded into feature_bias at compile time) clamped to the state's type plus the state's zero point, and the time
 * dot product over the new row is formed while it moves (the state offset folded into time_bias). Each unit sums
 * the bias and its rank filters' time dot products, requantizes and clamps to int8. TFLM's scratch buffers are not
 * needed: a unit is done once its filters are. The int32 sums wrap as TFLM's do (formed in uint32 here).
 *
 * On cores with the DSP extension four filters share each input word in the feature dot product
 * (tinyaot_dot4_s8) and an int16 time dot product takes two values per SMLAD; integer sums are exact modulo 2^32,
 * so both paths give the same bits.
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* The feature dot product of one filter (portable; also the DSP path's last filters % 4). */
static int32_t svdf_feature(const int8_t *x, const int8_t *w, int32_t n, int32_t acc)
{
    uint32_t sum = (uint32_t)acc;
    int32_t k;
    for (k = 0; k < n; ++k) {
        sum += (uint32_t)((int32_t)w[k] * (int32_t)x[k]);
    }
    return (int32_t)sum;
}

/* Move an int16 row on by one, append `value` and return time_bias + the row's dot product with w. */
static int32_t svdf_time16(int16_t *row, const int16_t *w, int32_t memory, int32_t value, int32_t time_bias)
{
    uint32_t sum = (uint32_t)time_bias;
    int32_t j = 0;
#if TINYAOT_DSP
    for (; j + 2 <= memory - 1; j += 2) {
        const int32_t pair = *(const tinyaot_unaligned_i32 *)(const void *)(row + j + 1);
        *(tinyaot_unaligned_i32 *)(void *)(row + j) = pair;
        sum = (uint32_t)__smlad(pair, *(const tinyaot_unaligned_i32 *)(const void *)(w + j), (int32_t)sum);
    }
#endif
    for (; j < memory - 1; ++j) {
        const int16_t v = row[j + 1];
        row[j] = v;
        sum += (uint32_t)((int32_t)w[j] * (int32_t)v);
    }
    row[memory - 1] = (int16_t)value;
    sum += (uint32_t)((int32_t)w[memory - 1] * (int32_t)(int16_t)value);
    return (int32_t)sum;
}

/* The int8 state's twin of svdf_time16. */
static int32_t svdf_time8(int8_t *row, const int8_t *w, int32_t memory, int32_t value, int32_t time_bias)
{
    uint32_t sum = (uint32_t)time_bias;
    int32_t j;
    for (j = 0; j < memory - 1; ++j) {
        const int8_t v = row[j + 1];
        row[j] = v;
        sum += (uint32_t)((int32_t)w[j] * (int32_t)v);
    }
    row[memory - 1] = (int8_t)value; /* the zero point added after the clamp may leave int8: it wraps, as TFLM's */
    sum += (uint32_t)((int32_t)w[memory - 1] * (int32_t)(int8_t)value);
    return (int32_t)sum;
}

void tinyaot_svdf_s8(const int8_t *input, const tinyaot_svdf_params *params, int8_t *output, void *state)
{
    const int32_t batches = params->batches;
    const int32_t inputs = params->input_size;
    const int32_t filters = params->filters;
    const int32_t rank = params->rank;
    const int32_t memory = params->memory;
    const int8_t *const weights_feature = params->weights_feature;
    const int32_t *const feature_bias = params->feature_bias;
    const int32_t *const time_bias = params->time_bias;
    const int32_t feature_multiplier = params->feature_multiplier;
    const int32_t feature_shift = params->feature_shift;
    const int32_t output_multiplier = params->output_multiplier;
    const int32_t output_shift = params->output_shift;
    const int32_t state_zero_point = params->state_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t wide = params->state_bits == 16;
    const int32_t state_min = wide ? -32768 : -128;
    const int32_t state_max = wide ? 32767 : 127;
    int32_t b;
    for (b = 0; b < batches; ++b) {
        const int8_t *const x = input + b * inputs;
        int8_t *const out = output + b * (filters / rank);
        uint32_t unit = 0u;
        int32_t f = 0;
        while (f < filters) {
            int32_t dots[4];
            int32_t n = 1;
            int32_t k;
#if TINYAOT_DSP
            if (f + 4 <= filters) {
                n = 4;
                for (k = 0; k < 4; ++k) {
                    dots[k] = feature_bias[f + k];
                }
                tinyaot_dot4_s8(x, weights_feature + f * inputs, inputs, inputs, dots);
            }
#endif
            if (n == 1) {
                dots[0] = svdf_feature(x, weights_feature + f * inputs, inputs, feature_bias[f]);
            }
            for (k = 0; k < n; ++k, ++f) {
                const int32_t row = b * filters + f;
                int32_t value = tinyaot_requantize(dots[k], feature_multiplier, feature_shift);
                value = tinyaot_clamp(value, state_min, state_max) + state_zero_point;
                if (f % rank == 0) {
                    unit = (uint32_t)params->bias[f / rank];
                }
                if (wide) {
                    unit += (uint32_t)svdf_time16((int16_t *)state + row * memory,
                                                  (const int16_t *)params->weights_time + f * memory, memory, value,
                                                  time_bias[f]);
                } else {
                    unit += (uint32_t)svdf_time8((int8_t *)state + row * memory,
                                                 (const int8_t *)params->weights_time + f * memory, memory, value,
                                                 time_bias[f]);
                }
                if (f % rank == rank - 1) {
                    const int32_t v = tinyaot_requantize((int32_t)unit, output_multiplier, output_shift);
                    out[f / rank] = (int8_t)tinyaot_clamp(v + output_zero_point, -128, 127);
                }
            }
        }
    }
}
