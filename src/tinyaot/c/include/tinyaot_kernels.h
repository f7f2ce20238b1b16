/*
 * tinyaot_kernels.h - the int8 kernel library generated models call.
 *
 * Every kernel has a NumPy twin of the same name in tinyaot/ref/ and must match it bit for bit.
 * Layouts: activations are int8, row-major (NHWC for images); weights are int8 [out][...]; per-channel
 * requantization parameters are int32 arrays, computed at compile time.
 *
 * Calling convention: kernel(input(s), params, output). Inputs and outputs are arena buffers; `params` points to
 * a `static const tinyaot_<op>_params` in flash that the compiler filled from the reference's Params dataclass of
 * the same name (ref/<kernel>.py: ConvParams -> tinyaot_conv_params, member for field), so both read the same
 * numbers; the arrays it points to are in flash too. Kernels copy the members they loop over into locals first:
 * a store through int8_t * may alias the struct, which would force a reload after every store.
 */
#ifndef TINYAOT_KERNELS_H
#define TINYAOT_KERNELS_H

#include <stdint.h>

/* One fully connected layer (Linear). */
typedef struct {
    const void *weights;           /* int8 [out_features][in_features], symmetric (zero point 0);
                                      tinyaot_fully_connected_wide_s8: int32 words */
    const int32_t *bias;           /* [out_features], with input_offset * sum_k weights[c][k] folded in */
    const int32_t *multiplier;     /* [out_features], Q31 */
    const int32_t *shift;          /* [out_features], > 0: left */
    int32_t output_offset;         /* output zero point */
    int32_t act_min, act_max;      /* fused activation, int8 units */
    int32_t batches, in_features, out_features;
} tinyaot_fully_connected_params;

/*
 * Fully connected: output[b][c] = clamp(requantize(bias[c] + sum_k input[b][k] * weights[c][k],
 * multiplier[c], shift[c]) + output_offset, act_min, act_max).
 * input: int8 [batches][in_features]; output: int8 [batches][out_features], must not overlap input.
 */
void tinyaot_fully_connected_s8(const int8_t *input, const tinyaot_fully_connected_params *params, int8_t *output);

/*
 * The speed kernel (plan/kernels.py, in_features a multiple of 8, every channel's requantization one the fast
 * form takes exactly: ref/per_channel.py; tinyaot_requantize_right; shift holds the right shifts, positive, 0 for
 * a zero or left shift, whose channel's weights and bias were scaled at compile time; multiplier is int32
 * [out][3]: (multiplier, right shift, floor(2^right / 2) + (output_offset << right)), the last letting a whole
 * group of eight outputs be rounded and offset in registers; right shifts at most 22 so it fits): the same
 * results, eight outputs at a time with weights widened at compile
 * time. weights is int32 [ceil(out_features / 8)][in_features / 4][2][8]: for output 8g + i and inputs 4j..4j+3,
 * (w[4j] | w[4j+2] << 16) at [g][j][0][i] and (w[4j+1] | w[4j+3] << 16) at [g][j][1][i], low halves first, zero
 * beyond out_features (codegen/emit_conv.py: wide_fc_weights).
 */
void tinyaot_fully_connected_wide_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                     int8_t *output);

/* Its size-mode twin: int8 weights [ceil(out_features / 8)][in_features / 4][8][4] (per group of eight outputs
 * and four inputs, each output's four bytes; codegen/emit_conv.py: wide_fc_w8_weights), widened as read. */
void tinyaot_fully_connected_wide_w8_s8(const int8_t *input, const tinyaot_fully_connected_params *params,
                                        int8_t *output);

/* Geometry and clamp of one max pooling layer. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;     /* rows / columns of (ignored) padding before the input */
    int32_t out_h, out_w;
    int32_t act_min, act_max;      /* fused clamp, in output (= input) units */
} tinyaot_max_pool2d_params;

/*
 * Max pooling over NHWC: output[b][oy][ox][c] = clamp(max over the window clipped to the input).
 * Window rows oy * stride_h - pad_top + [0, kernel_h), columns likewise; padding never wins. Input and output
 * share qparams; output must not overlap input.
 */
void tinyaot_max_pool2d_s8(const int8_t *input, const tinyaot_max_pool2d_params *params, int8_t *output);

/* One mean over a run of consecutive axes: the input seen as [outer][count][inner]. */
typedef struct {
    int32_t outer;                 /* product of the dims before the averaged axes */
    int32_t count;                 /* values averaged per output */
    int32_t inner;                 /* product of the dims after them (the channels of a global pool) */
    int32_t bias;                  /* -input_zero_point * count */
    int32_t multiplier, shift;     /* input_scale / output_scale / count (TFLM's folding) */
    int32_t output_zero_point;
    int32_t act_min, act_max;
} tinyaot_mean_params;

/*
 * Mean (global average pooling: axes 1, 2 of NHWC), TFLM's int8 MEAN:
 * output[o][c] = clamp(requantize(bias + sum_s input[o][s][c], multiplier, shift) + output_zero_point).
 * output: int8 [outer][inner]; must not overlap input.
 */
void tinyaot_mean_s8(const int8_t *input, const tinyaot_mean_params *params, int8_t *output);

/* One concatenation of num_inputs tensors. */
typedef struct {
    int32_t num_inputs;
    const int32_t *chunks;           /* [num_inputs]: bytes each input contributes per outer index */
    const int32_t *multiplier;       /* [num_inputs], Q31 of input_scale / output_scale */
    const int32_t *shift;            /* [num_inputs] */
    const int32_t *input_zero_point; /* [num_inputs] */
    int32_t output_zero_point;
    int32_t outer;                   /* product of the dims before the axis */
} tinyaot_concat_params;

/*
 * Concatenation: for o in [0, outer), for each input i, chunks[i] bytes of inputs[i] + o * chunks[i] go to the
 * output, requantized from input i's qparams to the output's (copied when they are equal).
 * inputs: num_inputs pointers to int8 tensors; output must not overlap any input.
 */
void tinyaot_concat_s8(const int8_t *const *inputs, const tinyaot_concat_params *params, int8_t *output);

/* Padding modes (tinyaot_pad_params.mode): what the padded pixels hold. */
#define TINYAOT_PAD_CONSTANT 0     /* pad_value */
#define TINYAOT_PAD_REFLECT 1      /* the input mirrored about its edge pixel: ... x2 x1 | x0 x1 x2 ... */
#define TINYAOT_PAD_SYMMETRIC 2    /* mirrored with the edge pixel: ... x1 x0 | x0 x1 ... */
#define TINYAOT_PAD_REPLICATE 3    /* the edge pixel repeated: ... x0 x0 | x0 x1 ... */

/* One spatial padding of NHWC. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int32_t pad_value;             /* the zero point: constant padding is real 0 */
    int32_t mode;                  /* TINYAOT_PAD_*; reflect pads by < the axis size, symmetric by <= it */
} tinyaot_pad_params;

/*
 * Spatial padding: output is [batches][pad_top + in_h + pad_bottom][pad_left + in_w + pad_right][channels], the
 * padded pixels pad_value or copies of input pixels (mode); must not overlap input.
 */
void tinyaot_pad_s8(const int8_t *input, const tinyaot_pad_params *params, int8_t *output);

/* One nearest-neighbour resize of NHWC (TFLM's RESIZE_NEAREST_NEIGHBOR). */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    const int32_t *src_y;          /* [out_h]: the input row each output row copies (fixed at compile time) */
    const int32_t *src_x;          /* [out_w]: the input column each output column copies */
} tinyaot_resize_nearest_params;

