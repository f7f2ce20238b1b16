"""minmax_s8: element-wise int8 minimum / maximum (the IR's `minimum` and `maximum`), TFLite Micro's MINIMUM /
MAXIMUM when the operands share the output's qparams.

TFLM compares the int8 bytes as they are (its kernel has no Prepare and reads no qparams; TFLite's converter
gives both inputs and the output one scale and zero point). tinyaot's own quantizer calibrates each tensor, so an
operand whose qparams differ from the output's is first requantized to them (TFLM's Requantize:
clamp(MultiplyByQuantizedMultiplier(q - zp_in, s_in / s_out) + zp_out, -128, 127)), which is monotonic, so the
comparison picks the operand the real values would. With equal qparams that step is skipped and the result is
TFLM's byte for byte. Shapes broadcast up to 4-D (ref/broadcast.py); one operand may be a constant. The speed mode
reads a rescaled operand from a 256-byte table made here (the size and memory modes compute it per element).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import _checks, broadcast

MAXIMUM = "maximum"  # the IR op that takes the larger operand; its twin `minimum` the smaller


@dataclass(frozen=True)
class MinmaxParams:
    size: int  # output elements
    out_shape: tuple[int, ...]  # the output as 4-D, axes merged (ref/broadcast.py)
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    a_strides: tuple[int, ...]  # element strides of each operand over out_shape; 0 along broadcast dims
    b_strides: tuple[int, ...]
    broadcast: bool  # False: both operands have the output's shape, one flat loop
    is_max: int  # 1: maximum, 0: minimum
    input1_rescale: int  # 1: input1 is requantized to the output's qparams first; 0: it has them already
    input1_multiplier: int
    input1_shift: int
    input1_zero_point: int
    input2_rescale: int
    input2_multiplier: int
    input2_shift: int
    input2_zero_point: int
    output_zero_point: int
    act_min: int
    act_max: int
    # int8 [256] (speed mode; None elsewhere, or when the operand needs no rescaling): the rescaled value of q at
    # q + 128, what the three fields above compute
    input1_table: np.ndarray = field(default=None, compare=False, repr=False)
    input2_table: np.ndarray = field(default=None, compare=False, repr=False)
    constants: tuple = field(default=(None, None), compare=False, repr=False)

    @property
    def c_kernel(self) -> str:
        """tinyaot_minmax_s8, or tinyaot_minmax_broadcast_s8 when an operand broadcasts: chosen at compile time."""
        return broadcast.c_kernel("minmax", self.broadcast)


def _rescale(node: Node, x: Tensor, y: Tensor) -> tuple[int, int, int]:
    """(rescale, multiplier, shift) of x's qparams to y's; (0, 0, 0) when they are the same."""
    same = (x.qparams.scale[0], x.qparams.zero_point[0]) == (y.qparams.scale[0], y.qparams.zero_point[0])
    if same:
        return 0, 0, 0
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    return 1, m, s


def prepare(node: Node, g: Graph) -> MinmaxParams:
    a, b, y, geo = broadcast.geometry(node, g)
    r1, m1, s1 = _rescale(node, a, y)
    r2, m2, s2 = _rescale(node, b, y)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], y.qparams.zero_point[0])
    return MinmaxParams(
        size=y.size, out_shape=geo.out_shape, a_shape=geo.a_shape, b_shape=geo.b_shape, a_strides=geo.a_strides,
        b_strides=geo.b_strides, broadcast=geo.broadcast, is_max=int(node.op == MAXIMUM),
        input1_rescale=r1, input1_multiplier=m1, input1_shift=s1, input1_zero_point=int(a.qparams.zero_point[0]),
        input2_rescale=r2, input2_multiplier=m2, input2_shift=s2, input2_zero_point=int(b.qparams.zero_point[0]),
        output_zero_point=int(y.qparams.zero_point[0]), act_min=act_min, act_max=act_max,
        input1_table=_table(r1, m1, s1, a, y), input2_table=_table(r2, m2, s2, b, y), constants=geo.constants,
    )


def _table(rescale: int, multiplier: int, shift: int, x: Tensor, y: Tensor) -> np.ndarray | None:
    if not rescale:
        return None
    q = np.arange(-128, 128)
    return _in_output_qparams(q, 1, multiplier, shift, int(x.qparams.zero_point[0]),
                              int(y.qparams.zero_point[0])).astype(np.int8)


def _in_output_qparams(q: np.ndarray, rescale: int, multiplier: int, shift: int, zp: int, out_zp: int) -> np.ndarray:
    q = q.astype(np.int64)
    if not rescale:
        return q
    return np.clip(multiply_by_quantized_multiplier(q - zp, multiplier, shift) + out_zp, -128, 127)


def minmax_s8(*args) -> np.ndarray:
    """minmax_s8(a, b, params), constant operands left out of the arguments (the interpreter's convention)."""
    *acts, p = args
    a, b = broadcast.operands(acts, p)
    a = _in_output_qparams(a, p.input1_rescale, p.input1_multiplier, p.input1_shift, p.input1_zero_point,
                           p.output_zero_point)
    b = _in_output_qparams(b, p.input2_rescale, p.input2_multiplier, p.input2_shift, p.input2_zero_point,
                           p.output_zero_point)
    out = np.maximum(a, b) if p.is_max else np.minimum(a, b)
    return np.clip(out, p.act_min, p.act_max).astype(np.int8).reshape(p.out_shape)
