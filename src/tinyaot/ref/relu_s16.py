"""relu_s16: a standalone ReLU / clamp on int16 (16x8) tensors, TFLM's int16 RELU and RELU6.

As the int8 kernel (ref/relu_s8.py), wider: out = clamp(MultiplyByQuantizedMultiplier(x, input_scale /
output_scale) , act_min, act_max) with the multiplier of the float32 quotient of the scales (TFLM's
CalculateReluOpData) and the int16 range; zero points are 0, as TFLM's int16 RELU requires. RELU6's int16 kernel
clamps in the input's units without rescaling, which is this kernel with equal qparams. Runs in place.
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
class Relu16Params:
    size: int
    multiplier: int  # Q31 of input_scale / output_scale
    shift: int
    act_min: int  # int16 output units
    act_max: int


def prepare(node: Node, g: Graph) -> Relu16Params:
    x, y = _checks.io16(node, g)
    if x.size != y.size:
        raise ModelError(f"relu '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}")
    clamp = node.attrs.get("clamp")
    if clamp is None:
        raise ModelError(f"relu '{node.name}' needs its 'clamp' attribute: (lo, hi) in real units, e.g. {RELU} for "
                         "ReLU, (0.0, 6.0) for ReLU6")
    ratio = np.float32(x.qparams.scale[0]) / np.float32(y.qparams.scale[0])  # float32, as TFLM
    m, s = quantize_multiplier(float(ratio))
    act_min, act_max = activation_range(clamp, y.qparams.scale[0], 0, -32768, 32767)
    return Relu16Params(x.size, m, s, act_min, act_max)


def relu_s16(x: np.ndarray, p: Relu16Params) -> np.ndarray:
    acc = multiply_by_quantized_multiplier(x.astype(np.int64), p.multiplier, p.shift)
    return np.clip(acc, p.act_min, p.act_max).astype(np.int16)