/*
 * Nearest resize: output[b][y][x][c] = input[b][src_y[y]][src_x[x]][c]. Output must not overlap input.
 */
void tinyaot_resize_nearest_s8(const int8_t *input, const tinyaot_resize_nearest_params *params, int8_t *output);

/* One bilinear resize of NHWC (TFLM's integer RESIZE_BILINEAR, ResizeBilinearInteger). */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t height_scale_10;       /* in_h / out_h in units of 1/1024 (align_corners: (in_h - 1) / (out_h - 1)) */
    int32_t width_scale_10;
    int32_t half_pixel_centers;    /* 1: source coordinate (o + 1/2) * scale - 1/2; 0: o * scale */
} tinyaot_resize_bilinear_params;

/*
 * Bilinear resize: each output value blends the four input pixels around its source coordinate (in 1/1024
 * pixel) with weights that sum to 2^20, divided by 2^20 rounding half away from zero. Same qparams in and out.
 * Output must not overlap input.
 */
void tinyaot_resize_bilinear_s8(const int8_t *input, const tinyaot_resize_bilinear_params *params,
                                int8_t *output);

/* One int8 multiply (TFLM's int8 MUL). */
typedef struct {
    int32_t out_shape[4];          /* the output as 4-D, axes merged (ref/broadcast.py) */
    int32_t a_strides[4];          /* element strides of input1 along the output's axes; 0 where it broadcasts */
    int32_t b_strides[4];          /* likewise for input2 */
    int32_t size;                  /* output elements */
    int32_t input1_offset, input2_offset, output_offset;
    int32_t multiplier, shift;
    int32_t act_min, act_max;
} tinyaot_mul_params;

/*
 * Elementwise multiply: output[i] = clamp(requantize((input1[i] + input1_offset) * (input2[i] + input2_offset),
 * multiplier, shift) + output_offset, act_min, act_max).
 * tinyaot_mul_s8: both operands and the output hold `size` elements (the strides are not read).
 * tinyaot_mul_broadcast_s8: the output is out_shape (row-major), the operands read at their strides.
 * In place: output may be an operand that has the output's full shape.
 */
void tinyaot_mul_s8(const int8_t *input1, const int8_t *input2, const tinyaot_mul_params *params, int8_t *output);
void tinyaot_mul_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_mul_params *params,
                              int8_t *output);

/* One elementwise function as a table. */
typedef struct {
    int32_t size;                  /* elements */
    const int8_t *table;           /* [256]: the output for input q at [q + 128], built at compile time */
} tinyaot_lut_params;

/* Table lookup: output[i] = table[input[i] + 128]. In place. */
void tinyaot_lut_s8(const int8_t *input, const tinyaot_lut_params *params, int8_t *output);

/* One standalone ReLU / clamp with rescaling. */
typedef struct {
    int32_t size;
    int32_t multiplier, shift;     /* input_scale / output_scale */
    int32_t input_zero_point, output_zero_point;
    int32_t act_min, act_max;
} tinyaot_relu_params;

/*
 * ReLU / clamp, TFLM's int8 RELU: output[i] = clamp(requantize(input[i] - input_zero_point, multiplier, shift)
 * + output_zero_point, act_min, act_max); a pure clamp when the qparams are equal. In place.
 */
void tinyaot_relu_s8(const int8_t *input, const tinyaot_relu_params *params, int8_t *output);

/* One PReLU or leaky ReLU (TFLM's int8 PRELU / LEAKY_RELU). */
typedef struct {
    int32_t out_shape[4];          /* the output (and input) as 4-D, axes merged (ref/broadcast.py) */
    int32_t alpha_strides[4];      /* element strides of alpha along the output's axes; 0 where it broadcasts */
    int32_t input_offset, alpha_offset, output_offset;  /* -input_zp, -alpha_zp, output_zp */
    int32_t output_multiplier_1, output_shift_1;       /* input >= its zero point: input_scale / output_scale */
    int32_t output_multiplier_2, output_shift_2;       /* below: input_scale * alpha_scale / output_scale;
                                                          negative: the negated requantization by its magnitude */
    const int8_t *alpha;           /* alpha's values (leaky ReLU: one 1, its slope in multiplier 2) */
} tinyaot_prelu_params;

/*
 * PReLU and leaky ReLU, TFLM's BroadcastPrelu4DSlow and QuantizeLeakyRelu: v = input[i] + input_offset;
 * output[i] = clamp((v >= 0 ? requantize(v, output_multiplier_1, output_shift_1) : requantize(v * (alpha +
 * alpha_offset), output_multiplier_2, output_shift_2)) + output_offset, -128, 127), alpha read at its strides.
 * In place.
 */
void tinyaot_prelu_s8(const int8_t *input, const tinyaot_prelu_params *params, int8_t *output);

/* One requantization between 8-bit tensors (the IR's `quantize` op): int8 -> int8, or a legacy model's uint8
 * boundary (uint8 -> int8, int8 -> uint8). */
typedef struct {
    int32_t size;
    int32_t multiplier, shift;     /* input_scale / output_scale */
    int32_t input_zero_point, output_zero_point;
    int32_t input_uint8;           /* 1: input is uint8_t, 0: int8_t */
    int32_t output_uint8;          /* 1: output is uint8_t (clamped to [0, 255]), 0: int8_t ([-128, 127]) */
} tinyaot_requantize_params;

/*
 * Requantize, TFLM's Requantize: output[i] = clamp(requantize(input[i] - input_zero_point, multiplier, shift)
 * + output_zero_point) to the output type's range. In place.
 */
void tinyaot_requantize_s8(const void *input, const tinyaot_requantize_params *params, void *output);

/* One requantization where int8, int16 (16x8) and int32 tensors meet (the IR's `quantize` op). */
typedef struct {
    int32_t size;
    int32_t multiplier, shift;     /* input_scale / output_scale */
    int32_t input_zero_point, output_zero_point;
    int32_t input_bits, output_bits; /* 8: int8, 16: int16, 32: int32 */
} tinyaot_requantize16_params;

/*
 * TFLM's Requantize between integer types: output[i] = clamp(requantize(input[i] - input_zero_point,
 * multiplier, shift) + output_zero_point) to the output type's range; input and output are int8_t, int16_t or
 * int32_t as input_bits / output_bits say.
 */
void tinyaot_requantize_s16(const void *input, const tinyaot_requantize16_params *params, void *output);

/* One axis permutation, reduced to the axes that move bytes (ref/transpose_s8.py), of up to 6-D. */
typedef struct {
    int32_t out_shape[6];          /* left-padded with 1s to 6-D */
    int32_t in_strides[6];         /* the input element stride along each output axis */
} tinyaot_transpose_params;

/* Transpose: the output, row-major, reads the input at in_strides. Output must not overlap input. */
void tinyaot_transpose_s8(const int8_t *input, const tinyaot_transpose_params *params, int8_t *output);

/* One slice x[begin:end:step], resolved to a walk of up to 4 axes (merged where the slice takes an axis whole). */
typedef struct {
    int32_t offset;                /* input elements before the first one taken */
    int32_t out_shape[4];          /* the walk, left-padded with 1s */
    int32_t in_strides[4];         /* the input element stride along each walk axis */
} tinyaot_slice_params;

/*
 * Slice: the output, row-major, reads the input from input + offset at in_strides (runs of in_strides[3] == 1
 * moved at once). The output may sit at or below the input's first byte read (it never writes ahead of a read).
 */
void tinyaot_slice_s8(const int8_t *input, const tinyaot_slice_params *params, int8_t *output);

