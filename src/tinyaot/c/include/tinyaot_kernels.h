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

/*
 * Max pooling over NHWC: output[b][oy][ox][c] = clamp(max over the window clipped to the input).
 *
 * input:   int8 [batches][in_h][in_w][channels]; output: int8 [batches][out_h][out_w][channels], same qparams
 * window:  rows oy * stride_h - pad_top + [0, kernel_h), columns likewise; padding never wins
 * output must not overlap input.
 */
void tinyaot_max_pool2d_s8(const int8_t *input, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,
                           int32_t kernel_h, int32_t kernel_w, int32_t stride_h, int32_t stride_w,
                           int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                           int32_t act_min, int32_t act_max, int8_t *output);

/*
 * Mean over a run of consecutive axes (global average pooling: axes 1, 2 of NHWC), TFLM's int8 MEAN:
 * output[o][c] = clamp(requantize(bias + sum_s input[o][s][c], multiplier, shift) + output_zero_point).
 *
 * input:   int8 [outer][count][inner]; output: int8 [outer][inner]; must not overlap input
 * bias:    -input_zero_point * count; multiplier/shift: input_scale / output_scale / count (TFLM folding)
 */
void tinyaot_mean_s8(const int8_t *input, int32_t outer, int32_t count, int32_t inner, int32_t bias,
                     int32_t multiplier, int32_t shift, int32_t output_zero_point, int32_t act_min,
                     int32_t act_max, int8_t *output);

/*
 * Concatenation: for o in [0, outer), for each input i, chunks[i] bytes of inputs[i] + o * chunks[i] go to the
 * output, requantized from input i's qparams to the output's (copied when they are equal).
 *
 * inputs:  num_inputs pointers to int8 tensors; multiplier/shift/input_zero_point: int32 [num_inputs]
 * output must not overlap any input.
 */
void tinyaot_concat_s8(const int8_t *const *inputs, int32_t num_inputs, const int32_t *chunks,
                       const int32_t *multiplier, const int32_t *shift, const int32_t *input_zero_point,
                       int32_t output_zero_point, int32_t outer, int8_t *output);

/*
 * Spatial padding of NHWC with pad_value (the zero point): output is
 * [batches][pad_top + in_h + pad_bottom][pad_left + in_w + pad_right][channels]; must not overlap input.
 */
void tinyaot_pad_s8(const int8_t *input, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,
                    int32_t pad_top, int32_t pad_bottom, int32_t pad_left, int32_t pad_right, int32_t pad_value,
                    int8_t *output);

/*
 * Elementwise multiply, TFLM's int8 MUL: output[i] = clamp(requantize((a[i] + input1_offset) *
 * (b[i] + input2_offset), multiplier, shift) + output_offset, act_min, act_max).
 *
 * tinyaot_mul_s8: a, b and output all hold `size` elements. tinyaot_mul_broadcast_s8: the output is
 * out_shape[4] (row-major) and a/b are read at element strides a_strides/b_strides (0 along broadcast dims).
 * In place: output may be an operand that has the output's full shape.
 */
void tinyaot_mul_s8(const int8_t *a, const int8_t *b, int32_t size, int32_t input1_offset, int32_t input2_offset,
                    int32_t output_offset, int32_t multiplier, int32_t shift, int32_t act_min, int32_t act_max,
                    int8_t *output);
void tinyaot_mul_broadcast_s8(const int8_t *a, const int8_t *b, const int32_t *out_shape, const int32_t *a_strides,
                              const int32_t *b_strides, int32_t input1_offset, int32_t input2_offset,
                              int32_t output_offset, int32_t multiplier, int32_t shift, int32_t act_min,
                              int32_t act_max, int8_t *output);

/*
 * Table lookup: output[i] = table[input[i] + 128]; table: int8 [256] built at compile time. In place.
 */
void tinyaot_lut_s8(const int8_t *input, int32_t size, const int8_t *table, int8_t *output);

/*
 * Standalone ReLU / clamp, TFLM's int8 RELU: output[i] = clamp(requantize(input[i] - input_zero_point,
 * multiplier, shift) + output_zero_point, act_min, act_max); a pure clamp when the qparams are equal. In place.
 */
void tinyaot_relu_s8(const int8_t *input, int32_t size, int32_t multiplier, int32_t shift, int32_t input_zero_point,
                     int32_t output_zero_point, int32_t act_min, int32_t act_max, int8_t *output);

