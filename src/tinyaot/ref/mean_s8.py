"""mean_s8: int8 mean (or sum) over a run of consecutive axes, TFLM's int8 MEAN (QuantizedMeanOrSum).

The usual case is global average pooling, axes (1, 2) of NHWC; a mean over the last axis works the same
way. The input is viewed as [outer, count, inner] with the averaged axes in the middle. TFLM's arithmetic:
sum the raw int8 values in int32, subtract input_zero_point * count, and requantize with the multiplier of
input_scale / output_scale after folding 1/count into it (shifted left by floor(log2 count), capped at 32
and at 31 + shift, then divided by count in integers), add the output zero point. Input and output qparams
may differ. `keepdims` only changes the output shape, not its bytes. An optional fused `clamp` narrows the
output range (TFLite's MEAN has none: the default is [-128, 127]). The IR's sum op (MobileViTv2's sum over the
patches) is the same kernel without 1/count in the multiplier, QuantizedMeanOrSum's compute_sum. Output must not
overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import activation_range, multiply_by_quantized_multiplier, wrap_i32
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks


@dataclass(frozen=True)
class MeanParams:
    outer: int  # product of the dims before the averaged axes
    count: int  # values averaged per output (product of the averaged dims)
    inner: int  # product of the dims after them (the channels for NHWC global pooling)
    bias: int  # -input_zero_point * count, added to the raw sum
    multiplier: int  # Q31 of input_scale / output_scale / count (TFLM's folding)
    shift: int
    output_zero_point: int
    act_min: int
    act_max: int


def fold_count(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """TFLM's folding of 1/count into (multiplier, shift): integer division, some precision lost."""
    if multiplier == 0:
        return 0, 0
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


def prepare(node: Node, g: Graph) -> MeanParams:
    x, y, (outer, count, inner), (m, s) = mean_geometry(node, g)
    zp = y.qparams.zero_point[0]
    act_min, act_max = activation_range(node.attrs.get("clamp"), y.qparams.scale[0], zp)
    return MeanParams(outer=outer, count=count, inner=inner, bias=-x.qparams.zero_point[0] * count,
                      multiplier=m, shift=s, output_zero_point=zp, act_min=act_min, act_max=act_max)


def mean_geometry(node: Node, g: Graph, io=_checks.io, largest: int = 255):
    """(x, y, (outer, count, inner), (multiplier, shift) with 1/count folded in) of a mean node after its checks;
    `io` checks the tensors' dtype and `largest` bounds |value - zero point| (the int16 twin passes its own)."""
    x, y = io(node, g)
    rank = len(x.shape)
    axes = node.attrs.get("axes", (1, 2))
    axes = axes if isinstance(axes, (tuple, list)) else (axes,)
    if any(not -rank <= int(a) < rank for a in axes):
        raise ModelError(f"mean '{node.name}': axes {tuple(axes)} out of range for the {rank}-D input")
    axes = sorted({int(a) % rank for a in axes})
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        raise UnsupportedOpError(
            f"mean '{node.name}' reduces axes {tuple(axes)} of a {rank}-D tensor; only a run of consecutive axes "
            "is supported (e.g. (1, 2) of NHWC for global average pooling, or the last axis)"
        )
    shape = tuple(int(d) for d in x.shape)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    dropped = tuple(d for i, d in enumerate(shape) if i not in axes)
    keepdims = node.attrs.get("keepdims", tuple(y.shape) == kept)
    _checks.same_shape(node, y, kept if keepdims else dropped)
    count = int(np.prod(shape[axes[0] : axes[-1] + 1], dtype=np.int64))
    if count * largest >= 2**31:
        raise ModelError(f"mean '{node.name}' averages {count} {x.dtype} values; their int32 sum could overflow")
    m, s = _checks.rescale(node, x.qparams.scale[0], y.qparams.scale[0])
    if node.op != "sum":
        m, s = fold_count(m, s, count)
    sizes = (int(np.prod(shape[: axes[0]], dtype=np.int64)), count, int(np.prod(shape[axes[-1] + 1 :], dtype=np.int64)))
    return x, y, sizes, (m, s)


def mean_s8(x: np.ndarray, p: MeanParams) -> np.ndarray:
    return np.clip(requantized_mean(x, p, p.bias, p.output_zero_point), p.act_min, p.act_max).astype(np.int8)


def requantized_mean(x: np.ndarray, p, bias: int = 0, zero_point: int = 0) -> np.ndarray:
    """TFLM's mean before the clamp, in int64: the int32 sum plus `bias`, rescaled, plus `zero_point`."""
    acc = x.reshape(p.outer, p.count, p.inner).astype(np.int64).sum(axis=1) + bias
    return multiply_by_quantized_multiplier(wrap_i32(acc), p.multiplier, p.shift) + zero_point
