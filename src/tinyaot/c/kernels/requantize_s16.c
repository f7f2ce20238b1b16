/*
 * requantize_s16.c - the quantize op between int8, int16 (16x8) and int32 tensors; twin of ref/requantize_s16.py
 * (TFLM's Requantize between integer types).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

static int32_t rq_read(const void *input, int32_t bits, int32_t i)
{
    if (bits == 32) {
        return ((const int32_t *)input)[i];
    }
    return bits == 16 ? (int32_t)((const int16_t *)input)[i] : (int32_t)((const int8_t *)input)[i];
}

void tinyaot_requantize_s16(const void *input, const tinyaot_requantize16_params *params, void *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t input_bits = params->input_bits;
    const int32_t output_bits = params->output_bits;
    int8_t *out8 = (int8_t *)output;
    int16_t *out16 = (int16_t *)output;
    int32_t *out32 = (int32_t *)output;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t x = rq_read(input, input_bits, i);
        const int32_t v = tinyaot_requantize(x - input_zero_point, multiplier, shift) + output_zero_point;
        if (output_bits == 32) {
            out32[i] = v; /* an int32 output's zero point is 0: TFLM's clamp to the int32 range changes nothing */
        } else if (output_bits == 16) {
            out16[i] = (int16_t)tinyaot_clamp(v, -32768, 32767);
        } else {
            out8[i] = (int8_t)tinyaot_clamp(v, -128, 127);
        }
    }
}
