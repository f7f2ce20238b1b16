/*
 * requantize_s16.c - the quantize op between int8 and int16 (16x8) tensors; twin of ref/requantize_s16.py
 * (TFLM's Requantize for int8 -> int16, int16 -> int8 and int16 -> int16).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_requantize_s16(const void *input, const tinyaot_requantize16_params *params, void *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int8_t *in8 = (const int8_t *)input;
    const int16_t *in16 = (const int16_t *)input;
    int8_t *out8 = (int8_t *)output;
    int16_t *out16 = (int16_t *)output;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t x = (params->input_bits == 16) ? (int32_t)in16[i] : (int32_t)in8[i];
        const int32_t v = tinyaot_requantize(x - input_zero_point, multiplier, shift) + output_zero_point;
        if (params->output_bits == 16) {
            out16[i] = (int16_t)tinyaot_clamp(v, -32768, 32767);
        } else {
            out8[i] = (int8_t)tinyaot_clamp(v, -128, 127);
        }
    }
}
