"""Buffers and their lifetimes.

A buffer is a run of arena bytes; a view op (reshape) makes its output another name for its
input's bytes, and a slice whose output is one run of its input (a range of rows, of tokens) is read
in place, at its offset in them, where that does not raise the layer-by-layer bound (keeping the input's
bytes until the slice's last reader may cost more than the copy), the offset keeps the plan's alignment and
the slice is no graph output. A buffer lives from the step that produces it (graph inputs: step 0) to the last
step that reads any of its names (graph outputs: the last step), both ends inclusive, so an op's inputs and
outputs never share bytes unless a pass says they may.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.ir import Graph
from tinyaot.ir.ops import ops_where
from tinyaot.ir.slicing import contiguous_slice

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
    at: tuple[int, ...] = ()  # byte offset of each of `tensors` in the buffer (empty: all 0); a slice read in place

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last

    def offset_in(self, tensor: str) -> int:
        """Where `tensor` starts in these bytes."""
        return self.at[self.tensors.index(tensor)] if self.at else 0


def buffers_of(g: Graph, alignment: int = 4) -> list[Buffer]:
    """One Buffer per set of aliased activation tensors, in order of first use; `alignment`: the plan's, which a
    slice read in place keeps."""
    root: dict[str, tuple[str, int]] = {t.name: (t.name, 0) for t in g.activations()}
    for node in g.nodes:
        if node.op in VIEW_OPS:
            root[node.outputs[0]] = root[node.inputs[0]]
    bufs = _buffers(g, root)
    for node in g.nodes:
        trial = _read_in_place(g, node, root, alignment)
        if trial is not None:
            tried = _buffers(g, trial)
            if _peak(tried, len(g.nodes)) <= _peak(bufs, len(g.nodes)):
                root, bufs = trial, tried
    return bufs


def _read_in_place(g: Graph, node, root: dict[str, tuple[str, int]], alignment: int):
    """The aliases with `node`'s output (and its views) named inside its input's bytes, if node is a slice whose
    output is one run of its input at an aligned offset and no graph output; else None."""
    piece = node.outputs[0] if node.op == "slice" else None
    if piece is None or root[piece][0] != piece:
        return None
    x = g.tensor(node.inputs[0])
    start = contiguous_slice(node, x.shape)
    owner, base = root[node.inputs[0]]
    members = [t for t, (r, _) in root.items() if r == piece]
    if start is None or (base + start * x.itemsize) % alignment or any(t in g.outputs for t in members):
        return None
    trial = dict(root)
    for t in members:
        trial[t] = (owner, base + start * x.itemsize + root[t][1])
    return trial


def _peak(buffers: list[Buffer], n_steps: int) -> int:
    live = np.zeros(max(n_steps, 1) + 1, dtype=np.int64)
    for b in buffers:
        live[b.first] += b.nbytes
        live[b.last + 1] -= b.nbytes
    return int(np.cumsum(live).max())


def _buffers(g: Graph, root: dict[str, tuple[str, int]]) -> list[Buffer]:
    last_step = max(len(g.nodes) - 1, 0)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    producer: dict[str, str] = {}
    for name in g.inputs:
        first[root[name][0]] = 0
        producer[root[name][0]] = "input"
    for step, node in enumerate(g.nodes):
        for name in node.inputs:
            if name in root:
                r = root[name][0]
                last[r] = max(last.get(r, step), step)
        for name in node.outputs:
            r = root[name][0]
            if r == name:
                first[r] = step
                producer[r] = node.name
            last[r] = max(last.get(r, step), step)
    for name in g.outputs:
        last[root[name][0]] = last_step
    members: dict[str, list[str]] = {}
    for name, (r, _) in root.items():
        members.setdefault(r, []).append(name)
    bufs = []
    for r, names in members.items():
        at = tuple(root[t][1] for t in names)
        bufs.append(Buffer(r, tuple(names), g.tensor(r).nbytes, first[r], last.get(r, first[r]), producer[r],
                           at=at if any(at) else ()))
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
