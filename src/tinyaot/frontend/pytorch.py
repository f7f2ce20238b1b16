"""PyTorch front end: torch.export an nn.Module and translate its ATen graph to the IR.

Only this module (and the demo/tests) imports torch, so the rest of the compiler stays light.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError, UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name
from tinyaot.frontend.pytorch_attention import decompose_attention
from tinyaot.frontend.pytorch_ops import CONVERTERS, Builder, Value, torch_to_ir_shape
from tinyaot.frontend.refusals import LIST_COMMAND, Refusals, base_name
from tinyaot.ir import Graph

# Converters that exist only to refuse with a better message than "unsupported operation".
REFUSED_WITH_ADVICE = {"aten.upsample_bicubic2d.vec"}


def supported_ops() -> list[str]:
    return sorted(set(CONVERTERS) - REFUSED_WITH_ADVICE)


# Layers with state or control flow that have no integer kernel; caught before export for a clear message.
UNSUPPORTED_MODULES = ("RNN", "RNNCell", "Transformer",
                       "TransformerEncoderLayer", "TransformerDecoderLayer", "Embedding", "EmbeddingBag")


def check_modules(model):
    """The model to export: refused if it holds a layer without integer kernels; nn.MultiheadAttention layers
    decomposed (in a copy) into ops that have them (frontend/pytorch_attention.py)."""
    for path, module in model.named_modules():
        kind = type(module).__name__
        if kind in UNSUPPORTED_MODULES and type(module).__module__.startswith("torch.nn."):  # not timm's Transformer
            raise UnsupportedOpError(
                f"layer '{path}' is an nn.{kind}, which tinyaot cannot compile to integer kernels "
                f"(nn.LSTM, nn.GRU, loops over nn.LSTMCell / nn.GRUCell and nn.MultiheadAttention are; RNN, "
                f"RNNCell, Transformer modules and embeddings are not: write the layer with supported modules); "
                f"{LIST_COMMAND}."
            )
    return decompose_attention(model)


def _export(model, example_input):
    """example_input: one tensor, or a tuple/list with one tensor per forward() argument."""
    import torch

    several = isinstance(example_input, (tuple, list))
    inputs = tuple(example_input) if several else (example_input,)
    if not inputs:
        raise ModelError("example_input is empty: pass one tensor per argument of the model's forward()")
    tensors = []
    for k, x in enumerate(inputs):
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x)
        if not isinstance(x, torch.Tensor):
            where = f"example_input[{k}]" if several else "example_input"
            raise ModelError(f"{where} must be a torch.Tensor or numpy array, got {type(x).__name__}")
        tensors.append(x.detach().to(torch.float32))
    modes = {m: m.training for m in model.modules()}  # the user's module is given back in the mode it came in
    try:
        return _export_eval(model.eval(), tuple(tensors)), tensors
    finally:
        for m, training in modes.items():
            m.training = training


def _export_eval(model, example_inputs: tuple):
    import torch

    try:
        with torch.no_grad():
            model(*example_inputs)
    except TinyAOTError:
        raise  # tinyaot's own refusal from inside forward() (a decomposed layer's): it already says what and where
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        shapes = ", ".join(str(tuple(x.shape)) for x in example_inputs)
        raise ModelError(
            f"the model does not run on example input(s) of shape {shapes}: {first}. "
            "Pass an example input (batch size 1) shaped like the data the model was built for, one per argument "
            "of forward() (a tuple when it takes several)."
        ) from None
    try:
        with torch.no_grad():
            return torch.export.export(model, example_inputs)
    except Exception as exc:  # torch.export's own errors are long; keep the first lines
        first = "\n".join(str(exc).splitlines()[:6])
        raise ModelError(f"torch.export could not trace the model: {first}") from exc


def from_torch(model, example_input) -> Graph:
    """Export `model` with torch.export and translate it to a float Graph (NHWC inside)."""
    model = check_modules(model)
    ep, example = _export(model, example_input)
    params = {**dict(ep.named_parameters()), **dict(ep.named_buffers())}
    params.update(getattr(ep, "constants", {}) or {})
    sig = ep.graph_signature
    b = Builder()
    const_of_input = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    const_of_input.update(getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {})
    run = _Run(Refusals(frozenset(supported_ops())))
    refusals = run.refusals
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            if n.name in const_of_input:
                target = const_of_input[n.name]
                run.exact[n.name] = params[target].detach()
                b.values[n.name] = Value(b.const(target, params[target].detach().cpu().numpy()), False, 0)
            else:
                b.add_input(n)
        elif n.op == "call_function":
            _convert(b, n, run)
        elif n.op == "output" and not refusals:
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
            for o in outs:
                b.graph.outputs.append(_output_tensor(b, o))
    if refusals:
        raise refusals.error()
    if not b.graph.inputs:
        raise ModelError("the model takes no tensor input; tinyaot compiles models of one or more tensors")
    _check_finite_constants(b.graph)
    b.graph.prune()
    return b.graph


@dataclass
class _Run:
    """One conversion's state beside the Builder's."""

    refusals: Refusals
    stubs: set = field(default_factory=set)  # refused nodes (and what reads part of their tuples)
    exact: dict = field(default_factory=dict)  # FX node -> torch tensor of a parameter or folded value, its dtype kept


def _convert(b: Builder, n, run: _Run) -> None:
    """Convert one FX node; a refusal is noted and converting goes on, so the model's refusals are said at once.
    A refused node's value is a stub (a float activation of its shape), so the ops after it convert, and are
    refused, on their own account: three ceil_mode poolings in a row are counted three times."""
    refusals, stubs = run.refusals, run.stubs
    if n.name in b.claimed:
        return  # converted with an earlier node (pytorch_builder.py: Builder.claimed)
    key = str(n.target)
    if key in EXPORT_ASSERTIONS:
        return  # torch.export's own checks on a tensor (after .to()): they compute nothing
    if _fold_constants(b, n, run.exact):
        return
    if key not in CONVERTERS:
        refusals.unknown(n)
        _stub(b, n, stubs)
        return
    if stubs and any(a.name in stubs and a.name not in b.values for a in n.all_input_nodes):
        _stub(b, n, stubs)  # reads part of a refused op's tuple (getitem): nothing to convert
        return
    b.current = n
    try:
        CONVERTERS[key](b, n)
    except TinyAOTError as exc:
        refusals.refused(n, exc)
        _stub(b, n, stubs)
    except Exception:
        if not refusals:
            raise
        _stub(b, n, stubs)  # a converter confused by a stub (its look-ahead met a refused node): said already


# torch.export's assertion nodes (no value); ops that make a tensor from nothing, deterministically.
EXPORT_ASSERTIONS = {"aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten._assert_async.msg",
                     "aten.sym_constrain_range_for_size.default"}
CREATION_OPS = {"arange", "ones", "full", "linspace", "eye", "scalar_tensor", "zeros"}


def _fold_constants(b: Builder, n, exact: dict) -> bool:
    """An op whose tensor arguments are all parameters (or folded already) runs now, in torch, and its result is a
    parameter too: weight standardization (timm's StdConv2d: F.batch_norm over the weight), a reshaped layer
    scale (ConvNeXt's gamma.reshape(1, -1, 1, 1)), a position table from torch.arange and masks. Nothing of it is
    left for the device. `exact` keeps each value's own dtype (a bool mask, an integer index) for the next fold;
    the IR holds it as float32."""
    import torch
    import torch.fx

    nodes: list = []
    torch.fx.node.map_arg((n.args, n.kwargs), nodes.append)
    if not nodes and (str(n.target) in CONVERTERS or base_name(str(n.target)) not in CREATION_OPS):
        return False
    tensors = {a.name: _exact(b, a, exact) for a in nodes}
    if any(t is None for t in tensors.values()):
        return False
    args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: tensors[a.name])
    try:
        with torch.no_grad():
            value = n.target(*args, **kwargs)
    except Exception:  # noqa: BLE001 -- not computable here (an op on other arguments): its converter decides
        return False
    if not isinstance(value, torch.Tensor) or value.is_complex() or (
            value.dtype != torch.bool and not value.dtype.is_floating_point and value.numel()
            and value.abs().max() > 1 << 24):
        return False  # integers float32 cannot hold exactly: left to the op's converter
    exact[n.name] = value.detach()
    data = value.detach().to(torch.float32).numpy()
    b.values[n.name] = Value(b.const(f"{layer_name(n)}.constant", data), False, data.ndim)
    return True


def _exact(b: Builder, a, exact: dict):
    """The torch tensor of a constant FX value `a` in its own dtype, or None for an activation."""
    import torch

    if a.name in exact:
        return exact[a.name]
    v = b.values.get(a.name)
    if v is None or v.nhwc or not b.graph.tensor(v.name).is_const:
        return None
    dtype = getattr(a.meta.get("val"), "dtype", torch.float32)  # a converter's constant (aten.zeros) is float32
    return torch.from_numpy(b.graph.tensor(v.name).data.copy()).to(dtype)


def _stub(b: Builder, n, stubs: set[str]) -> None:
    """Stand-in value for a refused node: its exported shape, channels-last when it is a feature map read from one
    (the layout the node's converter would most likely have given it); none for a tuple (its getitem readers
    become stubs of their own)."""
    stubs.add(n.name)
    shape = getattr(n.meta.get("val"), "shape", None)
    if shape is None:
        return
    shape = tuple(int(s) for s in shape)
    ins = [b.values[a.name] for a in n.all_input_nodes if a.name in b.values]
    nhwc = len(shape) in (3, 4) and any(v.nhwc and v.torch_rank == len(shape) for v in ins)
    ir_shape = torch_to_ir_shape(shape) if nhwc else b.plain_shape(shape, *ins)
    b.values[n.name] = Value(b.activation(f"{n.name}_refused", ir_shape), nhwc, len(shape),
                             not nhwc and len(ir_shape) == len(shape) + 1)


def _output_tensor(b: Builder, o) -> str:
    """An output tensor of the IR; each output needs bytes of its own (the C publishes each at its offset)."""
    if not hasattr(o, "name") or o.name not in b.values:
        raise ModelError(f"the model returns {o!r}, which is not a tensor; return tensors only (a tuple of them "
                         "for several outputs)")
    name = b.output_name(o)
    if name in b.graph.outputs:
        raise ModelError(f"the model returns the same tensor ({o.name}) twice; return it once")
    if name in b.graph.inputs or b.graph.tensor(name).is_const:
        raise ModelError(f"output {len(b.graph.outputs)} ({o.name}) is an input or a constant, not computed by the "
                         "model; return only computed tensors")
    return name


def _check_finite_constants(g: Graph) -> None:
    for t in g.constants():
        bad = ~np.isfinite(t.data)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ModelError(
                f"parameter '{t.name}' holds {int(bad.sum())} non-finite value(s) "
                f"(first at index {idx}: {t.data[idx]}). Fix the training run or the checkpoint; "
                "int8 quantization needs finite weights."
            )
