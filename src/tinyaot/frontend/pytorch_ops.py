"""ATen -> IR converters, with compile-time layout conversion.

PyTorch tensors are channels-first (NCHW, or NCL for 1-D convs); the IR is channels-last (NHWC; a 1-D
signal is NHWC with H = 1). Each IR value remembers whether it is the channels-last form of a torch
tensor (`nhwc`), so ops that name axes (cat, mean, softmax, flatten, slicing) map them at compile time and no
permute runs on the device unless the model itself mixes layouts. A feature map whose channels are viewed as
groups, [N, g, C / g, H, W] (ShuffleNet's channel shuffle), stays channels-last too, as [N, H, W, g, C / g]: its
transpose(1, 2) is one transpose of [H * W, g, C / g] and the view back to [N, C, H, W] is free.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name, layer_type, source_location
from tinyaot.frontend.pytorch_attention import CONVERTERS as ATTENTION_CONVERTERS
from tinyaot.frontend.pytorch_recurrent import CONVERTERS as RECURRENT_CONVERTERS
from tinyaot.frontend.pytorch_slicing import CONVERTERS as SLICING_CONVERTERS
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.layout import MAX_TRANSPOSE_RANK as MAX_RANK
from tinyaot.ir.layout import reduced_permutation
from tinyaot.ir.ops import RELU
from tinyaot.ir.pooling import pooled_size

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
        """A channels-first torch tensor (rank 3 or 4, plain in the IR) converted to NHWC."""
        if v.nhwc:
            return v
        v = self.unlead(v)
        shape = self.shape(v)
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


# ---- converters -----------------------------------------------------------------------------------
def _val_shape(n) -> tuple[int, ...]:
    return tuple(int(s) for s in n.meta["val"].shape)


def _linear(b: Builder, n) -> None:
    x = b.arg(n.args[0])
    if x.nhwc:
        raise b.error("Linear applied to a channels-first conv feature map's last axis is not supported; "
                      "flatten it first")
    w = b.const_data(n.args[1])
    bias = b.const_data(n.args[2]) if len(n.args) > 2 and n.args[2] is not None else np.zeros(w.shape[0])
    inputs = [x.name, b.const(f"{layer_name(n)}.weight", w), b.const(f"{layer_name(n)}.bias", bias)]
    b.bind(n, b.emit("fully_connected", inputs, b.plain_shape(_val_shape(n), x)), False)


def _explicit_padding(padding, kernel, dilation, stride=(1, 1)) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from torch's padding argument (ints or 'same'/'valid')."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2)
    ph, pw = padding
    return (ph, ph, pw, pw)


def _pair(v, n: int = 2) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    return v * n if len(v) == 1 else v


def _conv(b: Builder, n, one_d: bool) -> None:
    args = list(n.args) + [None] * (7 - len(n.args))
    x_arg, w_arg, bias_arg, stride, padding, dilation, groups = args[:7]
    x = b.to_channels_last(b.arg(x_arg))
    w = b.const_data(w_arg)  # [out, in/groups, kh, kw] or [out, in/groups, k]
    if one_d:
        w = w[:, :, None, :]
        stride = (1,) + _pair(stride if stride is not None else 1, 1)
        dilation = (1,) + _pair(dilation if dilation is not None else 1, 1)
        if isinstance(padding, str):
            pad = _explicit_padding(padding, w.shape[2:], dilation)
        else:
            p = _pair(padding if padding is not None else 0, 1)[0]
            pad = (0, 0, p, p)
    else:
        stride = _pair(stride if stride is not None else 1)
        dilation = _pair(dilation if dilation is not None else 1)
        pad = _explicit_padding(padding if isinstance(padding, str) else _pair(padding or 0), w.shape[2:], dilation)
    groups = int(groups or 1)
    out_c, in_per_group, kh, kw = w.shape
    in_c = b.shape(x)[3]
    bias = b.const_data(bias_arg) if bias_arg is not None else np.zeros(out_c)
    torch_out = _val_shape(n)
    out_shape = torch_to_ir_shape(torch_out)
    layer = layer_name(n)
    attrs = {"stride": stride, "padding": pad, "dilation": dilation}
    if groups > 1 and groups == in_c and in_per_group == 1:
        attrs["depth_multiplier"] = out_c // in_c
        wt = b.const(f"{layer}.weight", w.transpose(1, 2, 3, 0))  # [1, kh, kw, in * m]
        out = b.emit("depthwise_conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], out_shape, attrs)
    else:  # groups = 1, or grouped: [out, in/groups, kh, kw] -> OHWI, TFLite's grouped CONV_2D filter
        wt = b.const(f"{layer}.weight", w.transpose(0, 2, 3, 1))
        out = b.emit("conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], out_shape, attrs)
    b.bind(n, out, True, len(torch_out))


def _conv_transpose(b: Builder, n) -> None:
    """ConvTranspose2d / ConvTranspose1d (a 1-D signal is H = 1): weights [in, out, kh, kw] -> [out, kh, kw, in]."""
    args = list(n.args) + [None] * (8 - len(n.args))
    x_arg, w_arg, bias_arg, stride, padding, output_padding, groups, dilation = args[:8]
    one_d = len(_val_shape(n)) == 3
    dims = 1 if one_d else 2
    stride, padding, extra, dilation = (_pair(v if v is not None else d, dims)
                                        for v, d in ((stride, 1), (padding, 0), (output_padding, 0), (dilation, 1)))
    if int(groups or 1) != 1 or any(d != 1 for d in dilation):
        raise b.error(f"transposed convolution with groups={int(groups or 1)} and dilation={tuple(dilation)} is not "
                      "supported; supported: groups=1, dilation=1 (any stride, padding and output_padding)")
    x = b.to_channels_last(b.arg(x_arg))
    w = b.const_data(w_arg)  # [in, out, kh, kw] or [in, out, k]
    if one_d:
        w = w[:, :, None, :]
        stride, padding, extra = (1, *stride), (0, *padding), (0, *extra)
    bias = b.const_data(bias_arg) if bias_arg is not None else np.zeros(w.shape[1])
    torch_out = _val_shape(n)
    layer = layer_name(n)
    attrs = {"stride": stride, "padding": (padding[0], padding[0], padding[1], padding[1]), "output_padding": extra}
    wt = b.const(f"{layer}.weight", w.transpose(1, 2, 3, 0))
    out = b.emit("transpose_conv2d", [x.name, wt, b.const(f"{layer}.bias", bias)], torch_to_ir_shape(torch_out), attrs)
    b.bind(n, out, True, len(torch_out))


def _conv2d(b: Builder, n) -> None:
    _conv(b, n, one_d=False)


def _conv1d(b: Builder, n) -> None:
    _conv(b, n, one_d=True)


def _batch_norm(b: Builder, n) -> None:
    x_arg, w_arg, bias_arg, mean_arg, var_arg = n.args[:5]
    eps = float(n.args[7]) if len(n.args) > 7 else 1e-5
    mean, var = b.const_data(mean_arg), b.const_data(var_arg)
    gamma = b.const_data(w_arg) if w_arg is not None else np.ones_like(mean)
    beta = b.const_data(bias_arg) if bias_arg is not None else np.zeros_like(mean)
    scale = gamma / np.sqrt(var.astype(np.float64) + eps)
    shift = beta - mean * scale
    x = b.unlead(b.arg(x_arg))  # BatchNorm1d on (B * C, L): torch's first axis is its batch
    layer = layer_name(n)
    if len(b.shape(x)) == 2:  # BatchNorm1d on features: folded into the Linear before it (see passes)
        inputs = [x.name, b.const(f"{layer}.scale", scale), b.const(f"{layer}.shift", shift)]
        b.bind(n, b.emit("batch_norm", inputs, _val_shape(n)), False)
        return
    x = b.to_channels_last(x)
    inputs = [x.name, b.const(f"{layer}.scale", scale), b.const(f"{layer}.shift", shift)]
    b.bind(n, b.emit("batch_norm", inputs, b.shape(x)), True, x.torch_rank)


def _clamp_node(b: Builder, n, lo: float, hi: float) -> None:
    x = b.arg(n.args[0])
    b.bind(n, b.emit("relu", [x.name], b.shape(x), {"clamp": (float(lo), float(hi))}), x.nhwc, x.torch_rank)


def _relu(b: Builder, n) -> None:
    _clamp_node(b, n, *RELU)


def _relu6(b: Builder, n) -> None:
    _clamp_node(b, n, 0.0, 6.0)


def _hardtanh(b: Builder, n) -> None:
    lo = n.args[1] if len(n.args) > 1 else -1.0
    hi = n.args[2] if len(n.args) > 2 else 1.0
    _clamp_node(b, n, lo, hi)


def _clamp(b: Builder, n) -> None:
    lo = n.args[1] if len(n.args) > 1 and n.args[1] is not None else n.kwargs.get("min")
    hi = n.args[2] if len(n.args) > 2 and n.args[2] is not None else n.kwargs.get("max")
    if (lo is not None and not isinstance(lo, (int, float))) or (hi is not None and not isinstance(hi, (int, float))):
        raise b.error("clamp bounds must be Python numbers")
    _clamp_node(b, n, -math.inf if lo is None else lo, math.inf if hi is None else hi)


def _pool_args(b: Builder, n, one_d: bool, is_avg: bool):
    args = list(n.args) + [None] * (7 - len(n.args))
    kernel = args[1]
    stride = args[2] if args[2] else kernel
    padding = args[3] if args[3] is not None else 0
    k = (1,) + _pair(kernel, 1) if one_d else _pair(kernel)
    s = (1,) + _pair(stride, 1) if one_d else _pair(stride)
    p = _pair(padding, 1 if one_d else 2)
    pad = (0, 0, p[0], p[0]) if one_d else (p[0], p[0], p[1], p[1])
    if not is_avg and args[4] not in (None, 1, [1], [1, 1], (1, 1)):
        raise b.error("dilated max pooling is not supported")
    return k, s, pad, args


def _ceil_mode(b: Builder, x: Value, n, kernel, stride, pad) -> dict:
    """{"ceil_mode": True} when the output torch recorded is ceil_mode's and larger than the windows that fit (the
    last window hangs over the padded input's end); {} when ceil_mode changes nothing here."""
    _, h, w, _ = b.shape(x)
    out = torch_to_ir_shape(_val_shape(n))[1:3]
    floor = (pooled_size(h, kernel[0], stride[0], pad[0], pad[1], False),
             pooled_size(w, kernel[1], stride[1], pad[2], pad[3], False))
    if tuple(out) == floor:
        return {}
    ceil = (pooled_size(h, kernel[0], stride[0], pad[0], pad[1], True),
            pooled_size(w, kernel[1], stride[1], pad[2], pad[3], True))
    if tuple(out) != ceil:
        raise b.error(f"pooling {h}x{w} gives {out[0]}x{out[1]} in torch, neither the {floor[0]}x{floor[1]} windows "
                      f"that fit nor ceil_mode's {ceil[0]}x{ceil[1]} (a tinyaot bug; please report it)")
    return {"ceil_mode": True}


