"""Attention and normalization from PyTorch: LayerNorm, F.normalize, matmul of two activations, scaled dot-product
attention, and nn.MultiheadAttention decomposed into ops that have integer kernels.

- aten.layer_norm (normalized_shape = the last dim) -> layer_norm.
- aten.group_norm -> group_norm on the channels-last tensor (layer_norm's integer kernel, per group of channels).
- F.normalize (XCiT's and EdgeNeXt's cross-covariance attention), exported as linalg_vector_norm, clamp_min,
  expand_as and div -> one l2_normalize (TFLite Micro's L2_NORMALIZATION kernel), converted at the norm.
- aten.matmul / aten.bmm of two activations -> batch_matmul; an operand that is a transpose read only by the
  product (`k.transpose(-2, -1)`, a head split `view(1, T, H, d).transpose(1, 2)`) is read at permuted strides
  (adj_x / adj_y, lhs_perm / rhs_perm) instead of being moved.
- aten.scaled_dot_product_attention -> batch_matmul(q, k, adj_y) -> softmax(beta = scale) -> batch_matmul(., v):
  the 1 / sqrt(d) scale is the softmax's beta, which its int8 kernel folds into its input multiplier. The head
  merge after it (`transpose(1, 2)`) stays a transpose: the product writes its output contiguously.
- nn.MultiheadAttention: torch.export gives its fused in-projection and (T, B, D) transposes, which move the
  batch dim; `decompose_attention` exports a copy of the model in which each one is replaced by the same
  computation written per projection (q_proj, k_proj, v_proj, heads split by view + transpose, SDPA, out_proj)
  with the same parameters, so every op keeps the batch first. The user's module is not changed.

The converters here follow pytorch_ops.py's (Builder, FX node) convention; pytorch_ops.py registers them.
"""
from __future__ import annotations

import copy
import math
from functools import lru_cache

import numpy as np

from tinyaot.errors import UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name


def _val_shape(n) -> tuple[int, ...]:
    return tuple(int(s) for s in n.meta["val"].shape)


# ---- converters ------------------------------------------------------------------------------------------
def _layer_norm(b, n) -> None:
    args = list(n.args) + [None] * (5 - len(n.args))
    x_arg, normalized_shape, w_arg, bias_arg, eps = args[:5]
    x = b.arg(x_arg)
    if x.nhwc:
        raise b.error("LayerNorm over a channels-first conv feature map is not supported; tinyaot normalizes "
                      "the last dim of [1, D] or [1, T, D] activations")
    shape = b.shape(x)
    if len(list(normalized_shape)) != 1 or int(normalized_shape[0]) != shape[-1]:
        raise b.error(f"LayerNorm with normalized_shape {list(normalized_shape)} over a {list(shape)} input is "
                      f"not supported; only the last dim (normalized_shape=[{shape[-1]}])")
    if len(shape) < 2:
        raise b.error(f"LayerNorm of a {len(shape)}-D tensor; tinyaot takes [1, D] or [1, T, D] activations")
    depth = shape[-1]
    gamma = b.const_data(w_arg) if w_arg is not None else np.ones(depth, np.float32)
    beta = b.const_data(bias_arg) if bias_arg is not None else np.zeros(depth, np.float32)
    layer = layer_name(n)
    inputs = [x.name, b.const(f"{layer}.weight", gamma), b.const(f"{layer}.bias", beta)]
    eps = 1e-5 if eps is None else float(eps)
    b.bind(n, b.emit("layer_norm", inputs, shape, {"eps": eps}), False)


