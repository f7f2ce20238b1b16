"""Buffers and their lifetimes.

A buffer is a run of arena bytes; a view op (reshape) makes its output another name for its
input's buffer. A buffer lives from the step that produces it (graph inputs: step 0) to the last
step that reads any of its names (graph outputs: the last step), both ends inclusive, so an op's
inputs and outputs never share bytes unless a pass says they may.
"""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.ir import Graph
from tinyaot.ir.ops import ops_where

VIEW_OPS = ops_where(view=True)


@dataclass(frozen=True)
class Buffer:
    name: str  # the tensor that owns the bytes
    tensors: tuple[str, ...]  # every tensor name that lives in these bytes
    nbytes: int
    first: int
    last: int
    producer: str  # node name, or "input"
    scratch: bool = False  # a kernel's working memory, live only during its producer's step (plan/inplace.py)

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


def _root_of(g: Graph) -> dict[str, str]:
    root: dict[str, str] = {}
    for t in g.activations():
        root[t.name] = t.name
    for node in g.nodes:
        if node.op in VIEW_OPS:
            root[node.outputs[0]] = root[node.inputs[0]]
    return root


def buffers_of(g: Graph) -> list[Buffer]:
    """One Buffer per set of aliased activation tensors, in order of first use."""
    root = _root_of(g)
    last_step = max(len(g.nodes) - 1, 0)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    producer: dict[str, str] = {}
    for name in g.inputs:
        first[root[name]] = 0
        producer[root[name]] = "input"
    for step, node in enumerate(g.nodes):
        for name in node.inputs:
            if name in root:
                last[root[name]] = max(last.get(root[name], step), step)
        for name in node.outputs:
            r = root[name]
            if r == name:
                first[r] = step
                producer[r] = node.name
            last[r] = max(last.get(r, step), step)
    for name in g.outputs:
        last[root[name]] = last_step
    members: dict[str, list[str]] = {}
    for name, r in root.items():
        members.setdefault(r, []).append(name)
    bufs = [
        Buffer(r, tuple(members[r]), g.tensor(r).nbytes, first[r], last.get(r, first[r]), producer[r])
        for r in members
    ]
    return sorted(bufs, key=lambda b: (b.first, b.name))


def live_bytes(buffers: list[Buffer], n_steps: int) -> list[int]:
    return [sum(b.nbytes for b in buffers if b.first <= s <= b.last) for s in range(max(n_steps, 1))]


def lower_bound(buffers: list[Buffer], n_steps: int) -> int:
    """No placement of these lifetimes can use fewer bytes than the busiest step holds; the bound is the graph's
    own, without kernels' scratch (rings, work buffers)."""
    return max(live_bytes([b for b in buffers if not b.scratch], n_steps), default=0)


def busiest_step_text(plan) -> str:
    """'input 784 B + fc1_out 32 B': what the lower bound is made of."""
    bufs = [b for b in plan.buffers if not b.scratch]  # the bound is the graph's own, without kernel scratch
    live = live_bytes(bufs, plan.n_steps)
    step = live.index(max(live))
    parts = [f"{b.name} {b.nbytes:,} B" for b in bufs if b.first <= step <= b.last]
    return f"step {step}: " + " + ".join(parts)
