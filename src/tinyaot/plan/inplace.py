"""Ring variants of conv2d and depthwise_conv2d: outputs written over their own input, no drift.

The plain kernels write output pixel q as soon as it is computed, so their output must start a safe distance
below their input (plan/overlap.py, window_rules). In a chain every such layer moves the next feature map
further down and the drift adds up (KWS: 4 x 448 + 4 x 64 B over one 8,000 B map). A ring variant computes
pixel q into slot q % R of a scratch ring of R = delay + 1 output pixels and then copies pixel q - delay to
the output (the last `delay` pixels after the loop). Holding `delay` pixels back moves the safe distance up
by as many output pixels; the smallest delay that brings it to <= 0 lets the output sit exactly over its
input: a 3x3 depthwise with padding 1 holds one row + one pixel back (TinyEngine's in-place depthwise, done
with a ring), a 1x1 conv with equal channels nothing (a ring of one pixel).

The ring is a scratch buffer in the plan, live only at its node's step, placed by the same planners and
checked by the same verifier. The compiler picks the variant here, at plan time, as the node's kernel record
(plan/choice.py; a node left plain keeps why it has no ring), and the code generator emits a direct call (no
run-time dispatch). Numerics are the plain kernels' (same integer results); only where
and when bytes are written differ, and the reference interpreter runs the ring in the arena pixel by pixel
(ref/inplace.py), so a wrong distance or a misplaced ring changes its answer.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.ir import Graph
from tinyaot.ir.ops import OPS, ops_with_variant
from tinyaot.ir.variants import PLAIN, KernelOptions
from tinyaot.plan.choice import KernelChoice, RingVariant, ring_choice
from tinyaot.plan.kernels import home
from tinyaot.plan.lifetimes import Buffer
from tinyaot.plan.overlap import Overlap, window_need
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.verify import verify_plan

RING_OPS = ops_with_variant(placed=True)


def ring_distance(need: np.ndarray, out_c: int, delay: int, in_bytes: int) -> int:
    """Safe distance of a kernel that computes pixel q and then writes pixel q - delay.

    That write must stay below every input byte pixels > q still read:
    out + (q - delay + 1) * out_c <= in + need[q + 1] for delay <= q < pixels - 1 (after the last pixel
    nothing is read, so the final copies are free).
    """
    q = np.arange(delay, need.size - 1)
    if q.size == 0:
        return -in_bytes  # nothing is written while anything is still read
    return int(np.max((q - delay + 1) * out_c - need[q + 1]))


def smallest_delay(need: np.ndarray, out_c: int, in_bytes: int) -> int:
    """The smallest delay whose ring distance is <= 0 (the distance never grows with the delay)."""
    lo, hi = 0, max(need.size - 1, 0)
    while lo < hi:
        mid = (lo + hi) // 2
        if ring_distance(need, out_c, mid, in_bytes) <= 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


def choose_variants(g: Graph, overlaps: tuple[Overlap, ...], inside=frozenset()) -> list[RingVariant]:
    """The ring candidates of ring_candidates (without why the other nodes have none)."""
    return ring_candidates(g, overlaps, inside)[0]


def ring_candidates(g: Graph, overlaps: tuple[Overlap, ...], inside=frozenset()) -> tuple[list[RingVariant],
                                                                                            dict[str, str]]:
    """A ring variant for every node with one (conv2d, depthwise_conv2d) whose plain overlap applies (the input
    dies there), whose kernel qualifies (ref/inplace.py) and whose ring brings the safe distance down to <= 0
    with a ring smaller than its output; none for an input in `inside`, a slice read in place inside its buffer
    (the ring's distances are from the buffer's start). Also: node -> why it has no candidate."""
    taken = set(g.tensors)
    found, declined = [], {}
    for ov in overlaps:
        node = g.nodes[ov.step]
        if node.op not in RING_OPS or ov.output != node.outputs[0]:
            continue
        why = _no_ring(node, g, ov, inside)
        if why:
            declined[node.name] = why
            continue
        need, out_c = window_need(node, g)
        in_bytes = g.tensor(node.inputs[0]).nbytes
        delay = smallest_delay(need, out_c, in_bytes)
        distance = ring_distance(need, out_c, delay, in_bytes)
        if distance >= ov.distance or delay + 1 >= need.size:
            declined[node.name] = ("no ring brings its output closer to its input than the plain kernel"
                                   if distance >= ov.distance else "its ring would hold back its whole output")
            continue
        scratch = f"{node.name}_ring"
        while scratch in taken:
            scratch += "_"
        taken.add(scratch)
        found.append(RingVariant(node.name, ov.step, ov.input, ov.output, scratch, delay + 1, out_c, need.size,
                                 distance))
    return found, declined


def _no_ring(node, g: Graph, ov: Overlap, inside) -> str:
    """Why `node` cannot have a ring at all ("" when it may)."""
    if node.inputs[0] in inside:
        return "its input is a slice read in place inside another tensor's buffer"
    ok, why = home(_placed(node.op)).qualifies(node, g, KernelOptions())
    if not ok:
        return why
    return "" if window_need(node, g) is not None else "its output is empty"


def _placed(op: str):
    """The op's variant the placement chooses (its ring)."""
    return next(v for v in OPS[op].variants if v.placed)


