/*
 * add_s8.c - elementwise int8 add with rescaling; twin of ref/add_s8.py (TFLite Micro's int8 Add).
 *
 * Each input gets its offset, is shifted left by left_shift (20) and scaled by its multiplier (< 1,
 * to half the larger input scale); the sum is scaled to the output, offset and clamped.
 * Element i is read before it is written, so the output may be either input (in place).
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

void tinyaot_add_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output)
{
    const tinyaot_add_params *p = params;
    const int32_t scale = (int32_t)1 << p->left_shift;
    int32_t i;
    for (i = 0; i < p->size; ++i) {
        const int32_t a = ((int32_t)input1[i] + p->input1_offset) * scale;
        const int32_t b = ((int32_t)input2[i] + p->input2_offset) * scale;
        const int32_t sum = tinyaot_requantize(a, p->input1_multiplier, p->input1_shift)
                            + tinyaot_requantize(b, p->input2_multiplier, p->input2_shift);
        const int32_t out = tinyaot_requantize(sum, p->output_multiplier, p->output_shift) + p->output_offset;
        output[i] = (int8_t)tinyaot_clamp(out, p->act_min, p->act_max);
    }
}
