"""avg_pool2d_s16: NHWC int16 (16x8) average pooling, TFLM's int16 reference AveragePool.

The int8 kernel's semantics (ref/avg_pool2d_s8.py) on int16 values: the window is clipped to the input, the
int32 sum is divided by the taps inside it (count_include_pad False, TFLite's rule; or by the whole window, the
padded taps being real 0) rounding half away from zero with C's truncating division, then the fused clamp in
int16 units. No rescaling: input and output share the scale (zero point 0, as every int16 activation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import activation_range
from tinyaot.ref import _checks
from tinyaot.ref.max_pool2d_s16 import pool_geometry

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
    pad_left: int
    count_include_pad: bool  # divide by the whole window (padded taps hold 0) instead of the taps inside
    act_min: int  # fused clamp, int16 units
    act_max: int


def prepare(node: Node, g: Graph) -> AvgPool2D16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    if "kernel" not in node.attrs:
        raise ModelError(f"avg_pool2d '{node.name}' has no 'kernel' attribute (an int or (kh, kw))")
    kh, kw, sh, sw, top, left, out_h, out_w = pool_geometry(node, x.shape, y.shape)
    if kh * kw > MAX_TAPS:
        raise ModelError(f"avg_pool2d '{node.name}': a {kh}x{kw} window's int32 sum of int16 values could overflow")
    n, h, w, c = x.shape
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    return AvgPool2D16Params(n, h, w, c, out_h, out_w, kh, kw, sh, sw, top, left,
                             bool(node.attrs.get("count_include_pad", False)), act_min, act_max)


def _window_counts(p: AvgPool2D16Params) -> np.ndarray:
    """Taps inside the input per output pixel [out_h, out_w]."""
    def bounds(n_out, stride, pad, k, n_in):
        origin = np.arange(n_out) * stride - pad
        return np.maximum(0, -origin), np.minimum(k, n_in - origin)

    y0, y1 = bounds(p.out_h, p.stride_h, p.pad_top, p.kernel_h, p.in_h)
    x0, x1 = bounds(p.out_w, p.stride_w, p.pad_left, p.kernel_w, p.in_w)
    return (y1 - y0)[:, None] * (x1 - x0)[None, :]


def avg_pool2d_s16(x: np.ndarray, p: AvgPool2D16Params) -> np.ndarray:
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels).astype(np.int64)
    iy = np.arange(p.out_h)[:, None] * p.stride_h - p.pad_top + np.arange(p.kernel_h)[None, :]
    ix = np.arange(p.out_w)[:, None] * p.stride_w - p.pad_left + np.arange(p.kernel_w)[None, :]
    lo_y, lo_x = min(0, int(iy.min())), min(0, int(ix.min()))
    hi_y, hi_x = max(p.in_h, int(iy.max()) + 1), max(p.in_w, int(ix.max()) + 1)
    padded = np.zeros((p.batches, hi_y - lo_y, hi_x - lo_x, p.channels), dtype=np.int64)
    padded[:, -lo_y : -lo_y + p.in_h, -lo_x : -lo_x + p.in_w, :] = x
    win = padded[:, (iy - lo_y)[:, :, None, None], (ix - lo_x)[None, None, :, :], :]  # [b, oh, kh, ow, kw, c]
    acc = win.sum(axis=(2, 4))
    n = np.full((p.out_h, p.out_w), p.kernel_h * p.kernel_w) if p.count_include_pad else _window_counts(p)
    n = n[None, :, :, None].astype(np.int64)
    half = n // 2
    avg = np.where(acc > 0, (acc + half) // n, -((-acc + half) // n))  # C: (acc +- n/2) / n, truncating
    return np.clip(avg, p.act_min, p.act_max).astype(np.int16)