def ring_buffer(v: RingVariant) -> Buffer:
    return Buffer(v.scratch, (v.scratch,), v.ring_bytes, v.step, v.step, v.node, scratch=True)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def plan_with_rings(g: Graph, buffers: list[Buffer], baseline: MemoryPlan, exact: bool = True,
                    keep=frozenset()) -> MemoryPlan:
    """Plan again with ring variants (rings as scratch buffers, ring distances as rules) and keep the result
    only if its arena is smaller than `baseline`'s. A ring pays off only where the drift it removes matters
    downstream, so the candidates are the variants with rings up to each ring size (smallest first), placed by
    the heuristics; the exact solver then places the best set. Variants whose output the plan did not put over
    its input are dropped. The lower bound reported stays the graph's own (no scratch)."""
    inside = {t for b in buffers for t in b.tensors if b.offset_in(t)}
    candidates, declined = ring_candidates(g, baseline.overlaps, inside)
    variants = [v for v in candidates if v.node not in keep]  # keep: a variant chosen before placement runs it
    best = baseline
    for limit in sorted({v.ring_bytes for v in variants}):
        chosen = [v for v in variants if v.ring_bytes <= limit]
        plan = plan_rings(buffers, baseline, chosen, exact=False)
        if plan.arena_bytes < best.arena_bytes:
            best = plan
    if best is not baseline and exact:
        solved = plan_rings(buffers, baseline, list(best.rings), exact=True)
        best = solved if solved.arena_bytes <= best.arena_bytes else best
    return replace(best, kernels=ring_records(g, best, {v.node for v in variants}, declined, keep))


def ring_records(g: Graph, plan: MemoryPlan, tried: set[str], declined: dict[str, str], keep) -> tuple:
    """One record per node with a ring variant: the plan's ring, or its plain kernel and why it has no ring."""
    records = []
    for node in g.nodes:
        if node.op not in RING_OPS:
            continue
        choice = plan.kernel_of(node.name)
        if choice is not None and choice.ring is not None:
            records.append(choice)
            continue
        if node.name in keep:
            why = "a variant chosen before placement runs it"
        elif node.name in tried:
            why = "the arena is no smaller with its ring"
        else:
            why = declined.get(node.name, "its input lives on after it (read later, an output, or kept by the "
                                          "caller's contract): nothing may be written over it")
        records.append(KernelChoice(node.name, PLAIN, rejected=((_placed(node.op).name, why),)))
    return tuple(records)


def plan_rings(buffers: list[Buffer], baseline: MemoryPlan, variants: list[RingVariant], exact: bool) -> MemoryPlan:
    """Place `buffers` plus the rings of `variants` under the ring rules; keep the variants the placement uses."""
    by_pair = {(v.input, v.output): v for v in variants}
    rings = {v.node for v in variants}
    buffers = [b for b in buffers if not (b.scratch and b.producer in rings)]  # a ring node's kernel has no work
    ring_rules = tuple(
        replace(o, distance=by_pair[o.input, o.output].distance, units=by_pair[o.input, o.output].pixels)
        if (o.input, o.output) in by_pair else o
        for o in baseline.overlaps
    )
    trial = plan_memory(list(buffers) + [ring_buffer(v) for v in variants], baseline.n_steps,
                        alignment=baseline.alignment, overlaps=ring_rules, exact=exact)
    kept = {(r.input, r.output) for r in ring_rules if (r.input, r.output) in by_pair and trial.shares_bytes(r)}
    used = tuple(v for v in variants if (v.input, v.output) in kept)
    rules = tuple(r if (r.input, r.output) in kept else o for r, o in zip(ring_rules, baseline.overlaps))
    bufs = tuple(list(buffers) + [ring_buffer(v) for v in used])
    offsets = {b.name: trial.offsets[b.name] for b in bufs}
    arena = _align(max((offsets[b.name] + b.nbytes for b in bufs), default=0), baseline.alignment)
    tried = baseline.candidates + tuple((f"{name} + rings", n) for name, n in trial.candidates)
    plan = MemoryPlan(bufs, offsets, arena, baseline.lower_bound, baseline.alignment,
                      f"{trial.planner} + ring kernels", baseline.n_steps, rules, tried,
                      kernels=tuple(ring_choice(v) for v in used))
    verify_plan(plan)
    return plan
