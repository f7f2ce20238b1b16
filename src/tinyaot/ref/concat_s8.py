"""concat_s8: int8 concatenation along one axis (the channel axis, last in NHWC, in CNNs).

TFLM requires every int8 input to share the output's qparams and just copies bytes. tinyaot also accepts
inputs with other qparams and requantizes them on the way, as TFLM's quantize op does: out = clamp(
MultiplyByQuantizedMultiplier(x - input_zp, input_scale / output_scale) + output_zp, -128, 127). An input
with the output's qparams is copied (that requantization is the identity). A constant input (a ViT's class
token) is int8 in flash with its own qparams, as TFLite's converter writes one, and is read like an activation
(the interpreter passes activations only; the params hold the constants). Output must not overlap inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import multiply_by_quantized_multiplier
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks

IDENTITY = (1 << 30, 1)  # quantize_multiplier(1.0): the (multiplier, shift) that changes nothing


@dataclass(frozen=True)
class ConcatParams:
    num_inputs: int
    chunks: np.ndarray  # int32 [num_inputs]: bytes each input contributes per outer index
    multiplier: np.ndarray  # int32 [num_inputs], Q31 of input_scale / output_scale
    shift: np.ndarray  # int32 [num_inputs]
    input_zero_point: np.ndarray  # int32 [num_inputs]
    output_zero_point: int
    outer: int  # product of the dims before the axis
    constants: tuple = field(default=(), compare=False, repr=False)  # per input: its int8 data if constant, else None

    def copies(self, i: int) -> bool:
        """Input i has the output's qparams: its bytes are copied unchanged."""
        return (int(self.multiplier[i]), int(self.shift[i])) == IDENTITY and \
            int(self.input_zero_point[i]) == self.output_zero_point


def prepare(node: Node, g: Graph) -> ConcatParams:
    xs, y, chunks, outer = concat_geometry(node, g)
    out_scale = y.qparams.scale[0]
    pairs = [_checks.rescale(node, t.qparams.scale[0], out_scale) for t in xs]
    return ConcatParams(
        num_inputs=len(xs),
        chunks=chunks,
        multiplier=np.array([m for m, _ in pairs], dtype=np.int32),
        shift=np.array([s for _, s in pairs], dtype=np.int32),
        input_zero_point=np.array([t.qparams.zero_point[0] for t in xs], dtype=np.int32),
        output_zero_point=y.qparams.zero_point[0],
        outer=outer,
        constants=constant_inputs(xs),
    )


def constant_inputs(xs) -> tuple:
    """Each input's data if it is a constant (in flash), else None."""
    return tuple(np.asarray(t.data) if t.is_const else None for t in xs)


def with_constants(xs: tuple, constants: tuple) -> list:
    """The inputs in order: the activations the interpreter passes, the constants from the params."""
    acts = iter(xs)
    return [c if c is not None else next(acts) for c in constants] if constants else list(xs)


def concat_geometry(node: Node, g: Graph, per_tensor=_checks.int8_per_tensor):
    """(inputs, output, chunks: int32 elements each input gives per outer index, outer) of a concat node after
    its checks; `per_tensor` checks each tensor's dtype (the int16 twin passes its own)."""
    if not node.inputs:
        raise ModelError(f"concat '{node.name}' has no inputs")
    xs = [g.tensor(n) for n in node.inputs]
    y = g.tensor(node.outputs[0])
    yshape = tuple(y.shape)
    if all(t.is_const for t in xs):
        raise UnsupportedOpError(f"concat '{node.name}' of constants only; the front end folds those")
    for t in xs:
        per_tensor(node, t)
    per_tensor(node, y)
    rank = len(yshape)
    axis = int(node.attrs.get("axis", -1))
    if not -rank <= axis < rank:
        raise ModelError(f"concat '{node.name}': axis {axis} is out of range for the {rank}-D output")
    axis %= rank
    for t in xs:
        ts = tuple(t.shape)
        if len(ts) != rank or ts[:axis] != yshape[:axis] or ts[axis + 1 :] != yshape[axis + 1 :]:
            raise ModelError(
                f"concat '{node.name}': input '{t.name}' {list(t.shape)} does not fit output {list(y.shape)} "
                f"along axis {axis}; all dims but the concatenation axis must match"
            )
    _checks.same_shape(node, y, yshape[:axis] + (sum(t.shape[axis] for t in xs),) + yshape[axis + 1 :])
    inner = int(np.prod(yshape[axis + 1 :], dtype=np.int64))
    chunks = np.array([t.shape[axis] * inner for t in xs], dtype=np.int32)
    return xs, y, chunks, int(np.prod(yshape[:axis], dtype=np.int64))


def concat_s8(*args) -> np.ndarray:
    """concat_s8(x0, x1, ..., params)."""
    *xs, p = args
    parts = []
    for i, x in enumerate(with_constants(xs, p.constants)):
        x = x.reshape(p.outer, int(p.chunks[i]))
        if not p.copies(i):
            q = multiply_by_quantized_multiplier(x.astype(np.int64) - p.input_zero_point[i], p.multiplier[i],
                                                 p.shift[i]) + p.output_zero_point
            x = np.clip(q, -128, 127).astype(np.int8)
        parts.append(x)
    return np.concatenate(parts, axis=1)
