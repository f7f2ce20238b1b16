"""mul_s16: the 16x8 element-wise multiply, TFLite Micro's int16 MUL (reference_integer_ops::Mul /
BroadcastMul4DSlow with int16 in and out).

out = clamp(MultiplyByQuantizedMultiplier(a * b, a_scale * b_scale / out_scale)), the int32 rescale (double
rounding) of the int32 product (|a * b| <= 2^30), the real multiplier in double from the float32 scales; TFLM
requires every zero point 0. Shapes broadcast NumPy-style up to 4-D as add_s16's; a constant operand is int16
with its own scale, read from flash.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref.add_s16 import INT16_MAX, INT16_MIN, Binary16Geometry, geometry16, operands16


@dataclass(frozen=True)
class Mul16Params(Binary16Geometry):
    multiplier: int  # Q31 of a_scale * b_scale / out_scale
    shift: int
    act_min: int  # int16 units
    act_max: int
    constants: tuple = field(default=(None, None), compare=False, repr=False)


def prepare(node: Node, g: Graph) -> Mul16Params:
    a, b, y, geo, consts = geometry16(node, g)
    m, s = quantize_multiplier(float(a.qparams.scale[0]) * float(b.qparams.scale[0]) / float(y.qparams.scale[0]))
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, INT16_MIN, INT16_MAX)
    return Mul16Params(**vars(geo), multiplier=m, shift=s, act_min=act_min, act_max=act_max, constants=consts)


def mul_s16(*args) -> np.ndarray:
    """mul_s16(a, b, params), constant operands left out of the arguments (the interpreter's convention)."""
    *acts, p = args
    a, b = operands16(tuple(acts), p)
    prod = a.astype(np.int64).reshape(-1) * b.astype(np.int64).reshape(-1)
    out = multiply_by_quantized_multiplier(prod, p.multiplier, p.shift)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16).reshape(p.out_shape)
