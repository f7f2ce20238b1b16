"""Mixed precision: chosen layers get int16 activations (TFLite's 16x8 scheme) inside an int8 model.

Choosing a layer makes its output int16 (symmetric, zero point 0, the calibrated range over 65,535 steps
instead of 255). Every layer that reads an int16 tensor then runs its 16x8 kernel (int16 in, int16 out) so the
finer values are not thrown away at once; a view, pooling or another op that keeps its input's qparams passes
int16 on. Where precision changes a `quantize` node converts: int8 -> int16 exactly (scale / 128, so the int16
values are the int8 ones times 128), int16 -> int8 with the tensor's own int8 qparams. The model's inputs and
outputs stay int8, so the C interface is the same as an all-int8 model's, and the planner places the 2-byte
tensors like any other.

int16="auto" chooses for the user (`auto_int16_layers`): the layers whose int8 kernel alone, on exactly rounded
inputs, has a signal-to-quantization-noise ratio below `AUTO_SQNR_DB` on the calibration samples
(quantize/sensitivity.py, the per-layer error report's "local" figure), among the ops with a 16x8 kernel, and their
producers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.ir.ops import OPS, ops_where, ops_with_16x8
from tinyaot.quantize.calibrate import batch_slice
from tinyaot.quantize.float_eval import evaluate
from tinyaot.quantize.observers import Range
from tinyaot.quantize.recurrent import INT16_MAX
from tinyaot.quantize.scheme import activation_qparams
from tinyaot.quantize.sensitivity import local_sqnr
from tinyaot.ref.interpreter import prepare_all

AUTO_SQNR_DB = 30.0  # int8 layers below this local SQNR get int16 activations with int16="auto"
AUTO_SAMPLES = 64  # calibration samples the automatic choice measures on
SOFTMAX16_QPARAMS = QParams.per_tensor(1.0 / 32768.0, 0)  # TFLite's int16 softmax output
_PASSES_ON = ops_where(qparams="inherit")  # views, pooling, pads: the output keeps the input's qparams
# The ops this module may give int16 activations: those with a 16x8 kernel but the recurrent layers, which the
# lowering keeps int8 (quantize/recurrent.py; their 16x8 kernel runs imported 16x8 .tflite LSTMs).
CHOOSABLE = frozenset(ops_with_16x8()) - ops_where(qparams="recurrent")


@dataclass(frozen=True)
class MixedPlan:
    """Which float-graph tensors become int16 and which nodes run a 16x8 kernel."""

    chosen: tuple[str, ...]  # the layers asked for (or chosen automatically), in graph order
    tensors: frozenset[str]  # int16 activations
    nodes: frozenset[str]  # nodes whose kernel is the 16x8 one

    def __bool__(self) -> bool:
        return bool(self.chosen)


TWIN_SUFFIXES = ("__s16", "__s8")  # a tensor's int16 / int8 twin: the same reals at the other precision


def twin_name(name: str, dtype: str) -> str:
    """The name of `name`'s twin in `dtype` (int16 or int8)."""
    return name + TWIN_SUFFIXES[0 if dtype == "int16" else 1]


def twin_of(name: str) -> str | None:
    """The tensor a twin stands for, or None for a tensor that is no twin."""
    for suffix in TWIN_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return None


def plan_mixed(g: Graph, layers) -> MixedPlan:
    """The int16 tensors and 16x8 nodes for the chosen `layers` (node names of the float graph)."""
    names = [n.name for n in g.nodes]
    chosen = list(dict.fromkeys(layers or ()))
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise ModelError(f"int16: no layer named {', '.join(repr(u) for u in unknown)}; the layers are "
                         f"{', '.join(names)} (tinyaot.compile(..., int16=[names]) or int16='auto')")
    for node in g.nodes:
        if node.name in chosen and node.op not in CHOOSABLE:
            why = ("which tinyaot quantizes int8 (its 16x8 kernel runs imported 16x8 .tflite LSTMs); the ops "
                   "int16= can choose" if OPS[node.op].s16 else "which has no 16x8 kernel; the ops with one")
            raise ModelError(f"int16: layer '{node.name}' is a {node.op}, {why}: {', '.join(sorted(CHOOSABLE))}")
    tensors: set[str] = set()
    nodes: set[str] = set()
    for node in g.nodes:
        reads16 = any(t in tensors for t in node.inputs)
        spec = OPS[node.op]
        if spec.view and reads16:
            tensors.add(node.outputs[0])
        elif node.name in chosen or (reads16 and node.op in CHOOSABLE):
            nodes.add(node.name)
            if node.name in chosen or node.op in _PASSES_ON:
                tensors.add(node.outputs[0])
    tensors -= set(g.outputs)  # the model's outputs stay int8: a 16x8 producer's output is converted
    return MixedPlan(tuple(n for n in names if n in chosen), frozenset(tensors), frozenset(nodes))


