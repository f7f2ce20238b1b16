"""PT2E front end: a `convert_pt2e` GraphModule (quantize/dequantize around float ATen ops) -> an int8 IR graph.

Users who ran torchao's prepare_pt2e / calibrate / convert_pt2e already chose every scale and zero point. The
graph holds them in `quantized_decomposed` quantize/dequantize nodes around float ops (dq -> op -> q). This
module walks the GraphModule once:

- float ATen ops go through the PyTorch front end's converters (`pytorch_ops.CONVERTERS`), so layout handling
  (NCHW -> NHWC at compile time, flatten permutes) is the same code as for float models;
- a quantize node records the qparams of the IR tensor it quantizes; a dequantize node is the identity;
- constants (weights) are evaluated with torch itself, so the int8 weights are exactly the PT2E graph's
  (torch's quantize rounds half to even); the weight's IR tensor carries its scales on the IR's channel axis.

`pt2e_lower.lower_pt2e` then turns that float graph plus the recorded qparams into the int8 graph: every
dq -> op -> q becomes one integer kernel with int8 at its boundaries, never float math at run time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.frontend.fx_util import layer_name, layer_type, source_location
from tinyaot.frontend.pytorch_ops import CHANNEL_OPS, CONVERTERS, Builder, Value
from tinyaot.frontend.refusals import LIST_COMMAND
from tinyaot.ir import Graph, QParams

_NS = "quantized_decomposed."
QUANTIZE = {f"{_NS}quantize_per_tensor.default", f"{_NS}quantize_per_tensor.tensor",
            f"{_NS}quantize_per_tensor.tensor2", f"{_NS}quantize_per_channel.default"}
DEQUANTIZE = {f"{_NS}dequantize_per_tensor.default", f"{_NS}dequantize_per_tensor.tensor",
              f"{_NS}dequantize_per_tensor.tensor2", f"{_NS}dequantize_per_channel.default"}
WEIGHTED = {"aten.linear.default", "aten.conv2d.default", "aten.conv2d.padding", "aten.conv1d.default",
            "aten.conv1d.padding"}
# Float-only ops with no int8 meaning once the quantizer has run (PT2E folds batch norm into the conv).
NOT_INT8 = {"aten.batch_norm.default"}
# Activation dtypes -> the shift that makes them int8 (real = s * (q - zp) holds with q - 128 and zp - 128).
_SHIFT = {"torch.int8": 0, "torch.uint8": -128}


def supported_ops() -> list[str]:
    return sorted((set(CONVERTERS) - NOT_INT8) | QUANTIZE | DEQUANTIZE)


def _targets(model) -> set[str]:
    graph = getattr(model, "graph", None)
    nodes = getattr(graph, "nodes", None)
    if nodes is None or callable(nodes):  # none, or a TorchScript graph's nodes()
        return set()
    return {str(n.target) for n in nodes if n.op in ("call_function", "call_module")}


def is_pt2e(model) -> bool:
    """A GraphModule (or ExportedProgram) holding PT2E quantize/dequantize ops, or PT2E observers."""
    if hasattr(model, "graph_signature") and hasattr(model, "module"):
        model = model.graph_module
    targets = _targets(model)
    return any(t.startswith((_NS, "torchao.", "activation_post_process_")) for t in targets)


@dataclass(frozen=True)
class QInfo:
    """What one quantize/dequantize node says: int8 scale(s), zero point(s), torch channel axis, int8 range."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None
    qmin: int
    qmax: int

    def qparams(self, axis: int | None = None) -> QParams:
        return QParams(self.scale, self.zero_point, axis if len(self.scale) > 1 else None)


class PT2EBuilder(Builder):
    """The PyTorch front end's Builder plus what the quantize nodes recorded."""

    def __init__(self, gm) -> None:
        super().__init__()
        self.gm = gm
        self.consts: dict[str, object] = {}  # FX node name -> torch tensor (weights, biases, qparams)
        self.const_q: dict[str, QInfo] = {}  # FX node name of a quantized constant -> its QInfo
        self.act_q: dict[str, QInfo] = {}  # IR tensor name -> the QInfo of the quantize node that produced it
        self.weight_q: dict[str, QInfo] = {}  # IR weight tensor -> its PT2E QInfo (scales per output channel)

    def add_input(self, n) -> None:
        """As Builder.add_input, but looking through the quantize/dequantize pair to find conv users."""
        shape = tuple(n.meta["val"].shape)
        users = {str(u.target) for u in _users_through_qdq(n)}
        self.register_input(n, shape, len(shape) == 4 or (len(shape) == 3 and bool(users & CHANNEL_OPS)))

    def bind_const(self, n, tensor) -> None:
        self.consts[n.name] = tensor
        data = tensor.detach().cpu().to(_float_dtype()).numpy()
        self.values[n.name] = Value(self.const(n.name, data), False, tensor.dim())


def _float_dtype():
    import torch

    return torch.float32


