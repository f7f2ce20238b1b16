"""add_s16: the 16x8 element-wise add and subtract, TFLite Micro's int16 ADD and SUB (the IR's `add` and `sub`
share this kernel, as their int8 kernel).

TFLM runs int16 ADD and SUB through the general rescaling path of the int8 kernels (its power-of-two-scale
int16 add is not used: AddGeneralParamScale / SubElementwise), with a left shift of 15 instead of 20: both
inputs shifted left by 15 bits, each scaled by s / (2 max(s_a, s_b)), summed (or subtracted), the sum scaled by
2 max(s_a, s_b) / (2^15 s_out), each step TFLM's MultiplyByQuantizedMultiplierSmallerThanOneExp, then the
fused activation's clamp in int16 units; the multipliers come from the scales in double (for SUB too).
Zero points are 0 (int16 is symmetric). Shapes broadcast NumPy-style up to 4-D over the axes ref/broadcast.py
merges (TFLM's BroadcastAdd4DSlow / BroadcastQuantSubSlow read the same elements); a constant operand is
int16 with its own scale, read from flash.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ref import _checks, broadcast

LEFT_SHIFT = 15  # TFLM's for int16 (20 for int8): 2^15 * 2^15 stays below 2^31
INT16_MIN, INT16_MAX = -32768, 32767
SUB = "sub"  # the IR op that shares this kernel with `add`


@dataclass(frozen=True)
class Binary16Geometry:
    """Where each output element of a 16x8 binary element-wise op reads its operands (ref/broadcast.py's walk):
    the first fields of Add16Params and Mul16Params."""

    size: int  # output elements
    out_shape: tuple[int, ...]  # the output as 4-D, axes merged (ref/broadcast.py)
    a_shape: tuple[int, ...]  # operand shapes over those axes
    b_shape: tuple[int, ...]
    a_strides: tuple[int, ...]  # element strides of each operand over out_shape; 0 along broadcast axes
    b_strides: tuple[int, ...]


def geometry16(node: Node, g: Graph) -> tuple[Tensor, Tensor, Tensor, Binary16Geometry, tuple]:
    """(a, b, y, geometry, constants) of a 16x8 add / sub / mul after the checks its kernel relies on: int16
    symmetric per-tensor operands and output, at most one constant operand, shapes of at most 4 dims that
    broadcast. constants: (a data or None, b data or None), constant operands as int16 in their own shape."""
    where = f"layer '{node.name}' ({node.source or 'no source location'})"
    if len(node.inputs) != 2:
        raise ModelError(f"{node.op} {where} needs two operands, got {len(node.inputs)}")
    a, b = (g.tensor(n) for n in node.inputs)
    y = g.tensor(node.outputs[0])
    for t in (a, b, y):
        _checks.int16_per_tensor(node, t)
    if a.is_const and b.is_const:
        raise UnsupportedOpError(f"{node.op} {where} has two constant operands: its value is a constant, which the "
                                 "front end folds")
    if max(len(a.shape), len(b.shape), len(y.shape)) > broadcast.MAX_DIMS:
        raise UnsupportedOpError(f"{node.op} {where}: operands {list(a.shape)} and {list(b.shape)} -> "
                                 f"{list(y.shape)}; broadcasting is supported up to {broadcast.MAX_DIMS}-D")
    try:
        want = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ModelError(f"{node.op} {where}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
    _checks.same_shape(node, y, want)
    out4, a4, b4 = broadcast.collapse(broadcast.pad4(y.shape), broadcast.pad4(a.shape), broadcast.pad4(b.shape))
    consts = tuple(np.asarray(t.data, dtype=np.int16) if t.is_const else None for t in (a, b))
    return a, b, y, Binary16Geometry(y.size, out4, a4, b4, broadcast.strides(a4), broadcast.strides(b4)), consts


def operands16(args: tuple, geo) -> tuple[np.ndarray, np.ndarray]:
    """The two operands broadcast to the output's 4-D shape, constants taken from the params (the interpreter
    leaves them out of the arguments)."""
    acts = iter(args)
    a, b = (c if c is not None else next(acts) for c in geo.constants)
    a, b = np.asarray(a).reshape(geo.a_shape), np.asarray(b).reshape(geo.b_shape)
    return np.broadcast_to(a, geo.out_shape), np.broadcast_to(b, geo.out_shape)


@dataclass(frozen=True)
class Add16Params(Binary16Geometry):
    subtract: int  # 1: input1 - input2 (TFLM's SUB), 0: input1 + input2
    left_shift: int
    input1_multiplier: int
    input1_shift: int  # <= 0
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int  # int16 units
    act_max: int
    constants: tuple = field(default=(None, None), compare=False, repr=False)


def _reals(sa: float, sb: float, so: float) -> tuple[float, float, float]:
    """The three real multipliers, divided in double for ADD and SUB alike: what TFLM computes for int16 (checked
    on every byte; quotients rounded to float32, as the int8 SUB's are written, differ on about 1 int16 output in
    6000)."""
    twice_max = 2.0 * max(sa, sb)
    return sa / twice_max, sb / twice_max, twice_max / ((1 << LEFT_SHIFT) * so)


def _smaller_than_one(real: float, what: str, node: Node) -> tuple[int, int]:
    m, s = quantize_multiplier(real)
    if s > 0:
        raise ModelError(f"{node.op} '{node.name}': the {what} multiplier {real:.3g} must be below 1 for TFLite's "
                         "int16 ADD / SUB (the output scale is far too small for the inputs')")
    return m, s


def prepare(node: Node, g: Graph) -> Add16Params:
    a, b, y, geo, consts = geometry16(node, g)
    subtract = node.op == SUB
    r1, r2, ro = _reals(*(float(t.qparams.scale[0]) for t in (a, b, y)))
    m1, s1 = _smaller_than_one(r1, "first input", node)
    m2, s2 = _smaller_than_one(r2, "second input", node)
    mo, so = _smaller_than_one(ro, "output", node)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, INT16_MIN, INT16_MAX)
    return Add16Params(
        **vars(geo), subtract=int(subtract), left_shift=LEFT_SHIFT, input1_multiplier=m1, input1_shift=s1,
        input2_multiplier=m2, input2_shift=s2, output_multiplier=mo, output_shift=so, act_min=act_min,
        act_max=act_max, constants=consts,
    )


def add_s16(*args) -> np.ndarray:
    """add_s16(a, b, params), constant operands left out of the arguments (the interpreter's convention):
    TFLM's AddElementwise (SubElementwise when p.subtract) on every pair the broadcast reads."""
    *acts, p = args
    a, b = operands16(tuple(acts), p)
    a1 = a.astype(np.int64).reshape(-1) << p.left_shift
    b1 = b.astype(np.int64).reshape(-1) << p.left_shift
    a2 = multiply_by_quantized_multiplier(a1, p.input1_multiplier, p.input1_shift)
    b2 = multiply_by_quantized_multiplier(b1, p.input2_multiplier, p.input2_shift)
    raw = a2 - b2 if p.subtract else a2 + b2
    out = multiply_by_quantized_multiplier(raw, p.output_multiplier, p.output_shift)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16).reshape(p.out_shape)
