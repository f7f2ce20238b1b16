"""Placement heuristics. Each places buffers first-fit in some order; the smallest arena wins."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tinyaot.plan.lifetimes import Buffer, lower_bound
from tinyaot.plan.verify import verify_plan


@dataclass(frozen=True)
class MemoryPlan:
    buffers: tuple[Buffer, ...]
    offsets: dict[str, int]  # buffer name -> arena offset
    arena_bytes: int
    lower_bound: int
    alignment: int
    planner: str
    n_steps: int

    def buffer_of(self, tensor: str) -> Buffer:
        for b in self.buffers:
            if tensor in b.tensors:
                return b
        raise KeyError(tensor)

    def offset_of(self, tensor: str) -> int:
        return self.offsets[self.buffer_of(tensor).name]


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def first_fit(order: list[Buffer], alignment: int) -> dict[str, int]:
    """Place each buffer at the lowest aligned offset that clears every time-overlapping placed one."""
    placed: list[tuple[Buffer, int]] = []
    offsets: dict[str, int] = {}
    for buf in order:
        busy = sorted((off, off + b.nbytes) for b, off in placed if b.overlaps_in_time(buf) and b.nbytes)
        candidate = 0
        for start, end in busy:
            if candidate + buf.nbytes <= start:
                break
            candidate = max(candidate, _align(end, alignment))
        offsets[buf.name] = candidate
        placed.append((buf, candidate))
    return offsets


ORDERS: dict[str, Callable[[Buffer], tuple]] = {
    "greedy-by-size": lambda b: (-b.nbytes, b.first, b.name),
    "greedy-by-first-use": lambda b: (b.first, -b.nbytes, b.name),
    "greedy-by-lifetime": lambda b: (-(b.last - b.first), -b.nbytes, b.name),
    "greedy-by-area": lambda b: (-(b.last - b.first + 1) * b.nbytes, b.name),
}


def plan_memory(buffers: list[Buffer], n_steps: int, alignment: int = 4) -> MemoryPlan:
    if alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    bound = lower_bound(buffers, n_steps)
    best: MemoryPlan | None = None
    for name, key in ORDERS.items():
        offsets = first_fit(sorted(buffers, key=key), alignment)
        arena = max((offsets[b.name] + b.nbytes for b in buffers), default=0)
        arena = _align(arena, alignment)
        plan = MemoryPlan(tuple(buffers), offsets, arena, bound, alignment, name, n_steps)
        verify_plan(plan)
        if best is None or plan.arena_bytes < best.arena_bytes:
            best = plan
    assert best is not None
    return best
