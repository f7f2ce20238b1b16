"""An IR verifier run after every stage: each node checked against its registry spec, the graph well formed.

A stage that breaks the IR's contract is a tinyaot bug; catching it where it happens, with the stage named,
beats a wrong answer or a crash three stages later.
"""
from __future__ import annotations

from tinyaot.errors import InternalCompilerError
from tinyaot.ir.graph import Graph
from tinyaot.ir.ops import INHERIT, OPS


class IRError(InternalCompilerError):
    """A stage produced a graph that breaks the IR's rules (a bug in tinyaot, never the user's fault)."""


def verify_graph(g: Graph, stage: str, quantized: bool) -> None:
    """Raise IRError listing every rule the graph breaks after `stage`."""
    problems = _structure(g)
    for node in g.nodes:
        problems += _node(g, node, quantized)
    if problems:
        raise IRError(f"after {stage}, the graph breaks the IR's rules (a tinyaot bug; please report it):\n  "
                      + "\n  ".join(problems[:20]))


def _structure(g: Graph) -> list[str]:
    """Tensors exist, each is produced once, and nodes come in an order where inputs exist before use."""
    problems = [f"graph {kind} {t!r} is not a tensor" for kind, names in (("input", g.inputs), ("output", g.outputs))
                for t in names if t not in g.tensors]
    ready = set(g.inputs) | {t.name for t in g.constants()}
    produced: set[str] = set()
    for node in g.nodes:
        problems += [f"{node.name} reads {t!r} before anything writes it" for t in node.inputs if t not in ready]
        for t in node.outputs:
            if t not in g.tensors:
                problems.append(f"{node.name} writes {t!r}, which is not a tensor")
            if t in produced or t in g.inputs:
                problems.append(f"{t!r} is written twice (again by {node.name})")
            produced.add(t)
            ready.add(t)
    return problems


def _node(g: Graph, node, quantized: bool) -> list[str]:
    spec = OPS.get(node.op)
    if spec is None:
        return [f"{node.name}: op {node.op!r} is not in the registry (ir/ops.py)"]
    problems = []
    if not isinstance(node.attrs, spec.attrs):
        problems.append(f"{node.name}: attrs are {type(node.attrs).__name__}, not {spec.attrs.__name__}")
    variadic = "..." in spec.operands
    fixed = len(spec.operands) - (1 if variadic else 0)
    if (len(node.inputs) < fixed) if variadic else (len(node.inputs) != fixed):
        problems.append(f"{node.name} ({node.op}) has {len(node.inputs)} operands; its spec: "
                        f"{', '.join(spec.operands)}")
    outputs = spec.outputs + (1 if spec.observed and not quantized else 0)  # a float graph's observed output
    if len(node.outputs) != outputs:
        problems.append(f"{node.name} ({node.op}) has {len(node.outputs)} outputs; its spec: {outputs}")
    if quantized:
        problems += _quantized(g, node, spec)
    return problems


def _quantized(g: Graph, node, spec) -> list[str]:
    """After lowering: no float-only op, every activation quantized, inheriting ops keep their input's qparams."""
    if spec.qparams == "float only":
        return [f"{node.name}: {node.op} is float only and should have been folded before lowering"]
    problems = [f"{node.name}: activation {t!r} has no qparams" for t in (*node.inputs, *node.outputs)
                if t in g.tensors and not g.tensor(t).is_const and g.tensor(t).qparams is None]
    if problems or spec.qparams != INHERIT or spec.rescales:
        return problems
    x, y = g.tensor(node.inputs[0]).qparams, g.tensor(node.outputs[0]).qparams
    if (x.scale, x.zero_point) != (y.scale, y.zero_point):
        problems.append(f"{node.name} ({node.op}) must keep its input's qparams, but its output has others")
    return problems
