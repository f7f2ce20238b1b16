"""transpose_s8: permute the axes of a 1-D to 6-D int8 tensor (moves bytes, keeps qparams).

Only where a view cannot do (e.g. an NHWC tensor flattened in PyTorch's NCHW order, a transformer's head split).
The permutation is first reduced to the axes that move bytes: size-1 axes are dropped and input axes that stay
adjacent and in order are merged (a permutation is decided by those alone), so a 6-D permutation such as
MobileViT's patch unfold runs as few, long loops. That shape is padded to 6-D with leading 1s; the kernel walks
the output in order and reads the input through permuted strides. Output must not overlap the input.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.layout import MAX_TRANSPOSE_RANK as MAX_RANK
from tinyaot.ir.layout import reduced_permutation
from tinyaot.ref import _checks


@dataclass(frozen=True)
class TransposeParams:
    perm: tuple[int, ...]  # output axis k is input axis perm[k]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, int, int, int, int, int]  # the reduced permutation's, padded to 6-D with leading 1s
    in_strides: tuple[int, int, int, int, int, int]  # input element stride along each of those output axes


def prepare(node: Node, g: Graph) -> TransposeParams:
    return TransposeParams(*transpose_geometry(node, g))


def transpose_geometry(node: Node, g: Graph, io=_checks.io) -> tuple[tuple[int, ...], ...]:
    """(perm, in_shape, out_shape, in_strides) as TransposeParams holds them, after the checks; `io` checks the
    tensors' dtype (the int16 twin passes its own)."""
    x, y = io(node, g)
    _checks.rank(node, x, tuple(range(1, MAX_RANK + 1)))
    _checks.same_qparams(node, x, y)
    rank = len(x.shape)
    perm = node.attrs.get("perm")
    if perm is None or len(perm) != rank or sorted(int(a) % rank for a in perm) != list(range(rank)):
        raise ModelError(f"transpose '{node.name}': perm {perm!r} is not a permutation of the {rank} axes")
    perm = tuple(int(a) % rank for a in perm)
    _checks.same_shape(node, y, tuple(x.shape[a] for a in perm))
    shape, moved = reduced_permutation(tuple(int(d) for d in x.shape), perm)
    strides = [math.prod(shape[a + 1 :]) for a in range(len(shape))]
    pad = MAX_RANK - len(shape)
    out6 = (1,) * pad + tuple(shape[a] for a in moved)
    in_strides6 = (0,) * pad + tuple(strides[a] for a in moved)
    return perm, tuple(x.shape), out6, in_strides6


def transpose_s8(x: np.ndarray, p: TransposeParams) -> np.ndarray:
    return np.transpose(x.reshape(p.in_shape), p.perm)
