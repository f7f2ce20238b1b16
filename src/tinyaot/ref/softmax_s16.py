"""softmax_s16: int16 (16x8) softmax over the last axis, TFLite Micro's SoftmaxInt16.

TFLM's int16 softmax works with two 513-entry int16 tables that its Prepare fills in float (LUTPopulate:
512 samples and one end point, each biased by half the interpolation error at the segment's midpoint) and reads
with 9-bit index and 7-bit linear interpolation (LUTLookup): exp(x) for x in [-10, 0] and 1 / (1 + x) for x in
[0, 1]. Per row: the difference to the row's maximum is scaled so [-65535, 0] means [-10, 0] (a Q31 multiplier
of input_scale * beta / (10 / 65535), TFLM's int32 MultiplyByQuantizedMultiplier), looked up in the exp table
(Q0.15), summed in int32; the sum is normalised to [1, 2) by its leading zeros, its reciprocal looked up, and
each exp times it, rounded and shifted back, is the output in Q0.15 (scale 1/32768, zero point 0).

The tables do not depend on the layer; they are computed once here, in float32 exactly as TFLM's LUTPopulate
does (exp correctly rounded to float32), and emitted as the layer's constants (2 x 1026 bytes of flash).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.softmax_s8 import count_leading_zeros_u32

OUTPUT_SCALE = 1.0 / 32768.0  # Q0.15
LUT_SIZE = 513  # 512 segments and the end point
_RANGE = 65535  # int16 max - int16 min: the tables' input span in steps
_EXP_INPUT_RANGE = 10.0  # exp below -10 counts as 0
MAX_DEPTH = 65536  # values per row whose int32 sum of Q0.15 exps cannot overflow


@dataclass(frozen=True)
class Softmax16Params:
    outer: int  # rows
    depth: int  # values per row
    input_multiplier: int  # Q31 of input_scale * beta / (10 / 65535)
    input_shift: int  # its power-of-two exponent (MultiplyByQuantizedMultiplier's shift)
    exp_lut: np.ndarray  # int16 [513]: exp(x), x in [-10, 0] over the int16 range, Q0.15 out
    one_over_one_plus_x_lut: np.ndarray  # int16 [513]: 1 / (1 + x), x in [0, 1] over the int16 range, Q0.15 out


def _round(x: np.ndarray) -> np.ndarray:
    """TfLiteRound on float32 values (half away from zero), exact in float64."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def lut_populate(transform, input_scale, input_zero_point: int, output_scale, output_zero_point: int) -> np.ndarray:
    """TFLM's LUTPopulateInt16<float>: every step in float32 as the C++ has it."""
    f32 = np.float32
    input_scale, output_scale = f32(input_scale), f32(output_scale)
    input_min = input_scale * f32(-32768 - input_zero_point)
    input_max = input_scale * f32(32767 - input_zero_point)
    output_min = output_scale * f32(-32768 - output_zero_point)
    output_max = output_scale * f32(32767 - output_zero_point)
    steps = LUT_SIZE - 1
    step = (input_max - input_min) / f32(steps)
    half_step = step / f32(2)
    scaling_inv = f32(65536) / (output_max - output_min)
    i = np.arange(steps).astype(np.float32)
    at = input_min + i * step
    val = transform(at)
    val_mid = transform(at + half_step)
    val_next = transform(input_min + (i + f32(1)) * step)
    sample = _round(val * scaling_inv)
    midpoint_interp = _round((val_next * scaling_inv + sample.astype(np.float32)) / f32(2))
    midpoint = _round(val_mid * scaling_inv)
    bias = _round((midpoint_interp - midpoint).astype(np.float32) / f32(2))
    lut = np.empty(LUT_SIZE, dtype=np.float64)
    lut[:steps] = sample - bias
    lut[steps] = _round(transform(np.array([input_max], dtype=np.float32)) * scaling_inv)[0]
    return np.clip(lut, -32768, 32767).astype(np.int16)


def _expf(x: np.ndarray) -> np.ndarray:
    return np.exp(np.asarray(x, dtype=np.float64)).astype(np.float32)  # std::exp(float), correctly rounded


