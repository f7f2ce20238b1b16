"""transpose_s8: permute the axes of a 2-D to 4-D int8 tensor (moves bytes, keeps qparams).

Only where a view cannot do (e.g. an NHWC tensor flattened in PyTorch's NCHW order). The shape is padded to
4-D with leading 1s; the kernel walks the output in order and reads the input through permuted strides.
Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks


@dataclass(frozen=True)
class TransposeParams:
    perm: tuple[int, ...]  # output axis k is input axis perm[k]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]  # padded to 4-D with leading 1s
    in_strides: tuple[int, ...]  # input element stride along each output axis (4-D)


def prepare(node: Node, g: Graph) -> TransposeParams:
    return TransposeParams(*transpose_geometry(node, g))


def transpose_geometry(node: Node, g: Graph, io=_checks.io) -> tuple[tuple[int, ...], ...]:
    """(perm, in_shape, out_shape, in_strides) as TransposeParams holds them, after the checks; `io` checks the
    tensors' dtype (the int16 twin passes its own)."""
    x, y = io(node, g)
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
    out4 = (1,) * pad + tuple(int(d) for d in y.shape)
    in_strides4 = (0,) * pad + tuple(strides[a] for a in perm)
    return perm, tuple(x.shape), out4, in_strides4


def transpose_s8(x: np.ndarray, p: TransposeParams) -> np.ndarray:
    return np.transpose(x.reshape(p.in_shape), p.perm)
