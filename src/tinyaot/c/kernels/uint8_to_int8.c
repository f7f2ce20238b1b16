/*
 * uint8_to_int8.c - a uint8 model input becomes int8 (q - 128, zero point - 128); twin of
 * ref/uint8_to_int8.py. Exact: it flips the top bit of each byte. May run in place (output == input).
 */
#include "tinyaot_kernels.h"

void tinyaot_uint8_to_int8(const uint8_t *input, const tinyaot_uint8_to_int8_params *params, int8_t *output)
{
    const int32_t size = params->size;
    int32_t i;
    for (i = 0; i < size; ++i) {
        output[i] = (int8_t)((int32_t)input[i] - 128);
    }
}
