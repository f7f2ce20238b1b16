"""Graph IR shared by every stage.

A graph is a list of nodes in a valid execution order over named tensors. Constant tensors carry
their data; activation tensors carry shape, dtype and (once quantized) quantization parameters.
The same op names appear in the IR, the NumPy reference (`tinyaot.ref`) and the C kernels.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tinyaot.ir.attrs import AttrError
from tinyaot.ir.ops import make_attrs


@dataclass(frozen=True)
class QParams:
    """Affine quantization: real = scale * (q - zero_point). Per-channel when scale has >1 entry."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @staticmethod
    def per_tensor(scale: float, zero_point: int) -> "QParams":
        return QParams((float(scale),), (int(zero_point),))

    @property
    def is_per_tensor(self) -> bool:
        return len(self.scale) == 1

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        scale = np.asarray(self.scale, dtype=np.float64)
        zp = np.asarray(self.zero_point, dtype=np.float64)
        if not self.is_per_tensor and self.axis is not None:
            bshape = [1] * q.ndim
            bshape[self.axis] = -1
            scale, zp = scale.reshape(bshape), zp.reshape(bshape)
        return (q.astype(np.float64) - zp) * scale


@dataclass
class Tensor:
    """A value in the graph. `data` is set for constants only."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "float32" | "int8" | "uint8" | "int32"
    data: np.ndarray | None = None
    qparams: QParams | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize


@dataclass
class Node:
    """One operation. `source` is where the op came from in the user's model (file:line)."""

    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: Any = field(default_factory=dict)  # given as a dict; held as the op's validated Attrs (ir/ops.py)
    source: str = ""

    def __post_init__(self) -> None:
        try:
            self.attrs = make_attrs(self.op, self.attrs)
        except AttrError as exc:
            raise AttrError(f"layer '{self.name}'{f' at {self.source}' if self.source else ''}: {exc}") from None

    def with_attrs(self, **changes) -> Node:
        """A new node with some attributes changed (validated again): a pass's way to fold a clamp into a
        producer without editing the graph it was given."""
        return dataclasses.replace(self, inputs=list(self.inputs), outputs=list(self.outputs),
                                   attrs=self.attrs.replace(**changes))


@dataclass
class Graph:
    tensors: dict[str, Tensor]
    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    layout: str = "plain"  # the input's layout as the compiled model takes it: "NHWC", "NCHW" or "plain"
    output_layout: str = "plain"  # "NHWC" when the output is a feature map
    torch_input_rank: int = 0  # rank of the channels-first torch input that `layout` converts (3 or 4), else 0
    # Models with several inputs or outputs: tensor -> (layout, torch rank) of every input and output; the three
    # fields above describe the first input and the first output (io_layout_of reads either).
    io_layouts: dict[str, tuple[str, int]] = field(default_factory=dict)

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def replace(self, **changes) -> Graph:
        """A new graph with some fields changed and fresh lists/dicts, so editing it leaves this one alone
        (nodes and tensors themselves are shared: stages make new ones rather than edit them)."""
        fields = dict(tensors=dict(self.tensors), nodes=list(self.nodes), inputs=list(self.inputs),
                      outputs=list(self.outputs), layout=self.layout, output_layout=self.output_layout,
                      torch_input_rank=self.torch_input_rank, io_layouts=dict(self.io_layouts))
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Graph has no field(s) {', '.join(sorted(unknown))}")
        return Graph(**(fields | changes))

    def copy(self) -> Graph:
        """A copy a pass may edit: new nodes and tensors, new lists and dicts. Constant data arrays are shared (a
        pass gives a tensor new data rather than writing into its array), and so are the frozen attrs and qparams."""
        return self.replace(tensors={k: dataclasses.replace(t) for k, t in self.tensors.items()},
                            nodes=[dataclasses.replace(n, inputs=list(n.inputs), outputs=list(n.outputs))
                                   for n in self.nodes])

    def per_input(self, x) -> list:
        """One value per graph input: `x` itself for a one-input graph, else the list given (one per input)."""
        if len(self.inputs) == 1:
            return [x]
        if not isinstance(x, (list, tuple)) or len(x) != len(self.inputs):
            raise ValueError(f"this model has {len(self.inputs)} inputs: pass a list with one value per input")
        return list(x)

    def io_layout_of(self, tensor_name: str) -> tuple[str, int]:
        """(layout, torch rank) of an input or output: how user data in PyTorch's layout maps onto it."""
        if tensor_name in self.io_layouts:
            return self.io_layouts[tensor_name]
        if self.inputs and tensor_name == self.inputs[0]:
            return self.layout, self.torch_input_rank
        if self.outputs and tensor_name == self.outputs[0] and self.output_layout == "NHWC":
            return "NHWC", len(self.tensor(tensor_name).shape)
        return "plain", 0

    def producer(self, tensor_name: str) -> Node | None:
        for node in self.nodes:
            if tensor_name in node.outputs:
                return node
        return None

    def consumers(self, tensor_name: str) -> list[Node]:
        return [n for n in self.nodes if tensor_name in n.inputs]

    def activations(self) -> list[Tensor]:
        """Non-constant tensors: everything the arena must hold."""
        return [t for t in self.tensors.values() if not t.is_const]

    def constants(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.is_const]

    def add_tensor(self, tensor: Tensor) -> Tensor:
        if tensor.name in self.tensors:
            raise ValueError(f"duplicate tensor name {tensor.name!r}")
        self.tensors[tensor.name] = tensor
        return tensor

    def prune(self) -> None:
        """Drop tensors no node or graph boundary refers to."""
        used = set(self.inputs) | set(self.outputs)
        for node in self.nodes:
            used.update(node.inputs)
            used.update(node.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}

    def __str__(self) -> str:
        """A human-readable dump, one node per line."""
        lines = [f"inputs: {', '.join(_fmt_tensor(self.tensor(n)) for n in self.inputs)}"]
        for node in self.nodes:
            ins = ", ".join(n if self.tensor(n).is_const else _fmt_tensor(self.tensor(n)) for n in node.inputs)
            outs = ", ".join(_fmt_tensor(self.tensor(n)) for n in node.outputs)
            attrs = " ".join(f"{k}={v}" for k, v in node.attrs.items() if not hasattr(v, "shape"))
            lines.append(f"  {node.name} = {node.op}({ins}) {attrs} -> {outs}")
        lines.append(f"outputs: {', '.join(self.outputs)}")
        return "\n".join(lines)


def _fmt_tensor(t: Tensor) -> str:
    q = ""
    if t.qparams is not None and t.qparams.is_per_tensor:
        q = f" s={t.qparams.scale[0]:.6g} zp={t.qparams.zero_point[0]}"
    elif t.qparams is not None:
        q = f" per-channel[{len(t.qparams.scale)}]"
    return f"{t.name}:{t.dtype}{list(t.shape)}{q}"