def _users_through_qdq(n) -> list:
    out = []
    for u in n.users:
        if str(u.target) in QUANTIZE | DEQUANTIZE:
            out.extend(_users_through_qdq(u))
        else:
            out.append(u)
    return out


def _where(n) -> str:
    return source_location(n) or "(no source location recorded)"


def _unsupported(n, why: str = "") -> UnsupportedOpError:
    return UnsupportedOpError(
        f"unsupported operation {n.target} in layer '{layer_name(n)}'{layer_type(n)} at {_where(n)}"
        f"{': ' + why if why else ''}.\ntinyaot lowers each dequantize -> op -> quantize pattern of a PT2E graph "
        f"to one integer kernel and never runs float math; {LIST_COMMAND}."
    )


def _fetch_attr(gm, target: str):
    obj = gm
    for atom in target.split("."):
        if not hasattr(obj, atom):
            raise ModelError(f"the GraphModule has no attribute '{target}' (a get_attr node refers to it)")
        obj = getattr(obj, atom)
    return obj


def _scalar(b: PT2EBuilder, a) -> float:
    """A qparam given as a Python number or as a constant tensor node (the `.tensor` overloads)."""
    if hasattr(a, "name"):
        return float(b.consts[a.name].reshape(-1)[0])
    return float(a)


_ARG_NAMES = {
    False: ("input", "scale", "zero_point", "quant_min", "quant_max", "dtype"),
    True: ("input", "scales", "zero_points", "axis", "quant_min", "quant_max", "dtype"),
}


def _args(n, per_channel: bool) -> dict:
    names = _ARG_NAMES[per_channel]
    got = dict(zip(names, n.args))
    got.update({k: v for k, v in n.kwargs.items() if k in names})
    missing = [k for k in names if k not in got]
    if missing:
        raise _unsupported(n, f"a {n.target} without {', '.join(missing)}")
    return got


def _qinfo(b: PT2EBuilder, n) -> QInfo:
    """Scale, zero point, axis and int8 range of a quantize_* / dequantize_* node."""
    per_channel = "per_channel" in str(n.target)
    a = _args(n, per_channel)
    qmin, qmax, dtype = a["quant_min"], a["quant_max"], a["dtype"]
    if per_channel:
        scale = tuple(float(np.float32(s)) for s in b.consts[a["scales"].name].reshape(-1).tolist())
        zero_point = tuple(int(z) for z in b.consts[a["zero_points"].name].reshape(-1).tolist())
        axis = int(a["axis"])
    else:
        scale = (float(np.float32(_scalar(b, a["scale"]))),)
        zero_point, axis = (int(_scalar(b, a["zero_point"])),), None
    shift = _SHIFT.get(str(dtype))
    if shift is None:
        raise _unsupported(n, f"{dtype} quantization; tinyaot's kernels take int8 (uint8 is shifted to int8); "
                              "use an int8 QuantizationSpec")
    if any(not (s > 0 and math.isfinite(s)) for s in scale):
        raise ModelError(f"{n.name} at {_where(n)}: scale {scale} must be finite and positive")
    qmin, qmax = int(qmin) + shift, int(qmax) + shift
    zero_point = tuple(z + shift for z in zero_point)
    if qmin < -128 or qmax > 127 or qmin >= qmax or any(not qmin <= z <= qmax for z in zero_point):
        raise ModelError(
            f"{n.name} at {_where(n)}: the range [{int(qmin) - shift}, {int(qmax) - shift}] with zero point(s) "
            f"{sorted({z - shift for z in zero_point})[:4]} of {dtype} does not map onto int8 exactly; use "
            "quant_min >= -128, quant_max <= 127 (int8) or 0..255 (uint8) with the zero point inside"
        )
    return QInfo(scale, zero_point, axis, qmin, qmax)


def _is_const(b: PT2EBuilder, n) -> bool:
    """True when every tensor argument of `n` is a constant (folded at compile time with torch)."""
    import torch.fx

    found = []
    torch.fx.node.map_arg((n.args, n.kwargs), lambda a: found.append(a.name in b.consts))
    return bool(found) and all(found)


def _fold_const(b: PT2EBuilder, n) -> None:
    """Evaluate a node on constants with torch (e.g. quantize_per_channel of a float weight), as PT2E would."""
    import torch
    import torch.fx

    args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: b.consts[a.name])
    with torch.no_grad():
        value = n.target(*args, **kwargs)
    key = str(n.target)
    if key in QUANTIZE or key in DEQUANTIZE:
        b.const_q[n.name] = _qinfo(b, n)
    b.bind_const(n, value)


def _quantize(b: PT2EBuilder, n) -> None:
    """q(x): the IR tensor of x is int8 with these qparams. A second, different q of x requantizes."""
    v = b.arg(n.args[0])
    if b.graph.tensor(v.name).is_const:
        raise _unsupported(n, "quantizing a constant that is not a weight")
    info = _qinfo(b, n)
    if info.axis is not None:
        raise _unsupported(n, "per-channel quantization of an activation; activations must be per tensor")
    seen = b.act_q.get(v.name)
    if seen is None:
        b.act_q[v.name] = info
    elif seen != info:
        b.current = n
        out = b.emit("quantize", [v.name], b.shape(v))
        b.act_q[out] = info
        v = Value(out, v.nhwc, v.torch_rank)
    b.values[n.name] = v


