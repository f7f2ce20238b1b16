"""The PyTorch front end's builder: the IR graph under construction, the value each FX node became and its
layout.

PyTorch tensors are channels-first (NCHW, or NCL for 1-D convs); the IR is channels-last (NHWC; a 1-D
signal is NHWC with H = 1). Each IR value remembers whether it is the channels-last form of a torch
tensor (`nhwc`), so ops that name axes (cat, mean, softmax, flatten, slicing) map them at compile time and no
permute runs on the device unless the model itself mixes layouts. A feature map whose channels are viewed as
groups, [N, g, C / g, H, W] (ShuffleNet's channel shuffle), stays channels-last too, as [N, H, W, g, C / g]: its
transpose(1, 2) is one transpose of [H * W, g, C / g] and the view back to [N, C, H, W] is free.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name, layer_type, source_location
from tinyaot.ir import Graph, Node, Tensor

CHANNEL_OPS = {"aten.conv1d.default", "aten.conv1d.padding", "aten.max_pool1d.default", "aten.avg_pool1d.default",
               "aten.adaptive_avg_pool1d.default", "aten.adaptive_max_pool1d.default", "aten.batch_norm.default",
               "aten.conv2d.default", "aten.conv2d.padding", "aten.conv_transpose1d.default"}


@dataclass(frozen=True)
class Value:
    name: str  # IR tensor
    nhwc: bool  # the IR tensor is the channels-last form of a channels-first torch tensor
    torch_rank: int  # rank of the tensor in torch
    lead: bool = False  # the IR tensor is the torch tensor with a leading 1: the batch of 1 that torch folded into
    #                     its first axis (MobileViT's B * patch_area, a qkv's stacked 3), kept leading in the IR


def torch_to_ir_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) == 5:  # channel groups of a feature map: [N, g, C / g, H, W] -> [N, H, W, g, C / g]
        n, g, c, h, w = shape
        return (n, h, w, g, c)
    if len(shape) == 4:
        n, c, h, w = shape
        return (n, h, w, c)
    if len(shape) == 3:
        n, c, length = shape
        return (n, 1, length, c)
    raise ModelError(f"cannot make a channels-last tensor of rank {len(shape)}")


# torch axis -> IR axis of a channels-last value, by torch rank
NHWC_AXES = {5: {0: 0, 1: 3, 2: 4, 3: 1, 4: 2}, 4: {0: 0, 1: 3, 2: 1, 3: 2}, 3: {0: 0, 1: 3, 2: 2}}


def ir_axis(torch_axis: int, v: Value) -> int:
    """Where a torch axis of a channels-first tensor lives in the IR's channels-last tensor."""
    axis = torch_axis % v.torch_rank
    if not v.nhwc:
        return axis + v.lead
    return NHWC_AXES[v.torch_rank][axis]


