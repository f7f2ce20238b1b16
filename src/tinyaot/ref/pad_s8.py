"""pad_s8: spatial padding of an NHWC int8 tensor: with the zero point (real value 0), or from the input's own
pixels, mirrored (reflect: without the edge pixel, PyTorch's 'reflect' and TFLite's MIRROR_PAD REFLECT; symmetric:
with it, MIRROR_PAD SYMMETRIC) or repeated (replicate: the edge pixel, PyTorch's 'replicate').

`padding` is (top, bottom, left, right) in pixels, as everywhere in the IR; PyTorch's F.pad/ZeroPad2d
order (left, right, top, bottom) is converted by the front end. The output keeps the input's qparams
(TFLite's PAD requires it). Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.ops import PAD_MODES
from tinyaot.ref import _checks

# The C kernel's mode numbers (TINYAOT_PAD_* in tinyaot_kernels.h), in PAD_MODES order.
MODE_CODES = {mode: code for code, mode in enumerate(PAD_MODES)}
NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric", "replicate": "edge"}


@dataclass(frozen=True)
class PadParams:
    batches: int
    in_h: int
    in_w: int
    channels: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    pad_value: int  # the zero point: constant padding is real 0
    mode: int  # MODE_CODES: 0 constant, 1 reflect, 2 symmetric, 3 replicate


def prepare(node: Node, g: Graph) -> PadParams:
    x, (n, h, w, c, top, bottom, left, right), mode = pad_geometry(node, g)
    return PadParams(n, h, w, c, top, bottom, left, right, x.qparams.zero_point[0], mode)


def pad_geometry(node: Node, g: Graph, io=_checks.io) -> tuple[Tensor, tuple[int, ...], int]:
    """(x, (n, h, w, c, top, bottom, left, right), mode code) of a pad node after its checks; `io` checks the
    tensors' dtype (the int16 twin passes its own)."""
    x, y = io(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    pad = node.attrs.get("padding")
    if pad is None or len(pad) != 4 or any(int(v) != v or v < 0 for v in pad):
        raise ModelError(
            f"pad '{node.name}': padding must be (top, bottom, left, right), four ints >= 0, got {pad!r} "
            "(cropping, i.e. negative padding, is not supported)"
        )
    top, bottom, left, right = (int(v) for v in pad)
    n, h, w, c = x.shape
    _checks.same_shape(node, y, (n, h + top + bottom, w + left + right, c))
    mode = node.attrs.get("mode") or "constant"
    _check_mirror(node, mode, (("top", top, h), ("bottom", bottom, h), ("left", left, w), ("right", right, w)))
    return x, (n, h, w, c, top, bottom, left, right), MODE_CODES[mode]


def _check_mirror(node: Node, mode: str, sides) -> None:
    """A mirror reads each pixel once: reflect pads by < the size (it skips the edge), symmetric by <= it."""
    limit = {"reflect": 1, "symmetric": 0}.get(mode)
    if limit is None:
        return
    for side, amount, size in sides:
        if amount > size - limit:
            raise ModelError(f"pad '{node.name}': {mode} padding of {amount} on the {side} of a size-{size} axis; "
                             f"{mode} padding must be {'<' if limit else '<='} the axis size (PyTorch's and "
                             "TFLite's rule)")


def pad_s8(x: np.ndarray, p: PadParams) -> np.ndarray:
    return pad_values(x, p, np.int8(p.pad_value))


def pad_values(x: np.ndarray, p, constant: np.integer) -> np.ndarray:
    """`x` padded as p says; constant padding writes `constant` (the int16 kernel's is 0)."""
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels)
    widths = ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0))
    mode = PAD_MODES[p.mode]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=constant)
    return np.pad(x, widths, mode=NUMPY_MODES[mode])
