"""PyTorch front end: torch.export an nn.Module and translate its ATen graph to the IR.

Only this module (and the demo/tests) imports torch, so the rest of the compiler stays light.
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name, layer_type, source_location
from tinyaot.frontend.pytorch_ops import CONVERTERS, Builder, Value
from tinyaot.ir import Graph


def supported_ops() -> list[str]:
    return sorted(CONVERTERS)


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
        f"unsupported operation {n.target} in layer '{layer_name(n)}'{layer_type(n)} at {where}.\n"
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
    modes = {m: m.training for m in model.modules()}  # the user's module is given back in the mode it came in
    try:
        return _export_eval(model.eval(), example_input), example_input
    finally:
        for m, training in modes.items():
            m.training = training


def _export_eval(model, example_input):
    import torch

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
            return torch.export.export(model, (example_input,))
    except Exception as exc:  # torch.export's own errors are long; keep the first lines
        first = "\n".join(str(exc).splitlines()[:6])
        raise ModelError(f"torch.export could not trace the model: {first}") from exc


def from_torch(model, example_input) -> Graph:
    """Export `model` with torch.export and translate it to a float Graph (NHWC inside)."""
    check_modules(model)
    ep, example = _export(model, example_input)
    params = {**dict(ep.named_parameters()), **dict(ep.named_buffers())}
    params.update(getattr(ep, "constants", {}) or {})
    sig = ep.graph_signature
    b = Builder()
    const_of_input = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    const_of_input.update(getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {})
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            if n.name in const_of_input:
                target = const_of_input[n.name]
                b.values[n.name] = Value(b.const(target, params[target].detach().cpu().numpy()), False, 0)
            else:
                b.add_input(n)
        elif n.op == "call_function":
            key = str(n.target)
            if key not in CONVERTERS:
                raise _unsupported(n)
            b.current = n
            CONVERTERS[key](b, n)
        elif n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
            b.graph.outputs = [b.output_name(o) for o in outs]
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
