"""mean_s16: int16 (16x8) mean over a run of consecutive axes, TFLM's int16 MEAN (QuantizedMeanOrSum<int16_t>).

The int8 kernel's arithmetic (ref/mean_s8.py) on int16 values: the raw values summed in int32, requantized
with the multiplier of input_scale / output_scale after 1/count is folded into it (TFLM's folding), clamped to
int16 (or the fused clamp). Zero points are 0. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node
from tinyaot.quantize.fixedpoint import activation_range, multiply_by_quantized_multiplier, wrap_i32
from tinyaot.ref import _checks
from tinyaot.ref.mean_s8 import fold_count


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
    x, y = _checks.io16(node, g)
    rank = len(x.shape)
    axes = node.attrs.get("axes", (1, 2))
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    if any(not -rank <= int(a) < rank for a in axes):
        raise ModelError(f"mean '{node.name}': axes {tuple(axes)} out of range for the {rank}-D input")
    axes = sorted({int(a) % rank for a in axes})
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        raise UnsupportedOpError(f"mean '{node.name}' reduces axes {tuple(axes)} of a {rank}-D tensor; only a run "
                                 "of consecutive axes is supported (e.g. (1, 2) of NHWC, or the last axis)")
    shape = tuple(int(d) for d in x.shape)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    dropped = tuple(d for i, d in enumerate(shape) if i not in axes)
    keepdims = node.attrs.get("keepdims", tuple(y.shape) == kept)
    _checks.same_shape(node, y, kept if keepdims else dropped)
    count = int(np.prod(shape[axes[0] : axes[-1] + 1], dtype=np.int64))
    if count * 32768 >= 2**31:
        raise ModelError(f"mean '{node.name}' averages {count} int16 values; their int32 sum could overflow")
    m, s = fold_count(*_checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0]), count)
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], 0, -32768, 32767)
    return Mean16Params(outer=int(np.prod(shape[: axes[0]], dtype=np.int64)), count=count,
                        inner=int(np.prod(shape[axes[-1] + 1 :], dtype=np.int64)), multiplier=m, shift=s,
                        act_min=act_min, act_max=act_max)


def mean_s16(x: np.ndarray, p: Mean16Params) -> np.ndarray:
    acc = x.reshape(p.outer, p.count, p.inner).astype(np.int64).sum(axis=1)
    acc = multiply_by_quantized_multiplier(wrap_i32(acc), p.multiplier, p.shift)
    return np.clip(acc, p.act_min, p.act_max).astype(np.int16)
