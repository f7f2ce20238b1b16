"""leaky_relu_s16: leaky ReLU on int16 (16x8) tensors, TFLM's int16 LEAKY_RELU.

prelu_s8's leaky ReLU arithmetic on int16 (QuantizeLeakyRelu<int16_t>): v = x (zero points are 0, as tinyaot's
16x8 tensors have them), out = clamp(v >= 0 ? MultiplyByQuantizedMultiplier(v, m1, s1) : the same by m2, s2,
-32768, 32767), with the multipliers of ref/prelu_s8.py (a negative alpha: the negated requantization by the
magnitude of m2). Runs in place.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.prelu_s8 import leaky_multipliers


@dataclass(frozen=True)
class LeakyRelu16Params:
    size: int  # elements
    output_multiplier_1: int  # x >= 0: input_scale / output_scale
    output_shift_1: int
    output_multiplier_2: int  # x < 0: input_scale * alpha / output_scale; negative for a negative alpha
    output_shift_2: int


def prepare(node: Node, g: Graph) -> LeakyRelu16Params:
    x, y = _checks.io16(node, g)
    _checks.same_shape(node, y, x.shape)
    return LeakyRelu16Params(y.size, *leaky_multipliers(node, x.qparams.scale[0], y.qparams.scale[0]))


def leaky_relu_s16(x: np.ndarray, p: LeakyRelu16Params) -> np.ndarray:
    v = np.asarray(x).astype(np.int64)
    above = multiply_by_quantized_multiplier(v, p.output_multiplier_1, p.output_shift_1)
    below = multiply_by_quantized_multiplier(v, abs(p.output_multiplier_2), p.output_shift_2)
    below = -below if p.output_multiplier_2 < 0 else below
    return np.clip(np.where(v >= 0, above, below), -32768, 32767).astype(np.int16)
