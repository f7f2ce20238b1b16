"""ATen -> IR converters for elementwise arithmetic (tensor and scalar operands, broadcasting), cat and stack."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tinyaot.frontend.fx_util import layer_name
from tinyaot.frontend.pytorch_builder import (
    NHWC_AXES,
    Builder,
    Value,
    ir_axis,
    torch_to_ir_shape,
    val_shape,
)
from tinyaot.frontend.pytorch_recurrent import recurrent_stack


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
        bind_const(b, n, b.graph.tensor(x.name).data.astype(np.float64) * scale_by + offset)
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
        bind_const(b, n, _real(op, tx.data, ty.data))
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
    views = _fewer_axes(b.shape(x), b.shape(y)) if len(shape) > 4 else None
    if len(shape) > 4 and views is None:
        raise b.error(f"{op} of shapes {b.shape(x)} and {b.shape(y)}: broadcasting is supported up to 4-D (after "
                      "merging neighbouring axes that broadcast alike)")
    nhwc = x.nhwc or y.nhwc
    want = val_shape(n)
    if (torch_to_ir_shape(want) if nhwc else b.plain_shape(want, x, y)) != shape:
        raise b.error(f"{op} of shapes {b.shape(x)} and {b.shape(y)} gives {shape}, torch says {want}; this "
                      "mix of layouts is not supported")
    rank = x.torch_rank if x.nhwc else y.torch_rank
    if views is not None:  # beyond 4-D: the element-wise op on views of fewer axes (the same bytes)
        names = [b.const(f"{v.name}_view", b.graph.tensor(v.name).data.reshape(view))
                 if b.graph.tensor(v.name).is_const else b.emit("reshape", [v.name], view, suffix="_flat")
                 for v, view in zip((x, y), views)]
        merged = tuple(int(d) for d in np.broadcast_shapes(*views))
        out = b.emit("reshape", [b.emit(op, names, merged)], shape, suffix="_view")
    else:
        out = b.emit(op, [x.name, y.name], shape)
    b.bind(n, out, nhwc, rank if nhwc else len(want))


def _fewer_axes(a: tuple[int, ...], c: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Views of two broadcasting shapes (of up to 5-D: timm's split attention, [1, H, W, paths, C] times
    [1, 1, 1, paths, C]) with at most 4 axes and the same elements in the same order: after the batch axis (kept
    first: calibration runs samples along it), neighbouring axes merge where each operand is whole along both or
    1 along both, and axes of 1 in both drop. None when more than 4 axes remain."""
    rank = max(len(a), len(c))
    a, c = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(c)) + tuple(c)
    va, vc, prev = [a[0]], [c[0]], None
    for da, dc in zip(a[1:], c[1:]):
        if da == dc == 1:
            continue
        kind = (da == 1, dc == 1)
        if kind == prev:
            va[-1], vc[-1] = va[-1] * da, vc[-1] * dc
        else:
            va.append(da)
            vc.append(dc)
        prev = kind
    return (tuple(va), tuple(vc)) if len(va) <= 4 else None


