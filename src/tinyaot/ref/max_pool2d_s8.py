"""max_pool2d_s8: NHWC int8 max pooling, TFLM's reference MaxPool.

Padded positions are ignored (they never win the max); the window is clipped to the input. Max pooling
moves values without rescaling, so the output keeps the input's qparams; the fused `clamp` becomes an
integer range applied after the max. Output must not overlap the input (the C writes as it scans).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.pooling import pooled_size
from tinyaot.ref import _checks


@dataclass(frozen=True)
class MaxPool2DParams:
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
    act_min: int  # fused clamp, in output (= input) integer units
    act_max: int


def prepare(node: Node, g: Graph) -> MaxPool2DParams:
    return prepare_max_pool2d(node, g)


def prepare_max_pool2d(node: Node, g: Graph, io=_checks.io, params: type = MaxPool2DParams,
                       qrange: tuple[int, int] = (-128, 127)):
    """A max pool's checks and params; `io` checks the tensors' dtype and `qrange` bounds the clamp (the int16
    twin passes its own)."""
    x, y = io(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    kh, kw, sh, sw, top, left, out_h, out_w = pool_geometry(node, x, y)
    n, h, w, c = x.shape
    qp = y.qparams
    act_min, act_max = activation_range(node.attrs.get("clamp"), qp.scale[0], qp.zero_point[0], *qrange)
    return params(n, h, w, c, kh, kw, sh, sw, top, left, out_h, out_w, act_min, act_max)


def pool_geometry(node: Node, x: Tensor, y: Tensor) -> tuple[int, ...]:
    """(kh, kw, sh, sw, top, left, out_h, out_w) of an NHWC pooling node, checked: every window sees an input
    pixel and the output has the shape they give. Shared by the 16x8 pooling kernels."""
    if "kernel" not in node.attrs:
        raise ModelError(f"{node.op} '{node.name}' has no 'kernel' attribute (an int or (kh, kw))")
    kh, kw = _checks.pair(node, "kernel", node.attrs["kernel"])
    sh, sw = _checks.pair(node, "stride", node.attrs.get("stride") or (kh, kw))
    top, bottom, left, right = _padding(node)
    n, h, w, c = x.shape
    if min(kh, kw, sh, sw) < 1:
        raise ModelError(f"{node.op} '{node.name}': kernel {(kh, kw)} and stride {(sh, sw)} must be >= 1")
    ceil = bool(node.attrs.get("ceil_mode"))
    out_h, out_w = pooled_size(h, kh, sh, top, bottom, ceil), pooled_size(w, kw, sw, left, right, ceil)
    if out_h < 1 or out_w < 1:
        raise ModelError(f"{node.op} '{node.name}': kernel {(kh, kw)} is larger than the padded input {(h, w)}")
    # Every window must see at least one real pixel, or its max would be undefined.
    if top >= kh or left >= kw or (out_h - 1) * sh - top >= h or (out_w - 1) * sw - left >= w:
        raise ModelError(
            f"{node.op} '{node.name}': padding {(top, bottom, left, right)} leaves a window with no input pixel; "
            "padding must be smaller than the kernel (PyTorch drops such windows in ceil_mode)"
        )
    _checks.same_shape(node, y, (n, out_h, out_w, c))
    return kh, kw, sh, sw, top, left, out_h, out_w


def _padding(node: Node) -> tuple[int, int, int, int]:
    pad = node.attrs.get("padding") or (0, 0, 0, 0)
    if len(pad) != 4 or any(int(v) != v or v < 0 for v in pad):
        raise ModelError(
            f"{node.op} '{node.name}': padding must be (top, bottom, left, right), four ints >= 0, got {pad!r}"
        )
    return tuple(int(v) for v in pad)


def max_pool2d_s8(x: np.ndarray, p: MaxPool2DParams) -> np.ndarray:
    return np.clip(window_max(x, p, np.int16(-32768)), p.act_min, p.act_max).astype(np.int8)  # below every int8


def window_max(x: np.ndarray, p: MaxPool2DParams, low: np.integer) -> np.ndarray:
    """The max of each window in `low`'s dtype; padding holds `low`, below every input value, so it never wins."""
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels).astype(type(low))
    span_h, span_w = (p.out_h - 1) * p.stride_h + p.kernel_h, (p.out_w - 1) * p.stride_w + p.kernel_w
    padded = np.full((p.batches, max(span_h, p.pad_top + p.in_h), max(span_w, p.pad_left + p.in_w), p.channels), low)
    padded[:, p.pad_top : p.pad_top + p.in_h, p.pad_left : p.pad_left + p.in_w] = x
    out = np.full((p.batches, p.out_h, p.out_w, p.channels), low)
    for ky in range(p.kernel_h):
        for kx in range(p.kernel_w):
            win = padded[:, ky : ky + (p.out_h - 1) * p.stride_h + 1 : p.stride_h,
                         kx : kx + (p.out_w - 1) * p.stride_w + 1 : p.stride_w]
            out = np.maximum(out, win)
    return out
