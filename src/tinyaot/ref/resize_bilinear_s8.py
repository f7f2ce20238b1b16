"""resize_bilinear_s8: TFLite's integer RESIZE_BILINEAR of an NHWC int8 tensor (TFLM's ResizeBilinearInteger).

Source coordinates are integers in units of 1/1024 pixel (ir/resize.py); an output value is the four
neighbours' int8 values (zero point included: the weights sum to 2^20, so it cancels) weighted by products of
10-bit fractions, divided by 2^20 rounding half away from zero (TFLM's default double rounding). The output keeps
the input's qparams. Every sum fits int32: |input| <= 128 and the weights' absolute values sum to at most
(1536 + 512)^2 (a fraction is in [-512, 1024)), so |sum| < 2^29 and the C kernel needs no int64.
Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.ir.resize import BILINEAR_FRACTION_BITS, BILINEAR_ONE, bilinear_scale_10, bilinear_source
from tinyaot.ref import _checks

ROUND_BITS = 2 * BILINEAR_FRACTION_BITS  # the weights are products of two 10-bit fractions
MAX_COORDINATE = 2**31 - 1  # output index * scale_10 is an int32 in TFLM and in the C kernel


@dataclass(frozen=True)
class ResizeBilinearParams:
    batches: int
    in_h: int
    in_w: int
    channels: int
    out_h: int
    out_w: int
    height_scale_10: int  # in_h / out_h in units of 1/1024 (align_corners: (in_h - 1) / (out_h - 1))
    width_scale_10: int
    half_pixel_centers: int  # 1: sample at pixel centres (scaled + scale/2 - 1/2)


def prepare(node: Node, g: Graph) -> ResizeBilinearParams:
    x, y = _checks.io(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    n, h, w, c = x.shape
    if len(y.shape) != 4 or min(y.shape[1], y.shape[2]) < 1:
        raise UnsupportedOpError(f"resize_bilinear '{node.name}': output '{y.name}' must be NHWC with H, W >= 1, "
                                 f"got {list(y.shape)}")
    out_h, out_w = int(y.shape[1]), int(y.shape[2])
    _checks.same_shape(node, y, (n, out_h, out_w, c))
    corners, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    if corners and half:
        raise ModelError(f"resize_bilinear '{node.name}': align_corners and half_pixel_centers cannot both be set "
                         "(TFLite's rule)")
    for what, size, out in (("height", h, out_h), ("width", w, out_w)):
        scale = bilinear_scale_10(size, out, corners)
        lower, _, _ = bilinear_source(size, out, scale, half)
        if out * scale + scale > MAX_COORDINATE or int(lower.max()) > size - 1:
            raise UnsupportedOpError(
                f"resize_bilinear '{node.name}': resizing {what} {size} -> {out} is outside what TFLite's integer "
                f"kernel computes (source coordinates in 1/{BILINEAR_ONE} pixel leave the input or int32); "
                "resize in smaller steps")
    return ResizeBilinearParams(n, h, w, c, out_h, out_w, bilinear_scale_10(h, out_h, corners),
                                bilinear_scale_10(w, out_w, corners), int(half))


def resize_bilinear_s8(x: np.ndarray, p: ResizeBilinearParams) -> np.ndarray:
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels).astype(np.int64)
    y0, y1, fy = bilinear_source(p.in_h, p.out_h, p.height_scale_10, bool(p.half_pixel_centers))
    x0, x1, fx = bilinear_source(p.in_w, p.out_w, p.width_scale_10, bool(p.half_pixel_centers))
    wy0, wy1 = (BILINEAR_ONE - fy)[:, None, None], fy[:, None, None]
    wx0, wx1 = (BILINEAR_ONE - fx)[None, :, None], fx[None, :, None]
    top, bottom = x[:, y0], x[:, y1]
    total = (top[:, :, x0] * wy0 * wx0 + bottom[:, :, x0] * wy1 * wx0 + top[:, :, x1] * wy0 * wx1
             + bottom[:, :, x1] * wy1 * wx1)
    half = 1 << (ROUND_BITS - 1)
    rounded = np.where(total > 0, total + half, total - half)
    q = np.abs(rounded) >> ROUND_BITS  # C's division by 2^20 truncates toward zero
    return np.where(rounded < 0, -q, q).astype(np.int8)

