"""resize_nearest_s16: TFLM's int16 RESIZE_NEAREST_NEIGHBOR of an NHWC int16 (16x8) tensor.

The int8 kernel (ref/resize_nearest_s8.py) on int16 pixels: the same compile-time index tables (TFLM's float32
GetNearestNeighbor, ir/resize.py) and the same gather; only the tensors' dtype check differs. Keeps the input's
qparams. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.resize_nearest_s8 import ResizeNearestParams, prepare_resize_nearest, resize_nearest_s8


@dataclass(frozen=True)
class ResizeNearest16Params(ResizeNearestParams):
    """The int8 kernel's fields; its own class for its own C struct (tinyaot_resize_nearest16_params)."""


def prepare(node: Node, g: Graph) -> ResizeNearest16Params:
    return prepare_resize_nearest(node, g, io=_checks.io16, params=ResizeNearest16Params)


def resize_nearest_s16(x: np.ndarray, p: ResizeNearest16Params) -> np.ndarray:
    return resize_nearest_s8(x, p)