def _group_norm(b, n) -> None:
    """GroupNorm (timm's GroupNorm1 is one group: the whole feature map) on the channels-last tensor."""
    args = list(n.args) + [None] * (5 - len(n.args))
    x_arg, groups, w_arg, bias_arg, eps = args[:5]
    x = b.arg(x_arg)
    if not x.nhwc and x.torch_rank in (3, 4):
        x = b.to_channels_last(x)
    elif not x.nhwc and (x.torch_rank != 2 or x.lead):
        raise b.error(f"GroupNorm of a {x.torch_rank}-D tensor; tinyaot normalizes [1, C], [1, C, L] and "
                      "[1, C, H, W] activations")
    depth = b.shape(x)[-1]
    gamma = b.const_data(w_arg) if w_arg is not None else np.ones(depth, np.float32)
    beta = b.const_data(bias_arg) if bias_arg is not None else np.zeros(depth, np.float32)
    layer = layer_name(n)
    inputs = [x.name, b.const(f"{layer}.weight", gamma), b.const(f"{layer}.bias", beta)]
    attrs = {"groups": int(groups), "eps": 1e-5 if eps is None else float(eps)}
    b.bind(n, b.emit("group_norm", inputs, b.shape(x), attrs), x.nhwc, x.torch_rank)


def _normalize_chain(n):
    """(division, eps, the nodes between) when the norm `n` is read only by F.normalize's chain, x / the norm of x
    over one dim: torch.export writes F.normalize(x, dim=d) as linalg_vector_norm(x, 2, [d], keepdim=True),
    clamp_min(eps), expand_as(x), div(x, .); x / x.norm(dim=d, keepdim=True) has no clamp (eps 0). None otherwise."""
    args = list(n.args) + [None] * (4 - len(n.args))
    order = n.kwargs.get("ord", 2 if args[1] is None else args[1])
    dims = n.kwargs.get("dim", args[2])
    keepdim = n.kwargs.get("keepdim", args[3])
    if order != 2 or dims is None or len(dims) != 1 or not keepdim or n.kwargs.get("dtype") is not None:
        return None
    x, node, eps, between = n.args[0], n, 0.0, []
    while len(node.users) == 1:
        (user,) = node.users
        target = str(user.target)
        if target == "aten.div.Tensor" and list(user.args) == [x, node]:
            return user, eps, between
        if target == "aten.clamp_min.default" and user.args[0] is node and not between \
                and isinstance(user.args[1], (int, float)):
            eps = float(user.args[1])
        elif target not in ("aten.expand_as.default", "aten.expand.default") or user.args[0] is not node:
            return None
        between.append(user)
        node = user
    return None


def _vector_norm(b, n) -> None:
    """linalg_vector_norm as F.normalize's divisor: the whole chain is one l2_normalize (x / max(||x||, eps) over
    the dim; TFLite Micro's int8 L2_NORMALIZATION, output scale 1/128), over the last axis in the IR (through a
    view where the axes after the dim are all 1, else a transpose there and back, as softmax)."""
    chain = _normalize_chain(n)
    if chain is None:
        raise b.error("a vector norm is supported as F.normalize's divisor (F.normalize(x, dim=d), or "
                      "x / x.norm(dim=d, keepdim=True)): tinyaot has an integer kernel for x / ||x|| (TFLite's "
                      "L2_NORMALIZATION), not for the norm alone")
    div, eps, between = chain
    x = b.arg(n.args[0])
    axis, shape = b.axis(x, int(n.kwargs.get("dim", n.args[2] if len(n.args) > 2 else None)[0])), b.shape(x)
    if axis == 0:
        raise b.error("F.normalize over the batch dimension is not supported; normalize over another dim")
    last = len(shape) - 1
    if axis == last:
        out = b.emit("l2_normalize", [x.name], shape, {"eps": eps})
    elif all(d == 1 for d in shape[axis + 1:]):
        flat = b.emit("reshape", [x.name], shape[: axis + 1], suffix="_view")
        out = b.emit("reshape", [b.emit("l2_normalize", [flat], shape[: axis + 1], {"eps": eps})], shape,
                     suffix="_view")
    else:
        perm = (*range(axis), *range(axis + 1, last + 1), axis)
        moved_shape = tuple(shape[a] for a in perm)
        moved = b.emit("transpose", [x.name], moved_shape, {"perm": perm}, suffix="_to_last")
        unit = b.emit("l2_normalize", [moved], moved_shape, {"eps": eps})
        out = b.emit("transpose", [unit], shape, {"perm": tuple(int(a) for a in np.argsort(perm))}, suffix="_back")
    b.claimed.update(u.name for u in (*between, div))
    b.bind(div, out, x.nhwc, x.torch_rank)