/*
 * Geometry, offsets, clamp and constants of one convolution (conv2d or depthwise), fixed at compile time.
 * A tap (ky, kx) of output pixel (oy, ox) reads input row oy * stride_h - pad_top + ky * dilation_h
 * (columns likewise); taps outside the input are skipped (padding with the input zero point).
 */
typedef struct {
    const void *weights;           /* int8 [out_c][kernel_h][kernel_w][in_c / groups], symmetric; depthwise: int8
                                      [1][kernel_h][kernel_w][out_c]; tinyaot_conv2d_patch_s8: int32 words */
    const int32_t *bias;           /* [out_c] */
    const int32_t *multiplier;     /* [out_c], Q31 */
    const int32_t *shift;          /* [out_c], > 0: left */
    int32_t input_offset;          /* -input zero point, in [-127, 128] */
    int32_t output_offset;         /* output zero point */
    int32_t act_min, act_max;      /* fused activation, int8 units */
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t depth_multiplier;      /* depthwise: out_c = in_c * depth_multiplier; 1 for conv2d */
    int32_t groups;                /* conv2d: output channel oc reads input channels of group oc / (out_c / groups),
                                      [g * in_c / groups, (g + 1) * in_c / groups); 1 for depthwise */
} tinyaot_conv_params;

/*
 * 2-D convolution, TFLM's ConvPerChannel: output[b][oy][ox][oc] = clamp(requantize(bias[oc] +
 * sum_taps weights[oc][ky][kx][ic] * (input[b][iy][ix][g * in_c / groups + ic] + input_offset), multiplier[oc],
 * shift[oc]) + output_offset, act_min, act_max), g the output channel's group (0 when groups = 1). The pointwise
 * and patch kernels below take groups too.
 * input: int8 [batches][in_h][in_w][in_c]; output: int8 [batches][out_h][out_w][out_c], must not overlap input.
 */
void tinyaot_conv2d_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output);

/*
 * Pointwise conv2d (1x1 kernel, no padding, any stride): as tinyaot_conv2d_s8, with bias[oc] already holding
 * input_offset * sum_ic weights[oc][0][0][ic] (folded at compile time). Output pixels in row-major order.
 */
void tinyaot_conv2d_1x1_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output);

/*
 * conv2d for windows of few bytes, chosen at compile time when kernel_h * kernel_w > 1, the taps
 * kernel_h * kernel_w * in_c are at most TINYAOT_CONV_PATCH16_TAPS, and a window row (kernel_w * in_c bytes) is
 * shorter than TINYAOT_CONV_SHORT_ROW or dilated (first layers: LeNet 5x5x1, KWS 10x4x1, RGB stems 3x3x3).
 * As tinyaot_conv2d_s8, but each output pixel's window is gathered once (zero point outside the image), widened
 * to int16 with the input offset, and dotted with weights widened at compile time: weights is int32
 * [ceil(out_c / 4)][ceil(taps / 4)][4][2], for output channel 4g + i and taps 4j..4j+3 the words
 * (w[4j] | w[4j+2] << 16, w[4j+1] | w[4j+3] << 16), low halves first, zero beyond taps and out_c
 * (codegen/emit_conv.py: patch_weights). Output pixels in row-major order.
 */
#define TINYAOT_CONV_PATCH16_TAPS 80  /* window bytes, then widened: 3 bytes of stack per tap */
#define TINYAOT_CONV_SHORT_ROW 16     /* window rows shorter than this gather into a patch (also in conv2d_s8) */
void tinyaot_conv2d_patch_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output);

/*
 * Depthwise convolution, TFLM's DepthwiseConvPerChannel: output channel oc = ic * depth_multiplier + m sums
 * weights[0][ky][kx][oc] * (input[b][iy][ix][ic] + input_offset) over the taps, then requantizes as conv2d.
 */
void tinyaot_depthwise_conv2d_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *output);

/* One output pixel (oy, ox) of tinyaot_depthwise_conv2d_s8 from one batch's image into out (out_c bytes): the
 * step the ring kernel takes; params->batches is not read. */
void tinyaot_depthwise_conv2d_pixel_s8(const int8_t *image, const tinyaot_conv_params *params, int32_t oy,
                                       int32_t ox, int8_t *out);

/*
 * In-place ("ring") variants of the convolutions above: the same integer results, but each output pixel is
 * computed into slot q % ring_pixels of the scratch `ring` (int8 [ring_pixels][out_c], the plan's short-lived
 * buffer) and copied to the output ring_pixels - 1 pixels later, so the output may start at the input's
 * address (the compiler chose ring_pixels for this layer's geometry). ring must not overlap input or output.
 * tinyaot_conv2d_1x1_inplace_s8 is the pointwise one, bias folded as for tinyaot_conv2d_1x1_s8.
 */
void tinyaot_conv2d_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                               int32_t ring_pixels, int8_t *output);
void tinyaot_conv2d_1x1_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                                   int32_t ring_pixels, int8_t *output);
void tinyaot_depthwise_conv2d_inplace_s8(const int8_t *input, const tinyaot_conv_params *params, int8_t *ring,
                                         int32_t ring_pixels, int8_t *output);

/*
 * Geometry, offsets, clamp and constants of one transposed convolution (TFLM's TRANSPOSE_CONV): input pixel
 * (iy, ix) reaches output pixel (iy * stride_h - pad_top + ky, ix * stride_w - pad_left + kx) through tap (ky, kx).
 */
typedef struct {
    const int8_t *weights;         /* [out_c][kernel_h][kernel_w][in_c], symmetric */
    const int32_t *bias;           /* [out_c] */
    const int32_t *multiplier;     /* [out_c], Q31 */
    const int32_t *shift;          /* [out_c], > 0: left */
    int32_t input_offset;          /* -input zero point */
    int32_t output_offset;         /* output zero point */
    int32_t act_min, act_max;      /* fused activation, int8 units */
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;     /* rows / columns of the full result cropped above / left of the output */
} tinyaot_transpose_conv_params;

/*
 * Transposed convolution: output[b][oy][ox][oc] = clamp(requantize(bias[oc] + sum over the taps with
 * oy + pad_top = iy * stride_h + ky, ox + pad_left = ix * stride_w + kx inside the input of
 * weights[oc][ky][kx][ic] * (input[b][iy][ix][ic] + input_offset)) + output_offset, act_min, act_max).
 * Gathered per output pixel, no scratch; output pixels in row-major order, each after its taps are read, so the
 * output may sit over the input at the distance plan/overlap.py's transposed_rules computes.
 */
void tinyaot_transpose_conv2d_s8(const int8_t *input, const tinyaot_transpose_conv_params *params, int8_t *output);

/* Geometry and clamp of one average pooling layer. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int32_t count_include_pad;     /* 0: divide by the taps inside the input (TFLite); 1: inside the padded input */
    int32_t zero_point;            /* what a padded tap holds when count_include_pad is 1 (real 0) */
    int32_t act_min, act_max;
} tinyaot_pool_params;

/*
 * Average pooling, TFLM's AveragePool: the window clipped to the input, the sum divided (by the taps inside the
 * input, or with count_include_pad inside the padded input) rounding half away from zero, clamped. Input and output share qparams. input: int8 [batches][in_h][in_w][channels];
 * output: int8 [batches][out_h][out_w][channels], must not overlap input.
 */
void tinyaot_avg_pool2d_s8(const int8_t *input, const tinyaot_pool_params *params, int8_t *output);

/*
 * Offsets, shifts and Q31 multipliers of one int8 add (TFLM's CalculateOpDataAdd), and each input's scaled value
 * tabulated at compile time: 2 x 256 int32 in flash, 2 KB per add layer.
 */
