"""mul_s8: int8 elementwise multiply, TFLM's int8 MUL (reference_integer_ops::Mul / BroadcastMul).

out = clamp(MultiplyByQuantizedMultiplier((a - a_zp) * (b - b_zp), a_scale * b_scale / out_scale)
+ out_zp, act_min, act_max), the real multiplier computed in double from the float32 scales. Shapes
broadcast NumPy-style up to 4-D (e.g. [N, H, W, C] * [N, 1, 1, C] in squeeze-and-excitation blocks);
either operand may be a constant tensor (emitted to flash). The output may overwrite an operand that has
the output's full shape: every element is read before it is written and nothing is read back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.quantize.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ref import _checks


@dataclass(frozen=True)
class MulParams:
    out_shape: tuple[int, ...]  # the output shape, left-padded with 1s to 4-D
    a_shape: tuple[int, ...]  # operand shapes, left-padded with 1s to 4-D
    b_shape: tuple[int, ...]
    a_strides: tuple[int, ...]  # element strides of each operand over out_shape; 0 along broadcast dims
    b_strides: tuple[int, ...]
    broadcast: bool  # False: both operands have the output's shape, one flat loop
    size: int  # output elements
    input1_offset: int  # -a_zp
    input2_offset: int  # -b_zp
    output_offset: int  # out_zp
    multiplier: int
    shift: int
    act_min: int
    act_max: int
    constants: tuple  # (a data or None, b data or None): constant operands, int8 in their own shape


def _pad4(shape) -> tuple[int, ...]:
    return (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)


def _strides(shape4: tuple[int, ...]) -> tuple[int, ...]:
    """Contiguous element strides of `shape4`, with 0 wherever the dim is 1 (broadcast)."""
    strides, acc = [], 1
    for d in reversed(shape4):
        strides.append(acc if d != 1 else 0)
        acc *= d
    return tuple(reversed(strides))


def prepare(node: Node, g: Graph) -> MulParams:
    if len(node.inputs) != 2:
        raise ModelError(f"mul '{node.name}' needs two operands, got {len(node.inputs)}")
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    for t in (a, b, y):
        _checks.int8_per_tensor(node, t)
    if a.is_const and b.is_const:
        raise UnsupportedOpError(f"mul '{node.name}' multiplies two constants; fold it in the front end")
    if max(len(a.shape), len(b.shape), len(y.shape)) > 4:
        raise UnsupportedOpError(f"mul '{node.name}': tensors of more than 4 dims are not supported")
    try:
        want = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ModelError(
            f"mul '{node.name}': shapes {list(a.shape)} and {list(b.shape)} do not broadcast (NumPy rules)"
        ) from None
    _checks.same_shape(node, y, want)
    real = a.qparams.scale[0] * b.qparams.scale[0] / y.qparams.scale[0]
    m, s = quantize_multiplier(real)
    out4, a4, b4 = _pad4(y.shape), _pad4(a.shape), _pad4(b.shape)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    return MulParams(
        out_shape=out4, a_shape=a4, b_shape=b4, a_strides=_strides(a4), b_strides=_strides(b4),
        broadcast=not (a4 == out4 and b4 == out4), size=y.size,
        input1_offset=-a.qparams.zero_point[0], input2_offset=-b.qparams.zero_point[0],
        output_offset=y.qparams.zero_point[0], multiplier=m, shift=s, act_min=act_min, act_max=act_max,
        constants=(_const(a), _const(b)),
    )


def _const(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.data, dtype=np.int8) if t.is_const else None


def mul_s8(*args) -> np.ndarray:
    """mul_s8(a, b, params), constant operands left out of the arguments (the interpreter's convention)."""
    *acts, p = args
    acts = iter(acts)
    a, b = (c if c is not None else next(acts) for c in p.constants)
    a = a.reshape(p.a_shape).astype(np.int64) + p.input1_offset
    b = b.reshape(p.b_shape).astype(np.int64) + p.input2_offset
    acc = multiply_by_quantized_multiplier(a * b, p.multiplier, p.shift) + p.output_offset
    return np.clip(acc, p.act_min, p.act_max).astype(np.int8).reshape(p.out_shape)
