"""add_s8: element-wise int8 add and subtract with rescaling, TFLite Micro's int8 ADD and SUB (the IR's `add` and
`sub` share this kernel: TFLM's SUB is its ADD with the second scaled input subtracted).

Both inputs are shifted left by 20 bits, each scaled to half the larger input scale, summed (or subtracted),
then scaled to the output (CalculateOpDataAdd / CalculateOpDataSub: left_shift 20 and three Q31 multipliers, all
< 1; ADD derives them in double, SUB in float32, as TFLM does). Shapes broadcast NumPy-style up to 4-D
(ref/broadcast.py) and one operand may be a constant tensor, read from flash.

A scaled input depends on its int8 value only, so prepare tabulates both (256 int32 each, 2 KB of flash per add;
a sub's second table holds the negated values) and the kernel's per-element work is two table loads, an add and
the sum's requantization. When a cheaper single-multiply form of that requantization equals the exact one on every
sum the two tables can make (checked exhaustively here), prepare hands it to the kernel as sum_multiplier /
sum_bias / sum_shift.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import broadcast

LEFT_SHIFT = 20


@dataclass(frozen=True)
class AddParams:
    size: int  # output elements
    out_shape: tuple[int, ...]  # the output as 4-D, axes merged (ref/broadcast.py)
    a_shape: tuple[int, ...]  # operand shapes over those axes
    b_shape: tuple[int, ...]
    a_strides: tuple[int, ...]  # element strides of each operand over out_shape; 0 along broadcast dims
    b_strides: tuple[int, ...]
    broadcast: bool  # False: both operands have the output's shape, one flat loop
    subtract: int  # 1: input1 - input2 (TFLM's SUB), 0: input1 + input2
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
    # int32 [256]: input q's scaled value at index q + 128; functions of the fields above, so out of eq / hash
    input1_table: np.ndarray = field(compare=False, repr=False)
    input2_table: np.ndarray = field(compare=False, repr=False)
    # clamp((((sum * sum_multiplier) >> 32) + sum_bias) >> sum_shift) == the exact output for every possible sum;
    # sum_multiplier 0: no such form, the kernel requantizes with output_multiplier / output_shift
    sum_multiplier: int
    sum_bias: int
    sum_shift: int
    # (a data or None, b data or None): constant operands, int8 in their own shape
    constants: tuple = field(default=(None, None), compare=False, repr=False)

    @property
    def c_kernel(self) -> str:
        """tinyaot_add_s8, or tinyaot_add_broadcast_s8 when an operand broadcasts: chosen at compile time."""
        return broadcast.c_kernel("add", self.broadcast)


def input_table(offset: int, multiplier: int, shift: int) -> np.ndarray:
    """TFLM's scaled input for every int8 value q (at index q + 128)."""
    q = np.arange(-128, 128, dtype=np.int64)
    return multiply_by_quantized_multiplier((q + offset) << LEFT_SHIFT, multiplier, shift).astype(np.int32)


