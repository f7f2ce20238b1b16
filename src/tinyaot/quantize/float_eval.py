"""Float evaluation of a float Graph in NumPy: calibration and per-layer error need every tensor."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyaot.ir import Graph, Node


def _fully_connected(node: Node, args: list[np.ndarray]) -> np.ndarray:
    x, w, b = args
    y = x @ w.T.astype(np.float64) + b
    return _activation(node, y)


def _activation(node: Node, y: np.ndarray) -> np.ndarray:
    clamp = node.attrs.get("clamp")
    if clamp is None:
        return y
    return np.clip(y, clamp[0], clamp[1])


def _relu(node: Node, args: list[np.ndarray]) -> np.ndarray:
    return _activation(node, args[0])


def _reshape(node: Node, args: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    x = args[0]
    return x.reshape((x.shape[0],) + tuple(out_shape[1:]))


FLOAT_OPS: dict[str, Callable] = {
    "fully_connected": _fully_connected,
    "relu": _relu,
}


def evaluate(g: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Run the float graph on a batch (dim 0 is the batch); return every tensor's value."""
    values: dict[str, np.ndarray] = {g.inputs[0]: np.asarray(x, dtype=np.float64)}
    for t in g.constants():
        values[t.name] = t.data.astype(np.float64)
    for node in g.nodes:
        args = [values[i] for i in node.inputs]
        if node.op == "reshape":
            y = _reshape(node, args, g.tensor(node.outputs[0]).shape)
        else:
            y = FLOAT_OPS[node.op](node, args)
        values[node.outputs[0]] = y
    return values
