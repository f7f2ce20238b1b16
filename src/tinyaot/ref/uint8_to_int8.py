"""uint8_to_int8: a uint8 model input becomes the int8 the kernels take (q - 128, zero point - 128).

Same scale, so the values are exact: flipping the top bit of each byte. It runs in place over the input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node


@dataclass(frozen=True)
class Uint8ToInt8Params:
    size: int


def prepare(node: Node, g: Graph) -> Uint8ToInt8Params:
    x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    if x.dtype != "uint8" or y.dtype != "int8" or x.size != y.size:
        raise ModelError(f"layer '{node.name}': uint8_to_int8 maps uint8 to int8 of the same size, "
                         f"got {x.dtype}{list(x.shape)} -> {y.dtype}{list(y.shape)}")
    if x.qparams.scale != y.qparams.scale or x.qparams.zero_point[0] - 128 != y.qparams.zero_point[0]:
        raise ModelError(f"layer '{node.name}': uint8_to_int8 keeps the scale and moves the zero point by -128")
    return Uint8ToInt8Params(size=x.size)


def uint8_to_int8(x: np.ndarray, p: Uint8ToInt8Params) -> np.ndarray:
    return (np.asarray(x, dtype=np.uint8).reshape(-1).astype(np.int16) - 128).astype(np.int8)
