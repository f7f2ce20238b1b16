/*
 * relu_s8.c - standalone int8 ReLU / clamp with rescaling; twin of ref/relu_s8.py (TFLM int8 RELU).
 *
 * When input and output share qparams (the requantization is the identity) it only clamps. Runs in place.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_relu_s8(const int8_t *input, const tinyaot_relu_params *params, int8_t *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    if (multiplier == TINYAOT_IDENTITY_MULTIPLIER && shift == TINYAOT_IDENTITY_SHIFT &&
        input_zero_point == output_zero_point) {
        for (i = 0; i < size; ++i) {
            output[i] = (int8_t)tinyaot_clamp(input[i], act_min, act_max);
        }
        return;
    }
    for (i = 0; i < size; ++i) {
        const int32_t v = tinyaot_requantize((int32_t)input[i] - input_zero_point, multiplier, shift) +
                          output_zero_point;
        output[i] = (int8_t)tinyaot_clamp(v, act_min, act_max);
    }
}
