"""avg_pool2d_s8: int8 average pooling, TFLite Micro's reference AveragePool semantics.

The window is clipped to the image and divided by the number of taps inside it (count_include_pad
False, TFLite's rule) or by the taps inside the padded input (count_include_pad True, PyTorch's rule: the
whole window, except where a ceil_mode window hangs over the padding's end); the sum is divided rounding half
away from zero with C's truncating division. No rescaling: input and output share scale and zero point.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref.max_pool2d_s8 import pool_geometry


@dataclass(frozen=True)
class PoolParams:
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
    count_include_pad: bool
    zero_point: int  # a padded tap holds the zero point (real 0); it matters only with count_include_pad
    act_min: int
    act_max: int


def prepare(node: Node, g: Graph) -> PoolParams:
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if len(x.shape) != 4 or len(y.shape) != 4 or x.shape[3] != y.shape[3] or x.shape[0] != y.shape[0]:
        raise ModelError(f"layer '{node.name}': avg_pool2d needs NHWC input and output with the same batch and "
                         f"channels, got {x.shape} -> {y.shape}")
    if x.qparams != y.qparams:
        raise ModelError(f"layer '{node.name}': avg_pool2d input and output must share scale and zero point "
                         f"(got {x.qparams} and {y.qparams}); give the pool output its input's qparams")
    kh, kw, sh, sw, top, left, _, _ = pool_geometry(node, x, y)
    _top, bottom, _left, right = node.attrs.get("padding", (0, 0, 0, 0))
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    p = PoolParams(
        batches=x.shape[0], in_h=x.shape[1], in_w=x.shape[2], channels=x.shape[3], out_h=y.shape[1],
        out_w=y.shape[2], kernel_h=int(kh), kernel_w=int(kw), stride_h=int(sh), stride_w=int(sw),
        pad_top=int(top), pad_bottom=int(bottom), pad_left=int(left), pad_right=int(right),
        count_include_pad=bool(node.attrs.get("count_include_pad", False)),
        zero_point=int(x.qparams.zero_point[0]), act_min=act_min, act_max=act_max,
    )
    return p  # pool_geometry checked that every window sees an input pixel


def _window_bounds(n_out: int, stride: int, pad: int, k: int, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    origin = np.arange(n_out) * stride - pad
    return np.maximum(0, -origin), np.minimum(k, n_in - origin)


def window_counts(p: PoolParams) -> np.ndarray:
    """Taps inside the input per output pixel [out_h, out_w]."""
    y0, y1 = _window_bounds(p.out_h, p.stride_h, p.pad_top, p.kernel_h, p.in_h)
    x0, x1 = _window_bounds(p.out_w, p.stride_w, p.pad_left, p.kernel_w, p.in_w)
    return np.maximum(y1 - y0, 0)[:, None] * np.maximum(x1 - x0, 0)[None, :]


def padded_counts(p) -> np.ndarray:
    """Taps inside the padded input per output pixel [out_h, out_w] (count_include_pad's divisor): the whole
    window, but for a ceil_mode window's overhang past the bottom / right padding."""
    def spans(n_out: int, stride: int, pad: int, k: int, n_in: int, pad_end: int) -> np.ndarray:
        return np.minimum(k, n_in + pad_end - (np.arange(n_out) * stride - pad))
    return spans(p.out_h, p.stride_h, p.pad_top, p.kernel_h, p.in_h, p.pad_bottom)[:, None] * \
        spans(p.out_w, p.stride_w, p.pad_left, p.kernel_w, p.in_w, p.pad_right)[None, :]


def avg_pool2d_s8(x: np.ndarray, p: PoolParams) -> np.ndarray:
    fill = p.zero_point if p.count_include_pad else 0
    return np.clip(window_average(x, p, fill), p.act_min, p.act_max).astype(np.int8)


def window_average(x: np.ndarray, p, fill: int) -> np.ndarray:
    """Each window's sum over its divisor, rounded half away from zero, in int64 (before the clamp); padded taps
    hold `fill`, taps past the padding (ceil_mode) nothing. Shared by the int16 kernel (ref/avg_pool2d_s16.py)."""
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels).astype(np.int64)
    iy = np.arange(p.out_h)[:, None] * p.stride_h - p.pad_top + np.arange(p.kernel_h)[None, :]
    ix = np.arange(p.out_w)[:, None] * p.stride_w - p.pad_left + np.arange(p.kernel_w)[None, :]
    lo_y, lo_x = min(0, int(iy.min())), min(0, int(ix.min()))
    hi_y, hi_x = max(p.in_h, int(iy.max()) + 1), max(p.in_w, int(ix.max()) + 1)
    padded = np.full((p.batches, hi_y - lo_y, hi_x - lo_x, p.channels), fill, dtype=np.int64)
    padded[:, -lo_y + p.in_h + p.pad_bottom :] = 0  # a ceil_mode window's overhang past the padding adds nothing
    padded[:, :, -lo_x + p.in_w + p.pad_right :] = 0
    padded[:, -lo_y : -lo_y + p.in_h, -lo_x : -lo_x + p.in_w, :] = x
    win = padded[:, (iy - lo_y)[:, :, None, None], (ix - lo_x)[None, None, :, :], :]  # [b, oh, kh, ow, kw, c]
    acc = win.sum(axis=(2, 4))  # [b, oh, ow, c]
    n = padded_counts(p) if p.count_include_pad else window_counts(p)
    n = n[None, :, :, None].astype(np.int64)
    half = n // 2
    # C: acc > 0 ? (acc + n/2) / n : (acc - n/2) / n, with '/' truncating toward zero.
    return np.where(acc > 0, (acc + half) // n, -((-acc + half) // n))
