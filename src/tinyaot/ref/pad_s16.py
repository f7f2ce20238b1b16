"""pad_s16: spatial padding of an NHWC int16 (16x8) tensor, TFLM's int16 PAD.

The int8 kernel's modes (ref/pad_s8.py) on int16 values: constant padding writes 0 (int16 activations are
symmetric, so the zero point 0 is real 0, and TFLM's int16 PAD pads with 0 when no constant is given); reflect,
symmetric and replicate copy input pixels, so they are exact too (TFLM's MIRROR_PAD has no int16 kernel, so
these come from PyTorch models only: the .tflite importer refuses an int16 MIRROR_PAD). The output keeps the
input's qparams. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.pad_s8 import pad_geometry, pad_values


@dataclass(frozen=True)
class Pad16Params:
    batches: int
    in_h: int
    in_w: int
    channels: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    mode: int  # MODE_CODES (TINYAOT_PAD_*): 0 constant (zeros), 1 reflect, 2 symmetric, 3 replicate


def prepare(node: Node, g: Graph) -> Pad16Params:
    _x, geometry, mode = pad_geometry(node, g, io=_checks.io16)
    return Pad16Params(*geometry, mode)


def pad_s16(x: np.ndarray, p: Pad16Params) -> np.ndarray:
    return pad_values(x, p, np.int16(0))