/*
 * Requantize int8 -> int8 (the IR's `quantize` op), TFLM's Requantize: output[i] = clamp(requantize(
 * input[i] - input_zero_point, multiplier, shift) + output_zero_point, -128, 127). In place.
 */
void tinyaot_requantize_s8(const int8_t *input, int32_t size, int32_t multiplier, int32_t shift,
                           int32_t input_zero_point, int32_t output_zero_point, int8_t *output);

/*
 * Axis permutation of up to 4-D int8: output (row-major, out_shape[4]) reads the input at element strides
 * in_strides[4] along each output axis. Output must not overlap input.
 */
void tinyaot_transpose_s8(const int8_t *input, const int32_t *out_shape, const int32_t *in_strides, int8_t *output);

/*
 * Geometry, offsets and clamp of one convolution (conv2d or depthwise), fixed at compile time.
 * A tap (ky, kx) of output pixel (oy, ox) reads input row oy * stride_h - pad_top + ky * dilation_h
 * (columns likewise); taps outside the input are skipped (padding with the input zero point).
 */
typedef struct {
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t depth_multiplier;      /* depthwise: out_c = in_c * depth_multiplier; 1 for conv2d */
    int32_t input_offset;          /* -input zero point, in [-127, 128] */
    int32_t output_offset;         /* output zero point */
    int32_t act_min, act_max;      /* fused activation, int8 units */
} tinyaot_conv_params;

/*
 * 2-D convolution (groups = 1), TFLM's ConvPerChannel: output[b][oy][ox][oc] = clamp(requantize(bias[oc] +
 * sum_taps weights[oc][ky][kx][ic] * (input[b][iy][ix][ic] + input_offset), multiplier[oc], shift[oc])
 * + output_offset, act_min, act_max).
 *
 * input:   int8 [batches][in_h][in_w][in_c]; weights: int8 [out_c][kernel_h][kernel_w][in_c], symmetric
 * bias, multiplier, shift: int32 [out_c]; output: int8 [batches][out_h][out_w][out_c], must not overlap input
 */
void tinyaot_conv2d_s8(const int8_t *input, const int8_t *weights, const int32_t *bias, const int32_t *multiplier,
                       const int32_t *shift, const tinyaot_conv_params *params, int8_t *output);

/*
 * Pointwise conv2d (1x1 kernel, no padding, any stride): as tinyaot_conv2d_s8, with bias[oc] already holding
 * input_offset * sum_ic weights[oc][0][0][ic] (folded at compile time). Output pixels in row-major order.
 */
void tinyaot_conv2d_1x1_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                           const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                           int8_t *output);

/*
 * conv2d for windows of few bytes (first layers: kernel_h * kernel_w * in_c <= 80, the taps): as tinyaot_conv2d_s8,
 * but each output pixel's window is gathered once (zero point outside the image), widened to int16 with the input
 * offset, and dotted with weights widened at compile time: weights16 is int32 [ceil(out_c / 4)][ceil(taps / 4)][4][2],
 * for output channel 4g + i and taps 4j..4j+3 the words (w[4j] | w[4j+2] << 16, w[4j+1] | w[4j+3] << 16), low halves
 * first, zero beyond taps and out_c (codegen/emit_conv.py: patch_weights). Output pixels in row-major order.
 */
void tinyaot_conv2d_patch_s8(const int8_t *input, const int32_t *weights16, const int32_t *bias,
                             const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                             int8_t *output);

/*
 * Depthwise convolution, TFLM's DepthwiseConvPerChannel: output channel oc = ic * depth_multiplier + m sums
 * weights[0][ky][kx][oc] * (input[b][iy][ix][ic] + input_offset) over the taps, then requantizes as conv2d.
 *
 * weights: int8 [1][kernel_h][kernel_w][out_c]; other arguments as tinyaot_conv2d_s8.
 */
void tinyaot_depthwise_conv2d_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                 const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                                 int8_t *output);

/* One output pixel (oy, ox) of tinyaot_depthwise_conv2d_s8 from one batch's image into out (out_c bytes): the
 * step the ring kernel takes; params->batches is not read. */
