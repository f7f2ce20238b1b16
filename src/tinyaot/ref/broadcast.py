"""NumPy broadcasting of two int8 operands up to 4-D, shared by the element-wise binary kernels (add, sub, mul,
minimum, maximum): the checks every one of them makes, the 4-D strides their C kernels walk, and the
interpreter's convention for constant operands (left out of the arguments, read from the params).

Shapes are left-padded with 1s to 4-D, so 2-D [batch, features] and 3-D [1, T, D] tensors broadcast like NHWC
ones. An operand's stride is 0 along an axis where it has size 1 and the output does not: the C kernel reads the
same element again, the way TFLite's BroadcastSlow kernels index it. Neighbouring axes along which each operand
is either whole in both or broadcast in both are merged first (a squeeze-excite gate [1, H, W, C] * [1, 1, 1, C]
walks [1, 1, H * W, C]), so the kernels' inner rows are as long as the data allows; the element order is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import _checks

MAX_DIMS = 4


@dataclass(frozen=True)
class Broadcast:
    """Where each output element reads its operands."""

    out_shape: tuple[int, ...]  # the output shape, left-padded with 1s to 4-D
    a_shape: tuple[int, ...]  # operand shapes, left-padded with 1s to 4-D
    b_shape: tuple[int, ...]
    a_strides: tuple[int, ...]  # element strides of each operand over out_shape; 0 along broadcast axes
    b_strides: tuple[int, ...]
    broadcast: bool  # False: both operands have the output's shape, one flat loop
    constants: tuple  # (a data or None, b data or None): constant operands, int8 in their own shape


def c_kernel(stem: str, broadcast: bool) -> str:
    """The C function of a binary kernel: tinyaot_<stem>_s8 walks both operands flat, tinyaot_<stem>_broadcast_s8
    reads each at its strides. Its Params' `c_kernel` names it, so the generic emitter (codegen/ops.py) calls it."""
    return f"tinyaot_{stem}_broadcast_s8" if broadcast else f"tinyaot_{stem}_s8"


def _where(node: Node) -> str:
    return f"layer '{node.name}' ({node.source or 'no source location'})"


def pad4(shape) -> tuple[int, ...]:
    return (1,) * (MAX_DIMS - len(shape)) + tuple(int(d) for d in shape)


def collapse(out, a, b) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The three shapes with axes of size 1 in the output dropped and neighbouring axes merged where each operand
    is whole along both or broadcast (1) along both; left-padded to 4-D again."""
    merged: list[list[int]] = []
    for o, x, y in zip(out, a, b):
        if o == 1:
            continue
        if merged and (merged[-1][1] == merged[-1][0]) == (x == o) and (merged[-1][2] == merged[-1][0]) == (y == o):
            merged[-1] = [merged[-1][0] * o, merged[-1][1] * x, merged[-1][2] * y]
        else:
            merged.append([o, x, y])
    merged = [[1, 1, 1]] * (MAX_DIMS - len(merged)) + merged
    return tuple(tuple(int(m[k]) for m in merged) for k in range(3))


def strides(shape4: tuple[int, ...]) -> tuple[int, ...]:
    """Contiguous element strides of `shape4`, with 0 wherever the dim is 1 (broadcast)."""
    out, acc = [], 1
    for d in reversed(shape4):
        out.append(acc if d != 1 else 0)
        acc *= d
    return tuple(reversed(out))


def geometry(node: Node, g: Graph) -> tuple[Tensor, Tensor, Tensor, Broadcast]:
    """(a, b, y, broadcast) of a binary element-wise node, after the checks its kernel relies on: two int8
    per-tensor operands, at most one of them constant, shapes of at most 4 dims that broadcast to the output's."""
    if len(node.inputs) != 2:
        raise ModelError(f"{node.op} {_where(node)} needs two operands, got {len(node.inputs)}")
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    for t in (a, b, y):
        _checks.int8_per_tensor(node, t)
    if a.is_const and b.is_const:
        raise UnsupportedOpError(f"{node.op} {_where(node)} has two constant operands: its value is a constant, "
                                 "which the front end folds (an int8 kernel of two constants is not supported)")
    if max(len(a.shape), len(b.shape), len(y.shape)) > MAX_DIMS:
        raise UnsupportedOpError(
            f"{node.op} {_where(node)}: operands {list(a.shape)} and {list(b.shape)} -> {list(y.shape)}; "
            f"broadcasting is supported up to {MAX_DIMS}-D (NHWC), reshape to at most {MAX_DIMS} dims")
    try:
        want = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ModelError(f"{node.op} {_where(node)}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast "
                         "(NumPy rules: each axis equal, or 1 in one of them)") from None
    _checks.same_shape(node, y, want)
    out4, a4, b4 = collapse(pad4(y.shape), pad4(a.shape), pad4(b.shape))
    geo = Broadcast(out_shape=out4, a_shape=a4, b_shape=b4, a_strides=strides(a4), b_strides=strides(b4),
                    broadcast=not (a4 == out4 and b4 == out4), constants=(_const(a), _const(b)))
    return a, b, y, geo


def _const(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.data, dtype=np.int8) if t.is_const else None


def operands(args: tuple, geo: Broadcast) -> tuple[np.ndarray, np.ndarray]:
    """The two operands in their 4-D shapes, from the kernel's arguments (constants left out of them, as the
    interpreter calls kernels) and the constants the params hold."""
    acts = iter(args)
    a, b = (c if c is not None else next(acts) for c in geo.constants)
    return np.asarray(a).reshape(geo.a_shape), np.asarray(b).reshape(geo.b_shape)
