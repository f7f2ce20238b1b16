/*
 * batch_matmul_s8.c - int8 matrix product of two activations; twin of ref/batch_matmul_s8.py (TFLM's int8
 * BATCH_MATMUL).
 *
 * For each index of the (broadcast) batch dims, output[i][j] = clamp(requantize(sum_k (lhs(i, k) + lhs_offset)
 * * (rhs(k, j) + rhs_offset)) + output_offset, -128, 127), accumulated in int32. The operands are read at their
 * strides, so a transposed operand (adj_x, adj_y) needs no copy. The output must not overlap either operand.
 */
#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* One [rows][cols] product of the matrices at lhs and rhs. */
static void bmm_matrix(const int8_t *lhs, const int8_t *rhs, const tinyaot_batch_matmul_params *params,
                       int8_t *output)
{
    const int32_t rows = params->rows;
    const int32_t cols = params->cols;
    const int32_t depth = params->depth;
    const int32_t lhs_row_stride = params->lhs_row_stride;
    const int32_t lhs_depth_stride = params->lhs_depth_stride;
    const int32_t rhs_depth_stride = params->rhs_depth_stride;
    const int32_t rhs_col_stride = params->rhs_col_stride;
    const int32_t lhs_offset = params->lhs_offset;
    const int32_t rhs_offset = params->rhs_offset;
    const int32_t output_offset = params->output_offset;
    const int32_t multiplier = params->multiplier;
    const int32_t shift = params->shift;
    int32_t i, j, k;
    for (i = 0; i < rows; ++i) {
        const int8_t *row = lhs + i * lhs_row_stride;
        for (j = 0; j < cols; ++j) {
            const int8_t *a = row;
            const int8_t *b = rhs + j * rhs_col_stride;
            int32_t acc = 0;
            for (k = 0; k < depth; ++k) {
                acc += ((int32_t)*a + lhs_offset) * ((int32_t)*b + rhs_offset);
                a += lhs_depth_stride;
                b += rhs_depth_stride;
            }
            *output++ = (int8_t)tinyaot_saturate_s8(tinyaot_requantize(acc, multiplier, shift) + output_offset);
        }
    }
}

void tinyaot_batch_matmul_s8(const int8_t *lhs, const int8_t *rhs, const tinyaot_batch_matmul_params *params,
                             int8_t *output)
{
    const int32_t *const out_batch = params->out_batch;
    const int32_t *const lhs_strides = params->lhs_batch_strides;
    const int32_t *const rhs_strides = params->rhs_batch_strides;
    const int32_t matrix = params->rows * params->cols;
    int32_t b0, b1, b2, b3;
    for (b0 = 0; b0 < out_batch[0]; ++b0) {
        for (b1 = 0; b1 < out_batch[1]; ++b1) {
            for (b2 = 0; b2 < out_batch[2]; ++b2) {
                const int8_t *a2 = lhs + b0 * lhs_strides[0] + b1 * lhs_strides[1] + b2 * lhs_strides[2];
                const int8_t *r2 = rhs + b0 * rhs_strides[0] + b1 * rhs_strides[1] + b2 * rhs_strides[2];
                for (b3 = 0; b3 < out_batch[3]; ++b3) {
                    bmm_matrix(a2 + b3 * lhs_strides[3], r2 + b3 * rhs_strides[3], params, output);
                    output += matrix;
                }
            }
        }
    }
}
