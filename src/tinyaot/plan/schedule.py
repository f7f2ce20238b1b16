"""Memory-aware op order: the topological order of the graph's nodes with the smallest peak of live bytes.

The peak is the layer-by-layer lower bound of plan/lifetimes.py (inclusive lifetimes, views share their
input's bytes, graph outputs live to the end). A dynamic program over the sets of nodes already run
(a downset of the graph) finds the optimal order while the number of such sets per step stays small
(Serenity, MLSys 2020); beyond that the same search keeps only the best states per step (beam search).
The source order is kept unless the chosen order is strictly better, so the result is never worse.
"""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.ir import Graph
from tinyaot.plan.lifetimes import VIEW_OPS, buffers_of, lower_bound

EXACT_MAX_STATES = 4_000  # sets of run nodes per step before the search gives up optimality (keeps it ~1 s)
BEAM_WIDTH = 128


@dataclass(frozen=True)
class ScheduleResult:
    order: tuple[str, ...]  # node names in the chosen order
    peak: int  # lower bound of the chosen order
    source_peak: int  # lower bound of the order the graph came in
    method: str  # "source" | "exact" | "beam"


def peak_of(g: Graph) -> int:
    return lower_bound(buffers_of(g), len(g.nodes))


class _Model:
    """The graph as bitmasks: which nodes each node waits for, and the bytes each node births and frees."""

    def __init__(self, g: Graph):
        nodes = g.nodes
        index = {n.name: i for i, n in enumerate(nodes)}
        root: dict[str, str] = {t.name: t.name for t in g.activations()}
        for n in nodes:
            if n.op in VIEW_OPS:
                root[n.outputs[0]] = root[n.inputs[0]]
        producer_of = {o: index[n.name] for n in nodes for o in n.outputs}
        outputs = {root[o] for o in g.outputs if o in root}
        readers: dict[str, int] = {}
        self.deps = [0] * len(nodes)
        for i, n in enumerate(nodes):
            for t in n.inputs:
                if t in root:
                    readers[root[t]] = readers.get(root[t], 0) | (1 << i)
                    if t in producer_of:
                        self.deps[i] |= 1 << producer_of[t]
        self.births = [0] * len(nodes)  # bytes of buffers a node creates
        self.frees: list[list[tuple[int, int]]] = [[] for _ in nodes]  # (reader mask, bytes) a node may end
        self.start = 0  # bytes held before the first node: graph inputs
        for r in set(root.values()):
            nbytes = g.tensor(r).nbytes
            mask = readers.get(r, 0)
            if r in producer_of:
                p = producer_of[r]
                self.births[p] += nbytes
                if r not in outputs:
                    mask |= 1 << p  # a buffer nobody reads dies at its own step
            else:
                self.start += nbytes
            if r in outputs or not mask:
                continue
            for i in range(len(nodes)):
                if mask >> i & 1:
                    self.frees[i].append((mask, nbytes))
        self.n = len(nodes)

    def step(self, done: int, held: int, i: int) -> tuple[int, int]:
        """(live bytes while node i runs after `done`, bytes held after it)."""
        at = held + self.births[i]
        after = done | (1 << i)
        freed = sum(b for mask, b in self.frees[i] if mask & after == mask)
        return at, at - freed


def _search(m: _Model, max_states: int | None, beam: int | None):
    """DP over downsets; returns (peak, order as indices) or None when max_states is exceeded."""
    layer: dict[int, tuple[int, int, tuple[int, ...]]] = {0: (m.start, m.start, ())}  # done -> peak, held, order
    for _ in range(m.n):
        nxt: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        for done, (peak, held, order) in layer.items():
            for i in range(m.n):
                if done >> i & 1 or m.deps[i] & done != m.deps[i]:
                    continue
                at, after_held = m.step(done, held, i)
                cand = (max(peak, at), after_held, order + (i,))
                key = done | (1 << i)
                old = nxt.get(key)
                if old is None or cand[:2] < old[:2]:
                    nxt[key] = cand
        if max_states is not None and len(nxt) > max_states:
            return None
        if beam is not None and len(nxt) > beam:
            nxt = dict(sorted(nxt.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[1][2]))[:beam])
        layer = nxt
    (peak, _, order), = layer.values()
    return peak, order


def best_order(g: Graph) -> ScheduleResult:
    """Choose the order (without changing `g`)."""
    source = tuple(n.name for n in g.nodes)
    source_peak = peak_of(g)
    if len(g.nodes) < 3:
        return ScheduleResult(source, source_peak, source_peak, "source")
    m = _Model(g)
    found, method = _search(m, EXACT_MAX_STATES, None), "exact"
    if found is None:
        found, method = _search(m, None, BEAM_WIDTH), "beam"
    _, order = found
    names = tuple(g.nodes[i].name for i in order)
    trial = g.replace(nodes=[g.nodes[i] for i in order])
    peak = peak_of(trial)  # measured the planner's way, not trusted from the search
    if peak < source_peak:
        return ScheduleResult(names, peak, source_peak, method)
    return ScheduleResult(source, source_peak, source_peak, "source")


def schedule(g: Graph) -> ScheduleResult:
    """Reorder `g.nodes` in place to the chosen order; returns what was chosen and why."""
    result = best_order(g)
    by_name = {n.name: n for n in g.nodes}
    g.nodes[:] = [by_name[name] for name in result.order]
    return result
