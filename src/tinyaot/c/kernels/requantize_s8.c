/*
 * requantize_s8.c - int8 -> int8 with other qparams; twin of ref/requantize_s8.py (TFLM Requantize).
 *
 * Runs in place.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_requantize_s8(const int8_t *input, const tinyaot_requantize_params *params, int8_t *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t v = tinyaot_requantize((int32_t)input[i] - input_zero_point, multiplier, shift) +
                          output_zero_point;
        output[i] = (int8_t)tinyaot_clamp(v, -128, 127);
    }
}
