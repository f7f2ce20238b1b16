"""relu_s8: a standalone ReLU / clamp on int8, TFLM's int8 RELU.

TFLM rescales on the way (input and output may have different qparams): out = clamp(
MultiplyByQuantizedMultiplier(x - input_zp, input_scale / output_scale) + output_zp, act_min, act_max),
with the multiplier of the float32 quotient of the scales, as TFLM's CalculateReluOpData computes it.
`clamp` (required) is (lo, hi) in real units, e.g. (0, inf) for ReLU. With equal qparams the kernel only
clamps. Runs in place (out[i] depends on in[i] only).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, quantize_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import RELU
from tinyaot.ref import _checks


@dataclass(frozen=True)
class ReluParams:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    input_zero_point: int
    output_zero_point: int
    act_min: int
    act_max: int


def prepare(node: Node, g: Graph) -> ReluParams:
    x, y = _checks.io(node, g)
    if x.size != y.size:
        raise ModelError(f"relu '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}")
    ratio = np.float32(x.qparams.scale[0]) / np.float32(y.qparams.scale[0])  # float32, as TFLM
    m, s = quantize_multiplier(float(ratio))
    clamp = node.attrs.get("clamp")
    if clamp is None:
        raise ModelError(
            f"relu '{node.name}' needs its 'clamp' attribute: (lo, hi) in real units, e.g. {RELU} for ReLU, "
            "(0.0, 6.0) for ReLU6"
        )
    act_min, act_max = activation_range(clamp, y.qparams.scale[0], y.qparams.zero_point[0])
    return ReluParams(x.size, m, s, x.qparams.zero_point[0], y.qparams.zero_point[0], act_min, act_max)


def relu_s8(x: np.ndarray, p: ReluParams) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64) - p.input_zero_point, p.multiplier, p.shift)
    return np.clip(acc + p.output_zero_point, p.act_min, p.act_max).astype(np.int8)
