/*
 * add_s8.c - elementwise int8 add and subtract with rescaling; twin of ref/add_s8.py (TFLite Micro's int8 Add
 * and Sub: a sub's second table holds the negated scaled values, and without tables subtract says so).
 *
 * Each input's offset, shift left by 20 and scaling (< 1, to half the larger input scale) depend on its byte
 * only, so they are read from the two tables prepare made (speed mode; the size and memory modes leave the
 * tables out, NULL, and the kernel scales each element itself); the sum is scaled to the output, offset and
 * clamped: by the multiply-high form the compiler proved exact for this layer when it found one, else by the
 * exact helper. Element i is read before it is written, so the output may be either input (in place).
 * The DSP path differs only in clamping to the full int8 range with one SSAT (GCC 12 does not find it).
 * tinyaot_add_broadcast_s8 walks the 4-D output and reads each operand at its strides (0 where it broadcasts).
 */
#include "tinyaot_dsp.h"
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* An input's scaled value, TFLM's way: what its table holds at q + 128 (size and memory modes omit the table). */
static inline int32_t add_scaled(int32_t q, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift)
{
    return tinyaot_requantize((int32_t)((uint32_t)(q + offset) << left_shift), multiplier, shift);
}

/* The add without tables: the same sums, each input scaled per element (no flash for tables). */
static void add_untabled(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params,
                         int8_t *output)
{
    const int32_t size = params->size;
    const int32_t left_shift = params->left_shift;
    const int32_t offset1 = params->input1_offset, multiplier1 = params->input1_multiplier;
    const int32_t shift1 = params->input1_shift;
    const int32_t offset2 = params->input2_offset, multiplier2 = params->input2_multiplier;
    const int32_t shift2 = params->input2_shift;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    const int32_t sum_multiplier = params->sum_multiplier, sum_bias = params->sum_bias;
    const int32_t sum_shift = params->sum_shift;
    const int32_t output_multiplier = params->output_multiplier, output_shift = params->output_shift;
    const int32_t output_offset = params->output_offset;
    const int32_t sign2 = params->subtract ? -1 : 1;
    int32_t i;
    for (i = 0; i < size; ++i) {
        const int32_t sum = add_scaled(input1[i], offset1, left_shift, multiplier1, shift1)
                            + sign2 * add_scaled(input2[i], offset2, left_shift, multiplier2, shift2);
        int32_t out;
        if (sum_multiplier != 0) {
            out = ((int32_t)(((int64_t)sum * sum_multiplier) >> 32) + sum_bias) >> sum_shift;
        } else {
            out = tinyaot_requantize(sum, output_multiplier, output_shift) + output_offset;
        }
        output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
    }
}

/* The speed mode's add: both scaled inputs read from the tables. */
static void add_tabled(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output)
{
    /* Everything in locals: the int8 stores may alias *params as far as the compiler knows. */
    const int32_t *const table1 = params->input1_table + 128;
    const int32_t *const table2 = params->input2_table + 128;
    const int32_t size = params->size;
    const int32_t act_min = params->act_min;
    const int32_t act_max = params->act_max;
    int32_t i;
    if (params->sum_multiplier != 0) {
        const int32_t multiplier = params->sum_multiplier;
        const int32_t bias = params->sum_bias;
        const int32_t shift = params->sum_shift;
#if TINYAOT_DSP
        if (act_min == -128 && act_max == 127) {
            for (i = 0; i < size; ++i) {
                const int32_t sum = table1[input1[i]] + table2[input2[i]];
                output[i] = (int8_t)__ssat(((int32_t)(((int64_t)sum * multiplier) >> 32) + bias) >> shift, 8);
            }
            return;
        }
#endif
        for (i = 0; i < size; ++i) {
            const int32_t sum = table1[input1[i]] + table2[input2[i]];
            const int32_t out = ((int32_t)(((int64_t)sum * multiplier) >> 32) + bias) >> shift;
            output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
        }
    } else {
        const int32_t multiplier = params->output_multiplier;
        const int32_t shift = params->output_shift;
        const int32_t offset = params->output_offset;
        for (i = 0; i < size; ++i) {
            const int32_t sum = table1[input1[i]] + table2[input2[i]];
            const int32_t out = tinyaot_requantize(sum, multiplier, shift) + offset;
            output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
        }
    }
}

void tinyaot_add_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output)
{
    if (params->input1_table == 0 || params->input2_table == 0) {
        add_untabled(input1, input2, params, output);
    } else {
        add_tabled(input1, input2, params, output);
    }
}

/*
 * One row of the broadcast add: n outputs, the operands advancing by step_a / step_b (1, or 0 where one
 * broadcasts). The mode (tables, fast requantization) is chosen once per row, not per element.
 */
static void add_row(const int8_t *pa, int32_t step_a, const int8_t *pb, int32_t step_b, int32_t n,
                    const tinyaot_add_params *params, int8_t *output)
{
    const int32_t act_min = params->act_min, act_max = params->act_max;
    int32_t i;
    if (params->input1_table != 0 && params->input2_table != 0 && params->sum_multiplier != 0) {
        const int32_t *const table1 = params->input1_table + 128;
        const int32_t *const table2 = params->input2_table + 128;
        const int32_t multiplier = params->sum_multiplier, bias = params->sum_bias, shift = params->sum_shift;
        for (i = 0; i < n; ++i) {
            const int32_t sum = table1[*pa] + table2[*pb];
            const int32_t out = ((int32_t)(((int64_t)sum * multiplier) >> 32) + bias) >> shift;
            output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
            pa += step_a;
            pb += step_b;
        }
        return;
    }
    for (i = 0; i < n; ++i) {
        int32_t sum, out;
        if (params->input1_table != 0 && params->input2_table != 0) {
            sum = params->input1_table[*pa + 128] + params->input2_table[*pb + 128];
        } else {
            const int32_t scaled2 = add_scaled(*pb, params->input2_offset, params->left_shift,
                                               params->input2_multiplier, params->input2_shift);
            sum = add_scaled(*pa, params->input1_offset, params->left_shift, params->input1_multiplier,
                             params->input1_shift) + (params->subtract ? -scaled2 : scaled2);
        }
        if (params->sum_multiplier != 0) {
            out = ((int32_t)(((int64_t)sum * params->sum_multiplier) >> 32) + params->sum_bias) >> params->sum_shift;
        } else {
            out = tinyaot_requantize(sum, params->output_multiplier, params->output_shift) + params->output_offset;
        }
        output[i] = (int8_t)tinyaot_clamp(out, act_min, act_max);
        pa += step_a;
        pb += step_b;
    }
}

void tinyaot_add_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params,
                              int8_t *output)
{
    /* A local copy: the int8 stores cannot alias it, so its fields stay in registers. */
    const tinyaot_add_params local = *params;
    const int32_t *const out_shape = local.out_shape;
    const int32_t *const a_strides = local.a_strides;
    const int32_t *const b_strides = local.b_strides;
    const int32_t row = out_shape[3];
    int32_t i0, i1, i2;
    for (i0 = 0; i0 < out_shape[0]; ++i0) {
        for (i1 = 0; i1 < out_shape[1]; ++i1) {
            for (i2 = 0; i2 < out_shape[2]; ++i2) {
                add_row(input1 + i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2], a_strides[3],
                        input2 + i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2], b_strides[3], row,
                        &local, output);
                output += row;
            }
        }
    }
}
