/*
 * requantize_s8.c - the quantize op between 8-bit tensors; twin of ref/requantize_s8.py (TFLM Requantize):
 * int8 -> int8 with other qparams, and a legacy model's uint8 boundary (uint8 -> int8, int8 -> uint8).
 *
 * A multiplier of exactly 1 (same scales: (1 << 30, shift 1)) adds the zero-point difference with no requantize,
 * as TFLM's fast path does for the uint8 <-> int8 shift by 128; the values are the general path's. Runs in place.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define UNIT_MULTIPLIER ((int32_t)1 << 30) /* with shift 1: a multiplier of exactly 1 */

void tinyaot_requantize_s8(const void *input, const tinyaot_requantize_params *params, void *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t lo = params->output_uint8 ? 0 : -128;
    const int32_t hi = params->output_uint8 ? 255 : 127;
    const int unit = multiplier == UNIT_MULTIPLIER && shift == 1;
    const int8_t *in8 = (const int8_t *)input;
    const uint8_t *inu = (const uint8_t *)input;
    int8_t *out8 = (int8_t *)output;
    uint8_t *outu = (uint8_t *)output;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t x = (params->input_uint8 ? (int32_t)inu[i] : (int32_t)in8[i]) - input_zero_point;
        const int32_t v = tinyaot_clamp((unit ? x : tinyaot_requantize(x, multiplier, shift)) + output_zero_point,
                                        lo, hi);
        if (params->output_uint8) {
            outu[i] = (uint8_t)v;
        } else {
            out8[i] = (int8_t)v;
        }
    }
}
