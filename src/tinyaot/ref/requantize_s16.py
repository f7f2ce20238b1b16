"""requantize_s16: the `quantize` op where an int16 (16x8) tensor meets an int8 one, or two int16 ones meet.

TFLM's QUANTIZE between integer types (int8 -> int16, int16 -> int8, int16 -> int16) is its Requantize, as for
int8 -> int8: out = clamp(MultiplyByQuantizedMultiplier(x - input_zp, input_scale / output_scale) + output_zp) to
the output type's range. Here it is where a mixed int8 / int16 graph changes precision.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ref import _checks

_BITS = {"int8": 8, "int16": 16}


@dataclass(frozen=True)
class Requantize16Params:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    input_zero_point: int
    output_zero_point: int
    input_bits: int  # 8 or 16: the input's type
    output_bits: int  # 8 or 16: the output's type


def prepare(node: Node, g: Graph) -> Requantize16Params:
    if len(node.inputs) != 1:
        raise ModelError(f"quantize '{node.name}' needs one input, got {len(node.inputs)}")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    for t in (x, y):
        if t.dtype not in _BITS:
            raise UnsupportedOpError(f"quantize '{node.name}': tensor '{t.name}' is {t.dtype}; it converts between "
                                     "int8 and int16")
        if t.dtype == "int16":
            _checks.int16_per_tensor(node, t)
        else:
            _checks.int8_per_tensor(node, t)
    if x.size != y.size:
        raise ModelError(f"quantize '{node.name}': output {list(y.shape)} must have as many elements as "
                         f"{list(x.shape)}")
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    return Requantize16Params(x.size, m, s, x.qparams.zero_point[0], y.qparams.zero_point[0], _BITS[x.dtype],
                              _BITS[y.dtype])


def requantize_s16(x: np.ndarray, p: Requantize16Params) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64).reshape(-1) - p.input_zero_point, p.multiplier, p.shift)
    lo, hi = -(1 << (p.output_bits - 1)), (1 << (p.output_bits - 1)) - 1
    return np.clip(acc + p.output_zero_point, lo, hi).astype(np.int16 if p.output_bits == 16 else np.int8)
