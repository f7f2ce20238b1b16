"""resize_nearest_s8: TFLite's RESIZE_NEAREST_NEIGHBOR of an NHWC int8 tensor (moves bytes, keeps qparams).

Which input row and column each output row and column copies depends only on the sizes and the flags, so
prepare computes them once (TFLM's float32 GetNearestNeighbor, ir/resize.py) and the kernel only copies pixels;
the C kernel gets the two index tables and no float. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.ir.resize import nearest_source
from tinyaot.ref import _checks


@dataclass(frozen=True)
class ResizeNearestParams:
    batches: int
    in_h: int
    in_w: int
    channels: int
    out_h: int
    out_w: int
    src_y: np.ndarray  # int32 [out_h]: the input row output row y copies
    src_x: np.ndarray  # int32 [out_w]: the input column output column x copies


def prepare(node: Node, g: Graph) -> ResizeNearestParams:
    return prepare_resize_nearest(node, g)


def prepare_resize_nearest(node: Node, g: Graph, io=_checks.io, params: type = ResizeNearestParams):
    """The checks and index tables of a nearest resize; `io` checks the tensors' dtype (the int16 twin's too)."""
    x, y = io(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    n, h, w, c = x.shape
    if len(y.shape) != 4 or min(y.shape[1], y.shape[2]) < 1:
        raise UnsupportedOpError(f"resize_nearest '{node.name}': output '{y.name}' must be NHWC with H, W >= 1, "
                                 f"got {list(y.shape)}")
    out_h, out_w = int(y.shape[1]), int(y.shape[2])
    _checks.same_shape(node, y, (n, out_h, out_w, c))
    corners, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    return params(n, h, w, c, out_h, out_w, nearest_source(h, out_h, corners, half),
                  nearest_source(w, out_w, corners, half))


def resize_nearest_s8(x: np.ndarray, p: ResizeNearestParams) -> np.ndarray:
    """Copies pixels whatever their dtype (resize_nearest_s16 is the same gather)."""
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels)
    return np.ascontiguousarray(x[:, p.src_y][:, :, p.src_x])