typedef struct {
    int32_t size;                  /* output elements */
    int32_t out_shape[4];          /* the output as 4-D, axes merged (ref/broadcast.py); broadcast kernel only */
    int32_t a_strides[4];          /* element strides of input1 along the output's axes; 0 where it broadcasts */
    int32_t b_strides[4];          /* likewise for input2 */
    int32_t subtract;              /* 1: input1 - input2 (TFLM's Sub; input2_table holds negated values) */
    int32_t input1_offset, input2_offset, output_offset;
    int32_t left_shift;            /* 20 */
    int32_t input1_multiplier, input1_shift;   /* shifts <= 0 */
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
    const int32_t *input1_table;   /* [256]: requantize((q + input1_offset) << left_shift, ...) at q + 128;
                                      NULL (size and memory modes): computed per element */
    const int32_t *input2_table;   /* [256]: the same for input2 */
    /* 0, or a form the compiler proved exact on every sum of the tables: (((sum * sum_multiplier) >> 32)
     * + sum_bias) >> sum_shift is the output before the clamp (output_offset included) */
    int32_t sum_multiplier, sum_bias, sum_shift;
} tinyaot_add_params;

/*
 * Elementwise add, TFLM's int8 Add: output[i] = clamp(requantize(requantize((input1[i] + input1_offset) <<
 * left_shift, input1_multiplier, input1_shift) + requantize(... input2 ...), output_multiplier, output_shift)
 * + output_offset), the inner two read from the tables. In place: output may be input1 or input2.
 */
void tinyaot_add_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params, int8_t *output);
/* The same with NumPy broadcasting: the output is out_shape (row-major), the operands read at their strides.
 * In place only over an operand with the output's full shape. */
void tinyaot_add_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_add_params *params,
                              int8_t *output);

/* One int8 minimum / maximum (TFLM's MINIMUM / MAXIMUM when the qparams agree). */
typedef struct {
    int32_t size;                  /* output elements */
    int32_t out_shape[4];          /* the output as 4-D, axes merged (ref/broadcast.py) */
    int32_t a_strides[4];          /* element strides of input1 along the output's axes; 0 where it broadcasts */
    int32_t b_strides[4];          /* likewise for input2 */
    int32_t is_max;                /* 1: maximum, 0: minimum */
    int32_t input1_rescale;        /* 1: input1 is requantized to the output's qparams first */
    int32_t input1_multiplier, input1_shift, input1_zero_point;   /* input1_scale / output_scale */
    int32_t input2_rescale;
    int32_t input2_multiplier, input2_shift, input2_zero_point;
    int32_t output_zero_point;
    int32_t act_min, act_max;
    const int8_t *input1_table;    /* [256]: input1 q in the output's qparams at q + 128; NULL when it is not
                                      rescaled, or (size and memory modes) computed per element */
    const int8_t *input2_table;    /* the same for input2 */
} tinyaot_minmax_params;

/*
 * output[i] = clamp(max (or min) of the two operands in the output's qparams, act_min, act_max); an operand is
 * used as it is when it has them. tinyaot_minmax_s8: both operands hold `size` elements; tinyaot_minmax_broadcast_s8:
 * the output is out_shape, the operands read at their strides. In place over an operand with the output's shape.
 */
void tinyaot_minmax_s8(const int8_t *input1, const int8_t *input2, const tinyaot_minmax_params *params,
                       int8_t *output);
void tinyaot_minmax_broadcast_s8(const int8_t *input1, const int8_t *input2, const tinyaot_minmax_params *params,
                                 int8_t *output);

/* A conv2d with a residual add in its epilogue. */
typedef struct {
    tinyaot_conv_params conv;      /* the conv, to its own int8 result (its own output offset and clamp) */
    tinyaot_add_params add;        /* the add of that result and the skip (size is not read) */
    int32_t skip_input;            /* 1: the skip is the add's first operand, 2: its second */
} tinyaot_conv_add_params;

/*
 * conv2d_add: output = add(skip, conv(input)) when skip_input is 1, add(conv(input), skip) when 2, where conv
 * is tinyaot_conv2d_s8's int8 result and add is tinyaot_add_s8, computed pixel by pixel.
 * skip: int8 with the output's shape. output may be skip itself (in place), never the input.
 */
void tinyaot_conv2d_add_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                           int8_t *output);

/*
 * The speed kernels of conv2d and conv2d_add (conv2d_pairs_s8.c): the same results, two output pixels at a time
 * through an int16 matrix microkernel. weights is int32 [ceil(out_c / 4)][taps_padded / 2][4] with
 * taps_padded = kernel_h * kernel_w * in_c rounded up to 8 (an RGB 3x3 stem called straight: 28; the taps in
 * the stem order where kernel rows are not whole quads: ref/conv2d_pairs_s8.py window_order, pairs_taps): for
 * output channel 4g + i and taps 4j..4j+3 the
 * words (w[4j] | w[4j+2] << 16) at [g][2j][i] and (w[4j+1] | w[4j+3] << 16) at [g][2j+1][i], low halves first,
 * each weight doubled (so is bias: the sums are 2 * acc), zero beyond the taps and out_c (codegen/emit_conv.py:
 * pair_weights). work is the plan's buffer for this layer,
 * TINYAOT_CONV_PAIRS_WORK_BYTES(...) bytes, 4-byte aligned, overlapping neither input nor output. Chosen at
 * compile time only where every channel's requantization is one the fast form (tinyaot_requantize_right) takes
 * exactly (ref/per_channel.py); shift then holds the right shifts, positive (negated at compile time; 0 for a
 * zero or left shift, whose channel's weights and bias were scaled by 2^shift; a constant channel has zero
 * weights); for tinyaot_conv2d_pairs_s8 / _add_pairs_s8, multiplier is int32 [ceil(out_c / 4) * 4][3]:
 * (multiplier, right, floor(2^right / 2) + (output_offset << right)), so whole groups are rounded and offset
 * in registers; and bias
 * the accumulators' start per group, both pixels: [ceil(out_c / 4)][2][4] (size mode: [ceil(out_c / 2)][2][2]),
 * zero beyond out_c (codegen/emit_conv.py: pair_bias). Output pixels in row-major order, a pair written after both windows are read.
 */
#define TINYAOT_CONV_PAIRS_TAPS(kernel_h, kernel_w, in_c) (((kernel_h) * (kernel_w) * (in_c) + 7) / 8 * 8)
#define TINYAOT_CONV_PAIRS_WORK_BYTES(taps_padded, out_c) (5 * (taps_padded) + 2 * (out_c))
void tinyaot_conv2d_pairs_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work, int8_t *output);
void tinyaot_conv2d_add_pairs_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                 int32_t *work, int8_t *output);

/*
 * A conv2d whose constant channels (all-zero weights, or multiplier 0: their output is the same at every pixel)
 * the pairs kernels skip: conv holds the live channels only (conv.out_c of them, their weights, bias and
 * requantization laid out as above), each output pixel of out_c channels is first `fill` (the constant channels'
 * bytes; int8 [out_c]) and then gets live channel j's result at channel live[j] (int16 [conv.out_c]). work is
 * TINYAOT_CONV_PAIRS_WORK_BYTES(taps_padded, conv.out_c) bytes.
 */
typedef struct {
    tinyaot_conv_params conv;      /* the live channels */
    int32_t out_c;                 /* the layer's output channels */
    const int16_t *live;           /* [conv.out_c]: the output channel of each live channel */
    const int8_t *fill;            /* [out_c]: every output pixel before its live channels are written */
} tinyaot_conv_sparse_params;
void tinyaot_conv2d_pairs_sparse_s8(const int8_t *input, const tinyaot_conv_sparse_params *params, int32_t *work,
                                    int8_t *output);