def int16_qparams(r: Range) -> QParams:
    """Symmetric int16 over the calibrated range (TFLite's 16x8 activations: zero point 0)."""
    bound = max(abs(r.lo), abs(r.hi))
    return QParams.per_tensor(float(np.float32(bound / INT16_MAX)) if bound > 0 else 1.0, 0)


class Converter:
    """The quantize nodes where precision changes, each made once per tensor."""

    def __init__(self, q: Graph, ranges: dict[str, Range]):
        self.q = q
        self.ranges = ranges

    def as_int16(self, name: str, source: str | None) -> str:
        """The int16 twin of an int8 tensor: a 16x8 producer's own int16 output when it has one (the finer
        values), else an exact conversion."""
        t = self.q.tensor(name)
        if t.dtype == "int16" or t.is_const:
            return name
        twin = twin_name(name, "int16")
        if twin not in self.q.tensors:  # exact: the int8 values times 128 (|q - zero point| <= 255)
            qp = QParams.per_tensor(float(t.qparams.scale[0]) / 128.0, 0)
            self._convert(name, Tensor(twin, t.shape, "int16", qparams=qp), source)
        return twin

    def as_int8(self, name: str, source: str | None) -> str:
        t = self.q.tensor(name)
        if t.dtype != "int16":
            return name
        twin = twin_name(name, "int8")
        if twin not in self.q.tensors:
            r = self.ranges.get(name)
            qp = activation_qparams(r.lo, r.hi) if r is not None else _int8_cover(t.qparams)
            self._convert(name, Tensor(twin, t.shape, "int8", qparams=qp), source)
        return twin

    def to_int8_output(self, node: Node, out: Tensor, qp8: QParams, source: str | None) -> Tensor:
        """A 16x8 node whose output stays int8: the node writes an int16 twin, a quantize makes `out`."""
        wide = self.q.tensor(twin_name(out.name, "int16"))
        self.q.nodes.append(Node("quantize", f"{node.name}_to_int8", [wide.name], [out.name], {}, source))
        return self.q.add_tensor(Tensor(out.name, out.shape, "int8", qparams=qp8))

    def _convert(self, src: str, twin: Tensor, source: str | None) -> None:
        self.q.add_tensor(twin)
        self.q.nodes.append(Node("quantize", f"{src}_to_{twin.dtype}", [src], [twin.name], {}, source))


def drop_dead_conversions(q: Graph) -> None:
    """Remove conversions nobody reads: a 16x8 node's int8 output whose every reader took its int16 twin."""
    while True:
        read = {i for n in q.nodes for i in n.inputs} | set(q.outputs)
        dead = [n for n in q.nodes if n.op == "quantize" and n.outputs[0] not in read
                and (n.name.endswith("_to_int8") or n.name.endswith("_to_int16"))]
        if not dead:
            break
        for n in dead:
            q.nodes.remove(n)
    q.prune()


def _int8_cover(qp: QParams) -> QParams:
    bound = float(qp.scale[0]) * INT16_MAX
    return activation_qparams(-bound, bound)


def auto_int16_layers(g: Graph, q8: Graph, batch) -> dict[str, str]:
    """int16="auto": layer -> why it gets int16 activations, measured on the first AUTO_SAMPLES of the calibration
    `batch` (the float graph `g` evaluated on them; `q8` its all-int8 lowering)."""
    values = evaluate(g, batch_slice(batch, 0, AUTO_SAMPLES))
    return int16_candidates(g, q8, values, AUTO_SQNR_DB)


def int16_candidates(g: Graph, q8: Graph, values: dict[str, np.ndarray], threshold: float) -> dict[str, str]:
    """Layer -> why it gets int16 activations. A layer with a 16x8 kernel whose int8 kernel alone (on exactly
    rounded inputs) loses more than `threshold` allows is chosen, and so are the layers that produce its inputs:
    the loss is as often the coarse int8 input as the output. `values`: the float graph's tensors on calibration
    samples."""
    params = prepare_all(q8)
    names = {n.name for n in g.nodes}
    out: dict[str, str] = {}
    for node in q8.nodes:
        if node.op not in CHOOSABLE or node.name not in names:
            continue
        db = local_sqnr(params, node, q8, values)
        if math.isnan(db) or db >= threshold:
            continue
        why = f"int8 local SQNR {db:.1f} dB < {threshold:g} dB"
        out.setdefault(node.name, why)
        for producer in _producers(g, node):
            out.setdefault(producer.name, f"feeds {node.name} ({why})")
    order = [n.name for n in g.nodes]
    return dict(sorted(out.items(), key=lambda kv: order.index(kv[0])))


def _producers(g: Graph, node: Node) -> list[Node]:
    """The nearest producers of the node's activation inputs through views, those with a 16x8 kernel."""
    found = []
    for name in node.inputs:
        p = g.producer(name)
        while p is not None and OPS[p.op].view:
            p = g.producer(p.inputs[0])
        if p is not None and OPS[p.op].s16 and OPS[p.op].qparams != "recurrent":
            found.append(p)
    return found
