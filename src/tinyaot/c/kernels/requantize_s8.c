/*
 * requantize_s8.c - the quantize op between 8-bit tensors; twin of ref/requantize_s8.py (TFLM Requantize):
 * int8 -> int8 with other qparams, and a legacy model's uint8 boundary (uint8 -> int8, int8 -> uint8).
 *
 * The uint8 boundary as converters write it (same scale, zero points 128 apart: the multiplier 1 << 30, shift 1)
 * moves each value by exactly 128 and can neither round nor clamp, so it is one add per byte, as TFLM's own fast
 * path; other uint8 boundaries take the general loop with the types read per element (a model's one or two
 * conversions), int8 -> int8 its own loop. The values are the general path's either way. Runs in place.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

#define UNIT_MULTIPLIER ((int32_t)1 << 30) /* with shift 1: a multiplier of exactly 1 */
#define UINT8_OFFSET 128                   /* uint8 = int8 + 128 at the same scale */

/* The general loop; in_u8 and out_u8 are constants (int8 -> int8) or read per element (a uint8 boundary). */
__attribute__((always_inline)) static inline void requantize_run(const void *input,
                                                                 const tinyaot_requantize_params *params,
                                                                 void *output, int in_u8, int out_u8)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t lo = out_u8 ? 0 : -128;
    const int32_t hi = out_u8 ? 255 : 127;
    const int8_t *in8 = (const int8_t *)input;
    const uint8_t *inu = (const uint8_t *)input;
    int8_t *out8 = (int8_t *)output;
    uint8_t *outu = (uint8_t *)output;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t x = (in_u8 ? (int32_t)inu[i] : (int32_t)in8[i]) - input_zero_point;
        const int32_t v = tinyaot_clamp(tinyaot_requantize(x, multiplier, shift) + output_zero_point, lo, hi);
        if (out_u8) {
            outu[i] = (uint8_t)v;
        } else {
            out8[i] = (int8_t)v;
        }
    }
}

void tinyaot_requantize_s8(const void *input, const tinyaot_requantize_params *params, void *output)
{
    const int32_t size = params->size;
    const int32_t offset = params->output_zero_point - params->input_zero_point;
    const int unit = params->multiplier == UNIT_MULTIPLIER && params->shift == 1;
    int32_t i;
    if (!params->input_uint8 && !params->output_uint8) {
        requantize_run(input, params, output, 0, 0);
    } else if (unit && params->input_uint8 && offset == -UINT8_OFFSET) {
        const uint8_t *in = (const uint8_t *)input;
        int8_t *out = (int8_t *)output;
        for (i = 0; i < size; ++i) {
            out[i] = (int8_t)((int32_t)in[i] - UINT8_OFFSET);
        }
    } else if (unit && params->output_uint8 && offset == UINT8_OFFSET) {
        const int8_t *in = (const int8_t *)input;
        uint8_t *out = (uint8_t *)output;
        for (i = 0; i < size; ++i) {
            out[i] = (uint8_t)((int32_t)in[i] + UINT8_OFFSET);
        }
    } else {
        requantize_run(input, params, output, params->input_uint8 != 0, params->output_uint8 != 0);
    }
}