void tinyaot_conv2d_pairs_sparse_w8_s8(const int8_t *input, const tinyaot_conv_sparse_params *params, int32_t *work,
                                       int8_t *output);

/*
 * The size mode's pairs kernels: the same, with int8 weights widened as they are read (no more flash than the
 * int8 model): weights is int8 [ceil(out_c / 2)][taps_padded / 4][2][4], for output channels 2g, 2g + 1 and
 * taps 4j..4j+3 the four bytes in tap order, zero beyond the taps and out_c (codegen/emit_conv.py: w8_weights).
 */
void tinyaot_conv2d_pairs_w8_s8(const int8_t *input, const tinyaot_conv_params *params, int32_t *work,
                                int8_t *output);
void tinyaot_conv2d_add_pairs_w8_s8(const int8_t *input, const int8_t *skip, const tinyaot_conv_add_params *params,
                                    int32_t *work, int8_t *output);

/* One softmax over rows (TFLM's reference int8 Softmax). */
typedef struct {
    int32_t outer;                 /* rows */
    int32_t depth;                 /* values per row */
    int32_t input_multiplier;      /* Q31: input differences scaled to Q5.26 with input_left_shift */
    int32_t input_left_shift;      /* >= 0 */
    int32_t diff_min;              /* differences below this give the output's minimum */
    int32_t output_bits;           /* 8: int8 output; 16: int16 (TFLM's int8 -> int16 softmax) */
} tinyaot_softmax_params;

/*
 * Softmax over rows of `depth` values (gemmlowp fixed point); int8 output at scale 1/256, zero point -128, or
 * int16 output (output_bits 16) at scale 1/65536, zero point -32768. input: int8 [outer][depth]; output:
 * [outer][depth] of int8_t or int16_t; an int8 output may be the input.
 */
void tinyaot_softmax_s8(const int8_t *input, const tinyaot_softmax_params *params, void *output);

/* One L2 normalization over rows (TFLM's reference_integer_ops::L2Normalization). */
typedef struct {
    int32_t outer;                 /* rows */
    int32_t depth;                 /* values per row, normalized together */
    int32_t input_zero_point;
} tinyaot_l2_normalize_params;

/*
 * x / ||x|| over rows of `depth` values: int8 output at scale 1/128, zero point 0, whatever the input's scale.
 * input, output: int8 [outer][depth]; the output may be the input.
 */
void tinyaot_l2_normalize_s8(const int8_t *input, const tinyaot_l2_normalize_params *params, int8_t *output);

/* The model's uint8 input converted to int8. */
typedef struct {
    int32_t size;                  /* elements */
} tinyaot_uint8_to_int8_params;

/*
 * A uint8 model input as int8: output[i] = input[i] - 128 (the zero point moves by -128, the scale stays).
 * May run in place (output == input).
 */
void tinyaot_uint8_to_int8(const uint8_t *input, const tinyaot_uint8_to_int8_params *params, int8_t *output);

/*
 * One layer normalization over the last axis, or group normalization of channels-last data (ref/layer_norm_s8.py,
 * tinyaot's integer definition): the positions * depth / groups values of one group of one row are normalized
 * together (layer_norm: positions = groups = 1).
 */
typedef struct {
    int32_t rows;                  /* layer_norm: product of the dims before the last; group_norm: the batch */
    int32_t positions;             /* positions per row: 1 (layer_norm), H * W (group_norm) */
    int32_t groups;                /* channel groups normalized apart: 1 (layer_norm) */
    int32_t depth;                 /* channels, the last axis */
    int32_t eps_high, eps_low;     /* eps * D^2 / input_scale^2 for D values together: eps_high * 2^31 + eps_low */
    const int32_t *multiplier;     /* [depth], Q31 of gamma / output_scale / 2^8; negative where gamma < 0 */
    const int32_t *shift;          /* [depth] */
    const int32_t *bias;           /* [depth], beta / output_scale * 2^8, rounded */
    int32_t output_zero_point;
} tinyaot_layer_norm_params;

/*
 * LayerNorm of each row of `depth` values, or GroupNorm of each group of channels over the positions of a row:
 * integer sums, an integer 1 / sqrt (a 24-entry table and three Newton steps), the normalized value in Q16, then
 * output[i] = clamp(round((requantize(n_i, multiplier[c], shift[c]) + bias[c]) / 2^8) + output_zero_point, -128,
 * 127) for channel c of value i. input, output: int8 [rows][positions][depth]; output may be the input.
 */
void tinyaot_layer_norm_s8(const int8_t *input, const tinyaot_layer_norm_params *params, int8_t *output);

/* One matrix product of two activations (TFLM's int8 BATCH_MATMUL). */
typedef struct {
    int32_t out_batch[4];          /* the output's batch dims, left-padded with 1s */
    int32_t lhs_batch_strides[4];  /* element strides of lhs per batch dim; 0 where it broadcasts */
    int32_t rhs_batch_strides[4];
    int32_t rows, cols, depth;     /* M, N, K: [M][K] x [K][N] -> [M][N] per batch */
    int32_t lhs_row_stride, lhs_depth_stride;  /* lhs (i, k) at i * lhs_row_stride + k * lhs_depth_stride */
    int32_t rhs_depth_stride, rhs_col_stride;  /* rhs (k, j) at k * rhs_depth_stride + j * rhs_col_stride */
    int32_t lhs_offset, rhs_offset; /* minus the zero points */
    int32_t output_offset;
    int32_t multiplier, shift;     /* float32(lhs_scale * rhs_scale) / output_scale */
} tinyaot_batch_matmul_params;

/*
 * Batched matmul: output[b][i][j] = clamp(requantize(sum_k (lhs(i, k) + lhs_offset) * (rhs(k, j) + rhs_offset),
 * multiplier, shift) + output_offset, -128, 127), the operands read at their strides (a transposed operand, adj_x
 * or adj_y, costs no copy). output: int8 [batches][rows][cols], must not overlap lhs or rhs.
 */
void tinyaot_batch_matmul_s8(const int8_t *lhs, const int8_t *rhs, const tinyaot_batch_matmul_params *params,
                             int8_t *output);

/* The window of a streamed causal conv (passes/streaming.py). */
typedef struct {
    int32_t frame_bytes;           /* one frame of the conv's input */
    int32_t frames;                /* K: the window's frames; the state keeps the last K - 1 */
} tinyaot_frame_shift_params;

/*
 * window = state (K - 1 frames, oldest first) then frame; state then moves on by one frame. state is the
 * layer's slot in the model's state region (it survives invokes); window must not overlap frame or state.
 */
void tinyaot_frame_shift_s8(const int8_t *frame, const tinyaot_frame_shift_params *params, int8_t *window,
                            int8_t *state);

/* One SVDF layer (TFLite's SVDF, TFLite Micro's integer kernel). */
typedef struct {
    int32_t batches, input_size, filters, rank, memory;
    const int8_t *weights_feature; /* [filters][input_size], symmetric */
    const void *weights_time;      /* [filters][memory], the state's type: int16_t (state_bits 16) or int8_t */
    const int32_t *feature_bias;   /* [filters]: -input_zero_point * sum_c weights_feature[f][c], wrapped */
    const int32_t *unit_bias;      /* [filters / rank]: bias - state_zero_point * the unit's weights_time sum */
    int32_t feature_multiplier, feature_shift; /* input_scale * weights_feature_scale / state_scale */
    int32_t output_multiplier, output_shift;   /* state_scale * weights_time_scale / output_scale */
    int32_t state_zero_point, output_zero_point;
    int32_t state_bits;            /* 16: int16 state and weights_time; 8: int8 */
} tinyaot_svdf_params;