def _transposed_source(b, arg) -> tuple[str, tuple[int, ...]] | None:
    """(input, perm) of the transpose that made `arg`, when this product is its only reader: the product then
    reads that input at permuted strides and the transpose is dropped (no bytes moved at run time)."""
    if len(arg.users) != 1:
        return None
    (user,) = arg.users
    if sum(a is arg for a in (*user.args, *user.kwargs.values())) != 1:  # sdpa(q, q, q) reads it thrice
        return None
    name = b.arg(arg).name
    for k in range(len(b.graph.nodes) - 1, -1, -1):
        node = b.graph.nodes[k]
        if node.outputs[0] != name:
            continue
        if node.op != "transpose" or len(node.attrs["perm"]) != len(b.graph.tensor(name).shape):
            return None
        del b.graph.nodes[k]
        return node.inputs[0], tuple(node.attrs["perm"])
    return None


def _product(b, n, lhs_arg, rhs_arg, attrs: dict, out_shape, suffix: str = "") -> str:
    for a in (lhs_arg, rhs_arg):
        if not hasattr(a, "name"):
            raise b.error("matmul with a Python scalar operand is not supported")
    lhs, rhs = b.to_torch_order(b.arg(lhs_arg)), b.to_torch_order(b.arg(rhs_arg))
    for v in (lhs, rhs):
        t = b.graph.tensor(v.name)
        if t.is_const:
            raise b.error("matmul with a constant operand is not supported; write a product with weights as "
                          "nn.Linear (a fully connected layer)")
        if not 2 <= len(t.shape) <= 5:
            raise b.error(f"matmul of a {len(t.shape)}-D operand {list(t.shape)}: tinyaot multiplies 2-D to 5-D "
                          "activations (batch dims first)")
    lhs_name, attrs = _read_in_place(b, lhs_arg, lhs.name, "lhs", attrs)
    rhs_name, attrs = _read_in_place(b, rhs_arg, rhs.name, "rhs", attrs)
    return b.emit("batch_matmul", [lhs_name, rhs_name], out_shape, attrs, suffix=suffix)


def _read_in_place(b, arg, name: str, side: str, attrs: dict) -> tuple[str, dict]:
    """The tensor the product reads for operand `arg` and its attrs: a folded transpose's input, with the
    transpose as the adj flag (the last two axes swapped) or as <side>_perm."""
    folded = None if b.arg(arg).nhwc else _transposed_source(b, arg)
    if folded is None:
        return name, attrs
    source, perm = folded
    rank, flag = len(perm), "adj_x" if side == "lhs" else "adj_y"
    if perm == (*range(rank - 2), rank - 1, rank - 2):
        return source, {**attrs, flag: not attrs.get(flag, False)}
    return source, {**attrs, f"{side}_perm": perm}


def _matmul(b, n) -> None:
    out_shape = b.plain_shape(_val_shape(n), *(b.arg(a) for a in n.args[:2] if hasattr(a, "name")))
    b.bind(n, _product(b, n, n.args[0], n.args[1], {}, out_shape), False)


def _sdpa(b, n) -> None:
    args = list(n.args) + [None] * (7 - len(n.args))
    q_arg, k_arg, v_arg, mask, dropout, causal = args[:6]
    mask = n.kwargs.get("attn_mask", mask)
    causal = n.kwargs.get("is_causal", causal)
    dropout = n.kwargs.get("dropout_p", dropout)
    if mask is not None or causal:
        raise b.error("scaled_dot_product_attention with an attention mask or is_causal=True is not supported; "
                      "tinyaot compiles unmasked attention")
    if dropout not in (None, 0, 0.0):
        raise b.error(f"scaled_dot_product_attention with dropout_p={dropout} (training) is not supported")
    if n.kwargs.get("enable_gqa", False):
        raise b.error("scaled_dot_product_attention with enable_gqa=True is not supported")
    q_shape, k_shape = _val_shape(q_arg), _val_shape(k_arg)
    scale = n.kwargs.get("scale", args[6])
    scale = 1.0 / math.sqrt(q_shape[-1]) if scale is None else float(scale)
    sources = [b.arg(a) for a in (q_arg, k_arg, v_arg)]
    scores_shape = b.plain_shape((*np.broadcast_shapes(q_shape[:-2], k_shape[:-2]), q_shape[-2], k_shape[-2]),
                                 *sources)
    scores = _product(b, n, q_arg, k_arg, {"adj_y": True}, scores_shape, suffix="_scores")
    probs = b.emit("softmax", [scores], scores_shape, {"beta": scale}, suffix="_softmax")
    v, attrs = _read_in_place(b, v_arg, b.to_torch_order(b.arg(v_arg)).name, "rhs", {})
    out_shape = b.plain_shape(_val_shape(n), *sources)
    b.bind(n, b.emit("batch_matmul", [probs, v], out_shape, attrs, suffix="_context"), False)


