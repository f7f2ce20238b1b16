"""CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED and BATCH_MATMUL: the weighted operators.

Padding is made explicit exactly as TFLite Micro computes it (ComputePaddingHeightWidth); the weights keep the
schema's layouts (OHWI, [1, kh, kw, out], [out, in]), which are the IR's.
"""
from __future__ import annotations

import numpy as np

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import DTYPES, MAX_TENSOR_BYTES, REPAIR, OpInfo
from tinyaot.ir import Tensor


def compute_padding(padding: int, in_size: int, k: int, stride: int, dilation: int) -> tuple[int, int, int]:
    """(out_size, pad_before, pad_after) as TFLM's ComputeOutSize / ComputePaddingWithOffset."""
    eff = (k - 1) * dilation + 1
    if padding == 0:  # SAME
        out = (in_size + stride - 1) // stride
    elif padding == 1:  # VALID
        out = (in_size + stride - eff) // stride
    else:
        raise ModelError(f"unknown padding type {padding} (expected SAME or VALID)")
    total = max(0, (out - 1) * stride + eff - in_size)
    return out, total // 2, total - total // 2


def spatial(imp: Importer, op: OpInfo, x_shape, kh: int, kw: int, padding: int, stride, dilation):
    """(out_h, out_w, (top, bottom, left, right)) of a conv or pool window over an NHWC input, TFLM's padding."""
    if len(x_shape) != 4:
        raise ModelError(f"operator {op.index} ({op.name}) needs a 4-D NHWC input, got {list(x_shape)}")
    if min(kh, kw, *stride, *dilation) < 1:
        raise ModelError(f"operator {op.index} ({op.name}): kernel, stride and dilation must be >= 1")
    oh, top, bottom = compute_padding(padding, x_shape[1], kh, stride[0], dilation[0])
    ow, left, right = compute_padding(padding, x_shape[2], kw, stride[1], dilation[1])
    if oh < 1 or ow < 1:
        raise ModelError(f"operator {op.index} ({op.name}): the kernel {kh}x{kw} does not fit the input "
                         f"{x_shape[1]}x{x_shape[2]}")
    padded = (x_shape[1] + top + bottom) * (x_shape[2] + left + right) * x_shape[0] * x_shape[3]
    if padded > MAX_TENSOR_BYTES:  # SAME padding of a huge (dilated) kernel: a corrupt option, not a model
        raise ModelError(f"operator {op.index} ({op.name}): a {kh}x{kw} kernel with stride {tuple(stride)} and "
                         f"dilation {tuple(dilation)} pads the {x_shape[1]}x{x_shape[2]} input by "
                         f"{(top, bottom, left, right)}, more than any arena holds; check the op's options "
                         f"({REPAIR})")
    return oh, ow, (top, bottom, left, right)


def _conv_operands(imp: Importer, op: OpInfo, options: str, ir_op: str):
    """CONV_2D's and DEPTHWISE_CONV_2D's operands in the order TFLite reads them: (input, weights, bias) indices,
    the options, the IR input, the node's name, its weight tensor's name and the tensor."""
    xi, wi, bi = imp.args(op, 2, 3)
    o = imp.options(op, options)
    x = imp.ir_input(xi, op)
    name = f"{ir_op}_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    return xi, wi, bi, o, x, name, w, imp.g.tensor(w)


def conv_2d(imp: Importer, op: OpInfo) -> None:
    xi, wi, bi, o, x, name, w, wt = _conv_operands(imp, op, "Conv2DOptions", "conv2d")
    if len(wt.shape) != 4:
        raise ModelError(f"operator {op.index} (CONV_2D): weights must be 4-D [out, kh, kw, in], got {wt.shape}")
    imp.prepare(tflm.symmetric_weights, op, wt, 0)
    x_shape = imp.g.tensor(x).shape
    tflm.grouped_conv(op, x_shape, wt.shape)
    stride, dilation = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    oh, ow, pad = spatial(imp, op, x_shape, wt.shape[1], wt.shape[2], o.Padding(), stride, dilation)
    imp.check_shape(op, (x_shape[0], oh, ow, wt.shape[0]))
    b = _conv_bias16(imp, op, bi, f"{name}_bias", wt.shape[0], o.QuantizedBiasType())
    imp.node(op, "conv2d", [x, w, b], {"stride": stride, "padding": pad, "dilation": dilation,
                                       "clamp": imp.clamp(op, o.FusedActivationFunction())})
    imp.prepare(tflm.weighted_qparams, op, xi, wi, bi)