def _dequantize(b: PT2EBuilder, n) -> None:
    v = b.arg(n.args[0])
    info = _qinfo(b, n)
    if b.act_q.get(v.name) != info:
        raise _unsupported(n, f"a dequantize whose parameters {info} differ from its quantize's "
                              f"{b.act_q.get(v.name)}")
    b.values[n.name] = v


def _weighted(b: PT2EBuilder, n) -> None:
    """Linear / conv through the float converter, then mark the weight it created with the PT2E qparams."""
    w_arg = n.args[1]
    info = b.const_q.get(w_arg.name) if hasattr(w_arg, "name") else None
    if info is None:
        raise _unsupported(n, "its weight is float (no dequantize of an int8 weight feeds it); quantize the "
                              "weights in the quantizer (a weight QuantizationSpec)")
    if info.axis not in (None, 0):
        raise _unsupported(n, f"weights quantized per channel along torch axis {info.axis}; tinyaot needs the "
                              "output-channel axis 0")
    CONVERTERS[str(n.target)](b, n)
    node = b.graph.nodes[-1]
    b.weight_q[node.inputs[1]] = info


def _walk(gm) -> PT2EBuilder:
    b = PT2EBuilder(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not placeholders:
        raise ModelError("this GraphModule takes no input; tinyaot compiles models of one or more tensors")
    for n in gm.graph.nodes:
        b.current = n
        key = str(n.target)
        if n.op == "placeholder":
            b.add_input(n)
        elif n.op == "get_attr":
            b.bind_const(n, _fetch_attr(gm, n.target))
        elif n.op == "call_module":
            if key.startswith("activation_post_process_"):
                raise ModelError("this GraphModule still holds observers: it was prepared but not converted. "
                                 "Calibrate it, then call convert_pt2e(model) and compile the result")
            if key != "_guards_fn":
                raise _unsupported(n, "a call to a submodule")
        elif n.op == "call_function":
            if n.name in b.claimed:
                continue  # converted with an earlier node (Builder.claimed: F.normalize's chain)
            if _is_const(b, n):
                _fold_const(b, n)
            elif key in QUANTIZE:
                _quantize(b, n)
            elif key in DEQUANTIZE:
                _dequantize(b, n)
            elif key in WEIGHTED:
                _weighted(b, n)
            elif key in CONVERTERS and key not in NOT_INT8:
                CONVERTERS[key](b, n)
            else:
                raise _unsupported(n)
        elif n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
            for o in outs:
                name = b.output_name(o)
                if name in b.graph.outputs:
                    raise ModelError(f"the GraphModule returns the same tensor ({o.name}) twice; return it once")
                b.graph.outputs.append(name)
    return b


def _example(gm, example_input):
    """The input's torch shape, checked against an example input when one is given."""
    import torch

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    vals = [ph.meta.get("val") for ph in placeholders]
    if example_input is None:
        if any(v is None for v in vals):
            raise ModelError("pass example_input: this GraphModule records no input shape")
        return tuple(vals[0].shape)
    examples = example_input if isinstance(example_input, (tuple, list)) else (example_input,)
    xs = [torch.as_tensor(np.asarray(e) if not isinstance(e, torch.Tensor) else e) for e in examples]
    if len(xs) != len(placeholders):
        raise ModelError(f"the PT2E graph takes {len(placeholders)} inputs; example_input gives {len(xs)}")
    for x, val in zip(xs, vals):
        if val is not None and tuple(val.shape) != tuple(x.shape):
            raise ModelError(f"example_input has shape {tuple(x.shape)}, but the PT2E graph was exported for "
                             f"{tuple(val.shape)}")
    try:
        with torch.no_grad():
            gm(*[x.to(torch.float32) for x in xs])
    except Exception as exc:  # noqa: BLE001 -- whatever the graph raises, the user gets one clear line
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        shapes = ", ".join(str(tuple(x.shape)) for x in xs)
        raise ModelError(f"the PT2E graph does not run on example_input of shape {shapes}: {first}") from None
    return tuple(xs[0].shape)


def from_pt2e(model, example_input=None) -> tuple[Graph, dict, dict]:
    """Import a PT2E-converted GraphModule (or an ExportedProgram of one): the float IR graph (NHWC inside) and
    the qparams PT2E recorded, per IR activation (its quantize node) and per IR weight. The pipeline runs the
    float passes on it and quantize/pt2e_lower.py turns it into int8 with exactly those qparams."""
    if hasattr(model, "graph_signature") and hasattr(model, "module"):
        model = model.module()
    if not hasattr(model, "graph"):
        raise ModelError(f"expected a torch.fx.GraphModule from convert_pt2e, got {type(model).__name__}")
    _example(model, example_input)
    b = _walk(model)
    return b.graph, b.act_q, b.weight_q
