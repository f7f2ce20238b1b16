/*
 * mean_s8.c - int8 mean over a run of consecutive axes; twin of ref/mean_s8.py (TFLM int8 MEAN).
 *
 * The input is [outer][count][inner]; each output is the sum of `count` values in int32 plus bias
 * (= -input_zero_point * count), requantized with 1/count folded into (multiplier, shift) at compile time,
 * plus the output zero point, clamped. Output must not overlap the input.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_mean_s8(const int8_t *input, const tinyaot_mean_params *params, int8_t *output)
{
    const int32_t outer = params->outer;
    const int32_t count = params->count;
    const int32_t inner = params->inner;
    const int32_t bias = params->bias;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t o, c, s;
    for (o = 0; o < outer; ++o) {
        const int8_t *in = input + o * count * inner;
        for (c = 0; c < inner; ++c) {
            int32_t acc = bias;
            for (s = 0; s < count; ++s) {
                acc += in[s * inner + c];
            }
            acc = tinyaot_requantize(acc, multiplier, shift) + output_zero_point;
            output[o * inner + c] = (int8_t)tinyaot_clamp(acc, act_min, act_max);
        }
    }
}