def _max_pool(b: Builder, n, one_d: bool) -> None:
    k, s, pad, _ = _pool_args(b, n, one_d, is_avg=False)
    x = b.to_channels_last(b.arg(n.args[0]))
    attrs = {"kernel": k, "stride": s, "padding": pad, **_ceil_mode(b, x, n, k, s, pad)}
    b.bind(n, b.emit("max_pool2d", [x.name], torch_to_ir_shape(_val_shape(n)), attrs), True, x.torch_rank)


def _avg_pool(b: Builder, n, one_d: bool) -> None:
    k, s, pad, args = _pool_args(b, n, one_d, is_avg=True)
    count_include_pad = True if args[5] is None else bool(args[5])
    if args[6] is not None:
        raise b.error("avg_pool with divisor_override is not supported")
    x = b.to_channels_last(b.arg(n.args[0]))
    attrs = {"kernel": k, "stride": s, "padding": pad, "count_include_pad": count_include_pad,
             **_ceil_mode(b, x, n, k, s, pad)}
    b.bind(n, b.emit("avg_pool2d", [x.name], torch_to_ir_shape(_val_shape(n)), attrs), True, x.torch_rank)


def _adaptive_pool(kind: str):
    """aten.adaptive_{avg,max}_pool{1,2}d: output size 1 of an average is global average pooling (mean); other
    sizes pool PyTorch's adaptive windows (start floor(i * in / out), end ceil((i + 1) * in / out)) where along
    each axis they are uniform (one kernel and stride: always when the input is a multiple of the output) or each
    one pixel (an output larger than the input: nearest-neighbour copies, a resize after the pooling)."""
    def convert(b: Builder, n) -> None:
        x = b.to_channels_last(b.arg(n.args[0]))
        value = n.meta["val"][0] if kind == "max" else n.meta["val"]  # max pooling also returns the indices
        out_shape = torch_to_ir_shape(tuple(int(d) for d in value.shape))
        _, h, w, c = b.shape(x)
        if kind == "avg" and out_shape[1:3] == (1, 1):
            b.bind(n, b.emit("mean", [x.name], out_shape, {"axes": (1, 2), "keepdims": True}), True, x.torch_rank)
            return
        (kh, sh, ph), (kw, sw, pw) = _adaptive_windows(b, h, out_shape[1]), _adaptive_windows(b, w, out_shape[2])
        out = x.name
        if (kh, sh, kw, sw) != (1, 1, 1, 1):
            attrs = {"kernel": (kh, kw), "stride": (sh, sw), "padding": (0, 0, 0, 0)}
            if kind == "avg":
                attrs["count_include_pad"] = False
            out = b.emit(f"{kind}_pool2d", [x.name], (out_shape[0], ph, pw, c), attrs)
        if (ph, pw) != out_shape[1:3]:
            out = b.emit("resize_nearest", [out], out_shape, {}, suffix="_copies")
        if kind == "max":
            b.items[f"{n.name}#0"] = Value(out, True, x.torch_rank)  # read through getitem; item 1, the indices,
        else:  # has no integer kernel
            b.bind(n, out, True, x.torch_rank)
    return convert


