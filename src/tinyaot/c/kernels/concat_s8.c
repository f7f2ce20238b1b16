/*
 * concat_s8.c - int8 concatenation along one axis; twin of ref/concat_s8.py.
 *
 * For each of `outer` slices, each input contributes chunks[i] bytes in turn. An input whose requantization
 * is the identity (TINYAOT_IDENTITY_MULTIPLIER and _SHIFT, the same zero point: the output's qparams) is copied;
 * the others are requantized as TFLM's quantize op does. Output must not overlap the inputs.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_concat_s8(const int8_t *const *inputs, const tinyaot_concat_params *params, int8_t *output)
{
    const int32_t num_inputs = params->num_inputs;
    const int32_t *const chunks = params->chunks;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t *const input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t outer = params->outer;
    int32_t o, i, k;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < num_inputs; ++i) {
            const int8_t *src = inputs[i] + o * chunks[i];
            if (multiplier[i] == TINYAOT_IDENTITY_MULTIPLIER && shift[i] == TINYAOT_IDENTITY_SHIFT &&
                input_zero_point[i] == output_zero_point) {
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
