"""resize_nearest_s16: TFLM's int16 RESIZE_NEAREST_NEIGHBOR of an NHWC int16 (16x8) tensor.

As the int8 kernel (ref/resize_nearest_s8.py): the input row and column each output row and column copies are
fixed at compile time (TFLM's float32 GetNearestNeighbor, ir/resize.py), so the kernel only copies int16 pixels
and keeps the input's qparams. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.ir.resize import nearest_source
from tinyaot.ref import _checks


@dataclass(frozen=True)
class ResizeNearest16Params:
    batches: int
    in_h: int
    in_w: int
    channels: int
    out_h: int
    out_w: int
    src_y: np.ndarray  # int32 [out_h]: the input row output row y copies
    src_x: np.ndarray  # int32 [out_w]: the input column output column x copies


def prepare(node: Node, g: Graph) -> ResizeNearest16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    n, h, w, c = x.shape
    if len(y.shape) != 4 or min(y.shape[1], y.shape[2]) < 1:
        raise UnsupportedOpError(f"resize_nearest '{node.name}': output '{y.name}' must be NHWC with H, W >= 1, "
                                 f"got {list(y.shape)}")
    out_h, out_w = int(y.shape[1]), int(y.shape[2])
    _checks.same_shape(node, y, (n, out_h, out_w, c))
    corners, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    return ResizeNearest16Params(n, h, w, c, out_h, out_w, nearest_source(h, out_h, corners, half),
                                 nearest_source(w, out_w, corners, half))


def resize_nearest_s16(x: np.ndarray, p: ResizeNearest16Params) -> np.ndarray:
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels)
    return np.ascontiguousarray(x[:, p.src_y][:, :, p.src_x])
