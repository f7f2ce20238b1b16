/*
 * requantize_s16.c - the quantize op between int8, int16 (16x8) and int32 tensors; twin of ref/requantize_s16.py
 * (TFLM's Requantize between integer types). One loop per (input, output) type pair, so the element loop has no
 * type branches; the multiplier is QuantizeMultiplier's (>= 0).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* output[i] = clamp(requantize(input[i] - input_zero_point) + output_zero_point, LO, HI) as OUT_T. */
#define TINYAOT_REQUANTIZE_LOOP(IN_T, OUT_T, LO, HI)                                                            \
    do {                                                                                                       \
        const IN_T *in = (const IN_T *)input;                                                                  \
        OUT_T *out = (OUT_T *)output;                                                                          \
        for (i = 0; i < size; ++i) {                                                                           \
            const int32_t v = tinyaot_requantize_nonneg((int32_t)in[i] - input_zero_point, multiplier, shift)  \
                              + output_zero_point;                                                             \
            out[i] = (OUT_T)tinyaot_clamp(v, LO, HI);                                                          \
        }                                                                                                      \
    } while (0)

void tinyaot_requantize_s16(const void *input, const tinyaot_requantize16_params *params, void *output)
{
    const int32_t size = params->size;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    const int32_t input_zero_point = params->input_zero_point;
    const int32_t output_zero_point = params->output_zero_point;
    const int32_t output_bits = params->output_bits;
    int32_t i;
    /* an int32 output's zero point is 0: TFLM's clamp to the int32 range changes nothing */
    switch (params->input_bits) {
    case 8:
        if (output_bits == 16) {
            TINYAOT_REQUANTIZE_LOOP(int8_t, int16_t, -32768, 32767);
        } else {
            TINYAOT_REQUANTIZE_LOOP(int8_t, int32_t, INT32_MIN, INT32_MAX);
        }
        break;
    case 16:
        if (output_bits == 8) {
            TINYAOT_REQUANTIZE_LOOP(int16_t, int8_t, -128, 127);
        } else if (output_bits == 16) {
            TINYAOT_REQUANTIZE_LOOP(int16_t, int16_t, -32768, 32767);
        } else {
            TINYAOT_REQUANTIZE_LOOP(int16_t, int32_t, INT32_MIN, INT32_MAX);
        }
        break;
    default: /* 32 */
        if (output_bits == 8) {
            TINYAOT_REQUANTIZE_LOOP(int32_t, int8_t, -128, 127);
        } else {
            TINYAOT_REQUANTIZE_LOOP(int32_t, int16_t, -32768, 32767);
        }
        break;
    }
}
