/*
 * relu_s16.c - standalone int16 (16x8) ReLU / clamp with rescaling; twin of ref/relu_s16.py (TFLM's int16 RELU
 * and RELU6).
 *
 * When input and output share the scale (the requantization is the identity) it only clamps. Runs in place
 * (element i is read before it is written).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_relu_s16(const int16_t *input, const tinyaot_relu16_params *params, int16_t *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    if (multiplier == TINYAOT_IDENTITY_MULTIPLIER && shift == TINYAOT_IDENTITY_SHIFT) {
        for (i = 0; i < size; ++i) {
            output[i] = (int16_t)tinyaot_clamp(input[i], act_min, act_max);
        }
        return;
    }
    for (i = 0; i < size; ++i) {
        output[i] = (int16_t)tinyaot_clamp(tinyaot_requantize(input[i], multiplier, shift), act_min, act_max);
    }
}
