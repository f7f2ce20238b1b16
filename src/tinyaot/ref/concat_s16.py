"""concat_s16: int16 (16x8) concatenation along one axis, TFLM's int16 CONCATENATION.

TFLM copies int16 inputs as they are (it checks only that every zero point is 0), so an input with the output's
scale is copied, which is all a .tflite model can hold here (the importer refuses int16 inputs whose scale
differs from the output's, which TFLM would copy unscaled). Mixed-precision graphs from PyTorch also meet inputs
at other scales (an int8 tensor's int16 twin beside a 16x8 layer's output): those are requantized on the way as
TFLM's int16 -> int16 QUANTIZE does (ref/requantize_s16.py): out = clamp(MultiplyByQuantizedMultiplier(x,
input_scale / output_scale), -32768, 32767), the same rule as ref/concat_s8.py's; a constant input is int16 in
flash, as there. Output must not overlap inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks
from tinyaot.ref.concat_s8 import IDENTITY, concat_geometry, constant_inputs, with_constants


@dataclass(frozen=True)
class Concat16Params:
    num_inputs: int
    chunks: np.ndarray  # int32 [num_inputs]: elements each input contributes per outer index
    multiplier: np.ndarray  # int32 [num_inputs], Q31 of input_scale / output_scale (IDENTITY: copied)
    shift: np.ndarray  # int32 [num_inputs]
    outer: int  # product of the dims before the axis
    constants: tuple = field(default=(), compare=False, repr=False)  # per input: its int16 data if constant, else None

    def copies(self, i: int) -> bool:
        """Input i has the output's scale: its values are copied unchanged."""
        return (int(self.multiplier[i]), int(self.shift[i])) == IDENTITY


def prepare(node: Node, g: Graph) -> Concat16Params:
    xs, y, chunks, outer = concat_geometry(node, g, per_tensor=_checks.int16_per_tensor)
    out_scale = y.qparams.scale[0]
    pairs = [IDENTITY if t.qparams.scale[0] == out_scale else _checks.rescale(node, t.qparams.scale[0], out_scale)
             for t in xs]
    return Concat16Params(num_inputs=len(xs), chunks=chunks, multiplier=np.array([m for m, _ in pairs], dtype=np.int32),
                          shift=np.array([s for _, s in pairs], dtype=np.int32), outer=outer,
                          constants=constant_inputs(xs))


def concat_s16(*args) -> np.ndarray:
    """concat_s16(x0, x1, ..., params)."""
    *xs, p = args
    parts = []
    for i, x in enumerate(with_constants(xs, p.constants)):
        x = x.reshape(p.outer, int(p.chunks[i]))
        if not p.copies(i):
            q = multiply_by_quantized_multiplier(x.astype(np.int64), p.multiplier[i], p.shift[i])
            x = np.clip(q, -32768, 32767).astype(np.int16)
        parts.append(x)
    return np.concatenate(parts, axis=1)