def _one_over_one_plus_x(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return np.float32(1) / (np.float32(1) + x)


@lru_cache(maxsize=1)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """(exp table, 1 / (1 + x) table), as TFLM's InitializeLutForInt16 fills them."""
    step = np.float32(2.0) / np.float32(_RANGE)
    exp_lut = lut_populate(_expf, np.float32(_EXP_INPUT_RANGE) / np.float32(_RANGE), 32767, step, 0)
    recip_lut = lut_populate(_one_over_one_plus_x, np.float32(1.0) / np.float32(_RANGE), -32768, step, 0)
    exp_lut.setflags(write=False)
    recip_lut.setflags(write=False)
    return exp_lut, recip_lut


def prepare(node: Node, g: Graph) -> Softmax16Params:
    if len(node.inputs) != 1:
        raise ModelError(f"softmax '{node.name}' needs one input, got {len(node.inputs)}")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if x.dtype != "int16":
        raise UnsupportedOpError(f"softmax '{node.name}': input '{x.name}' is {x.dtype} and output '{y.name}' "
                                 f"{y.dtype}; the 16x8 softmax takes int16 in and out (TFLM's int8 -> int16 "
                                 "softmax is not supported: give the softmax an int16 input)")
    x, y = _checks.io16(node, g)
    if not math.isclose(float(y.qparams.scale[0]), OUTPUT_SCALE, rel_tol=1e-3, abs_tol=0.0):
        raise ModelError(f"softmax '{node.name}': int16 output '{y.name}' has scale {y.qparams.scale[0]:.6g}; "
                         "TFLite's int16 softmax writes scale 1/32768, zero point 0")
    if x.size != y.size or (x.shape and x.shape[-1] != y.shape[-1]):
        raise ModelError(f"softmax '{node.name}': output {list(y.shape)} must have the input's shape "
                         f"{list(x.shape)}")
    if not x.shape:
        raise ModelError(f"softmax '{node.name}': input '{x.name}' is a scalar; softmax needs an axis")
    beta = float(np.float32(node.attrs.get("beta", 1.0)))
    real = float(np.float32(x.qparams.scale[0])) * beta / (_EXP_INPUT_RANGE / _RANGE)
    multiplier, shift = quantize_multiplier(real)
    if multiplier == 0 or shift > 15:
        raise UnsupportedOpError(
            f"softmax '{node.name}': beta * input scale = {beta * float(x.qparams.scale[0]):.3g} is outside what "
            "TFLite Micro's int16 softmax handles (the scaled differences must stay in int32 and not all vanish)")
    depth = int(x.shape[-1])
    if depth > MAX_DEPTH:
        raise UnsupportedOpError(f"softmax '{node.name}' is over {depth} values; TFLM's int32 sum of Q0.15 exps "
                                 f"holds at most {MAX_DEPTH}")
    exp_lut, recip_lut = tables()
    return Softmax16Params(outer=x.size // depth, depth=depth, input_multiplier=multiplier, input_shift=shift,
                           exp_lut=exp_lut, one_over_one_plus_x_lut=recip_lut)


def lut_lookup(value: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLM's int16 LUTLookup: the high 9 bits index, the low 7 interpolate (int16 slope, rounded)."""
    value = np.asarray(value, dtype=np.int64)
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = lut.astype(np.int64)[index]
    slope = lut.astype(np.int64)[index + 1] - base
    out = base + ((slope * offset + 64) >> 7)
    return ((out + 32768) & 0xFFFF) - 32768


def softmax_s16(x: np.ndarray, p: Softmax16Params) -> np.ndarray:
    rows = x.reshape(p.outer, p.depth).astype(np.int64)
    diff = rows - rows.max(axis=1, keepdims=True)
    scaled = multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_shift)
    exps = lut_lookup(np.clip(scaled + 32767, -32768, 32767), p.exp_lut)
    total = exps.sum(axis=1, keepdims=True)  # Q16.15, within int32 (MAX_DEPTH)
    headroom_plus_one = count_leading_zeros_u32(total)
    shifted_sum = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    reciprocal = lut_lookup(np.clip(shifted_sum - ((1 << 15) + (1 << 16)), -32768, 32767),
                            p.one_over_one_plus_x_lut)
    right_shift = 31 - headroom_plus_one
    out = (exps * reciprocal + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(out, 0, 32767).astype(np.int16).reshape(x.shape)