def _real(op: str, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The value of `op` on two constants (torch order): the front end folds it."""
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "minimum": np.minimum, "maximum": np.maximum}[op]
    return fn(a.astype(np.float64), c.astype(np.float64))


def _const_value(b: Builder, n, data: np.ndarray) -> Value:
    name = b.const(f"{layer_name(n)}.constant", np.asarray(data, dtype=np.float32))
    return Value(name, False, np.ndim(data))


def bind_const(b: Builder, n, data: np.ndarray) -> None:
    v = _const_value(b, n, np.asarray(data).reshape(val_shape(n)))
    b.values[n.name] = v


def _scalar_operand(b: Builder, n, op: str, x_arg, c: float, first: bool, alpha: float = 1.0) -> None:
    """x op c (first) or c op x with a number c: a table (lut 'affine') for add / sub / mul, a clamp for minimum /
    maximum; alpha scales x (rsub: c - alpha * x)."""
    x = b.arg(x_arg)
    data = b.graph.tensor(x.name).data
    if data is not None:  # arithmetic on a parameter: folded now
        bind_const(b, n, _real(op, data, np.float64(c)) if first else _real(op, np.float64(c), data * alpha))
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
        bind_const(b, n, np.concatenate(consts, axis=dim % vals[0].torch_rank))
        return
    if any(v.nhwc for v in vals):
        vals = [b.to_channels_last(v) if c is None else _const_channels_last(b, v, c) for v, c in zip(vals, consts)]
    axis = ir_axis(dim, vals[0])
    if axis == 0:
        raise b.error("concatenation along the batch dimension is not supported")
    out_shape = torch_to_ir_shape(val_shape(n)) if vals[0].nhwc else b.plain_shape(val_shape(n), *vals)
    b.bind(n, b.emit("concat", [v.name for v in vals], out_shape, {"axis": axis}), vals[0].nhwc, vals[0].torch_rank)


def _stack(b: Builder, n) -> None:
    """torch.stack: each input viewed with the new axis (of 1), then one concat along it; no kernel of its own.
    Feature maps stacked along dim 1 or 2 (timm's selective-kernel paths, [N, paths, C, H, W]) stay channels-last,
    as channel groups [N, H, W, paths, C] (pytorch_builder.py); anything else is stacked in torch order. The
    hidden states of a cell loop are the recurrent layer's output (pytorch_recurrent.py)."""
    if recurrent_stack(b, n):
        return
    args = list(n.args[0])
    vals = [b.arg(a) for a in args]
    rank = len(args[0].meta["val"].shape)
    dim = int(n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)) % (rank + 1)
    out_torch = val_shape(n)
    consts = [b.graph.tensor(v.name).data for v in vals]
    if all(c is not None for c in consts):
        bind_const(b, n, np.stack([c.reshape(val_shape(a)) for c, a in zip(consts, args)], axis=dim))
        return
    piece_torch = tuple(1 if a == dim else d for a, d in enumerate(out_torch))
    if rank == 4 and dim in (1, 2) and any(v.nhwc and v.torch_rank == 4 for v in vals):
        out_shape, axis, nhwc = torch_to_ir_shape(out_torch), 2 + dim, True  # IR axis 3 (paths) or 4
        vals = [b.to_channels_last(v) if c is None else v for v, c in zip(vals, consts)]
    else:
        vals = [b.to_torch_order(v) for v in vals]
        out_shape = b.plain_shape(out_torch, *(v for v, c in zip(vals, consts) if c is None))
        axis, nhwc = dim + (len(out_shape) > len(out_torch)), False
        if axis == 0:
            raise b.error("stacking along the batch dimension is not supported (tinyaot compiles one sample per "
                          "invoke); stack along another dim")
    piece = tuple(1 if a == axis else d for a, d in enumerate(out_shape))
    names = []
    for v, c, a in zip(vals, consts, args):
        if c is not None:  # a parameter: laid out as the piece now
            data = c.reshape(piece_torch)
            names.append(b.const(f"{v.name}_stacked", data.transpose(0, 3, 4, 1, 2) if nhwc else data.reshape(piece)))
        else:
            names.append(b.emit("reshape", [v.name], piece, suffix="_view"))
    out = names[0] if len(names) == 1 else b.emit("concat", names, out_shape, {"axis": axis})
    b.bind(n, out, nhwc, len(out_torch))


def _const_channels_last(b: Builder, v: Value, data: np.ndarray) -> Value:
    """A constant torch-order tensor laid out channels-last at compile time."""
    if v.nhwc:
        return v
    nhwc = data.transpose(0, 2, 3, 1) if data.ndim == 4 else data.transpose(0, 2, 1)[:, None]
    return Value(b.const(f"{v.name}_nhwc", nhwc), True, data.ndim)


CONVERTERS: dict[str, Callable[[Builder, Any], None]] = {
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
    "aten.stack.default": _stack,
}
