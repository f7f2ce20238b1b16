"""pad_s16: spatial padding of an NHWC int16 (16x8) tensor, TFLM's int16 PAD.

The int8 kernel's modes (ref/pad_s8.py) on int16 values: constant padding writes 0 (int16 activations are
symmetric, so the zero point 0 is real 0, and TFLM's int16 PAD pads with 0 when no constant is given); reflect,
symmetric and replicate copy input pixels, so they are exact too (TFLM's MIRROR_PAD has no int16 kernel, so
these come from PyTorch models only: the .tflite importer refuses an int16 MIRROR_PAD). The output keeps the
input's qparams. Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import PAD_MODES
from tinyaot.ref import _checks
from tinyaot.ref.pad_s8 import MODE_CODES, NUMPY_MODES, _check_mirror


@dataclass(frozen=True)
class Pad16Params:
    batches: int
    in_h: int
    in_w: int
    channels: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    mode: int  # MODE_CODES (TINYAOT_PAD_*): 0 constant (zeros), 1 reflect, 2 symmetric, 3 replicate


def prepare(node: Node, g: Graph) -> Pad16Params:
    x, y = _checks.io16(node, g)
    _checks.rank(node, x, (4,), "NHWC")
    _checks.same_qparams(node, x, y)
    pad = node.attrs.get("padding")
    if pad is None or len(pad) != 4 or any(int(v) != v or v < 0 for v in pad):
        raise ModelError(f"pad '{node.name}': padding must be (top, bottom, left, right), four ints >= 0, got "
                         f"{pad!r} (cropping, i.e. negative padding, is not supported)")
    top, bottom, left, right = (int(v) for v in pad)
    n, h, w, c = x.shape
    _checks.same_shape(node, y, (n, h + top + bottom, w + left + right, c))
    mode = node.attrs.get("mode") or "constant"
    _check_mirror(node, mode, (("top", top, h), ("bottom", bottom, h), ("left", left, w), ("right", right, w)))
    return Pad16Params(n, h, w, c, top, bottom, left, right, MODE_CODES[mode])


def pad_s16(x: np.ndarray, p: Pad16Params) -> np.ndarray:
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels)
    widths = ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0))
    mode = PAD_MODES[p.mode]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.int16(0))
    return np.pad(x, widths, mode=NUMPY_MODES[mode])