def depthwise_conv_2d(imp: Importer, op: OpInfo) -> None:
    xi, wi, bi, o, x, name, w, wt = _conv_operands(imp, op, "DepthwiseConv2DOptions", "depthwise_conv2d")
    x_shape = imp.g.tensor(x).shape
    if len(wt.shape) != 4 or wt.shape[0] != 1:
        raise ModelError(f"operator {op.index} (DEPTHWISE_CONV_2D): weights must be [1, kh, kw, out], got {wt.shape}")
    imp.prepare(tflm.symmetric_weights, op, wt, 3)
    out_c = wt.shape[3]
    if len(x_shape) != 4 or out_c % x_shape[3]:
        raise ModelError(f"operator {op.index} (DEPTHWISE_CONV_2D): {out_c} output channels are not a multiple of "
                         f"the input's channels (input {list(x_shape)})")
    # TFLM derives the multiplier from the channel counts, not from the option.
    mult = out_c // x_shape[3]
    stride, dilation = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
    oh, ow, pad = spatial(imp, op, x_shape, wt.shape[1], wt.shape[2], o.Padding(), stride, dilation)
    imp.check_shape(op, (x_shape[0], oh, ow, out_c))
    b = _conv_bias16(imp, op, bi, f"{name}_bias", out_c, None)
    imp.node(op, "depthwise_conv2d", [x, w, b], {"stride": stride, "padding": pad, "dilation": dilation,
                                                 "depth_multiplier": mult,
                                                 "clamp": imp.clamp(op, o.FusedActivationFunction())})
    imp.prepare(tflm.weighted_qparams, op, xi, wi, bi)


def _conv_bias16(imp: Importer, op: OpInfo, bi: int, name: str, channels: int, bias_type: int | None) -> str:
    """The bias of a CONV_2D / DEPTHWISE_CONV_2D (and FULLY_CONNECTED); for a 16x8 layer (int16 input) the type
    TFLM gives it. Its conv takes int64 (int64 sums) or int32 (int32 sums), and without a bias its options'
    quantized_bias_type decides (`bias_type`); its depthwise conv (`bias_type` None) reads the bias as int64
    whatever the file says, so an int32 one is refused. A float model's input is float32: its bias is the policy's."""
    if imp.t(op.inputs[0]).dtype != "int16":
        return imp.bias(op, bi, name, channels)
    if bi != -1:
        if bias_type is None and imp.t(bi).dtype != "int64":
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the 16x8 bias '{imp.t(bi).name}' is "
                                     f"{imp.t(bi).dtype}, but TFLite Micro's 16x8 DEPTHWISE_CONV_2D reads its bias "
                                     "as int64; re-convert with an int64 bias")
        if imp.t(bi).dtype not in ("int32", "int64"):
            raise UnsupportedOpError(f"operator {op.index} ({op.name}): the 16x8 bias '{imp.t(bi).name}' is "
                                     f"{imp.t(bi).dtype}; TFLite Micro takes an int64 or int32 bias")
        return imp.bias(op, bi, name, channels)
    dtype = "int32" if DTYPES.get(bias_type) == "int32" else "int64"
    imp.g.add_tensor(Tensor(name, (channels,), dtype, data=np.zeros(channels, dtype)))
    return name


