"""requantize_s16: the `quantize` op where an int16 (16x8) or int32 tensor meets an int8 one, or two wide ones meet.

TFLM's QUANTIZE between integer types (int8 -> int16 / int32, int16 -> int8 / int16 / int32, int32 -> int8 /
int16) is its Requantize, as for int8 -> int8: out = clamp(MultiplyByQuantizedMultiplier(x - input_zp,
input_scale / output_scale) + output_zp) to the output type's range, the sum in int32 (an int32 output's zero point
is 0, so nothing overflows). Here it is where a mixed int8 / int16 graph changes precision, and where an imported
model's int16 interface (e.g. TFLM's keyword benchmark: int16 in, int32 out) meets its int8 layers. TFLM reads any
zero point here, so an int16 one need not be 0 (an int8 -> int16 softmax's output has -32768).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import WIDE_CONVERSIONS
from tinyaot.ref import _checks

_BITS = {"int8": 8, "int16": 16, "int32": 32}


@dataclass(frozen=True)
class Requantize16Params:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    input_zero_point: int
    output_zero_point: int
    input_bits: int  # 8, 16 or 32: the input's type
    output_bits: int  # 8, 16 or 32: the output's type


def prepare(node: Node, g: Graph) -> Requantize16Params:
    if len(node.inputs) != 1:
        raise ModelError(f"quantize '{node.name}' needs one input, got {len(node.inputs)}")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if (x.dtype, y.dtype) not in WIDE_CONVERSIONS:
        pairs = ", ".join(f"{a} -> {b}" for a, b in sorted(WIDE_CONVERSIONS))
        raise UnsupportedOpError(f"quantize '{node.name}': {x.dtype} -> {y.dtype}; TFLite Micro's QUANTIZE converts "
                                 f"between integer types {pairs} (and int8 -> int8)")
    for t in (x, y):
        if t.qparams is None or not t.qparams.is_per_tensor:
            raise UnsupportedOpError(f"quantize '{node.name}': tensor '{t.name}' needs one scale and zero point "
                                     "(TFLite Micro's QUANTIZE is per tensor)")
    if x.size != y.size:
        raise ModelError(f"quantize '{node.name}': output {list(y.shape)} must have as many elements as "
                         f"{list(x.shape)}")
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    return Requantize16Params(x.size, m, s, x.qparams.zero_point[0], y.qparams.zero_point[0], _BITS[x.dtype],
                              _BITS[y.dtype])


def requantize_s16(x: np.ndarray, p: Requantize16Params) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64).reshape(-1) - p.input_zero_point, p.multiplier, p.shift)
    lo, hi = -(1 << (p.output_bits - 1)), (1 << (p.output_bits - 1)) - 1
    return np.clip(acc + p.output_zero_point, lo, hi).astype(f"int{p.output_bits}")