void tinyaot_depthwise_conv2d_pixel_s8(const int8_t *image, const int8_t *weights, const int32_t *bias,
                                       const int32_t *multiplier, const int32_t *shift,
                                       const tinyaot_conv_params *params, int32_t oy, int32_t ox, int8_t *out);

/*
 * In-place ("ring") variants of the two convolutions above: the same integer results, but each output pixel is
 * computed into slot q % ring_pixels of the scratch `ring` (int8 [ring_pixels][out_c], the plan's short-lived
 * buffer) and copied to the output ring_pixels - 1 pixels later, so the output may start at the input's
 * address (the compiler chose ring_pixels for this layer's geometry). ring must not overlap input or output.
 */
void tinyaot_conv2d_inplace_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                               const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *params,
                               int8_t *ring, int32_t ring_pixels, int8_t *output);
void tinyaot_conv2d_1x1_inplace_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                   const int32_t *multiplier, const int32_t *shift,
                                   const tinyaot_conv_params *params, int8_t *ring, int32_t ring_pixels,
                                   int8_t *output);  /* pointwise, bias folded as for tinyaot_conv2d_1x1_s8 */
void tinyaot_depthwise_conv2d_inplace_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                                         const int32_t *multiplier, const int32_t *shift,
                                         const tinyaot_conv_params *params, int8_t *ring, int32_t ring_pixels,
                                         int8_t *output);

/* Geometry and clamp of one pooling layer, fixed at compile time. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t count_include_pad;     /* 0: divide by the taps inside the input (TFLite); 1: by the whole window */
    int32_t zero_point;            /* what a padded tap holds when count_include_pad is 1 (real 0) */
    int32_t act_min, act_max;
} tinyaot_pool_params;

/*
 * Average pooling, TFLM's AveragePool: the window clipped to the input, the sum divided rounding half away
 * from zero, clamped. Input and output share qparams. input: int8 [batches][in_h][in_w][channels];
 * output: int8 [batches][out_h][out_w][channels], must not overlap input.
 */
void tinyaot_avg_pool2d_s8(const int8_t *input, const tinyaot_pool_params *params, int8_t *output);

/* Offsets, shifts and Q31 multipliers of one int8 add (TFLM's CalculateOpDataAdd), fixed at compile time. */
typedef struct {
    int32_t size;                  /* elements in each input and the output */
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;            /* 20 */
    int32_t input1_multiplier, input1_shift;   /* shifts <= 0 */
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
} tinyaot_add_params;

/*
 * Elementwise add, TFLM's int8 Add: output[i] = clamp(requantize(requantize((input1[i] + input1_offset) <<
 * left_shift, input1_multiplier, input1_shift) + requantize(... input2 ...), output_multiplier, output_shift)
 * + output_offset). In place: output may be input1 or input2.
 */
void tinyaot_add_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output);

/*
 * A conv2d with a residual add in its epilogue (conv2d_add): output = add(skip, conv) when skip_input is 1,
 * add(conv, skip) when 2, where conv is tinyaot_conv2d_s8's int8 result (conv_params, its own output offset
 * and clamp) and add is tinyaot_add_s8 with add_params (size is ignored: the kernel adds pixel by pixel).
 * skip: int8 with the output's shape. output may be skip itself (in place), never the input.
 */
void tinyaot_conv2d_add_s8(const int8_t *input, const int8_t *weights, const int32_t *bias,
                           const int32_t *multiplier, const int32_t *shift, const tinyaot_conv_params *conv_params,
                           const int8_t *skip, const tinyaot_add_params *add_params, int32_t skip_input,
                           int8_t *output);

/*
 * Softmax over rows of `depth` values, TFLM's reference int8 Softmax (gemmlowp fixed point); output scale
 * 1/256, zero point -128. input_multiplier / input_left_shift scale input differences to Q5.26; differences
 * below diff_min give -128. input, output: int8 [outer][depth]; output may be the input.
 */
void tinyaot_softmax_s8(const int8_t *input, int32_t outer, int32_t depth, int32_t input_multiplier,
                        int32_t input_left_shift, int32_t diff_min, int8_t *output);

/*
 * A uint8 model input as int8: output[i] = input[i] - 128 (the zero point moves by -128, the scale stays).
 * May run in place (output == input).
 */
void tinyaot_uint8_to_int8(const uint8_t *input, int32_t size, int8_t *output);

#endif /* TINYAOT_KERNELS_H */
