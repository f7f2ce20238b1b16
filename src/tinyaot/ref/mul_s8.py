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

from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import broadcast


@dataclass(frozen=True)
class MulParams:
    out_shape: tuple[int, ...]  # the output as 4-D, axes merged (ref/broadcast.py)
    a_shape: tuple[int, ...]  # operand shapes over those axes
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

    @property
    def c_kernel(self) -> str:
        """tinyaot_mul_s8, or tinyaot_mul_broadcast_s8 when an operand broadcasts: chosen at compile time."""
        return broadcast.c_kernel("mul", self.broadcast)


def prepare(node: Node, g: Graph) -> MulParams:
    a, b, y, geo = broadcast.geometry(node, g)
    real = a.qparams.scale[0] * b.qparams.scale[0] / y.qparams.scale[0]
    m, s = quantize_multiplier(real)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    return MulParams(
        out_shape=geo.out_shape, a_shape=geo.a_shape, b_shape=geo.b_shape, a_strides=geo.a_strides,
        b_strides=geo.b_strides, broadcast=geo.broadcast, size=y.size,
        input1_offset=-a.qparams.zero_point[0], input2_offset=-b.qparams.zero_point[0],
        output_offset=y.qparams.zero_point[0], multiplier=m, shift=s, act_min=act_min, act_max=act_max,
        constants=geo.constants,
    )


def mul_s8(*args) -> np.ndarray:
    """mul_s8(a, b, params), constant operands left out of the arguments (the interpreter's convention)."""
    *acts, p = args
    a, b = broadcast.operands(acts, p)
    a = a.astype(np.int64) + p.input1_offset
    b = b.astype(np.int64) + p.input2_offset
    acc = multiply_by_quantized_multiplier(a * b, p.multiplier, p.shift) + p.output_offset
    return np.clip(acc, p.act_min, p.act_max).astype(np.int8).reshape(p.out_shape)
