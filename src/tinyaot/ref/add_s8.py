"""add_s8: elementwise int8 add with rescaling, TFLite Micro's reference int8 Add.

Both inputs are shifted left by 20 bits, each scaled to half the larger input scale, summed, then
scaled to the output (CalculateOpDataAdd: left_shift 20 and three Q31 multipliers, all < 1).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier

LEFT_SHIFT = 20


@dataclass(frozen=True)
class AddParams:
    size: int
    input1_offset: int  # -zero point of a
    input2_offset: int  # -zero point of b
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int  # <= 0
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


def _smaller_than_one(real: float, what: str, node: Node) -> tuple[int, int]:
    m, s = quantize_multiplier(real)
    if s > 0:
        raise ModelError(f"layer '{node.name}': {what} multiplier {real} must be < 1 (scales out of range)")
    return m, s


def prepare(node: Node, g: Graph) -> AddParams:
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    if a.shape != b.shape or a.size != y.size:
        raise UnsupportedOpError(f"layer '{node.name}': add of shapes {a.shape} and {b.shape} needs broadcasting, "
                                 "which is not supported; give both inputs the output's shape")
    if a.is_const or b.is_const:
        raise UnsupportedOpError(f"layer '{node.name}': add with a constant operand is not supported")
    sa, sb, so = (float(t.qparams.scale[0]) for t in (a, b, y))
    twice_max = 2.0 * max(sa, sb)
    m1, s1 = _smaller_than_one(sa / twice_max, "input 1", node)
    m2, s2 = _smaller_than_one(sb / twice_max, "input 2", node)
    mo, so_ = _smaller_than_one(twice_max / ((1 << LEFT_SHIFT) * so), "output", node)
    act_min, act_max = activation_range(node.attrs.get("clamp"), so, y.qparams.zero_point[0])
    return AddParams(
        size=a.size, input1_offset=-int(a.qparams.zero_point[0]), input2_offset=-int(b.qparams.zero_point[0]),
        output_offset=int(y.qparams.zero_point[0]), left_shift=LEFT_SHIFT, input1_multiplier=m1, input1_shift=s1,
        input2_multiplier=m2, input2_shift=s2, output_multiplier=mo, output_shift=so_, act_min=act_min,
        act_max=act_max,
    )


def add_s8_elementwise(a: np.ndarray, b: np.ndarray, p: AddParams) -> np.ndarray:
    """The definition: TFLM's AddElementwise on every pair (a[i], b[i])."""
    a1 = (a.reshape(-1).astype(np.int64) + p.input1_offset) << p.left_shift
    b1 = (b.reshape(-1).astype(np.int64) + p.input2_offset) << p.left_shift
    a2 = multiply_by_quantized_multiplier(a1, p.input1_multiplier, p.input1_shift)
    b2 = multiply_by_quantized_multiplier(b1, p.input2_multiplier, p.input2_shift)
    out = multiply_by_quantized_multiplier(a2 + b2, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


@lru_cache(maxsize=64)
def _table(p: AddParams) -> np.ndarray:
    values = np.arange(-128, 128, dtype=np.int64)
    a, b = np.meshgrid(values, values, indexing="ij")
    return add_s8_elementwise(a, b, p).reshape(256, 256)


def add_s8(a: np.ndarray, b: np.ndarray, p: AddParams) -> np.ndarray:
    """add_s8_elementwise read from its 256 x 256 table of every int8 pair (the output is a function of the
    two input bytes only): the same bits, fast enough for the interpreter's unit-by-unit in-place emulation."""
    table = _table(p).reshape(-1)
    ua = np.ascontiguousarray(a, dtype=np.int8).reshape(-1).view(np.uint8) ^ np.uint8(0x80)  # a + 128
    ub = np.ascontiguousarray(b, dtype=np.int8).reshape(-1).view(np.uint8) ^ np.uint8(0x80)
    return table[(ua.astype(np.intp) << 8) | ub]
