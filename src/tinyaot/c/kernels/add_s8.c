/*
 * add_s8.c - elementwise int8 add with rescaling; twin of ref/add_s8.py (TFLite Micro's int8 Add).
 *
 * Each input's offset, shift left by 20 and scaling (< 1, to half the larger input scale) depend on its byte
 * only, so they are read from the two tables prepare made; the sum is scaled to the output, offset and
 * clamped: by the multiply-high form the compiler proved exact for this layer when it found one, else by the
 * exact helper. Element i is read before it is written, so the output may be either input (in place).
 * The DSP path differs only in clamping to the full int8 range with one SSAT (GCC 12 does not find it).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_add_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output)
{
    /* Everything in locals: the int8 stores may alias *params as far as the compiler knows. */
    const int32_t *const table1 = params->input1_table + 128;
    const int32_t *const table2 = params->input2_table + 128;
    const int32_t size = params->size;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    if (params->sum_multiplier != 0) {
        const int32_t multiplier = params->sum_multiplier;
        const int32_t bias = params->sum_bias;
        const int32_t shift = params->sum_shift;
#if TINYAOT_DSP
        if (act_min == -128 && act_max == 127) {
            for (i = 0; i < size; ++i) {
                const int32_t sum = table1[input1[i]] + table2[input2[i]];
                output[i] = (int8_t)__ssat(((int32_t)(((int64_t)sum * multiplier) >> 32) + bias) >> shift, 8);
            }
            return;
        }
#endif
        for (i = 0; i < size; ++i) {
            const int32_t sum = table1[input1[i]] + table2[input2[i]];
            const int32_t out = ((int32_t)(((int64_t)sum * multiplier) >> 32) + bias) >> shift;
            output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
        }
    } else {
        const int32_t multiplier = params->output_multiplier;
        const int32_t shift = params->output_shift;
        const int32_t offset = params->output_offset;
        for (i = 0; i < size; ++i) {
            const int32_t sum = table1[input1[i]] + table2[input2[i]];
            const int32_t out = tinyaot_requantize(sum, multiplier, shift) + offset;
            output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
        }
    }
}
