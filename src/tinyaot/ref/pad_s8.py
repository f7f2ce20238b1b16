"""pad_s8: constant spatial padding of an NHWC int8 tensor with the zero point (real value 0).

`padding` is (top, bottom, left, right) in pixels, as everywhere in the IR; PyTorch's F.pad/ZeroPad2d
order (left, right, top, bottom) is converted by the front end. The output keeps the input's qparams
(TFLite's PAD requires it). Output must not overlap the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks


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
    pad_value: int  # the zero point: padding is real 0


def prepare(node: Node, g: Graph) -> PadParams:
    x, y = _checks.io(node, g)
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
    return PadParams(n, h, w, c, top, bottom, left, right, x.qparams.zero_point[0])


def pad_s8(x: np.ndarray, p: PadParams) -> np.ndarray:
    x = x.reshape(p.batches, p.in_h, p.in_w, p.channels)
    widths = ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0))
    return np.pad(x, widths, mode="constant", constant_values=np.int8(p.pad_value))