def transpose_conv(imp: Importer, op: OpInfo) -> None:
    """TRANSPOSE_CONV (output_shape, weights [out, kh, kw, in], input, optional bias): TFLM pads as a conv from the
    output's size to the input's would (ComputePaddingHeightWidth, dilation 1) and crops the full result."""
    si, wi, xi, bi = imp.args(op, 3, 4)
    o = imp.options(op, "TransposeConvOptions")
    x = imp.ir_input(xi, op)
    name = f"transpose_conv2d_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    x_shape, y_shape = imp.g.tensor(x).shape, tuple(imp.t(op.outputs[0]).shape)
    if len(wt.shape) != 4 or len(x_shape) != 4 or len(y_shape) != 4 or wt.shape[3] != x_shape[3] \
            or wt.shape[0] != y_shape[3]:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): weights {list(wt.shape)} must be [out, kh, kw, in] "
                         f"for the input {list(x_shape)} and output {list(y_shape)}")
    imp.prepare(tflm.symmetric_weights, op, wt, 0)
    shape = imp.t(si).data
    if shape is not None and tuple(int(v) for v in np.frombuffer(shape.tobytes(), np.int32)) != y_shape:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): its output_shape input "
                         f"{np.frombuffer(shape.tobytes(), np.int32).tolist()} differs from its output tensor's "
                         f"shape {list(y_shape)}")
    stride = (o.StrideH(), o.StrideW())
    if min(stride) < 1:
        raise ModelError(f"operator {op.index} (TRANSPOSE_CONV): stride {stride} must be >= 1")
    pad, extra = [], []
    for size, out, k, st in ((x_shape[1], y_shape[1], wt.shape[1], stride[0]), (x_shape[2], y_shape[2], wt.shape[2],
                                                                                  stride[1])):
        before = compute_padding(o.Padding(), out, k, st, 1)[1]
        after = (size - 1) * st + k - before - out  # negative: rows the full result does not reach
        pad += [before, max(after, 0)]
        extra.append(max(-after, 0))
    b = imp.bias(op, bi, f"{name}_bias", wt.shape[0])
    imp.node(op, "transpose_conv2d", [x, w, b], {"stride": stride, "padding": tuple(pad), "output_padding": extra,
                                                 "clamp": imp.clamp(op, o.FusedActivationFunction())})
    imp.prepare(tflm.weighted_qparams, op, xi, wi, bi)


def fully_connected(imp: Importer, op: OpInfo) -> None:
    xi, wi, bi = imp.args(op, 2, 3)
    o = imp.options(op, "FullyConnectedOptions") if op.options_type else None
    if o is not None and o.WeightsFormat() != 0:
        raise UnsupportedOpError(f"operator {op.index} (FULLY_CONNECTED): shuffled weights format is not supported")
    x = imp.ir_input(xi, op)
    name = f"fully_connected_{op.index}"
    w = imp.weights(wi, f"{name}_weight", op)
    wt = imp.g.tensor(w)
    if len(wt.shape) != 2:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): weights must be 2-D [out, in], got {wt.shape}")
    imp.prepare(tflm.symmetric_weights, op, wt, 0)
    out_f, in_f = wt.shape
    xt = imp.g.tensor(x)
    if xt.size % in_f:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): input {list(xt.shape)} is not a whole number of "
                         f"rows of {in_f} features")
    out_shape = imp.t(op.outputs[0]).shape
    if int(np.prod(out_shape)) != xt.size // in_f * out_f or out_shape[-1] != out_f:
        raise ModelError(f"operator {op.index} (FULLY_CONNECTED): output shape {list(out_shape)} does not fit "
                         f"{xt.size // in_f} rows of {out_f} features")
    # a 16x8 layer's int64 or int32 bias; without one, TFLM sums in int64 unless quantized_bias_type says int32
    imp.prepare(tflm.same_activation_types, op, [xi, op.outputs[0]])
    b = _conv_bias16(imp, op, bi, f"{name}_bias", out_f, o.QuantizedBiasType() if o is not None else 0)
    clamp = imp.clamp(op, o.FusedActivationFunction()) if o is not None else None
    imp.node(op, "fully_connected", [x, w, b], {"clamp": clamp})
    imp.prepare(tflm.weighted_qparams, op, xi, wi, bi)


def batch_matmul(imp: Importer, op: OpInfo) -> None:
    """BATCH_MATMUL of two activations (TFLM's int8 kernel); a constant operand is a FULLY_CONNECTED's weights."""
    ai, bi = imp.args(op, 2, 2)
    o = imp.options(op, "BatchMatMulOptions") if op.options_type else None
    for i in (ai, bi):
        if i not in imp.names and imp.t(i).data is not None:
            raise UnsupportedOpError(f"operator {op.index} (BATCH_MATMUL): operand '{imp.t(i).name}' is a constant; "
                                     "tinyaot multiplies two activations here (constant weights: FULLY_CONNECTED)")
    attrs = {"adj_x": bool(o.AdjX()), "adj_y": bool(o.AdjY())} if o is not None else {}
    imp.node(op, "batch_matmul", [imp.ir_input(ai, op), imp.ir_input(bi, op)], attrs)
    imp.prepare(tflm.rescale, op, [ai, bi], op.outputs[0])