class Builder:
    """Accumulates IR while walking the exported FX graph."""

    def __init__(self) -> None:
        self.graph = Graph(tensors={}, nodes=[], inputs=[], outputs=[])
        self.values: dict[str, Value] = {}
        self.node_names: set[str] = set()
        self.current = None  # the FX node being converted, for error messages
        self.items: dict[str, Value] = {}  # "<fx node>#<k>": item k of an op that returns a tuple, for getitem
        self.claimed: set[str] = set()  # FX nodes an earlier node's converter converted with it (the chain of
        #                                 F.normalize): skipped, the last one's value bound already

    # ---- tensors ----------------------------------------------------------------------------
    def const(self, name: str, array: np.ndarray) -> str:
        base = name.replace(".", "_")
        tname, k = base, 1
        while tname in self.graph.tensors:
            tname = f"{base}_{k}"
            k += 1
        data = np.ascontiguousarray(array, dtype=np.float32)
        self.graph.add_tensor(Tensor(tname, tuple(data.shape), "float32", data=data))
        return tname

    def activation(self, name: str, shape) -> str:
        base = name.replace(".", "_")
        tname, k = base, 1
        while tname in self.graph.tensors:
            tname = f"{base}_{k}"
            k += 1
        self.graph.add_tensor(Tensor(tname, tuple(int(s) for s in shape), "float32"))
        return tname

    def shape(self, v: Value) -> tuple[int, ...]:
        return self.graph.tensor(v.name).shape

    def add_input(self, n) -> None:
        shape = tuple(n.meta["val"].shape)
        users = {str(u.target) for u in n.users}
        self.register_input(n, shape, len(shape) == 4 or (len(shape) == 3 and bool(users & CHANNEL_OPS)))

    def register_input(self, n, shape: tuple[int, ...], nhwc: bool) -> None:
        """A graph input for placeholder `n` (channels-last when nhwc), with its layout; the first names the graph's."""
        first = not self.graph.inputs
        name = self.activation("input" if first else f"input_{n.name}", torch_to_ir_shape(shape) if nhwc else shape)
        self.graph.inputs.append(name)
        layout = ("NHWC", len(shape)) if nhwc else ("plain", 0)
        self.graph.io_layouts[name] = layout
        if first:
            self.graph.layout, self.graph.torch_input_rank = layout
        self.values[n.name] = Value(name, nhwc, len(shape))

    def output_name(self, fx_out) -> str:
        v = self.values[fx_out.name]
        if v.nhwc and v.torch_rank == 5:  # channel groups: given back in torch order
            v = self.to_torch_order(v)
        if not self.graph.outputs:
            self.graph.output_layout = "NHWC" if v.nhwc else "plain"
        self.graph.io_layouts.setdefault(v.name, ("NHWC", v.torch_rank) if v.nhwc else ("plain", 0))
        return v.name

    def arg(self, a) -> Value:
        if not hasattr(a, "name") or a.name not in self.values:
            raise self.error(f"argument {a!r} is not a tensor tinyaot can compile (scalars and Python values "
                             "are supported only as op attributes)")
        return self.values[a.name]

    def const_data(self, a) -> np.ndarray:
        v = self.arg(a)
        t = self.graph.tensor(v.name)
        if not t.is_const:
            raise self.error(f"expected a parameter, got the activation {v.name}")
        return t.data

    # ---- nodes ------------------------------------------------------------------------------
    def _unique_node_name(self, base: str) -> str:
        """Unique as the C identifier it becomes too: 'blocks.0_1' and 'blocks.0.1' would name the same symbols."""
        name, k = base, 1
        while re.sub(r"\W", "_", name) in self.node_names:
            name = f"{base}_{k}"
            k += 1
        self.node_names.add(re.sub(r"\W", "_", name))
        return name

    def emit(self, op: str, inputs: list[str], out_shape, attrs: dict[str, Any] | None = None,
             suffix: str = "") -> str:
        """Add one IR node for the current FX node; returns its output tensor."""
        n = self.current
        layer = layer_name(n)
        name = self._unique_node_name(layer + suffix)
        out = self.activation(f"{name}_out" if layer != n.name else name, out_shape)
        self.graph.nodes.append(Node(op, name, list(inputs), [out], dict(attrs or {}), source=source_location(n)))
        return out

    def bind(self, n, name: str, nhwc: bool, torch_rank: int | None = None) -> None:
        rank = torch_rank if torch_rank is not None else len(n.meta["val"].shape)
        lead = not nhwc and len(self.graph.tensor(name).shape) == rank + 1
        self.values[n.name] = Value(name, nhwc, rank, lead)

    def plain_shape(self, torch_shape, *sources: Value) -> tuple[int, ...]:
        """The IR shape of a torch-order result of shape `torch_shape` computed from the activations `sources`:
        torch's, with a leading 1 when its first axis is not 1 but a source's batch is (the IR keeps every
        activation's batch leading: calibration runs a batch of samples along axis 0)."""
        shape = tuple(int(d) for d in torch_shape)
        batched = any(v.lead or (self.shape(v)[:1] == (1,) and not self.graph.tensor(v.name).is_const)
                      for v in sources)
        return (1, *shape) if shape and shape[0] != 1 and batched else shape

    def error(self, what: str) -> UnsupportedOpError:
        n = self.current
        where = source_location(n) or "(no source location recorded)"
        exc = UnsupportedOpError(f"{n.target} in layer '{layer_name(n)}'{layer_type(n)} at {where}: {what}")
        exc.what = what  # the reason alone: the model's refusals group by it (frontend/refusals.py)
        return exc

    # ---- layout changes ---------------------------------------------------------------------
    def to_torch_order(self, v: Value) -> Value:
        """The tensor with its bytes in torch's channels-first order (a transpose unless trivial)."""
        if not v.nhwc:
            return v
        if v.torch_rank == 5:  # [N, H, W, g, c] -> [N, g, c, H, W]
            n, h, w, g, c = self.shape(v)
            return Value(self.emit("transpose", [v.name], (n, g, c, h, w), {"perm": (0, 3, 4, 1, 2)},
                                   suffix="_to_nchw"), False, 5)
        shape = self.shape(v)  # (N, H, W, C)
        torch_shape = (shape[0], shape[3], shape[1], shape[2]) if v.torch_rank == 4 else (shape[0], shape[3], shape[2])
        if shape[3] == 1 or shape[1] * shape[2] == 1:
            out = self.emit("reshape", [v.name], torch_shape, suffix="_view")
        else:
            t = self.emit("transpose", [v.name], (shape[0], shape[3], shape[1], shape[2]), {"perm": (0, 3, 1, 2)},
                          suffix="_to_nchw")
            out = t if v.torch_rank == 4 else self.emit("reshape", [t], torch_shape, suffix="_view")
        return Value(out, False, v.torch_rank)

    def axis(self, v: Value, torch_dim: int) -> int:
        """The IR axis of `v` that holds its torch dim `torch_dim` (negative dims count from the end)."""
        if v.nhwc or v.torch_rank:
            return ir_axis(torch_dim, v)
        return torch_dim % len(self.shape(v))  # a parameter (its Value has no torch rank): its own shape

    def squeezed(self, v: Value, dims: tuple[int, ...], torch_shape: tuple[int, ...]) -> Value:
        """`v` without its torch dims `dims` (each of size 1), shaped `torch_shape`: a channels-last feature map
        losing H or W stays channels-last (a 1-D signal, a view at most); anything else is read in torch order
        (a view, unless the bytes need a transpose)."""
        if v.nhwc and v.torch_rank == 4 and len(dims) == 1 and dims[0] % 4 in (2, 3):
            n, h, w, c = self.shape(v)
            target = (n, 1, w if dims[0] % 4 == 2 else h, c)
            name = v.name if self.shape(v) == target else self.emit("reshape", [v.name], target, suffix="_view")
            return Value(name, True, 3)
        t = self.to_torch_order(v)
        shape = self.plain_shape(torch_shape, t)
        name = t.name if self.shape(t) == shape else self.emit("reshape", [t.name], shape, suffix="_view")
        return Value(name, False, len(torch_shape), len(shape) == len(torch_shape) + 1)

    def unlead(self, v: Value) -> Value:
        """The tensor in torch's own shape: a view dropping the leading 1 of a tensor into whose first axis torch
        folded the batch. An op that takes torch's first axis as its batch (conv, BatchNorm, pooling) then runs
        that axis as its kernel's batch; calibration runs such a graph one sample at a time
        (quantize/float_eval.py)."""
        if not v.lead:
            return v
        shape = self.shape(v)[1:]
        return Value(self.emit("reshape", [v.name], shape, suffix="_unbatched"), False, v.torch_rank)

    def to_channels_last(self, v: Value) -> Value:
        """A channels-first torch tensor (rank 3 or 4, plain in the IR) converted to NHWC; channel groups
        [N, g, c, H, W] to [N, H, W, g, c]."""
        if v.nhwc:
            return v
        v = self.unlead(v)
        shape = self.shape(v)
        if len(shape) == 5:
            n, g, c, h, w = shape
            if h * w == 1:
                return Value(self.emit("reshape", [v.name], (n, h, w, g, c), suffix="_nhwc"), True, 5)
            return Value(self.emit("transpose", [v.name], (n, h, w, g, c), {"perm": (0, 3, 4, 1, 2)},
                                   suffix="_to_nhwc"), True, 5)
        if len(shape) not in (3, 4):
            raise self.error(f"expected a 3-D or 4-D tensor, got shape {shape}")
        nchw = shape if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])
        src = v.name if len(shape) == 4 else self.emit("reshape", [v.name], nchw, suffix="_view")
        target = (nchw[0], nchw[2], nchw[3], nchw[1])
        if nchw[1] == 1 or nchw[2] * nchw[3] == 1:
            out = self.emit("reshape", [src], target, suffix="_nhwc")
        else:
            out = self.emit("transpose", [src], target, {"perm": (0, 2, 3, 1)}, suffix="_to_nhwc")
        return Value(out, True, len(shape))


def val_shape(n) -> tuple[int, ...]:
    return tuple(int(s) for s in n.meta["val"].shape)


def pair(v, n: int = 2) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    return v * n if len(v) == 1 else v
