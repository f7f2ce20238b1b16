/*
 * relu_s8.c - standalone int8 ReLU / clamp with rescaling; twin of ref/relu_s8.py (TFLM int8 RELU).
 *
 * When input and output share qparams (the requantization is the identity) it only clamps. Runs in place.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_relu_s8(const int8_t *input, int32_t size, int32_t multiplier, int32_t shift, int32_t input_zero_point,
                     int32_t output_zero_point, int32_t act_min, int32_t act_max, int8_t *output)
{
    int32_t i;
    if (multiplier == (1 << 30) && shift == 1 && input_zero_point == output_zero_point) {
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
