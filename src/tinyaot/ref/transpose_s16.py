"""transpose_s16: permute the axes of a 1-D to 6-D int16 (16x8) tensor, TFLM's int16 TRANSPOSE.

Moves values and keeps the qparams, as the int8 kernel (ref/transpose_s8.py), on the same reduced permutation
padded to 6-D with leading 1s; the output, row-major, reads the input at the element strides `in_strides` (the
permuted input strides), which is all the C kernel gets and all this reference reads. Output must not overlap
the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.transpose_s8 import transpose_geometry


@dataclass(frozen=True)
class Transpose16Params:
    out_shape: tuple[int, int, int, int, int, int]  # the reduced permutation's, padded to 6-D with leading 1s
    in_strides: tuple[int, int, int, int, int, int]  # input element stride along each of those output axes


def prepare(node: Node, g: Graph) -> Transpose16Params:
    _perm, _in_shape, out_shape, in_strides = transpose_geometry(node, g, io=_checks.io16)
    return Transpose16Params(out_shape, in_strides)


def transpose_s16(x: np.ndarray, p: Transpose16Params) -> np.ndarray:
    flat = np.ascontiguousarray(x).reshape(-1)
    view = np.lib.stride_tricks.as_strided(flat, p.out_shape, tuple(s * flat.itemsize for s in p.in_strides),
                                           writeable=False)
    return view.copy()
