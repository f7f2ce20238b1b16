/*
 * concat_s8.c - int8 concatenation along one axis; twin of ref/concat_s8.py.
 *
 * For each of `outer` slices, each input contributes chunks[i] bytes in turn. An input whose requantization
 * is the identity (multiplier 2^30, shift 1, same zero point: the output's qparams) is copied; the others are
 * requantized as TFLM's quantize op does. Output must not overlap the inputs.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_concat_s8(const int8_t *const *inputs, int32_t num_inputs, const int32_t *chunks,
                       const int32_t *multiplier, const int32_t *shift, const int32_t *input_zero_point,
                       int32_t output_zero_point, int32_t outer, int8_t *output)
{
    int32_t o, i, k;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < num_inputs; ++i) {
            const int8_t *src = inputs[i] + o * chunks[i];
            if (multiplier[i] == (1 << 30) && shift[i] == 1 && input_zero_point[i] == output_zero_point) {
                memcpy(output, src, (size_t)chunks[i]);
            } else {
                for (k = 0; k < chunks[i]; ++k) {
                    const int32_t v = tinyaot_requantize((int32_t)src[k] - input_zero_point[i], multiplier[i],
                                                         shift[i]) + output_zero_point;
                    output[k] = (int8_t)tinyaot_clamp(v, -128, 127);
                }
            }
            output += chunks[i];
        }
    }
}
