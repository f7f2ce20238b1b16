"""Exact placement with OR-Tools CP-SAT: rectangles (lifetime x bytes) that must not overlap, minimum arena.

Time runs in half steps so that an output may share bytes with an input that dies at its node (an overlap
rule): a buffer born at step s starts at 2s + 1 (graph inputs at 2s) and ends after 2*last + 2, or after
2*last + 1 when overlap rules cover every buffer born at its last step; those pairs then do not meet in
the NoOverlap2D and get their own constraint: disjoint, or offset(out) <= offset(in) - distance. A kernel's
scratch buffer spans its whole step (2s to 2s + 2), so it meets both the inputs dying there and the outputs.
"""
from __future__ import annotations

from tinyaot.plan.lifetimes import Buffer
from tinyaot.plan.overlap import Overlap


def solve_exact(buffers: list[Buffer], alignment: int, overlaps: tuple[Overlap, ...], upper_bound: int,
                time_limit: float) -> tuple[dict[str, int], bool] | None:
    """Offsets of an arena no larger than `upper_bound` (smaller if the solver finds one), and whether it is
    proven optimal; None if the solver found nothing within its time."""
    from ortools.sat.python import cp_model

    sized = [b for b in buffers if b.nbytes]
    born: dict[int, set[str]] = {}
    for b in sized:
        if b.producer != "input" and not b.scratch:
            born.setdefault(b.first, set()).add(b.name)
    pairs: dict[str, set[str]] = {}
    for ov in overlaps:
        pairs.setdefault(ov.input, set()).add(ov.output)

    m = cp_model.CpModel()
    arena_units = max(upper_bound // alignment, 1)
    arena = m.NewIntVar(0, arena_units * alignment, "arena")
    x, xs, ys = {}, [], []
    for b in sized:
        k = m.NewIntVar(0, max((upper_bound - b.nbytes) // alignment, 0), f"k_{b.name}")
        x[b.name] = k * alignment
        start = 2 * b.first + (0 if b.producer == "input" or b.scratch else 1)  # scratch meets the dying inputs
        covered = born.get(b.last) and born[b.last] <= pairs.get(b.name, set())
        end = 2 * b.last + (1 if covered else 2)
        xs.append(m.NewIntervalVar(start, end - start, end, f"t_{b.name}"))
        y = m.NewIntVar(0, upper_bound, f"y_{b.name}")
        m.Add(y == k * alignment)
        ys.append(m.NewIntervalVar(y, b.nbytes, y + b.nbytes, f"b_{b.name}"))
        m.Add(y + b.nbytes <= arena)
    m.AddNoOverlap2D(xs, ys)
    size = {b.name: b.nbytes for b in sized}
    for ov in overlaps:
        if ov.input not in x or ov.output not in x:
            continue
        xi, xo = x[ov.input], x[ov.output]
        below, above, ruled = (m.NewBoolVar(f"{n}_{ov.input}_{ov.output}") for n in ("below", "above", "rule"))
        m.Add(xo + size[ov.output] <= xi).OnlyEnforceIf(below)
        m.Add(xi + size[ov.input] <= xo).OnlyEnforceIf(above)
        m.Add(xo <= xi - ov.distance).OnlyEnforceIf(ruled)
        m.AddBoolOr([below, above, ruled])
    m.Minimize(arena)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1  # with a deterministic time limit: the same plan on every run
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.max_time_in_seconds = 4 * time_limit + 2
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    offsets = {b.name: 0 for b in buffers}
    for b in sized:
        offsets[b.name] = int(solver.Value(x[b.name]))
    return offsets, status == cp_model.OPTIMAL
