/*
 * concat_s16.c - int16 (16x8) concatenation along one axis, TFLM's int16 CONCATENATION; twin of
 * ref/concat_s16.py.
 *
 * For each of `outer` slices, each input contributes chunks[i] elements in turn. An input with the output's
 * scale (TINYAOT_IDENTITY_MULTIPLIER and _SHIFT) is copied, as TFLM does; the others (mixed-precision graphs
 * only) are requantized as TFLM's int16 -> int16 quantize op does. Output must not overlap the inputs.
 */
#include <string.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_concat_s16(const int16_t *const *inputs, const tinyaot_concat16_params *params, int16_t *output)
{
    const int32_t num_inputs = params->num_inputs;
    const int32_t *const chunks = params->chunks;
    const int32_t *const multiplier = params->multiplier;
    const int32_t *const shift = params->shift;
    const int32_t outer = params->outer;
    int32_t o, i, k;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < num_inputs; ++i) {
            const int16_t *src = inputs[i] + o * chunks[i];
            if (multiplier[i] == TINYAOT_IDENTITY_MULTIPLIER && shift[i] == TINYAOT_IDENTITY_SHIFT) {
                memcpy(output, src, (size_t)chunks[i] * sizeof(int16_t));
            } else {
                for (k = 0; k < chunks[i]; ++k) {
                    const int32_t v = tinyaot_requantize((int32_t)src[k], multiplier[i], shift[i]);
                    output[k] = (int16_t)tinyaot_clamp(v, -32768, 32767);
                }
            }
            output += chunks[i];
        }
    }
}
