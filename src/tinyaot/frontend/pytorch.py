"""PyTorch front end: torch.export an nn.Module and translate its ATen graph to the IR.

Only this module (and the demo/tests) imports torch, so the rest of the compiler stays light.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.ops import RELU

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def source_location(fx_node) -> str:
    """The user's file:line for an exported node (the innermost frame outside torch itself)."""
    trace = fx_node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    user = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]]
    if not user:
        return ""
    path, line, _func, code = user[-1]
    return f"{path}:{line}: {code.strip()}"


def _layer_name(fx_node) -> str:
    """The module path (e.g. 'fc1') the node came from, falling back to the FX node name."""
    stack = fx_node.meta.get("nn_module_stack") or {}
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            return path.replace("._modules.", ".").replace("L['self'].", "")
    return fx_node.name


class _Builder:
    """Accumulates IR while walking the exported FX graph."""

    def __init__(self) -> None:
        self.graph = Graph(tensors={}, nodes=[], inputs=[], outputs=[])
        self.names: dict[str, str] = {}  # fx node name -> IR tensor name
        self.consts: dict[str, np.ndarray] = {}

    def const(self, name: str, array: np.ndarray) -> str:
        tname = name.replace(".", "_")
        if tname not in self.graph.tensors:
            data = np.ascontiguousarray(array, dtype=np.float32)
            self.graph.add_tensor(Tensor(tname, tuple(data.shape), "float32", data=data))
        return tname

    def activation(self, name: str, shape) -> str:
        tname = name.replace(".", "_")
        base, k = tname, 1
        while tname in self.graph.tensors:
            tname = f"{base}_{k}"
            k += 1
        self.graph.add_tensor(Tensor(tname, tuple(int(s) for s in shape), "float32"))
        return tname

    def node(self, op: str, fx_node, inputs: list[str], attrs: dict[str, Any] | None = None) -> str:
        shape = tuple(fx_node.meta["val"].shape)
        layer = _layer_name(fx_node)
        out = self.activation(f"{layer}_out" if layer != fx_node.name else fx_node.name, shape)
        self.graph.nodes.append(
            Node(op, layer, inputs, [out], attrs or {}, source=source_location(fx_node))
        )
        self.names[fx_node.name] = out
        return out


def _arg(builder: _Builder, a) -> str:
    return builder.names[a.name]


def _linear(b: _Builder, n) -> None:
    x, w = n.args[0], n.args[1]
    bias = n.args[2] if len(n.args) > 2 else None
    inputs = [_arg(b, x), _arg(b, w)]
    if bias is not None:
        inputs.append(_arg(b, bias))
    else:
        out_features = b.graph.tensor(inputs[1]).shape[0]
        inputs.append(b.const(f"{n.name}_zero_bias", np.zeros(out_features, np.float32)))
    b.node("fully_connected", n, inputs)


def _relu(b: _Builder, n) -> None:
    b.node("relu", n, [_arg(b, n.args[0])], {"clamp": RELU})


def _reshape(b: _Builder, n) -> None:
    b.node("reshape", n, [_arg(b, n.args[0])])


def _identity(b: _Builder, n) -> None:
    b.names[n.name] = _arg(b, n.args[0])


CONVERTERS: dict[str, Callable[[_Builder, Any], None]] = {
    "aten.linear.default": _linear,
    "aten.relu.default": _relu,
    "aten.relu_.default": _relu,
    "aten.reshape.default": _reshape,
    "aten.view.default": _reshape,
    "aten._unsafe_view.default": _reshape,
    "aten.flatten.using_ints": _reshape,
    "aten.squeeze.dim": _reshape,
    "aten.squeeze.dims": _reshape,
    "aten.unsqueeze.default": _reshape,
    "aten.dropout.default": _identity,
    "aten.clone.default": _identity,
    "aten.contiguous.default": _identity,
    "aten.alias.default": _identity,
}


def supported_ops() -> list[str]:
    return sorted(CONVERTERS)


def _layer_type(fx_node) -> str:
    stack = fx_node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    t = list(stack.values())[-1][1]
    name = t.__name__ if isinstance(t, type) else str(t).rsplit(".", 1)[-1].strip("'>")
    return f" ({name})"


# Layers with state or control flow that have no integer kernel; caught before export for a clear message.
UNSUPPORTED_MODULES = ("LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention", "Transformer",
                       "TransformerEncoderLayer", "TransformerDecoderLayer", "Embedding", "EmbeddingBag")


def check_modules(model) -> None:
    for path, module in model.named_modules():
        kind = type(module).__name__
        if kind in UNSUPPORTED_MODULES:
            raise UnsupportedOpError(
                f"layer '{path}' is an nn.{kind}, which tinyaot cannot compile to integer kernels "
                f"(recurrent/attention/embedding layers are not supported). Supported PyTorch ops: "
                f"{', '.join(supported_ops())}."
            )


def _unsupported(n) -> UnsupportedOpError:
    where = source_location(n) or "(no source location recorded)"
    return UnsupportedOpError(
        f"unsupported operation {n.target} in layer '{_layer_name(n)}'{_layer_type(n)} at {where}.\n"
        f"tinyaot never falls back to float. Supported PyTorch ops: {', '.join(supported_ops())}.\n"
        "Rewrite the layer with supported ops, or open an issue asking for this one."
    )


def _export(model, example_input):
    import torch

    if isinstance(example_input, np.ndarray):
        example_input = torch.from_numpy(example_input)
    if not isinstance(example_input, torch.Tensor):
        raise ModelError(
            f"example_input must be a torch.Tensor or numpy array, got {type(example_input).__name__}"
        )
    example_input = example_input.detach().to(torch.float32)
    model = model.eval()
    try:
        with torch.no_grad():
            model(example_input)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(
            f"the model does not run on an example input of shape {tuple(example_input.shape)}: {first}. "
            "Pass an example input (batch size 1) shaped like the data the model was built for."
        ) from None
    try:
        with torch.no_grad():
            return torch.export.export(model, (example_input,)), example_input
    except Exception as exc:  # torch.export's own errors are long; keep the first lines
        first = "\n".join(str(exc).splitlines()[:6])
        raise ModelError(f"torch.export could not trace the model: {first}") from exc


def from_torch(model, example_input) -> Graph:
    """Export `model` with torch.export and translate it to a float Graph."""
    check_modules(model)
    ep, example = _export(model, example_input)
    params = {**dict(ep.named_parameters()), **dict(ep.named_buffers())}
    params.update(getattr(ep, "constants", {}) or {})
    sig = ep.graph_signature
    b = _Builder()
    const_of_input = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    const_of_input.update(getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {})
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            if n.name in const_of_input:
                target = const_of_input[n.name]
                b.names[n.name] = b.const(target, params[target].detach().cpu().numpy())
            else:
                name = b.activation("input", tuple(n.meta["val"].shape))
                b.graph.inputs.append(name)
                b.names[n.name] = name
        elif n.op == "call_function":
            key = str(n.target)
            if key not in CONVERTERS:
                raise _unsupported(n)
            CONVERTERS[key](b, n)
        elif n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
            b.graph.outputs = [b.names[o.name] for o in outs]
    if len(b.graph.inputs) != 1 or len(b.graph.outputs) != 1:
        raise ModelError(
            f"tinyaot compiles models with one input and one output; this one has "
            f"{len(b.graph.inputs)} inputs and {len(b.graph.outputs)} outputs"
        )
    _check_finite_constants(b.graph)
    b.graph.prune()
    return b.graph


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