def _adaptive_windows(b: Builder, size: int, out: int) -> tuple[int, int, int]:
    """(kernel, stride, pooled size) of PyTorch's adaptive windows along one axis: uniform windows, or windows of
    one pixel each (kernel 1, stride 1, then a nearest resize from `size` to `out` copies them, checked to pick
    the same pixels)."""
    from tinyaot.ir.resize import nearest_source

    starts = [i * size // out for i in range(out)]
    ends = [-(-(i + 1) * size // out) for i in range(out)]
    kernel, stride = ends[0] - starts[0], (starts[1] - starts[0]) if out > 1 else size
    if all(e - s == kernel and s == i * stride for i, (s, e) in enumerate(zip(starts, ends))) and stride > 0:
        return kernel, stride, out
    if all(e - s == 1 for s, e in zip(starts, ends)) and list(nearest_source(size, out, False, False)) == starts:
        return 1, 1, size
    raise b.error(f"adaptive pooling of {size} to {out}: PyTorch's windows here differ in size or spacing (starts "
                  f"{starts}, ends {ends}), which no pooling kernel and stride give; tinyaot pools uniform windows "
                  "(an input size that is a multiple of the output size) or copies single pixels (an output larger "
                  "than the input, when each window is one pixel)")


def _mean(b: Builder, n) -> None:
    """Global average pooling (the spatial dims of a feature map); a mean over other dims of a feature map (e.g.
    x.mean(-1), or mean(2) over frequency) where they are neighbours in the channels-last layout, else in torch
    order; the mean over consecutive dims after the batch of any other tensor."""
    x = b.arg(n.args[0])
    dims = n.args[1] if len(n.args) > 1 else None
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    rank = x.torch_rank
    dims = tuple(sorted(d % rank for d in (dims if dims is not None else range(rank))))
    if x.nhwc and rank in (3, 4) and dims == ((2, 3) if rank == 4 else (2,)):
        out_shape = torch_to_ir_shape(_val_shape(n)) if keepdim else _val_shape(n)
        out = b.emit("mean", [x.name], out_shape, {"axes": (1, 2), "keepdims": keepdim})
        b.bind(n, out, keepdim, rank if keepdim else None)
        return
    if x.nhwc and 0 not in dims:
        axes = sorted(b.axis(x, d) for d in dims)
        if axes == list(range(axes[0], axes[-1] + 1)):
            keep = tuple(1 if a in axes else d for a, d in enumerate(b.shape(x)))
            v = Value(b.emit("mean", [x.name], keep, {"axes": tuple(axes), "keepdims": True}), True, rank)
            v = v if keepdim else b.squeezed(v, dims, _val_shape(n))
            b.bind(n, v.name, v.nhwc, v.torch_rank)
            return
        x = b.to_torch_order(x)  # the dims are neighbours in torch order only
    if not x.nhwc and rank >= 2 and dims[0] > 0 and dims == tuple(range(dims[0], dims[-1] + 1)):
        axes = tuple(d + x.lead for d in dims)
        out_shape = (1, *_val_shape(n)) if x.lead else _val_shape(n)
        b.bind(n, b.emit("mean", [x.name], out_shape, {"axes": axes, "keepdims": keepdim}), False)
        return
    raise b.error(f"mean over dims {dims} is not supported; supported: dims of a feature map after the batch "
                  "(global average pooling, or one spatial dim), or consecutive dims after the batch (e.g. the "
                  "tokens of [1, T, D])")


def _scalar_affine(b: Builder, n, op: str) -> bool:
    """`x op c` with a Python number c: an exact-as-int8-allows table (lut 'affine'), no second tensor."""
    x_arg, c = n.args[0], n.args[1]
    if hasattr(c, "name") or not isinstance(c, (int, float)):
        return False
    alpha = n.args[2] if len(n.args) > 2 else n.kwargs.get("alpha", 1)
    c = float(c)
    scale_by, offset = {"add": (1.0, c * alpha), "sub": (1.0, -c * alpha), "mul": (c, 0.0),
                        "div": (1.0 / c if c else math.inf, 0.0), "rsub": (-1.0, c)}[op]
    if not math.isfinite(scale_by):
        raise b.error("division by zero")
    x = b.arg(x_arg)
    if b.graph.tensor(x.name).is_const:  # arithmetic on a parameter: folded now
        _bind_const(b, n, b.graph.tensor(x.name).data.astype(np.float64) * scale_by + offset)
        return True
    attrs = {"function": "affine", "scale_by": scale_by, "offset": offset}
    b.bind(n, b.emit("lut", [x.name], b.shape(x), attrs), x.nhwc, x.torch_rank)
    return True


def _scalar_op(op: str):
    def convert(b: Builder, n) -> None:
        if not _scalar_affine(b, n, op):
            raise b.error(f"{op} with a tensor second operand is not supported here")
    return convert


def _alpha(n) -> float:
    return float(n.args[2] if len(n.args) > 2 else n.kwargs.get("alpha", 1))


def _binary(op: str, swap: bool = False):
    """add / sub / mul / minimum / maximum of two tensors, NumPy-broadcast up to 4-D (torch's rules), or of a
    tensor and a Python number (a table, or a clamp for minimum / maximum). swap: rsub (other - x)."""
    def convert(b: Builder, n) -> None:
        args = [n.args[1], n.args[0]] if swap else list(n.args[:2])
        _binary_node(b, n, op, args, _alpha(n) if op in ("add", "sub") else 1.0)
    return convert


def _clamp_tensor(b: Builder, n) -> None:
    """torch.clamp with tensor bounds: maximum with the lower, then minimum with the upper (either may be a number
    or absent)."""
    lo = n.args[1] if len(n.args) > 1 else n.kwargs.get("min")
    hi = n.args[2] if len(n.args) > 2 else n.kwargs.get("max")
    x = n.args[0]
    for op, bound in (("maximum", lo), ("minimum", hi)):
        if bound is not None:
            _binary_node(b, n, op, [x, bound], 1.0)
            x = n  # the value so far, bound to this FX node


def _binary_node(b: Builder, n, op: str, args: list, alpha: float) -> None:
    """One binary element-wise op of args (FX nodes or numbers) for FX node n, which it binds."""
    if not hasattr(args[1], "name") and isinstance(args[1], (int, float)):  # x op c
        _scalar_operand(b, n, op, args[0], float(args[1]) * alpha, first=True)
        return
    if not hasattr(args[0], "name") and isinstance(args[0], (int, float)):  # c op x (rsub of a number)
        _scalar_operand(b, n, op, args[1], float(args[0]), first=False, alpha=alpha)
        return
    x, y = b.arg(args[0]), b.arg(args[1])
    tx, ty = b.graph.tensor(x.name), b.graph.tensor(y.name)
    if alpha != 1.0:
        if not ty.is_const:
            raise b.error(f"{op} with alpha={alpha:g} of two activations is not supported (alpha is supported with "
                          "a constant second operand); scale one of them (x * alpha) first")
        y = _const_value(b, n, ty.data * alpha)
        ty = b.graph.tensor(y.name)
    if tx.is_const and ty.is_const:  # folded now: no kernel needed
        _bind_const(b, n, _real(op, tx.data, ty.data))
        return
    for v, t in ((x, tx), (y, ty)):
        if t.is_const and t.size == 1:  # a one-number tensor is a scalar
            _scalar_operand(b, n, op, args[1] if v is x else args[0], float(t.data.reshape(-1)[0]),
                            first=v is y)
            return
    x, y = _common_layout(b, x, y)
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(b.shape(x), b.shape(y)))
    except ValueError:
        raise b.error(f"{op} of shapes {b.shape(x)} and {b.shape(y)}: they do not broadcast") from None
    if len(shape) > 4 and not b.shape(x) == b.shape(y) == shape:
        raise b.error(f"{op} of shapes {b.shape(x)} and {b.shape(y)}: broadcasting is supported up to 4-D")
    nhwc = x.nhwc or y.nhwc
    want = _val_shape(n)
    if (torch_to_ir_shape(want) if nhwc else b.plain_shape(want, x, y)) != shape:
        raise b.error(f"{op} of shapes {b.shape(x)} and {b.shape(y)} gives {shape}, torch says {want}; this "
                      "mix of layouts is not supported")
    rank = x.torch_rank if x.nhwc else y.torch_rank
    if len(shape) > 4:  # same shapes beyond 4-D: the element-wise op on flat views
        flat = (1, math.prod(shape))
        views = [b.const(f"{v.name}_flat", b.graph.tensor(v.name).data.reshape(flat))
                 if b.graph.tensor(v.name).is_const else b.emit("reshape", [v.name], flat, suffix="_flat")
                 for v in (x, y)]
        out = b.emit("reshape", [b.emit(op, views, flat)], shape, suffix="_view")
    else:
        out = b.emit(op, [x.name, y.name], shape)
    b.bind(n, out, nhwc, rank if nhwc else len(want))


def _real(op: str, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The value of `op` on two constants (torch order): the front end folds it."""
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "minimum": np.minimum, "maximum": np.maximum}[op]
    return fn(a.astype(np.float64), c.astype(np.float64))


def _const_value(b: Builder, n, data: np.ndarray) -> Value:
    name = b.const(f"{layer_name(n)}.constant", np.asarray(data, dtype=np.float32))
    return Value(name, False, np.ndim(data))


def _bind_const(b: Builder, n, data: np.ndarray) -> None:
    v = _const_value(b, n, np.asarray(data).reshape(_val_shape(n)))
    b.values[n.name] = v


def _scalar_operand(b: Builder, n, op: str, x_arg, c: float, first: bool, alpha: float = 1.0) -> None:
    """x op c (first) or c op x with a number c: a table (lut 'affine') for add / sub / mul, a clamp for minimum /
    maximum; alpha scales x (rsub: c - alpha * x)."""
    x = b.arg(x_arg)
    data = b.graph.tensor(x.name).data
    if data is not None:  # arithmetic on a parameter: folded now
        _bind_const(b, n, _real(op, data, np.float64(c)) if first else _real(op, np.float64(c), data * alpha))
        return
    if op in ("minimum", "maximum"):
        lo, hi = (-math.inf, c) if op == "minimum" else (c, math.inf)
        b.bind(n, b.emit("relu", [x.name], b.shape(x), {"clamp": (lo, hi)}), x.nhwc, x.torch_rank)
        return
    if op == "mul":
        scale_by, offset = c, 0.0
    elif op == "add":
        scale_by, offset = 1.0, c
    else:  # sub: x - c, or c - alpha * x
        scale_by, offset = (1.0, -c) if first else (-alpha, c)
    attrs = {"function": "affine", "scale_by": scale_by, "offset": offset}
    b.bind(n, b.emit("lut", [x.name], b.shape(x), attrs), x.nhwc, x.torch_rank)


def _common_layout(b: Builder, x: Value, y: Value) -> tuple[Value, Value]:
    """Both operands in one layout: a constant is laid out like the activation at compile time (no kernel); an
    activation in torch order meeting a channels-last one is converted (a view when its bytes allow)."""
    if x.nhwc == y.nhwc:
        if x.nhwc and x.torch_rank != y.torch_rank:
            raise b.error(f"broadcasting a {x.torch_rank}-D feature map with a {y.torch_rank}-D one is not "
                          "supported")
        return x, y
    nhwc, plain = (x, y) if x.nhwc else (y, x)
    t = b.graph.tensor(plain.name)
    rank = nhwc.torch_rank
    if len(t.shape) > rank:
        raise b.error(f"a {len(t.shape)}-D operand broadcast over a {rank}-D feature map is not supported")
    padded = (1,) * (rank - len(t.shape)) + tuple(t.shape)  # torch's broadcasting aligns trailing axes
    if t.is_const:
        data = t.data.reshape(padded)
        data = data.transpose(0, 2, 1)[:, None] if rank == 3 else data.transpose(
            [a for a, _ in sorted(NHWC_AXES[rank].items(), key=lambda kv: kv[1])])
        moved = Value(b.const(f"{t.name}_nhwc", data), True, rank)
    else:
        src = plain if padded == tuple(t.shape) else Value(b.emit("reshape", [plain.name], padded, suffix="_view"),
                                                            False, rank)
        moved = b.to_channels_last(Value(src.name, False, rank))
    return (nhwc, moved) if x.nhwc else (moved, nhwc)


def _cat(b: Builder, n) -> None:
    """A constant input (a class token) stays a constant of the concat, in flash; constants only are folded."""
    vals = [b.arg(a) for a in n.args[0]]
    if len(vals) == 1:  # torch.cat([x]) (DenseNet's first layer of a block): x itself
        b.values[n.name] = vals[0]
        return
    dim = n.args[1] if len(n.args) > 1 else 0
    consts = [b.graph.tensor(v.name).data for v in vals]
    if all(c is not None for c in consts):
        _bind_const(b, n, np.concatenate(consts, axis=dim % vals[0].torch_rank))
        return
    if any(v.nhwc for v in vals):
        vals = [b.to_channels_last(v) if c is None else _const_channels_last(b, v, c) for v, c in zip(vals, consts)]
    axis = ir_axis(dim, vals[0])
    if axis == 0:
        raise b.error("concatenation along the batch dimension is not supported")
    out_shape = torch_to_ir_shape(_val_shape(n)) if vals[0].nhwc else b.plain_shape(_val_shape(n), *vals)
    b.bind(n, b.emit("concat", [v.name for v in vals], out_shape, {"axis": axis}), vals[0].nhwc, vals[0].torch_rank)


def _const_channels_last(b: Builder, v: Value, data: np.ndarray) -> Value:
    """A constant torch-order tensor laid out channels-last at compile time."""
    if v.nhwc:
        return v
    nhwc = data.transpose(0, 2, 3, 1) if data.ndim == 4 else data.transpose(0, 2, 1)[:, None]
    return Value(b.const(f"{v.name}_nhwc", nhwc), True, data.ndim)


TORCH_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "replicate"}  # torch -> IR pad mode


def _pad(b: Builder, n) -> None:
    pads = list(n.args[1])
    mode = n.args[2] if len(n.args) > 2 else n.kwargs.get("mode", "constant")
    value = n.args[3] if len(n.args) > 3 else n.kwargs.get("value", None)
    if mode not in TORCH_PAD_MODES or (mode == "constant" and value not in (None, 0, 0.0)):
        what = f"constant padding with value {value}" if mode == "constant" else f"padding mode {mode!r}"
        raise b.error(f"{what} is not supported; supported: zero padding, mode='reflect' and mode='replicate' "
                      "(also as Conv padding_mode)")
    _spatial_pad(b, n, pads, TORCH_PAD_MODES[mode])


def _mode_pad(mode: str):
    """aten.reflection_pad2d / replication_pad2d (and 1d): F.pad's modes by their own names."""
    def convert(b: Builder, n) -> None:
        _spatial_pad(b, n, list(n.args[1]), mode)
    return convert


def _spatial_pad(b: Builder, n, pads: list, mode: str) -> None:
    x = b.to_channels_last(b.arg(n.args[0]))
    pads += [0] * (4 - len(pads))
    left, right, top, bottom = pads[:4]
    if x.torch_rank == 3 and (top or bottom):
        raise b.error("padding the channel dim of a 1-D signal is not supported")
    if x.torch_rank == 3:
        top = bottom = 0
    if len(n.args[1]) > 4 or min(pads) < 0:
        raise b.error("padding beyond the two spatial dims, or negative padding, is not supported")
    attrs = {"padding": (top, bottom, left, right), "mode": None if mode == "constant" else mode}
    out = b.emit("pad", [x.name], torch_to_ir_shape(_val_shape(n)), attrs)
    b.bind(n, out, True, x.torch_rank)


def _resize(kind: str):
    """aten.upsample_* (F.interpolate, nn.Upsample) as TFLite's resize ops. nearest: PyTorch's 'nearest' is
    TFLite's plain nearest (floor(dst * in / out)), 'nearest-exact' its half_pixel_centers; bilinear:
    align_corners=False is TFLite's half_pixel_centers, True its align_corners."""
    def convert(b: Builder, n) -> None:
        x = b.to_channels_last(b.arg(n.args[0]))
        out_shape = torch_to_ir_shape(_val_shape(n))
        if kind == "bilinear":
            corners = bool(n.args[2] if len(n.args) > 2 else n.kwargs.get("align_corners", False))
            scales = n.args[3] if len(n.args) > 3 else n.kwargs.get("scale_factors")
            _check_linear_scales(b, b.shape(x), out_shape, scales, corners)
            attrs = {"align_corners": corners, "half_pixel_centers": not corners}
        else:
            attrs = {"align_corners": False, "half_pixel_centers": kind == "nearest-exact"}
            _check_nearest_sources(b, n, b.shape(x), out_shape, attrs["half_pixel_centers"])
        op = "resize_bilinear" if kind == "bilinear" else "resize_nearest"
        b.bind(n, b.emit(op, [x.name], out_shape, attrs), True, x.torch_rank)
    return convert


def _check_nearest_sources(b: Builder, n, in_shape, out_shape, half_pixel_centers: bool) -> None:
    """The pixels PyTorch copies (its op run on a tensor of pixel numbers) must be the ones TFLite's formula picks:
    they differ for some scale_factors (PyTorch then uses 1 / scale_factor, not in / out)."""
    import torch

    from tinyaot.ir.resize import nearest_source

    _, in_h, in_w, _ = in_shape
    one_d = len(n.args[0].meta["val"].shape) == 3
    probe = torch.arange(in_h * in_w, dtype=torch.float32).reshape((1, 1, in_w) if one_d else (1, 1, in_h, in_w))
    got = n.target(probe, *n.args[1:], **n.kwargs).reshape(out_shape[1], out_shape[2]).to(torch.int64).numpy()
    rows = nearest_source(in_h, out_shape[1], False, half_pixel_centers)
    cols = nearest_source(in_w, out_shape[2], False, half_pixel_centers)
    if not np.array_equal(got, rows[:, None] * in_w + cols[None, :]):
        raise b.error(f"nearest resize {in_h}x{in_w} -> {out_shape[1]}x{out_shape[2]} with this scale_factor picks "
                      "other pixels than TFLite's nearest resize can (PyTorch uses 1 / scale_factor, not in / out); "
                      "give size= instead, or a scale_factor that multiplies the size to a whole number")


def _check_linear_scales(b: Builder, in_shape, out_shape, scales, corners: bool) -> None:
    """TFLite's bilinear samples at in / out; PyTorch at 1 / scale_factor when one is given: they must agree."""
    if scales is None or corners:
        return
    for size, out, s in zip(in_shape[1:3][-len(scales):], out_shape[1:3][-len(scales):], scales):
        if size * float(s) != out:
            raise b.error(f"bilinear resize of {size} pixels by scale_factor {s} to {out}: PyTorch samples at "
                          f"1 / {s}, TFLite's bilinear resize at {size} / {out}; give size= instead, or a "
                          "scale_factor that multiplies the size to a whole number")


def _refused_resize(what: str):
    def convert(b: Builder, n) -> None:
        raise b.error(f"{what} interpolation has no integer kernel in tinyaot; supported: mode='nearest', "
                      "'nearest-exact' and 'bilinear' (F.interpolate, nn.Upsample)")
    return convert


def _softmax(b: Builder, n) -> None:
    """Softmax over the last IR axis; over another (MobileViTv2's softmax over the patches of [1, 1, P, N], W in
    the IR) through a view when the axes after it are all 1, else a transpose there and back."""
    x = b.arg(n.args[0])
    dim = n.args[1] % x.torch_rank
    axis, shape = ir_axis(dim, x), b.shape(x)
    if axis == 0:
        raise b.error("softmax over the batch dimension is not supported")
    last = len(shape) - 1
    if axis == last:
        b.bind(n, b.emit("softmax", [x.name], shape, {"beta": 1.0}), x.nhwc, x.torch_rank)
        return
    if all(d == 1 for d in shape[axis + 1 :]):
        flat = b.emit("reshape", [x.name], shape[: axis + 1], suffix="_view")
        probs = b.emit("softmax", [flat], shape[: axis + 1], {"beta": 1.0})
        b.bind(n, b.emit("reshape", [probs], shape, suffix="_view"), x.nhwc, x.torch_rank)
        return
    perm = (*range(axis), *range(axis + 1, last + 1), axis)
    moved_shape = tuple(shape[a] for a in perm)
    moved = b.emit("transpose", [x.name], moved_shape, {"perm": perm}, suffix="_to_last")
    probs = b.emit("softmax", [moved], moved_shape, {"beta": 1.0})
    back = tuple(int(a) for a in np.argsort(perm))
    b.bind(n, b.emit("transpose", [probs], shape, {"perm": back}, suffix="_back"), x.nhwc, x.torch_rank)


def _sum(b: Builder, n) -> None:
    """sum over dims that are a run of consecutive IR axes after the batch (MobileViTv2's sum over the patches,
    keepdim=True, of a channels-last feature map): the sum op, the mean's kernel without 1 / count."""
    x = b.arg(n.args[0])
    rank = x.torch_rank
    dims = n.args[1] if len(n.args) > 1 and n.args[1] is not None else list(range(rank))
    keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
    if n.kwargs.get("dtype") is not None:
        raise b.error("sum with a dtype is not supported")
    dims = sorted({int(d) % rank for d in dims})
    axes = sorted(ir_axis(d, x) for d in dims)
    if axes[0] == 0 or axes != list(range(axes[0], axes[-1] + 1)):
        raise b.error(f"sum over dims {tuple(dims)} is not supported; supported: dims after the batch that are "
                      "consecutive in tinyaot's channels-last layout (e.g. the spatial dims, or the last dim)")
    spatial = [2, 3] if rank == 4 else [2]
    if x.nhwc and not keepdim and dims != spatial:
        raise b.error(f"sum over dims {tuple(dims)} of a feature map with keepdim=False is not supported; pass "
                      "keepdim=True (or sum over all spatial dims)")
    shape = b.shape(x)
    out = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keepdim else \
        tuple(d for a, d in enumerate(shape) if a not in axes)
    y = b.emit("sum", [x.name], out, {"axes": tuple(axes), "keepdims": keepdim})
    b.bind(n, y, x.nhwc and keepdim, rank if keepdim else len(_val_shape(n)))


def _lut(function: str):
    def convert(b: Builder, n) -> None:
        x = b.arg(n.args[0])
        fn = function
        if function == "gelu":
            approx = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
            fn = "gelu_tanh" if approx == "tanh" else "gelu"
        b.bind(n, b.emit("lut", [x.name], b.shape(x), {"function": fn}), x.nhwc, x.torch_rank)
    return convert


def _reshape(b: Builder, n) -> None:
    x = b.arg(n.args[0])
    out_torch = _val_shape(n)
    x_shape = b.shape(x)
    if x.nhwc and len(out_torch) == x.torch_rank and x_shape == torch_to_ir_shape(out_torch):
        b.bind(n, x.name, True, x.torch_rank)  # e.g. flatten(2) of nothing: same tensor
        return
    if x.nhwc and _channel_groups(b.arg(n.args[0]), torch_to_ir_shape(out_torch) if len(out_torch) in (4, 5)
                                  else None, x_shape):
        b.bind(n, b.emit("reshape", [x.name], torch_to_ir_shape(out_torch)), True, len(out_torch))
        return
    src = b.to_torch_order(x)
    out = b.emit("reshape", [src.name], b.plain_shape(out_torch, src))
    b.bind(n, out, False)


def _channel_groups(x: Value, target: tuple[int, ...] | None, shape: tuple[int, ...]) -> bool:
    """A view between a channels-last feature map [N, H, W, C] and its channel groups [N, H, W, g, C / g] (either
    way): the same bytes in both layouts."""
    if target is None or {x.torch_rank, len(target)} != {4, 5}:
        return False
    five, four = (target, shape) if len(target) == 5 else (shape, target)
    return five[:3] == four[:3] and five[3] * five[4] == four[3]


def _torch_perm(n, rank: int) -> list[int]:
    """The permutation of a permute / transpose / t node (output axis k is input axis perm[k])."""
    if str(n.target) == "aten.transpose.int":
        perm = list(range(rank))
        d0, d1 = n.args[1] % rank, n.args[2] % rank
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return perm
    if str(n.target) == "aten.t.default":
        return list(range(rank))[::-1]
    return [d % rank for d in n.args[1]]


def _permute(b: Builder, n) -> None:
    """permute / transpose / t. A permutation moving the batch axis (or a first axis into which torch folded the
    batch of 1, as in timm's qkv.permute(2, 0, 3, 1, 4)) is the same byte movement on the tensor with a leading
    1, which then stays first: the IR keeps the batch leading. Channel groups stay channels-last."""
    x = b.arg(n.args[0])
    if x.nhwc and x.torch_rank == 5:
        _permute_channel_groups(b, n, x)
        return
    x = b.to_torch_order(x)
    torch_shape = tuple(int(d) for d in n.args[0].meta["val"].shape)
    rank = len(torch_shape)
    perm = _torch_perm(n, rank)
    out = b.plain_shape(_val_shape(n), x)
    if len(reduced_permutation(torch_shape, tuple(perm))[0]) == 1:  # only size-1 dims move: the bytes stay put
        b.bind(n, b.emit("reshape", [x.name], out), False)
        return
    if rank > MAX_RANK - 1 and (perm[0] != 0 or x.lead):
        raise b.error(f"a {rank}-D permutation moving its first axis is not supported (up to {MAX_RANK - 1}-D)")
    if b.shape(x) == torch_shape and perm[0] == 0:
        b.bind(n, b.emit("transpose", [x.name], out, {"perm": tuple(perm)}), False)
        return
    led = (1, *torch_shape)
    src = x.name if b.shape(x) == led else b.emit("reshape", [x.name], led, suffix="_batch")
    moved = (1, *_val_shape(n))
    t = b.emit("transpose", [src], moved, {"perm": (0, *(d + 1 for d in perm))})
    b.bind(n, t if moved == out else b.emit("reshape", [t], out, suffix="_view"), False)


def _permute_channel_groups(b: Builder, n, x: Value) -> None:
    """A permutation of channel groups [N, g, c, H, W] (ShuffleNet's transpose(1, 2)), held as [N, H, W, g, c]:
    the permuted tensor in the same channels-last form, one transpose (of [H * W, g, c], the kernel's reduction)."""
    perm = _torch_perm(n, 5)
    if perm[0] != 0:
        raise b.error("permutations that move the batch dimension of a feature map's channel groups are not "
                      "supported")
    stored = [a for a, _ in sorted(NHWC_AXES[5].items(), key=lambda kv: kv[1])]  # IR axis k holds torch axis
    ir_perm = tuple(NHWC_AXES[5][perm[t]] for t in stored)
    shape = b.shape(x)
    b.bind(n, b.emit("transpose", [x.name], tuple(shape[a] for a in ir_perm), {"perm": ir_perm}), True, 5)


BROADCASTING = {"aten.add.Tensor", "aten.add_.Tensor", "aten.sub.Tensor", "aten.sub_.Tensor", "aten.rsub.Tensor",
                "aten.mul.Tensor", "aten.mul_.Tensor", "aten.minimum.default", "aten.maximum.default",
                "aten.max.other", "aten.min.other"}  # element-wise ops whose kernels broadcast their operands


def _expand(b: Builder, n) -> None:
    """expand / expand_as: a parameter is expanded at compile time (a class token's expand(B, -1, -1)); an
    activation is read as it is when nothing grows (batch 1) or when only broadcasting element-wise ops read it
    (MobileViTv2's context_vector.expand_as(value) * ...): their kernels broadcast it without a copy."""
    x = b.arg(n.args[0])
    out = _val_shape(n)
    t = b.graph.tensor(x.name)
    if t.is_const:
        _bind_const(b, n, np.broadcast_to(t.data.reshape(t.shape), out))
        return
    grows = tuple(n.args[0].meta["val"].shape) != out
    readers = sorted({str(u.target) for u in n.users} - BROADCASTING)
    if grows and readers:
        raise b.error(f"expand of an activation to {list(out)} read by {', '.join(readers)} is not supported (no "
                      "broadcast copy kernel); expand is supported for parameters, to the same shape, and before "
                      "broadcasting element-wise ops (add, sub, mul, minimum, maximum), which broadcast themselves")
    b.values[n.name] = x


def _identity(b: Builder, n) -> None:
    b.values[n.name] = b.arg(n.args[0])


def _cast(b: Builder, n) -> None:
    """x.to(torch.float32), x.float(), x.type_as(y) of a float32 tensor: the tensor itself. Another dtype is a
    computation on integers or halves that tinyaot's real-valued graph does not hold."""
    dtype = str(getattr(n.meta.get("val"), "dtype", ""))
    if dtype != "torch.float32":
        raise b.error(f"a cast to {dtype or 'another dtype'} is not supported; tinyaot compiles float32 models "
                      "(it quantizes them itself): keep the tensor float32")
    _identity(b, n)


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
    "aten.linear.default": _linear,
    "aten.conv2d.default": _conv2d,
    "aten.conv2d.padding": _conv2d,
    "aten.conv1d.default": _conv1d,
    "aten.conv1d.padding": _conv1d,
    "aten.conv_transpose2d.input": _conv_transpose,
    "aten.conv_transpose1d.default": _conv_transpose,
    "aten.batch_norm.default": _batch_norm,
    "aten.relu.default": _relu,
    "aten.relu_.default": _relu,
    "aten.relu6.default": _relu6,
    "aten.hardtanh.default": _hardtanh,
    "aten.hardtanh_.default": _hardtanh,
    "aten.clamp.default": _clamp,
    "aten.clamp_.default": _clamp,
    "aten.max_pool2d.default": lambda b, n: _max_pool(b, n, one_d=False),
    "aten.max_pool1d.default": lambda b, n: _max_pool(b, n, one_d=True),
    "aten.avg_pool2d.default": lambda b, n: _avg_pool(b, n, one_d=False),
    "aten.avg_pool1d.default": lambda b, n: _avg_pool(b, n, one_d=True),
    "aten.adaptive_avg_pool2d.default": _adaptive_pool("avg"),
    "aten.adaptive_avg_pool1d.default": _adaptive_pool("avg"),
    "aten.adaptive_max_pool2d.default": _adaptive_pool("max"),
    "aten.adaptive_max_pool1d.default": _adaptive_pool("max"),
    "aten.mean.dim": _mean,
    "aten.sum.dim_IntList": _sum,
    "aten.add.Tensor": _binary("add"),
    "aten.add_.Tensor": _binary("add"),
    "aten.mul.Tensor": _binary("mul"),
    "aten.mul_.Tensor": _binary("mul"),
    "aten.mul.Scalar": _scalar_op("mul"),
    "aten.add.Scalar": _scalar_op("add"),
    "aten.sub.Tensor": _binary("sub"),
    "aten.sub_.Tensor": _binary("sub"),
    "aten.rsub.Tensor": _binary("sub", swap=True),
    "aten.sub.Scalar": _scalar_op("sub"),
    "aten.minimum.default": _binary("minimum"),
    "aten.maximum.default": _binary("maximum"),
    "aten.clamp_min.Tensor": _binary("maximum"),
    "aten.clamp_max.Tensor": _binary("minimum"),
    "aten.clamp.Tensor": _clamp_tensor,
    "aten.max.other": _binary("maximum"),
    "aten.min.other": _binary("minimum"),
    "aten.div.Tensor": _scalar_op("div"),
    "aten.div.Scalar": _scalar_op("div"),
    "aten.rsub.Scalar": _scalar_op("rsub"),
    "aten.cat.default": _cat,
    "aten.pad.default": _pad,
    "aten.constant_pad_nd.default": _pad,
    "aten.reflection_pad1d.default": _mode_pad("reflect"),
    "aten.reflection_pad2d.default": _mode_pad("reflect"),
    "aten.replication_pad1d.default": _mode_pad("replicate"),
    "aten.replication_pad2d.default": _mode_pad("replicate"),
    "aten.upsample_nearest1d.vec": _resize("nearest"),
    "aten.upsample_nearest2d.vec": _resize("nearest"),
    "aten._upsample_nearest_exact1d.vec": _resize("nearest-exact"),
    "aten._upsample_nearest_exact2d.vec": _resize("nearest-exact"),
    "aten.upsample_linear1d.vec": _resize("bilinear"),
    "aten.upsample_bilinear2d.vec": _resize("bilinear"),
    "aten.upsample_bicubic2d.vec": _refused_resize("bicubic"),
    "aten.softmax.int": _softmax,
    "aten._softmax.default": _softmax,
    "aten.sigmoid.default": _lut("sigmoid"),
    "aten.tanh.default": _lut("tanh"),
    "aten.hardswish.default": _lut("hardswish"),
    "aten.hardsigmoid.default": _lut("hardsigmoid"),
    "aten.silu.default": _lut("silu"),
    "aten.gelu.default": _lut("gelu"),
    # The in-place spellings (nn.Hardswish(inplace=True), as torchvision's MobileNetV3 and EfficientNet write them):
    # torch.export already points every later use of the tensor at the in-place op's result, so the value is all.
    "aten.sigmoid_.default": _lut("sigmoid"),
    "aten.tanh_.default": _lut("tanh"),
    "aten.hardswish_.default": _lut("hardswish"),
    "aten.hardsigmoid_.default": _lut("hardsigmoid"),
    "aten.silu_.default": _lut("silu"),
    "aten.gelu_.default": _lut("gelu"),
    "aten.reshape.default": _reshape,
    "aten.view.default": _reshape,
    "aten.reshape_as.default": _reshape,
    "aten.view_as.default": _reshape,
    "aten._unsafe_view.default": _reshape,
    "aten.flatten.using_ints": _reshape,
    "aten.squeeze.dim": _reshape,
    "aten.squeeze.dims": _reshape,
    "aten.squeeze.default": _reshape,
    "aten.unsqueeze.default": _reshape,
    "aten.permute.default": _permute,
    "aten.transpose.int": _permute,
    "aten.t.default": _permute,
    "aten.expand.default": _expand,
    "aten.expand_as.default": _expand,
    "aten.dropout.default": _identity,
    "aten.feature_dropout.default": _identity,
    "aten.dropout_.default": _identity,
    "aten.feature_dropout_.default": _identity,
    "aten.clone.default": _identity,
    "aten.contiguous.default": _identity,
    "aten.alias.default": _identity,
    "aten.detach.default": _identity,
    "aten.identity.default": _identity,
    "aten.to.dtype": _cast,
    "aten.to.device": _cast,
    "aten.to.dtype_layout": _cast,
    "aten._to_copy.default": _cast,
    "aten.type_as.default": _cast,
}

# LayerNorm, matmul of two activations and attention (frontend/pytorch_attention.py).
CONVERTERS.update(ATTENTION_CONVERTERS)
# nn.LSTM / nn.GRU, their zero initial state and last-step reads (frontend/pytorch_recurrent.py).
CONVERTERS.update(RECURRENT_CONVERTERS)
# Slicing, narrow, select, split and chunk, and getitem of their pieces and of recurrent results
# (frontend/pytorch_slicing.py).
CONVERTERS.update(SLICING_CONVERTERS)