/*
 * Per batch row: the state [filters][memory] moves on by one value and each filter's last value becomes
 * clamp(requantize(feature_bias[f] + sum_c weights_feature[f][c] * input[c], feature_*)) to the state's type +
 * state_zero_point; unit u = clamp(requantize(unit_bias[u] + sum over its rank filters' rows of weights_time *
 * state, output_*) + output_zero_point, -128, 127). state is the layer's slot in the model's state region
 * ([batches][filters][memory]; it survives invokes); output must not overlap input.
 */
void tinyaot_svdf_s8(const int8_t *input, const tinyaot_svdf_params *params, int8_t *output, void *state);

/* One unidirectional LSTM layer (TFLite Micro's integer UNIDIRECTIONAL_SEQUENCE_LSTM). */
typedef struct {
    const int8_t *weights_ih;             /* [4H][F], symmetric, gate rows i, f, g, o */
    const int8_t *weights_hh;             /* [4H][H] */
    const int32_t *input_bias;            /* [4H], bias + input_offset * row sums of weights_ih */
    const int32_t *recurrent_bias;        /* [4H], hidden_offset * row sums of weights_hh */
    const int32_t *input_multiplier;      /* [4H], x scale * w scale / 2^-12, Q31 */
    const int32_t *input_shift;           /* [4H], > 0: left */
    const int32_t *recurrent_multiplier;  /* [4H], h scale * w scale / 2^-12 */
    const int32_t *recurrent_shift;
    int32_t forget_multiplier, forget_shift;   /* f * c -> c */
    int32_t update_multiplier, update_shift;   /* i * g -> c */
    int32_t hidden_multiplier, hidden_shift;   /* tanh(c) * o -> h */
    int32_t hidden_offset;                     /* h zero point */
    int32_t tanh_multiplier, tanh_right;       /* the cell state into tanh: (c * m + round) >> right */
    int32_t cell_clip;                         /* int16 units, 0: none */
    int32_t steps, input_size, hidden_size;
    int32_t last_only;                         /* 1: output is the last step's h only */
} tinyaot_lstm_params;

/*
 * LSTM over input int8 [steps][input_size], zero initial state: per step the gates i, f, g, o are int8 fully
 * connected layers into int16 Q3.12 (input and recurrent, saturating sum), then TFLM's int16 sigmoid / tanh
 * (Q0.15); c = sat16(f * c) + sat16(i * g), clipped; h = requantize(tanh(c) * o) + hidden_offset. output: int8
 * [steps][hidden_size], or [hidden_size] when last_only. work: the layer's int16 working memory [6][hidden_size]
 * (cell state, four gates, h as int8 in the last row), placed by the plan; must not overlap input or output.
 */
void tinyaot_lstm_s8(const int8_t *input, const tinyaot_lstm_params *params, int16_t *work, int8_t *output);

/*
 * A streamed LSTM (passes/streaming.py): as tinyaot_lstm_s8 (work: its working memory), from the state in `state`,
 * the layer's slot of the state region ([2][hidden_size] int16: c, then h - hidden_offset; all zero after a
 * reset), which then holds the final state.
 */
void tinyaot_lstm_s8_stateful(const int8_t *input, const tinyaot_lstm_params *params, int16_t *work,
                              int8_t *output, int16_t *state);

/* One unidirectional GRU layer (tinyaot's integer GRU from the LSTM's blocks, ref/gru_s8.py). */
typedef struct {
    const int8_t *weights_ih;             /* [3H][F], symmetric, gate rows r, z, n */
    const int8_t *weights_hh;             /* [3H][H] */
    const int32_t *input_bias;            /* [3H], r, z: b_ih + b_hh, n: b_in; + input_offset * row sums */
    const int32_t *recurrent_bias;        /* [3H], n: b_hn; + hidden_offset * row sums */
    const int32_t *input_multiplier;      /* [3H], x scale * w scale / 2^-12, Q31 */
    const int32_t *input_shift;           /* [3H], > 0: left */
    const int32_t *recurrent_multiplier;  /* [3H], h scale * w scale / 2^-12 */
    const int32_t *recurrent_shift;
    int32_t reset_multiplier, reset_shift;     /* r * (W_hn h + b_hn) -> Q3.12 */
    int32_t keep_multiplier, keep_shift;       /* z * h16 -> h16 */
    int32_t new_multiplier, new_shift;         /* (1 - z) * n -> h16 */
    int32_t narrow_multiplier, narrow_shift;   /* h16 -> h int8 */
    int32_t hidden_offset;                     /* h zero point */
    int32_t steps, input_size, hidden_size;
    int32_t last_only;                         /* 1: output is the last step's h only */
} tinyaot_gru_params;

/*
 * GRU over input int8 [steps][input_size], zero initial state: per step r, z = sigmoid(gate), n = tanh(input part +
 * r * recurrent part), all int16 as in the LSTM; h16 = sat16((1 - z) * n) + sat16(z * h16) (saturating), and
 * h = requantize(h16) + hidden_offset. output: int8 [steps][hidden_size], or [hidden_size] when last_only.
 * work: the layer's int16 working memory [6][hidden_size] (h16, r, z, the candidate's two parts, h as int8 in the
 * last row), placed by the plan; must not overlap input or output.
 */
void tinyaot_gru_s8(const int8_t *input, const tinyaot_gru_params *params, int16_t *work, int8_t *output);

/*
 * A streamed GRU (passes/streaming.py): as tinyaot_gru_s8 (work: its working memory), from h16 in `state`, the
 * layer's slot of the state region ([hidden_size] int16, zero after a reset), which then holds the final h16.
 */
void tinyaot_gru_s8_stateful(const int8_t *input, const tinyaot_gru_params *params, int16_t *work, int8_t *output,
                             int16_t *state);

/* The 16x8 LSTM (int16 input and hidden state, int8 weights, int64 gate biases; ref/lstm_s16.py). */
typedef struct {
    const int8_t *weights_ih;             /* [4H][F], symmetric, gate rows i, f, g, o */
    const int8_t *weights_hh;             /* [4H][H] */
    const int64_t *bias;                  /* [4H], the input FC's (the recurrent FC has none) */
    const int32_t *input_multiplier;      /* [4H], x scale * w scale / 2^-12, Q31 */
    const int32_t *input_shift;           /* [4H], > 0: left */
    const int32_t *recurrent_multiplier;  /* [4H], h scale * w scale / 2^-12 */
    const int32_t *recurrent_shift;
    int32_t forget_multiplier, forget_shift;   /* f * c -> c */
    int32_t update_multiplier, update_shift;   /* i * g -> c */
    int32_t hidden_multiplier, hidden_shift;   /* tanh(c) * o -> h */
    int32_t tanh_multiplier, tanh_right;       /* the cell state into tanh: (c * m + round) >> right */
    int32_t cell_clip;                         /* int16 units, 0: none */
    int32_t steps, input_size, hidden_size;
    int32_t last_only;                         /* 1: output is the last step's h only */
    const int16_t *weights_ih16;          /* weights_ih widened to int16 (speed mode), or NULL */
    const int16_t *weights_hh16;          /* weights_hh widened, or NULL */
} tinyaot_lstm16_params;

/*
 * 16x8 LSTM over input int16 [steps][input_size], zero initial state: as tinyaot_lstm_s8, the gates' fully
 * connected layers TFLM's 16x8 ones (int64 sums, tinyaot_fc16_rows), h = sat16(requantize(tanh(c) * o)) int16.
 * output: int16 [steps][hidden_size], or [hidden_size] when last_only. work: int16 [6][hidden_size] (cell state,
 * four gates, h), placed by the plan; must not overlap input or output.
 */
