"""depthwise_conv2d_s16: 16x8 NHWC depthwise convolution with a depth multiplier, TFLite Micro's int16
DepthwiseConvPerChannel.

Output channel ic * multiplier + m reads input channel ic only; taps outside the image are skipped; the sum is
int64, the bias int64 (TFLM reads a 16x8 depthwise bias as int64 whatever its type, so an int32 one is refused),
and the 64-bit MultiplyByQuantizedMultiplier requantizes, as in conv2d_s16; no offsets (zero points are 0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref.conv2d_s16 import prepare_conv16, requantize16, windows


@dataclass(frozen=True)
class DepthwiseConv16Params:
    """A 16x8 depthwise conv, computed once at compile time (no offsets: int16 zero points are 0)."""

    weights: np.ndarray  # int8 [1, kh, kw, out_c]
    bias: np.ndarray  # int64 [out_c], scale = input_scale * weight_scale[c]
    multiplier: np.ndarray  # int32 [out_c], Q31
    shift: np.ndarray  # int32 [out_c], power of two (>0: left)
    act_min: int  # fused activation, int16 units
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
    depth_multiplier: int  # out_c = in_c * depth_multiplier


def prepare(node: Node, g: Graph) -> DepthwiseConv16Params:
    return prepare_conv16(node, g, True, DepthwiseConv16Params)


def depthwise_conv2d_s16(x: np.ndarray, p: DepthwiseConv16Params) -> np.ndarray:
    cols = windows(x, p)  # [b, oh, ow, kh, kw, in_c]
    w = p.weights.reshape(p.kernel_h, p.kernel_w, p.in_c, p.depth_multiplier).astype(np.float64)
    acc = np.einsum("bhwyxc,yxcm->bhwcm", cols, w, optimize=True)  # exact: products < 2^22, few taps
    return requantize16(np.rint(acc).reshape(p.batches, p.out_h, p.out_w, p.out_c), p, 64)
