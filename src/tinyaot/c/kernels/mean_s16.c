/*
 * mean_s16.c - int16 (16x8) mean over a run of consecutive axes; twin of ref/mean_s16.py (TFLM's int16 MEAN).
 *
 * The input is [outer][count][inner]; each output is the int32 sum of `count` values, requantized with 1/count
 * folded into (multiplier, shift) at compile time, clamped (zero points are 0). Output must not overlap the
 * input.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_mean_s16(const int16_t *input, const tinyaot_mean16_params *params, int16_t *output)
{
    const int32_t outer = params->outer;
    const int32_t count = params->count;
    const int32_t inner = params->inner;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t o, c, s;
    for (o = 0; o < outer; ++o) {
        const int16_t *in = input + o * count * inner;
        for (c = 0; c < inner; ++c) {
            int32_t acc = 0;
            for (s = 0; s < count; ++s) {
                acc += in[s * inner + c];
            }
            output[o * inner + c] = (int16_t)tinyaot_clamp(tinyaot_requantize(acc, multiplier, shift), act_min,
                                                           act_max);
        }
    }
}
