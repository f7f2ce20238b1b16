"""Small int8 IR graphs built by hand for the memory-planning tests (no front end involved)."""
from __future__ import annotations

import numpy as np

from tinyaot.ir import Graph, Node, QParams, Tensor


class GraphBuilder:
    """Builds an int8 graph of fully_connected / reshape / elementwise nodes with random weights."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.g = Graph({}, [], [], [], layout="NHWC")

    def act(self, name: str, shape, scale: float = 0.05, zp: int = 0) -> str:
        self.g.add_tensor(Tensor(name, tuple(shape), "int8", qparams=QParams.per_tensor(scale, zp)))
        return name

    def input(self, name: str, shape) -> str:
        self.g.inputs.append(self.act(name, shape, 0.05, 3))
        return name

    def output(self, name: str) -> None:
        self.g.outputs.append(name)

    def fc(self, name: str, x: str, n_out: int, out_shape=None, clamp=None) -> str:
        """A fully_connected over the last axis (a 1x1 convolution when x is NHWC)."""
        xt = self.g.tensor(x)
        n_in = xt.shape[-1]
        w = self.rng.integers(-127, 128, size=(n_out, n_in), dtype=np.int16).astype(np.int8)
        b = self.rng.integers(-300, 300, size=n_out).astype(np.int32)
        self.g.add_tensor(Tensor(f"{name}.weight", w.shape, "int8", w,
                                 QParams(tuple([0.02] * n_out), tuple([0] * n_out), axis=0)))
        self.g.add_tensor(Tensor(f"{name}.bias", b.shape, "int32", b,
                                 QParams(tuple([0.05 * 0.02] * n_out), tuple([0] * n_out), axis=0)))
        y = self.act(f"{name}_out", out_shape or xt.shape[:-1] + (n_out,), 0.05 * np.sqrt(n_in), -5)
        self.g.nodes.append(Node("fully_connected", name, [x, f"{name}.weight", f"{name}.bias"], [y],
                                 {"clamp": clamp}))
        return y

    def reshape(self, name: str, x: str, shape) -> str:
        xt = self.g.tensor(x)
        y = self.act(f"{name}_out", shape, xt.qparams.scale[0], xt.qparams.zero_point[0])
        self.g.nodes.append(Node("reshape", name, [x], [y]))
        return y

    def unary(self, op: str, name: str, x: str, **attrs) -> str:
        """An op with one input and an output shaped and quantized like it (relu, test ops)."""
        xt = self.g.tensor(x)
        y = self.act(f"{name}_out", xt.shape, xt.qparams.scale[0], xt.qparams.zero_point[0])
        self.g.nodes.append(Node(op, name, [x], [y], dict(attrs)))
        return y


def branchy_graph(width: int = 64, seed: int = 1) -> Graph:
    """Two branches from one input, each wide then narrow, both kept as outputs. The source order runs the
    two wide layers first (both wide tensors live at once); running one branch to its end first is cheaper."""
    b = GraphBuilder(seed)
    x = b.input("x", (1, 16))
    a1 = b.fc("a1", x, width)
    c1 = b.fc("c1", x, width)
    a2 = b.fc("a2", a1, 4)
    c2 = b.fc("c2", c1, 4)
    b.output(a2)
    b.output(c2)
    return b.g


def chain_graph(sizes, seed: int = 2) -> Graph:
    b = GraphBuilder(seed)
    x = b.input("x", (1, sizes[0]))
    for i, n in enumerate(sizes[1:]):
        x = b.fc(f"fc{i}", x, n)
    b.output(x)
    return b.g


def branchy_concat_graph(width: int = 96, seed: int = 7) -> Graph:
    """Two wide-then-narrow branches joined by a concat; the source order runs both wide layers first."""
    b = GraphBuilder(seed)
    x = b.input("x", (1, 16))
    a1 = b.fc("a1", x, width)
    c1 = b.fc("c1", x, width)
    a2 = b.fc("a2", a1, 8)
    c2 = b.fc("c2", c1, 8)
    at = b.g.tensor(a2)
    y = b.act("cat_out", (1, 16), at.qparams.scale[0], at.qparams.zero_point[0])
    b.g.nodes.append(Node("concat", "cat", [a2, c2], [y], {"axis": -1}))
    b.output(y)
    return b.g
