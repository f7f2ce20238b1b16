/*
 * tinyaot_kernels.h - the int8 kernel library generated models call.
 *
 * Every kernel has a NumPy twin of the same name in tinyaot/ref/ and must match it bit for bit.
 * Layouts: activations are int8, row-major; weights are int8 [out][in]; per-channel requantization
 * parameters are int32 arrays of length out_features, computed at compile time.
 */
#ifndef TINYAOT_KERNELS_H
#define TINYAOT_KERNELS_H

#include <stdint.h>

/*
 * Fully connected (Linear): output[b][c] = clamp(requantize(bias[c] + sum_k input[b][k] * weights[c][k],
 * multiplier[c], shift[c]) + output_offset, act_min, act_max).
 *
 * bias:        int32, with input_offset * sum_k weights[c][k] already folded in at compile time
 * input:       int8 [batches][in_features]
 * weights:     int8 [out_features][in_features], symmetric (zero point 0)
 * output:      int8 [batches][out_features]; must not overlap input
 */
void tinyaot_fully_connected_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                const int32_t *multiplier, const int32_t *shift,
                                int32_t output_offset, int32_t act_min, int32_t act_max,
                                int32_t batches, int32_t in_features, int32_t out_features,
                                int8_t *output);

#endif /* TINYAOT_KERNELS_H */
