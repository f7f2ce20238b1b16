"""The walk of a slice, the one definition the planner (which reads a contiguous slice in place) and the reference
kernels share: x[begin:end:step] resolved into a start offset and at most a few (size, stride) axes over the
input's elements, axes the slice takes whole merged with their inner neighbour."""
from __future__ import annotations

import numpy as np


def slice_walk(node, shape: tuple[int, ...]) -> tuple[int, list[tuple[int, int]]]:
    """(offset, [(size, element stride)] outermost first, axes of size 1 left out) of slice node `node` over an
    input of `shape` (its attributes checked against the shape by the kernels' prepare)."""
    begin, end = node.attrs["begin"], node.attrs["end"]
    strides = node.attrs.get("strides") or (1,) * len(begin)
    out = [-(-(e - b) // s) for b, e, s in zip(begin, end, strides)]
    element = [int(np.prod(shape[k + 1 :], dtype=np.int64)) for k in range(len(shape))]
    offset = sum(b * e for b, e in zip(begin, element))
    return offset, _merged([(n, s * e) for n, s, e in zip(out, strides, element) if n != 1])


def _merged(axes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(size, element stride) per axis, outermost first; an axis whose stride spans exactly its inner
    neighbour's run joins it (x[:, 2:5] of a contiguous [4, 8] is 4 runs of 3, not 4 x 3 separate reads)."""
    out: list[tuple[int, int]] = []
    for size, stride in reversed(axes):
        if out and stride == out[0][0] * out[0][1]:
            out[0] = (size * out[0][0], out[0][1])
        else:
            out.insert(0, (size, stride))
    return out


def contiguous_slice(node, shape: tuple[int, ...]) -> int | None:
    """The element offset of a slice whose output is one run of its input's elements (a range of rows of an
    image, of tokens, of features), else None."""
    offset, walk = slice_walk(node, shape)
    return offset if len(walk) == 0 or (len(walk) == 1 and walk[0][1] == 1) else None
