"""ATen -> IR converters that move or keep data: reshape / view / flatten / squeeze, permute / transpose,
expand, and the no-ops (dropout, clone, a float32 cast).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinyaot.frontend.pytorch_builder import NHWC_AXES, Builder, Value, torch_to_ir_shape, val_shape
from tinyaot.frontend.pytorch_elementwise import bind_const
from tinyaot.ir.layout import MAX_TRANSPOSE_RANK as MAX_RANK
from tinyaot.ir.layout import reduced_permutation


def _reshape(b: Builder, n) -> None:
    x = b.arg(n.args[0])
    out_torch = val_shape(n)
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
    out = b.plain_shape(val_shape(n), x)
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
    moved = (1, *val_shape(n))
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
    out = val_shape(n)
    t = b.graph.tensor(x.name)
    if t.is_const:
        bind_const(b, n, np.broadcast_to(t.data.reshape(t.shape), out))
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
