/*
 * lut_s8.c - elementwise int8 function through a 256-entry table; twin of ref/lut_s8.py.
 *
 * output[i] = table[input[i] + 128]; the table is computed at compile time. Runs in place.
 */
#include "tinyaot_kernels.h"

void tinyaot_lut_s8(const int8_t *input, const tinyaot_lut_params *params, int8_t *output)
{
    const int32_t size = params->size;
    const int8_t *const table = params->table;
    int32_t i;
    for (i = 0; i < size; ++i) {
        output[i] = table[(int32_t)input[i] + 128];
    }
}
