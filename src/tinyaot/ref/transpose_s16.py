"""transpose_s16: permute the axes of a 2-D to 4-D int16 (16x8) tensor, TFLM's int16 TRANSPOSE.

Moves values and keeps the qparams, as the int8 kernel (ref/transpose_s8.py). The shape is padded to 4-D with
leading 1s; the output, row-major, reads the input at the element strides `in_strides` (the permuted input
strides), which is all the C kernel gets and all this reference reads. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks


@dataclass(frozen=True)
class Transpose16Params:
    out_shape: tuple[int, ...]  # padded to 4-D with leading 1s
    in_strides: tuple[int, ...]  # input element stride along each output axis (4-D)


def prepare(node: Node, g: Graph) -> Transpose16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (2, 3, 4))
    _checks.same_qparams(node, x, y)
    rank = len(x.shape)
    perm = node.attrs.get("perm")
    if perm is None or len(perm) != rank or sorted(int(a) % rank for a in perm) != list(range(rank)):
        raise ModelError(f"transpose '{node.name}': perm {perm!r} is not a permutation of the {rank} axes")
    perm = tuple(int(a) % rank for a in perm)
    _checks.same_shape(node, y, tuple(x.shape[a] for a in perm))
    strides = [int(np.prod(x.shape[a + 1 :], dtype=np.int64)) for a in range(rank)]
    pad = 4 - rank
    return Transpose16Params((1,) * pad + tuple(int(d) for d in y.shape), (0,) * pad + tuple(strides[a] for a in perm))


def transpose_s16(x: np.ndarray, p: Transpose16Params) -> np.ndarray:
    flat = np.ascontiguousarray(x).reshape(-1)
    view = np.lib.stride_tricks.as_strided(flat, p.out_shape, tuple(s * flat.itemsize for s in p.in_strides),
                                           writeable=False)
    return view.copy()
