"""avg_pool2d_s16: NHWC int16 (16x8) average pooling, TFLM's int16 reference AveragePool.

The int8 kernel's semantics (ref/avg_pool2d_s8.py) on int16 values: the window is clipped to the input, the
int32 sum is divided by the taps inside it (count_include_pad False, TFLite's rule; or by the taps inside the
padded input, the padded taps being real 0) rounding half away from zero with C's truncating division, then the
fused clamp in int16 units. No rescaling: input and output share the scale (zero point 0, as every int16 activation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.avg_pool2d_s8 import window_average
from tinyaot.ref.max_pool2d_s8 import pool_geometry

MAX_TAPS = 65536  # taps per window whose int32 sum of int16 values cannot overflow


@dataclass(frozen=True)
class AvgPool2D16Params:
    batches: int
    in_h: int
    in_w: int
    channels: int
    out_h: int
    out_w: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_bottom: int  # count_include_pad counts the taps up to the padding's end, not past it (ceil_mode)
    pad_left: int
    pad_right: int
    count_include_pad: bool  # divide by the taps inside the padded input (padded taps hold 0), not inside the input
    act_min: int  # fused clamp, int16 units
    act_max: int


def prepare(node: Node, g: Graph) -> AvgPool2D16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    kh, kw, sh, sw, top, left, out_h, out_w = pool_geometry(node, x, y)
    if kh * kw > MAX_TAPS:
        raise ModelError(f"avg_pool2d '{node.name}': a {kh}x{kw} window's int32 sum of int16 values could overflow")
    n, h, w, c = x.shape
    _, bottom, _, right = node.attrs.get("padding") or (0, 0, 0, 0)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    return AvgPool2D16Params(n, h, w, c, out_h, out_w, kh, kw, sh, sw, top, int(bottom), left, int(right),
                             bool(node.attrs.get("count_include_pad", False)), act_min, act_max)


def avg_pool2d_s16(x: np.ndarray, p: AvgPool2D16Params) -> np.ndarray:
    """The int8 reference's average (padded taps hold 0, real 0), clamped to int16."""
    return np.clip(window_average(x, p, 0), p.act_min, p.act_max).astype(np.int16)