void tinyaot_lstm_s16(const int16_t *input, const tinyaot_lstm16_params *params, int16_t *work, int16_t *output);

/* A streamed 16x8 LSTM: as tinyaot_lstm_s16, from and back into its slot ([2][hidden_size] int16: c, then h). */
void tinyaot_lstm_s16_stateful(const int16_t *input, const tinyaot_lstm16_params *params, int16_t *work,
                               int16_t *output, int16_t *state);

/* TFLM's int16 sigmoid and tanh, Q3.12 in (tanh: after (x * multiplier + round) >> right), Q0.15 out. */
int16_t tinyaot_sigmoid_q15(int32_t x);
int16_t tinyaot_tanh_q15(int32_t x, int32_t multiplier, int32_t right);

/* The recurrent kernels compute their gate rows TINYAOT_GATE_BLOCK at a time (lstm_s8.c). */
#define TINYAOT_GATE_BLOCK 4

/*
 * 16x8 convolutions (int16 activations, zero point 0; int8 weights, symmetric per output channel), TFLM's int16
 * ConvPerChannel / DepthwiseConvPerChannel. Geometry as tinyaot_conv_params; no offsets.
 */
typedef struct {
    const int8_t *weights;         /* [out_c][kernel_h][kernel_w][in_c / groups] */
    const int64_t *bias;           /* [out_c] (an int32 bias widened) */
    const int32_t *multiplier;     /* [out_c], Q31 */
    const int32_t *shift;          /* [out_c], > 0: left */
    int32_t act_min, act_max;      /* fused activation, int16 units */
    int32_t accumulator_bits;      /* 64: int64 sum, tinyaot_requantize_64 (an int64 bias); 32: the sum wrapped
                                      to int32, tinyaot_requantize (an int32 bias) */
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t groups;                /* channel groups as tinyaot_conv_params */
    const int16_t *weights16;      /* weights widened to int16 (speed mode), or NULL: the kernel widens them */
} tinyaot_conv16_params;

/*
 * 16x8 conv2d: output[b][oy][ox][oc] = clamp(requantize(bias[oc] + sum_taps weights[oc][ky][kx][ic] *
 * input[b][iy][ix][g * in_c / groups + ic]), act_min, act_max), taps outside the image skipped, the sum and the
 * requantization as accumulator_bits says. input: int16 [batches][in_h][in_w][in_c]; output: int16
 * [batches][out_h][out_w][out_c], must not overlap input.
 */
void tinyaot_conv2d_s16(const int16_t *input, const tinyaot_conv16_params *params, int16_t *output);

/* One 16x8 depthwise convolution: as tinyaot_conv16_params, without groups, always int64 sums. */
typedef struct {
    const int8_t *weights;         /* [1][kernel_h][kernel_w][out_c] */
    const int64_t *bias;           /* [out_c] */
    const int32_t *multiplier;     /* [out_c], Q31 */
    const int32_t *shift;          /* [out_c], > 0: left */
    int32_t act_min, act_max;      /* fused activation, int16 units */
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t depth_multiplier;      /* out_c = in_c * depth_multiplier */
} tinyaot_depthwise_conv16_params;

/*
 * 16x8 depthwise conv: output channel oc = ic * depth_multiplier + m sums weights[0][ky][kx][oc] *
 * input[b][iy][ix][ic] over the taps in int64, adds the int64 bias and requantizes with tinyaot_requantize_64.
 * Output must not overlap input.
 */
void tinyaot_depthwise_conv2d_s16(const int16_t *input, const tinyaot_depthwise_conv16_params *params,
                                  int16_t *output);

/* One 16x8 fully connected layer (TFLM's int16 FULLY_CONNECTED). */
typedef struct {
    const int8_t *weights;         /* int8 [out_features][in_features], symmetric */
    const int64_t *bias;           /* [out_features] (an int32 bias's values when bias_bits is 32) */
    const int32_t *multiplier;     /* [out_features], Q31 */
    const int32_t *shift;          /* [out_features], > 0: left */
    int32_t bias_bits;             /* 64: int64 sum, tinyaot_requantize_64; 32: int32 sum (wraps) */
    int32_t act_min, act_max;      /* fused activation, int16 units */
    int32_t batches, in_features, out_features;
    const int16_t *weights16;      /* weights widened to int16 (speed mode), or NULL: the kernel widens them */
} tinyaot_fully_connected16_params;

/*
 * 16x8 fully connected: output[b][c] = clamp(requantize(bias[c] + sum_k input[b][k] * weights[c][k],
 * multiplier[c], shift[c]), act_min, act_max), the sum exact (int64) or wrapped to int32 as bias_bits says.
 * input: int16 [batches][in_features]; output: int16 [batches][out_features], must not overlap input.
 */
void tinyaot_fully_connected_s16(const int16_t *input, const tinyaot_fully_connected16_params *params,
                                 int16_t *output);

/* One 16x8 element-wise add or subtract (TFLM's int16 ADD / SUB, the general path; zero points 0). */
typedef struct {
    int32_t size;                  /* output elements */
    int32_t out_shape[4];          /* the output as 4-D, axes merged (ref/broadcast.py) */
    int32_t a_strides[4];          /* element strides of input1 along the output's axes; 0 where it broadcasts */
    int32_t b_strides[4];          /* likewise for input2 */
    int32_t subtract;              /* 1: input1 - input2, 0: input1 + input2 */
    int32_t left_shift;            /* 15 */
    int32_t input1_multiplier, input1_shift;   /* s1 / (2 max(s1, s2)), shift <= 0 */
    int32_t input2_multiplier, input2_shift;   /* s2 / (2 max(s1, s2)) */
    int32_t output_multiplier, output_shift;   /* 2 max(s1, s2) / (2^left_shift s_out) */
    int32_t act_min, act_max;      /* fused activation, int16 units */
} tinyaot_add16_params;

/*
 * 16x8 add / sub: output = clamp(requantize(requantize(input1 << left_shift, input1_*) +- requantize(input2 <<
 * left_shift, input2_*), output_*)), walked over out_shape with the operands at their strides. In place over an
 * operand with the output's shape.
 */
void tinyaot_add_s16(const int16_t *input1, const int16_t *input2, const tinyaot_add16_params *params,
                     int16_t *output);

/* One 16x8 element-wise multiply (TFLM's int16 MUL; zero points 0). */
typedef struct {
    int32_t size;                  /* output elements */
    int32_t out_shape[4];          /* the output as 4-D, axes merged (ref/broadcast.py) */
    int32_t a_strides[4];          /* element strides of input1 along the output's axes; 0 where it broadcasts */
    int32_t b_strides[4];          /* likewise for input2 */
    int32_t multiplier, shift;     /* s1 * s2 / s_out */
    int32_t act_min, act_max;      /* fused activation, int16 units */
} tinyaot_mul16_params;

/* 16x8 mul: output = clamp(requantize(input1 * input2, multiplier, shift)) over out_shape; in place as add. */
void tinyaot_mul_s16(const int16_t *input1, const int16_t *input2, const tinyaot_mul16_params *params,
                     int16_t *output);

/* ---- 16x8 activations, pooling, softmax, mean (int16 in and out, zero point 0; TFLM's int16 kernels) ---- */

