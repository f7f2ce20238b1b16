/*
 * leaky_relu_s16.c - int16 (16x8) leaky ReLU; twin of ref/leaky_relu_s16.py (TFLite Micro's int16 LEAKY_RELU).
 *
 * v >= 0 is requantized by multiplier 1, v < 0 by multiplier 2 (a negative one, a negative alpha: by its magnitude,
 * negated). Zero points are 0. Runs in place (element i is read before it is written).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_leaky_relu_s16(const int16_t *input, const tinyaot_leaky_relu16_params *params, int16_t *output)
{
    const tinyaot_leaky_relu16_params p = *params;
    const int32_t negate = p.output_multiplier_2 < 0;
    const int32_t multiplier_2 = negate ? -p.output_multiplier_2 : p.output_multiplier_2;
    int32_t i;
    for (i = 0; i < p.size; ++i) {
        const int32_t v = input[i];
        int32_t out;
        if (v >= 0) {
            out = tinyaot_requantize(v, p.output_multiplier_1, p.output_shift_1);
        } else {
            out = tinyaot_requantize(v, multiplier_2, p.output_shift_2);
            out = negate ? -out : out;
        }
        output[i] = (int16_t)tinyaot_clamp(out, -32768, 32767);
    }
}
