"""Shared compile-time checks of the int8 kernels' prepare functions: clear errors, one wording."""
from __future__ import annotations

import math

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.fixedpoint import quantize_multiplier
from tinyaot.ir import Graph, Node, Tensor


def io(node: Node, g: Graph) -> tuple[Tensor, Tensor]:
    """The single input and the output of a one-input op, both checked to be int8 per tensor."""
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise ModelError(f"{node.op} '{node.name}' needs one input and one output, got {len(node.inputs)} inputs")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    int8_per_tensor(node, x)
    int8_per_tensor(node, y)
    return x, y


def int8_per_tensor(node: Node, t: Tensor) -> None:
    if t.dtype != "int8" or t.qparams is None:
        raise UnsupportedOpError(
            f"{node.op} '{node.name}': tensor '{t.name}' is {t.dtype}"
            f"{'' if t.qparams else ' without quantization parameters'}; the int8 kernels need int8 "
            "tensors with per-tensor qparams (quantize the graph first)"
        )
    if not t.qparams.is_per_tensor:
        raise UnsupportedOpError(
            f"{node.op} '{node.name}': activation '{t.name}' has per-channel qparams; activations must be per tensor"
        )


def io16(node: Node, g: Graph) -> tuple[Tensor, Tensor]:
    """The single input and the output of a one-input 16x8 op, both int16, symmetric, per tensor."""
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise ModelError(f"{node.op} '{node.name}' needs one input and one output, got {len(node.inputs)} inputs")
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    int16_per_tensor(node, x)
    int16_per_tensor(node, y)
    return x, y


def int16_per_tensor(node: Node, t: Tensor) -> None:
    """TFLite's 16x8 activations: int16, one scale, zero point 0."""
    if t.dtype != "int16" or t.qparams is None or not t.qparams.is_per_tensor:
        raise UnsupportedOpError(
            f"{node.op} '{node.name}': tensor '{t.name}' is {t.dtype}"
            f"{'' if t.qparams else ' without quantization parameters'}; the 16x8 kernels need int16 tensors "
            "with one scale (an int8 and an int16 tensor meet through a 'quantize' node)")
    if t.qparams.zero_point[0] != 0:
        raise ModelError(f"{node.op} '{node.name}': int16 tensor '{t.name}' has zero point "
                         f"{t.qparams.zero_point[0]}; int16 activations are symmetric (zero point 0), as in TFLite")


def same_qparams(node: Node, x: Tensor, y: Tensor) -> None:
    """Ops that only move or select bytes keep the input's scale and zero point (as TFLite requires)."""
    xs, xz = x.qparams.scale[0], x.qparams.zero_point[0]
    ys, yz = y.qparams.scale[0], y.qparams.zero_point[0]
    if xs != ys or xz != yz:
        raise ModelError(
            f"{node.op} '{node.name}' moves bytes without rescaling, so its output must keep the input's qparams "
            f"(scale {xs:.6g}, zero point {xz}), but '{y.name}' has scale {ys:.6g}, zero point {yz}; give the output "
            "the input's qparams and add a 'quantize' node after it if another scale is needed"
        )


def same_shape(node: Node, t: Tensor, expected: tuple[int, ...], what: str = "output") -> None:
    if tuple(t.shape) != tuple(expected):
        raise ModelError(
            f"{node.op} '{node.name}': {what} '{t.name}' has shape {list(t.shape)}, but the op's inputs and "
            f"attributes give {list(expected)}; fix the shape in the front end"
        )


def rank(node: Node, t: Tensor, ranks: tuple[int, ...], layout: str = "") -> None:
    if len(t.shape) not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise UnsupportedOpError(
            f"{node.op} '{node.name}': input '{t.name}' has shape {list(t.shape)}; the kernel takes {want} "
            f"tensors{' (' + layout + ')' if layout else ''}"
        )


def pair(node: Node, name: str, value) -> tuple[int, int]:
    """An (h, w) attribute from an int or a pair of ints."""
    if isinstance(value, int):
        return value, value
    try:
        h, w = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ModelError(f"{node.op} '{node.name}': attribute '{name}' must be an int or (h, w), "
                         f"got {value!r}") from None
    return h, w


def rescale(node: Node, in_scale: float, out_scale: float) -> tuple[int, int]:
    """(multiplier, shift) of in_scale / out_scale in double precision, as TFLM's quantize op prepares it."""
    real = float(in_scale) / float(out_scale)
    if not math.isfinite(real) or real <= 0:
        raise ModelError(f"{node.op} '{node.name}': scales {in_scale} -> {out_scale} must be finite and positive")
    return quantize_multiplier(real)
