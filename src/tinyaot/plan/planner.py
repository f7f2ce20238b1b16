"""Placement: greedy first-fit heuristics plus an exact CP-SAT solver for small graphs; the smallest arena wins.

Every candidate plan passes the independent verifier (plan/verify.py) before it can win.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tinyaot.plan.choice import KernelChoice, RingVariant
from tinyaot.plan.exact import solve_exact
from tinyaot.plan.lifetimes import Buffer, lower_bound
from tinyaot.plan.overlap import Overlap
from tinyaot.plan.state import state_size
from tinyaot.plan.verify import verify_plan

EXACT_MAX_BUFFERS = 48  # above this the CP-SAT model is not worth its time: the heuristics decide
EXACT_TIME_LIMIT = 2.0  # CP-SAT deterministic time units (about seconds), so plans are reproducible


@dataclass(frozen=True)
class MemoryPlan:
    buffers: tuple[Buffer, ...]
    offsets: dict[str, int]  # buffer name -> arena offset
    arena_bytes: int
    lower_bound: int  # layer-by-layer bound: live bytes at the busiest step, no overlap
    alignment: int
    planner: str
    n_steps: int
    overlaps: tuple[Overlap, ...] = ()  # in-place / partial overlaps the plan may use
    candidates: tuple[tuple[str, int], ...] = ()  # (planner, arena bytes) of every plan tried
    schedule: str = "source"  # how the op order was chosen: "source" | "exact" | "beam"
    source_lower_bound: int | None = None  # the bound of the order the graph came in, when reordered
    input_buffer: str = ""  # the buffers holding the graph's input and output (plan/contract.py)
    output_buffer: str = ""
    keep_input: bool = False  # asked: no other buffer may share a byte with the input
    separate_output: bool = False  # asked: the output may not share a byte with the input
    kernels: tuple[KernelChoice, ...] = ()  # per node whose op has kernel variants: the one it runs (plan/choice.py)
    optimize: str = "memory"  # the mode the kernels were chosen for: speed | size | memory
    layer_modes: tuple[tuple[str, str], ...] = ()  # (layer, mode) of the layers chosen for another mode (budgets)
    state: tuple = ()  # StateSlot per stateful node: the state region, apart from the arena (plan/state.py)

    @property
    def state_bytes(self) -> int:
        """Bytes of the state region (0 for a model without state); RAM = arena + state."""
        return state_size(self.state, self.alignment)

    def state_of(self, node: str):
        """The StateSlot of this node, or None."""
        return next((s for s in self.state if s.node == node), None)

    def buffer_of(self, tensor: str) -> Buffer:
        for b in self.buffers:
            if tensor in b.tensors:
                return b
        raise KeyError(tensor)

    def offset_of(self, tensor: str) -> int:
        b = self.buffer_of(tensor)
        return self.offsets[b.name] + b.offset_in(tensor)

    def reads_in_place(self, node) -> bool:
        """Whether `node` has no kernel here: its output names bytes of its input (a view, or a slice read in
        place, plan/lifetimes.py)."""
        if not node.inputs or len(node.outputs) != 1:
            return False
        try:
            return self.buffer_of(node.outputs[0]).name == self.buffer_of(node.inputs[0]).name
        except KeyError:  # a constant input
            return False

    def shares_bytes(self, ov: Overlap) -> bool:
        """Whether the plan actually placed this overlap's output over its input."""
        a, b = self.buffer_of_name(ov.input), self.buffer_of_name(ov.output)
        oa, ob = self.offsets[a.name], self.offsets[b.name]
        return oa < ob + b.nbytes and ob < oa + a.nbytes and a.nbytes > 0 and b.nbytes > 0

    def mode_of(self, node: str) -> str:
        """The optimize mode this node's kernel was chosen for (a budget may give a layer another than the plan's)."""
        return dict(self.layer_modes).get(node, self.optimize)

    def kernel_of(self, node: str) -> KernelChoice | None:
        """The plan's record of how this node runs (its variant, its scratch); None: its op's plain kernel."""
        return next((k for k in self.kernels if k.node == node), None)

    @property
    def chosen(self) -> tuple[KernelChoice, ...]:
        """The records of the nodes run by a variant rather than their plain kernel."""
        return tuple(k for k in self.kernels if not k.plain)

    @property
    def rings(self) -> tuple[RingVariant, ...]:
        """The rings the placement chose (plan/inplace.py), one per node written over its input through one."""
        return tuple(k.ring for k in self.kernels if k.ring is not None)

    def ring_of(self, node: str) -> RingVariant | None:
        """The ring this node is run through, or None."""
        choice = self.kernel_of(node)
        return choice.ring if choice is not None else None

    def buffer_of_name(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _rules(overlaps) -> dict[tuple[str, str], int]:
    return {(o.input, o.output): o.distance for o in overlaps}


def first_fit(order: list[Buffer], alignment: int, overlaps=()) -> dict[str, int]:
    """Place each buffer at the lowest aligned offset that clears every time-overlapping placed one,
    letting an output sit over a dying input where an overlap rule allows it."""
    rules = _rules(overlaps)
    placed: list[tuple[Buffer, int]] = []
    offsets: dict[str, int] = {}
    for buf in order:
        forbidden = []  # offsets x in [lo, hi) collide with a placed buffer
        for p, off in placed:
            if not p.overlaps_in_time(buf) or not p.nbytes or not buf.nbytes:
                continue
            lo, hi = off - buf.nbytes + 1, off + p.nbytes
            d = rules.get((p.name, buf.name))  # buf is the output: allowed at x <= off - d
            if d is not None:
                lo = max(lo, off - d + 1)
            d = rules.get((buf.name, p.name))  # buf is the input: allowed at x >= off + d
            if d is not None:
                hi = min(hi, off + d)
            if lo < hi:
                forbidden.append((lo, hi))
        x = 0
        for lo, hi in sorted(forbidden):
            if x < lo:
                break
            if x < hi:
                x = _align(hi, alignment)
        offsets[buf.name] = x
        placed.append((buf, x))
    return offsets


ORDERS: dict[str, Callable[[Buffer], tuple]] = {
    "greedy-by-size": lambda b: (-b.nbytes, b.first, b.name),
    "greedy-by-first-use": lambda b: (b.first, -b.nbytes, b.name),
    "greedy-by-lifetime": lambda b: (-(b.last - b.first), -b.nbytes, b.name),
    "greedy-by-area": lambda b: (-(b.last - b.first + 1) * b.nbytes, b.name),
    # outputs before the inputs they overlap: leaves room below an input for a partial-overlap output
    "greedy-by-size-latest-first": lambda b: (-b.nbytes, -b.first, b.name),
}


def _arena(buffers, offsets, alignment) -> int:
    return _align(max((offsets[b.name] + b.nbytes for b in buffers), default=0), alignment)


def plan_memory(buffers: list[Buffer], n_steps: int, alignment: int = 4, overlaps=(), exact: bool = True,
                time_limit: float = EXACT_TIME_LIMIT) -> MemoryPlan:
    """Try every heuristic, then (small graphs) the exact solver; return the smallest verified plan."""
    if alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    overlaps = tuple(overlaps)
    bound = lower_bound(buffers, n_steps)
    plans: list[MemoryPlan] = []

    def add(name: str, offsets: dict[str, int]) -> None:
        plan = MemoryPlan(tuple(buffers), offsets, _arena(buffers, offsets, alignment), bound, alignment, name,
                          n_steps, overlaps)
        verify_plan(plan)
        plans.append(plan)

    for name, key in ORDERS.items():
        add(name, first_fit(sorted(buffers, key=key), alignment, overlaps))
    best = min(plans, key=lambda p: p.arena_bytes)
    aligned_bound = _align(bound, alignment)
    sized = [b for b in buffers if b.nbytes]
    if exact and len(sized) <= EXACT_MAX_BUFFERS and (best.arena_bytes > aligned_bound or overlaps):
        solved = solve_exact(buffers, alignment, overlaps, best.arena_bytes, time_limit)
        if solved is not None:
            offsets, optimal = solved
            add("cp-sat (optimal)" if optimal else "cp-sat", offsets)
    best = min(plans, key=lambda p: p.arena_bytes)  # first wins ties: heuristics before the solver
    tried = tuple((p.planner, p.arena_bytes) for p in plans)
    chosen = MemoryPlan(best.buffers, best.offsets, best.arena_bytes, bound, alignment, best.planner, n_steps,
                        overlaps, tried)
    verify_plan(chosen)
    return chosen
