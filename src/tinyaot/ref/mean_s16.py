"""mean_s16: int16 (16x8) mean over a run of consecutive axes, TFLM's int16 MEAN (QuantizedMeanOrSum<int16_t>).

The int8 kernel's arithmetic (ref/mean_s8.py) on int16 values: the raw values summed in int32, requantized
with the multiplier of input_scale / output_scale after 1/count is folded into it (TFLM's folding), clamped to
int16 (or the fused clamp). Zero points are 0. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.mean_s8 import mean_geometry, requantized_mean


@dataclass(frozen=True)
class Mean16Params:
    outer: int  # product of the dims before the averaged axes
    count: int  # values averaged per output (product of the averaged dims)
    inner: int  # product of the dims after them (the channels for NHWC global pooling)
    multiplier: int  # Q31 of input_scale / output_scale / count (TFLM's folding)
    shift: int
    act_min: int  # int16 output units
    act_max: int


def prepare(node: Node, g: Graph) -> Mean16Params:
    _x, y, (outer, count, inner), (m, s) = mean_geometry(node, g, io=_checks.io16, largest=32768)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    return Mean16Params(outer=outer, count=count, inner=inner, multiplier=m, shift=s, act_min=act_min,
                        act_max=act_max)


def mean_s16(x: np.ndarray, p: Mean16Params) -> np.ndarray:
    return np.clip(requantized_mean(x, p), p.act_min, p.act_max).astype(np.int16)
