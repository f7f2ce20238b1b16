"""max_pool2d_s16: NHWC int16 (16x8) max pooling, TFLM's int16 reference MaxPool.

The int8 kernel's semantics (ref/max_pool2d_s8.py) on int16 values: the window is clipped to the input so
padding never wins, the output keeps the input's qparams, and the fused clamp is an int16 range applied after
the max. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import activation_range
from tinyaot.ref import _checks


@dataclass(frozen=True)
class MaxPool2D16Params:
    batches: int
    in_h: int
    in_w: int
    channels: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    pad_top: int  # rows of (ignored) padding above the input
    pad_left: int  # columns of (ignored) padding left of the input
    out_h: int
    out_w: int
    act_min: int  # fused clamp, in int16 output (= input) units
    act_max: int


def pool_geometry(node: Node, x_shape, y_shape) -> tuple[int, ...]:
    """(kh, kw, sh, sw, top, left, out_h, out_w) of a pooling node, checked: every window sees an input pixel
    and the output has the shape they give. Shared by the 16x8 pooling kernels."""
    kh, kw = _checks.pair(node, "kernel", node.attrs.get("kernel"))
    sh, sw = _checks.pair(node, "stride", node.attrs.get("stride") or (kh, kw))
    pad = node.attrs.get("padding") or (0, 0, 0, 0)
    if len(pad) != 4 or any(int(v) != v or v < 0 for v in pad):
        raise ModelError(f"{node.op} '{node.name}': padding must be (top, bottom, left, right), four ints >= 0, "
                         f"got {pad!r}")
    top, bottom, left, right = (int(v) for v in pad)
    n, h, w, c = x_shape
    if min(kh, kw, sh, sw) < 1:
        raise ModelError(f"{node.op} '{node.name}': kernel {(kh, kw)} and stride {(sh, sw)} must be >= 1")
    out_h, out_w = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    if out_h < 1 or out_w < 1 or top >= kh or left >= kw or (out_h - 1) * sh - top >= h or \
            (out_w - 1) * sw - left >= w:
        raise ModelError(f"{node.op} '{node.name}': kernel {(kh, kw)}, stride {(sh, sw)} and padding "
                         f"{(top, bottom, left, right)} leave a window with no input pixel")
    if tuple(y_shape) != (n, out_h, out_w, c):
        raise ModelError(f"{node.op} '{node.name}': output shape {list(y_shape)}, but the input and attributes "
                         f"give {[n, out_h, out_w, c]}")
    return kh, kw, sh, sw, top, left, out_h, out_w


def prepare(node: Node, g: Graph) -> MaxPool2D16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    if "kernel" not in node.attrs:
        raise ModelError(f"max_pool2d '{node.name}' has no 'kernel' attribute (an int or (kh, kw))")
    kh, kw, sh, sw, top, left, out_h, out_w = pool_geometry(node, x.shape, y.shape)
    n, h, w, c = x.shape
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    return MaxPool2D16Params(n, h, w, c, kh, kw, sh, sw, top, left, out_h, out_w, act_min, act_max)


def max_pool2d_s16(x: np.ndarray, p: MaxPool2D16Params) -> np.ndarray:
    """The max of int16 values is the max of their int32 twins: the int8 reference's arithmetic, wider."""
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels).astype(np.int32)
    span_h, span_w = (p.out_h - 1) * p.stride_h + p.kernel_h, (p.out_w - 1) * p.stride_w + p.kernel_w
    low = np.int32(-32769)  # below every int16: padding never wins
    padded = np.full((p.batches, max(span_h, p.pad_top + p.in_h), max(span_w, p.pad_left + p.in_w), p.channels), low)
    padded[:, p.pad_top : p.pad_top + p.in_h, p.pad_left : p.pad_left + p.in_w] = x
    out = np.full((p.batches, p.out_h, p.out_w, p.channels), low)
    for ky in range(p.kernel_h):
        for kx in range(p.kernel_w):
            win = padded[:, ky : ky + (p.out_h - 1) * p.stride_h + 1 : p.stride_h,
                         kx : kx + (p.out_w - 1) * p.stride_w + 1 : p.stride_w]
            out = np.maximum(out, win)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)
