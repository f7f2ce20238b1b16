"""max_pool2d_s16: NHWC int16 (16x8) max pooling, TFLM's int16 reference MaxPool.

The int8 kernel (ref/max_pool2d_s8.py) on int16 values, sharing its checks, geometry and window walk: the
window is clipped to the input so padding never wins, the output keeps the input's qparams, and the fused clamp
is an int16 range applied after the max. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.max_pool2d_s8 import MaxPool2DParams, prepare_max_pool2d, window_max


@dataclass(frozen=True)
class MaxPool2D16Params(MaxPool2DParams):
    """The int8 kernel's fields (act_min / act_max in int16 units); its own class for its own C struct."""


def prepare(node: Node, g: Graph) -> MaxPool2D16Params:
    return prepare_max_pool2d(node, g, io=_checks.io16, params=MaxPool2D16Params, qrange=(-32768, 32767))


def max_pool2d_s16(x: np.ndarray, p: MaxPool2D16Params) -> np.ndarray:
    """The max of int16 values is the max of their int32 twins: the int8 reference's walk, wider."""
    return np.clip(window_max(x, p, np.int32(-32769)), p.act_min, p.act_max).astype(np.int16)  # below every int16