CONVERTERS = {
    "aten.layer_norm.default": _layer_norm,
    "aten.linalg_vector_norm.default": _vector_norm,
    "aten.group_norm.default": _group_norm,
    "aten.matmul.default": _matmul,
    "aten.bmm.default": _matmul,
    "aten.scaled_dot_product_attention.default": _sdpa,
}


# ---- nn.MultiheadAttention ---------------------------------------------------------------------------------
def decompose_attention(model):
    """`model`, or a copy of it whose nn.MultiheadAttention layers are written per projection (same parameters,
    same results, attention weights not returned); layers tinyaot cannot take are refused here, naming them."""
    import torch.nn as nn

    paths = [path for path, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]
    if not paths:
        return model
    for path in paths:
        _check_attention(path, model.get_submodule(path))
    model = copy.deepcopy(model)
    for path in paths:
        parent, _, name = path.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        setattr(owner, name, _decomposed_class()(path, getattr(owner, name)))
    return model


def _check_attention(path: str, m) -> None:
    problems = []
    if not m.batch_first:
        problems.append("batch_first=False (its input is [T, batch, D]; build it with batch_first=True)")
    if m.bias_k is not None:
        problems.append("add_bias_kv=True")
    if m.add_zero_attn:
        problems.append("add_zero_attn=True")
    if problems:
        raise UnsupportedOpError(f"layer '{path}' (nn.MultiheadAttention) has {', '.join(problems)}, which tinyaot "
                                 "does not compile; supported: batch_first=True attention without masks")


@lru_cache(maxsize=None)
def _decomposed_class():
    """Defined on first use, so importing the front end does not import torch."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class DecomposedMultiheadAttention(nn.Module):
        """nn.MultiheadAttention(batch_first=True) as q/k/v projections, SDPA per head and the out projection."""

        def __init__(self, path: str, m: nn.MultiheadAttention):
            super().__init__()
            self.path, self.heads, d = path, m.num_heads, m.embed_dim
            if m._qkv_same_embed_dim:
                weights = m.in_proj_weight.detach().split(d)
            else:
                weights = (m.q_proj_weight.detach(), m.k_proj_weight.detach(), m.v_proj_weight.detach())
            biases = m.in_proj_bias.detach().split(d) if m.in_proj_bias is not None else (None,) * 3
            self.q_proj, self.k_proj, self.v_proj = (self._linear(w, bias) for w, bias in zip(weights, biases))
            self.out_proj = m.out_proj

        @staticmethod
        def _linear(w, bias) -> nn.Linear:
            lin = nn.Linear(w.shape[1], w.shape[0], bias=bias is not None)
            with torch.no_grad():
                lin.weight.copy_(w)
                if bias is not None:
                    lin.bias.copy_(bias)
            return lin

        def _heads(self, x):
            b, t, d = x.shape
            return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                    average_attn_weights=True, is_causal=False):
            if key_padding_mask is not None or attn_mask is not None or is_causal:
                raise UnsupportedOpError(f"layer '{self.path}' (nn.MultiheadAttention) is called with an attention "
                                         "mask (key_padding_mask, attn_mask or is_causal); tinyaot compiles "
                                         "unmasked attention")
            q, k, v = self._heads(self.q_proj(query)), self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
            b, t, d = query.shape
            context = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
            # The attention weights are not computed (torch.export keeps unused ops, which would cost a second
            # softmax on the device): need_weights is read as False, the second result is None.
            return self.out_proj(context), None

    return DecomposedMultiheadAttention