def fast_sum_requantize(t1: np.ndarray, t2: np.ndarray, multiplier: int, shift: int, offset: int, act_min: int,
                        act_max: int) -> tuple[int, int, int]:
    """(m, bias, s) with clamp((((sum * m) >> 32) + bias) >> s) equal to TFLM's clamped output for every sum
    t1[i] + t2[j], else (0, 0, 0): one multiply-high, add and shift instead of the double rounding. Each sum
    bounds the rounding constant bias * 2^32 from both sides (one where the clamp decides); a bias between all
    of them is exact by construction, checked on every sum here so that the kernel need not."""
    n = 31 - shift  # the exact form's total right shift
    if multiplier <= 0 or not 32 <= n <= 55:
        return 0, 0, 0
    sums = np.unique(t1.astype(np.int64)[:, None] + t2.astype(np.int64)[None, :])
    want = np.clip(multiply_by_quantized_multiplier(sums, multiplier, shift) + offset, act_min, act_max)
    x = sums * multiplier  # |sums| < 2^28, |want| <= 128, n <= 55: no int64 overflow below
    # want * 2^n <= x + bias * 2^32 < (want + 1) * 2^n, one side only where the clamp decides
    lower = np.where(want > act_min, (want << n) - x, np.iinfo(np.int64).min)
    upper = np.where(want < act_max, ((want + 1) << n) - x, np.iinfo(np.int64).max)
    lo, hi = int(lower.max()), int(upper.min())
    nominal = ((1 << (n - 1)) + (offset << n)) >> 32  # round half up, offset folded in
    bias = min(max(nominal, -(-lo // (1 << 32))), (hi - 1) >> 32)
    if not lo <= bias << 32 < hi or not -(2**31) <= bias < 2**31:
        return 0, 0, 0
    high = (x >> 32) + bias
    if high.min() < -(2**31) or high.max() >= 2**31:  # the kernel's int32 add must not wrap
        return 0, 0, 0
    return multiplier, bias, n - 32


def _smaller_than_one(real: float, what: str, node: Node) -> tuple[int, int]:
    m, s = quantize_multiplier(real)
    if s > 0:
        raise ModelError(f"layer '{node.name}': {what} multiplier {real} must be < 1 (scales out of range)")
    return m, s


SUB = "sub"  # the IR op that shares this kernel with `add`


def subtracts(node: Node) -> bool:
    return node.op == SUB


def _reals(sa: float, sb: float, so: float, subtract: bool) -> tuple[float, float, float]:
    """The three real multipliers: TFLM's ADD computes them in double, its SUB in float32 (CalculateOpDataSub)."""
    if subtract:
        f = np.float32
        twice_max = f(2.0) * max(f(sa), f(sb))
        return (float(f(sa) / twice_max), float(f(sb) / twice_max),
                float(twice_max / (f(1 << LEFT_SHIFT) * f(so))))
    twice_max = 2.0 * max(sa, sb)
    return sa / twice_max, sb / twice_max, twice_max / ((1 << LEFT_SHIFT) * so)


def prepare(node: Node, g: Graph) -> AddParams:
    a, b, y, geo = broadcast.geometry(node, g)
    subtract = subtracts(node)
    sa, sb, so = (float(t.qparams.scale[0]) for t in (a, b, y))
    r1, r2, ro = _reals(sa, sb, so, subtract)
    m1, s1 = _smaller_than_one(r1, "input 1", node)
    m2, s2 = _smaller_than_one(r2, "input 2", node)
    mo, so_ = _smaller_than_one(ro, "output", node)
    act_min, act_max = activation_range(node.attrs.get("clamp"), so, y.qparams.zero_point[0])
    off1, off2, off_out = -int(a.qparams.zero_point[0]), -int(b.qparams.zero_point[0]), int(y.qparams.zero_point[0])
    t1, t2 = input_table(off1, m1, s1), input_table(off2, m2, s2)
    if subtract:
        t2 = -t2  # |t2| < 2^28: no overflow
    fm, fb, fs = fast_sum_requantize(t1, t2, mo, so_, off_out, act_min, act_max)
    return AddParams(
        size=y.size, out_shape=geo.out_shape, a_shape=geo.a_shape, b_shape=geo.b_shape, a_strides=geo.a_strides,
        b_strides=geo.b_strides, broadcast=geo.broadcast, subtract=int(subtract), input1_offset=off1,
        input2_offset=off2, output_offset=off_out, left_shift=LEFT_SHIFT, input1_multiplier=m1, input1_shift=s1,
        input2_multiplier=m2, input2_shift=s2, output_multiplier=mo, output_shift=so_, act_min=act_min,
        act_max=act_max, input1_table=t1, input2_table=t2, sum_multiplier=fm, sum_bias=fb, sum_shift=fs,
        constants=geo.constants,
    )


def add_s8_tables(a: np.ndarray, b: np.ndarray, p: AddParams) -> np.ndarray:
    """The C kernel's algorithm: table lookups, then the fast or the exact requantization of the sum."""
    s = (p.input1_table[a.reshape(-1).astype(np.intp) + 128].astype(np.int64)
         + p.input2_table[b.reshape(-1).astype(np.intp) + 128])
    if p.sum_multiplier:
        out = (((s * p.sum_multiplier) >> 32) + p.sum_bias) >> p.sum_shift
    else:
        out = multiply_by_quantized_multiplier(s, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


def add_s8_elementwise(a: np.ndarray, b: np.ndarray, p: AddParams) -> np.ndarray:
    """The definition: TFLM's AddElementwise (SubElementwise when p.subtract) on every pair (a[i], b[i])."""
    a1 = (a.reshape(-1).astype(np.int64) + p.input1_offset) << p.left_shift
    b1 = (b.reshape(-1).astype(np.int64) + p.input2_offset) << p.left_shift
    a2 = multiply_by_quantized_multiplier(a1, p.input1_multiplier, p.input1_shift)
    b2 = multiply_by_quantized_multiplier(b1, p.input2_multiplier, p.input2_shift)
    raw = a2 - b2 if p.subtract else a2 + b2
    out = multiply_by_quantized_multiplier(raw, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


@lru_cache(maxsize=64)
def _table(p: AddParams) -> np.ndarray:
    values = np.arange(-128, 128, dtype=np.int64)
    a, b = np.meshgrid(values, values, indexing="ij")
    return add_s8_tables(a, b, p).reshape(256, 256)


def add_s8(*args) -> np.ndarray:
    """add_s8(a, b, params), constant operands left out of the arguments (the interpreter's convention):
    add_s8_tables read from its 256 x 256 table of every int8 pair (the output is a function of the two input
    bytes only): the same bits, fast enough for the interpreter's unit-by-unit in-place emulation.
    tests/test_misc_kernels.py checks add_s8_tables against the definition add_s8_elementwise on all pairs."""
    *acts, p = args
    a, b = broadcast.operands(acts, p)
    if p.broadcast:
        a, b = np.broadcast_arrays(a, b)
    table = _table(p).reshape(-1)
    ua = np.ascontiguousarray(a, dtype=np.int8).reshape(-1).view(np.uint8) ^ np.uint8(0x80)  # a + 128
    ub = np.ascontiguousarray(b, dtype=np.int8).reshape(-1).view(np.uint8) ^ np.uint8(0x80)
    return table[(ua.astype(np.intp) << 8) | ub].reshape(p.out_shape)