/* One int16 softmax over rows (TFLM's SoftmaxInt16). */
typedef struct {
    int32_t outer;                 /* rows */
    int32_t depth;                 /* values per row */
    int32_t input_multiplier, input_shift;     /* input_scale * beta / (10 / 65535): [-65535, 0] is [-10, 0] */
    const int16_t *exp_lut;        /* [513]: exp over [-10, 0], Q0.15, 7-bit interpolated */
    const int16_t *one_over_one_plus_x_lut;    /* [513]: 1 / (1 + x) over [0, 1], Q0.15 */
} tinyaot_softmax16_params;

/* Softmax over rows of `depth` int16 values; output Q0.15 (scale 1/32768). Output must not overlap input. */
void tinyaot_softmax_s16(const int16_t *input, const tinyaot_softmax16_params *params, int16_t *output);

/* One int16 elementwise function (the lut op): TFLM's int16 LOGISTIC / TANH, or an interpolated table. */
#define TINYAOT_LUT16_LOGISTIC 0
#define TINYAOT_LUT16_TANH 1
#define TINYAOT_LUT16_TABLE 2
typedef struct {
    int32_t size;                  /* elements */
    int32_t mode;                  /* TINYAOT_LUT16_* */
    int32_t input_multiplier, input_shift;     /* LOGISTIC / TANH: v = (x * input_multiplier + round) >> input_shift */
    const int16_t *table;          /* TABLE: [513] samples, 9-bit index, 7-bit interpolation (TFLite's LUTLookup) */
    int32_t act_min, act_max;      /* fused clamp, int16 units */
} tinyaot_lut16_params;

/* output[i] = clamp(f(input[i])): TFLM's sigmoid-table interpolation (Q0.15) or the table's. In place. */
void tinyaot_lut_s16(const int16_t *input, const tinyaot_lut16_params *params, int16_t *output);

/* Geometry and clamp of one int16 max pooling layer (as tinyaot_max_pool2d_params). */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t out_h, out_w;
    int32_t act_min, act_max;      /* fused clamp, int16 units */
} tinyaot_max_pool2d16_params;

/* int16 max pooling over NHWC, TFLM's int16 MaxPool. Output must not overlap input. */
void tinyaot_max_pool2d_s16(const int16_t *input, const tinyaot_max_pool2d16_params *params, int16_t *output);

/* Geometry and clamp of one int16 average pooling layer (as tinyaot_pool_params; zero point 0). */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t kernel_h, kernel_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int32_t count_include_pad;     /* 1: divide by the taps inside the padded input, 0: inside the input (TFLite) */
    int32_t act_min, act_max;      /* fused clamp, int16 units */
} tinyaot_avg_pool2d16_params;

/* int16 average pooling over NHWC, TFLM's int16 AveragePool (int32 sum, rounded division). */
void tinyaot_avg_pool2d_s16(const int16_t *input, const tinyaot_avg_pool2d16_params *params, int16_t *output);

/* One standalone int16 ReLU / clamp with rescaling. */
typedef struct {
    int32_t size;
    int32_t multiplier, shift;     /* input_scale / output_scale */
    int32_t act_min, act_max;      /* int16 units */
} tinyaot_relu16_params;

/* TFLM's int16 RELU / RELU6: output[i] = clamp(requantize(input[i], multiplier, shift)). In place. */
void tinyaot_relu_s16(const int16_t *input, const tinyaot_relu16_params *params, int16_t *output);

/* One int16 leaky ReLU (TFLM's int16 LEAKY_RELU). */
typedef struct {
    int32_t size;
    int32_t output_multiplier_1, output_shift_1;  /* input >= 0: input_scale / output_scale */
    int32_t output_multiplier_2, output_shift_2;  /* below: input_scale * alpha / output_scale; negative: the
                                                     negated requantization by its magnitude */
} tinyaot_leaky_relu16_params;

/* TFLM's int16 LEAKY_RELU: output[i] = clamp(requantize(input[i], multiplier 1 or 2 by its sign)). In place. */
void tinyaot_leaky_relu_s16(const int16_t *input, const tinyaot_leaky_relu16_params *params, int16_t *output);

/* One int16 mean over a run of consecutive axes: the input seen as [outer][count][inner]. */
typedef struct {
    int32_t outer, count, inner;
    int32_t multiplier, shift;     /* input_scale / output_scale / count, TFLM's folding */
    int32_t act_min, act_max;      /* int16 units */
} tinyaot_mean16_params;

/* TFLM's int16 MEAN: int32 sums, requantized, clamped. Output must not overlap input. */
void tinyaot_mean_s16(const int16_t *input, const tinyaot_mean16_params *params, int16_t *output);

/*
 * 16x8 data movement (int16 activations, zero point 0): pad, concatenation, transpose and nearest resize move
 * int16 values as their int8 twins move bytes (TFLM's int16 PAD, CONCATENATION, TRANSPOSE,
 * RESIZE_NEAREST_NEIGHBOR). None of them may write over its input.
 */

/* One spatial padding of NHWC int16. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int32_t mode;                  /* TINYAOT_PAD_*; constant pads with 0 (real 0) */
} tinyaot_pad16_params;

/* int16 spatial padding: as tinyaot_pad_s8 on int16 values. */
void tinyaot_pad_s16(const int16_t *input, const tinyaot_pad16_params *params, int16_t *output);

/* One int16 concatenation of num_inputs tensors. */
typedef struct {
    int32_t num_inputs;
    const int32_t *chunks;           /* [num_inputs]: elements each input contributes per outer index */
    const int32_t *multiplier;       /* [num_inputs], Q31 of input_scale / output_scale */
    const int32_t *shift;            /* [num_inputs] */
    int32_t outer;                   /* product of the dims before the axis */
} tinyaot_concat16_params;

/*
 * int16 concatenation: for o in [0, outer), for each input i, chunks[i] values of inputs[i] + o * chunks[i] go to
 * the output, copied when input i has the output's scale (TINYAOT_IDENTITY_MULTIPLIER / _SHIFT), else
 * clamp(requantize(x, multiplier[i], shift[i]), -32768, 32767).
 */
void tinyaot_concat_s16(const int16_t *const *inputs, const tinyaot_concat16_params *params, int16_t *output);

/* One axis permutation of an int16 tensor, reduced as the int8 one's, of up to 6-D. */
typedef struct {
    int32_t out_shape[6];          /* left-padded with 1s to 6-D */
    int32_t in_strides[6];         /* the input element stride along each output axis */
} tinyaot_transpose16_params;

/* int16 transpose: the output, row-major, reads the input at in_strides. */
void tinyaot_transpose_s16(const int16_t *input, const tinyaot_transpose16_params *params, int16_t *output);

/* One slice of an int16 tensor (as tinyaot_slice_params, in int16 elements). */
typedef struct {
    int32_t offset;                /* input elements before the first one taken */
    int32_t out_shape[4];          /* the walk, left-padded with 1s */
    int32_t in_strides[4];         /* the input element stride along each walk axis */
} tinyaot_slice16_params;

/* int16 slice: as tinyaot_slice_s8 on int16 values. */
void tinyaot_slice_s16(const int16_t *input, const tinyaot_slice16_params *params, int16_t *output);

/* One nearest-neighbour resize of NHWC int16. */
typedef struct {
    int32_t batches, in_h, in_w, channels;
    int32_t out_h, out_w;
    const int32_t *src_y;          /* [out_h]: the input row each output row copies (fixed at compile time) */
    const int32_t *src_x;          /* [out_w]: the input column each output column copies */
} tinyaot_resize_nearest16_params;

/* int16 nearest resize: output[b][y][x][c] = input[b][src_y[y]][src_x[x]][c]. */
void tinyaot_resize_nearest_s16(const int16_t *input, const tinyaot_resize_nearest16_params *params,
                                int16_t *output);

#endif /* TINYAOT_KERNELS_H */
