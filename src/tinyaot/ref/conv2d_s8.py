"""conv2d_s8: int8 NHWC convolution, int32 accumulation, per-channel requantization.

Semantics of TFLite Micro's reference ConvPerChannel: taps that fall outside the image are skipped
(the same as padding with the input zero point), every input value gets the input offset, weights are
symmetric, the accumulator is rescaled per output channel by MultiplyByQuantizedMultiplier, the output
zero point added and the fused activation clamps. Multipliers come from double-precision
in_scale * w_scale[c] / out_scale, as TFLM's PopulateConvolutionQuantizationParams computes them
(ref/per_channel.py).
A grouped convolution is TFLM's too: the weights' input depth is in_c / groups, and output channel oc reads
input channels [g * in_c / groups, (g + 1) * in_c / groups) of its group g = oc / (out_c / groups).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, wrap_i32
from tinyaot.ir import Graph, Node
from tinyaot.ir.conv import conv_groups
from tinyaot.ref.per_channel import per_channel_multipliers


@dataclass(frozen=True)
class ConvParams:
    """Everything a conv or depthwise conv needs at run time, computed once at compile time."""

    weights: np.ndarray  # int8: conv [out_c, kh, kw, in_c / groups]; depthwise [1, kh, kw, out_c]
    bias: np.ndarray  # int32 [out_c], scale = input_scale * weight_scale[c]
    multiplier: np.ndarray  # int32 [out_c], Q31
    shift: np.ndarray  # int32 [out_c], power of two (>0: left)
    input_offset: int  # -input zero point
    output_offset: int  # output zero point
    act_min: int
    act_max: int
    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    depth_multiplier: int  # 1 for a plain conv
    groups: int = 1  # conv2d: channel groups (TFLM: in_c / the weights' input depth); 1 for depthwise


def prepare_conv_like(node: Node, g: Graph, depthwise: bool) -> ConvParams:
    x, w, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(y.shape) != 4 or len(w.shape) != 4:
        raise ModelError(f"layer '{node.name}': {node.op} needs 4-D NHWC input, output and weights, got "
                         f"{x.shape}, {y.shape}, {w.shape}")
    batches, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = y.shape
    if depthwise:
        _, kh, kw, w_out = w.shape
        mult = int(node.attrs.get("depth_multiplier", out_c // max(in_c, 1)))
        groups = 1  # depthwise has its own channel rule (depth_multiplier)
        if w_out != out_c or in_c * mult != out_c:
            raise ModelError(f"layer '{node.name}': depthwise weights {w.shape} do not fit input channels {in_c} "
                             f"x depth multiplier {mult} = output channels {out_c}")
    else:
        w_out, kh, kw, w_in = w.shape
        mult = 1
        if w_out != out_c:
            raise ModelError(f"layer '{node.name}': weights {w.shape} give {w_out} output channels, output has {out_c}")
        groups = conv_groups(in_c, w_in, out_c, f"layer '{node.name}'")
    if x.qparams is None or y.qparams is None or w.qparams is None:
        raise ModelError(f"layer '{node.name}': input, output and weights must be quantized (int8 with qparams)")
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    top, _bottom, left, _right = node.attrs.get("padding", (0, 0, 0, 0))
    multiplier, shift = per_channel_multipliers(x.qparams.scale[0], w.qparams.scale, y.qparams.scale[0], out_c)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    bias = b.data.astype(np.int32) if b is not None and b.data is not None else np.zeros(out_c, np.int32)
    if bias.shape != (out_c,):
        raise ModelError(f"layer '{node.name}': bias has shape {bias.shape}, expected ({out_c},)")
    for what, v in (("stride", (sh, sw)), ("dilation", (dh, dw))):
        if min(v) < 1:
            raise ModelError(f"layer '{node.name}': {what} {v} must be >= 1")
    return ConvParams(
        weights=np.ascontiguousarray(w.data.astype(np.int8)), bias=bias, multiplier=multiplier, shift=shift,
        input_offset=-int(x.qparams.zero_point[0]), output_offset=int(y.qparams.zero_point[0]),
        act_min=act_min, act_max=act_max, batches=batches, in_h=in_h, in_w=in_w, in_c=in_c,
        out_h=out_h, out_w=out_w, out_c=out_c, kernel_h=kh, kernel_w=kw, stride_h=int(sh), stride_w=int(sw),
        dilation_h=int(dh), dilation_w=int(dw), pad_top=int(top), pad_left=int(left), depth_multiplier=mult,
        groups=groups,
    )


def prepare(node: Node, g: Graph) -> ConvParams:
    return prepare_conv_like(node, g, depthwise=False)


def patches(x: np.ndarray, p: ConvParams, dtype=np.int64) -> np.ndarray:
    """(x + input_offset) gathered per output pixel: [b, out_h, out_w, kh, kw, c], 0 outside the image.

    Zero after the offset is exactly what skipping an outside tap does in TFLM's loop.
    """
    xo = x.reshape(p.batches, p.in_h, p.in_w, p.in_c).astype(dtype) + p.input_offset
    iy = np.arange(p.out_h)[:, None] * p.stride_h - p.pad_top + np.arange(p.kernel_h)[None, :] * p.dilation_h
    ix = np.arange(p.out_w)[:, None] * p.stride_w - p.pad_left + np.arange(p.kernel_w)[None, :] * p.dilation_w
    lo_y, lo_x = min(0, int(iy.min())), min(0, int(ix.min()))
    hi_y, hi_x = max(p.in_h, int(iy.max()) + 1), max(p.in_w, int(ix.max()) + 1)
    padded = np.zeros((p.batches, hi_y - lo_y, hi_x - lo_x, p.in_c), dtype=dtype)
    padded[:, -lo_y : -lo_y + p.in_h, -lo_x : -lo_x + p.in_w, :] = xo
    return padded[:, (iy - lo_y)[:, None, :, None], (ix - lo_x)[None, :, None, :], :]


def requantize(acc: np.ndarray, p: ConvParams) -> np.ndarray:
    acc = wrap_i32(acc + p.bias.astype(np.int64))
    acc = multiply_by_quantized_multiplier(acc, p.multiplier, p.shift) + p.output_offset
    return np.clip(acc, p.act_min, p.act_max).astype(np.int8)


def conv2d_s8(x: np.ndarray, p: ConvParams) -> np.ndarray:
    # Integer products summed in float64 are exact here (|sum| < 2**53). einsum's own loop over two
    # contiguous rows beats a small BLAS call on a busy machine.
    pixels = p.batches * p.out_h * p.out_w
    if p.groups == 1:
        cols = patches(x, p, np.float64).reshape(pixels, -1)  # [pixels, kh * kw * c]
        acc = np.einsum("pk,ok->po", cols, p.weights.reshape(p.out_c, -1).astype(np.float64))
    else:  # [pixels, group, kh * kw * c / groups] against [group, out_c / groups, kh * kw * c / groups]
        taps = p.kernel_h * p.kernel_w
        cols = patches(x, p, np.float64).reshape(pixels, taps, p.groups, p.in_c // p.groups).transpose(0, 2, 1, 3)
        w = p.weights.astype(np.float64).reshape(p.groups, p.out_c // p.groups, -1)
        acc = np.einsum("pgk,gok->pgo", cols.reshape(pixels, p.groups, -1), w).reshape(pixels, p.out_c)
    acc = np.rint(acc).astype(np.int64)
    return requantize(acc, p).reshape(p.batches, p.out_h, p.out_w, p.out_c)
