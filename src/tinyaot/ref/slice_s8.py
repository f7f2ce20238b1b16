"""slice_s8: x[begin:end:step] along every axis of an int8 tensor (moves bytes, keeps qparams).

The slice is resolved at compile time into a start offset and a walk of at most four axes (ir/slicing.py): axes
the slice takes whole (and axes of size 1) merge with their inner neighbour, so a channel split of NHWC is
[pixels, channels] and a row range of an image is one run of bytes (which the plan may read in place instead:
plan/lifetimes.py). The kernel walks the output in order and reads the input at
in_strides from input + offset; where the innermost stride is 1 it copies each run at once (memmove: the plan may
put the output over the part of the input already read, plan/overlap.py's gather rule). Every input byte read
lies at or after the output byte written from it, so writing forward never clobbers a byte still to be read when
the output starts at or below the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.slicing import slice_walk
from tinyaot.ref import _checks

AXES = 4  # the C kernel's loop depth


@dataclass(frozen=True)
class SliceParams:
    offset: int  # elements from the input's start to the first element taken
    out_shape: tuple[int, ...]  # the walk, left-padded with 1s to 4-D (merged axes, not the tensor's shape)
    in_strides: tuple[int, ...]  # the input element stride along each walk axis


def prepare(node: Node, g: Graph) -> SliceParams:
    return SliceParams(*slice_geometry(node, g))


def slice_geometry(node: Node, g: Graph, io=_checks.io) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(offset, out_shape, in_strides) as SliceParams holds them, after the checks; `io` checks the tensors'
    dtype (the int16 twin passes its own)."""
    x, y = io(node, g)
    _checks.same_qparams(node, x, y)
    shape = tuple(int(d) for d in x.shape)
    begin, end = node.attrs["begin"], node.attrs["end"]
    strides = node.attrs.get("strides") or (1,) * len(begin)
    if len(begin) != len(shape):
        raise ModelError(f"slice '{node.name}': begin/end/strides name {len(begin)} axes, the input "
                         f"{list(shape)} has {len(shape)}")
    if (begin[0], end[0], strides[0]) != (0, shape[0], 1):
        raise ModelError(f"slice '{node.name}' cuts axis 0, the batch; the IR takes it whole")
    if any(e > d for e, d in zip(end, shape)):
        raise ModelError(f"slice '{node.name}': end {tuple(end)} reaches past the input's shape {list(shape)}")
    out = tuple(-(-(e - b) // s) for b, e, s in zip(begin, end, strides))
    _checks.same_shape(node, y, out)
    offset, walk = slice_walk(node, shape)
    if len(walk) > AXES:
        raise ModelError(f"slice '{node.name}' of {list(shape)} -> {list(out)} walks {len(walk)} separate axes; "
                         f"the kernel walks at most {AXES} (slice in two steps)")
    walk = [(1, 0)] * (AXES - len(walk)) + walk
    return offset, tuple(n for n, _ in walk), tuple(s for _, s in walk)


def slice_s8(x: np.ndarray, p: SliceParams) -> np.ndarray:
    return strided_copy(x, p)


def strided_copy(x: np.ndarray, p) -> np.ndarray:
    """The output as the C kernel reads it: from the flat input at offset, along the walk's axes and strides."""
    flat = np.ascontiguousarray(x).reshape(-1)[p.offset :]
    view = np.lib.stride_tricks.as_strided(flat, p.out_shape, tuple(s * flat.itemsize for s in p.in_strides),
                                           writeable=False)
    return view.copy()
