"""requantize_s8: int8 -> int8 with other qparams (the IR's `quantize` op), TFLM's Requantize.

out = clamp(MultiplyByQuantizedMultiplier(x - input_zp, input_scale / output_scale) + output_zp, -128, 127),
the multiplier of the double quotient of the scales, as TFLM's quantize op prepares it. Runs in place.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ref import _checks


@dataclass(frozen=True)
class RequantizeParams:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    input_zero_point: int
    output_zero_point: int


def prepare(node: Node, g: Graph) -> RequantizeParams:
    x, y = _checks.io(node, g)
    if x.size != y.size:
        raise ModelError(
            f"quantize '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}"
        )
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    return RequantizeParams(x.size, m, s, x.qparams.zero_point[0], y.qparams.zero_point[0])


def requantize_s8(x: np.ndarray, p: RequantizeParams) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64) - p.input_zero_point, p.multiplier, p.shift)
    return np.clip(acc + p.output_zero_point, -128, 127).astype(np.int8)
