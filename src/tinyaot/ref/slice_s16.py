"""slice_s16: x[begin:end:step] of an int16 (16x8) tensor; the int8 kernel's walk (ref/slice_s8.py) over
2-byte values. Moves values and keeps the qparams."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.slice_s8 import slice_geometry, strided_copy


@dataclass(frozen=True)
class Slice16Params:
    offset: int  # elements from the input's start to the first element taken
    out_shape: tuple[int, ...]  # the walk, left-padded with 1s to 4-D
    in_strides: tuple[int, ...]  # the input element stride along each walk axis


def prepare(node: Node, g: Graph) -> Slice16Params:
    return Slice16Params(*slice_geometry(node, g, io=_checks.io16))


def slice_s16(x: np.ndarray, p: Slice16Params) -> np.ndarray:
    return strided_copy(x, p)
