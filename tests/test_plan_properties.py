"""Property tests: random lifetimes and sizes always give verified plans, never below the lower bound;
the exact solver reaches the bound on chains; overlap rules never produce an unverified plan."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyaot.plan import Buffer, Overlap, plan_memory, verify_plan
from tinyaot.plan.exact import solve_exact
from tinyaot.plan.lifetimes import lower_bound

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def lifetimes(draw, max_buffers: int = 10, steps: int = 8):
    n = draw(st.integers(1, max_buffers))
    bufs = []
    for i in range(n):
        first = draw(st.integers(0, steps - 1))
        last = draw(st.integers(first, steps - 1))
        nbytes = draw(st.integers(0, 300))
        bufs.append(Buffer(f"t{i}", (f"t{i}",), nbytes, first, last, "input" if first == 0 else f"n{first}"))
    return bufs


@FAST
@given(lifetimes(), st.sampled_from([1, 4, 16]))
def test_random_lifetimes_plans_verify_and_respect_the_bound(bufs, alignment):
    plan = plan_memory(bufs, 8, alignment=alignment)
    verify_plan(plan)
    assert plan.arena_bytes >= plan.lower_bound == lower_bound(bufs, 8)
    assert plan.arena_bytes % alignment == 0
    assert plan.arena_bytes <= min(a for _, a in plan.candidates)


@st.composite
def chains(draw):
    """x0 -> x1 -> ... : buffer i lives at steps i-1 and i (the graph input from step 0)."""
    alignment = draw(st.sampled_from([4, 16]))
    sizes = draw(st.lists(st.integers(1, 40), min_size=2, max_size=9))
    bufs = [Buffer(f"x{i}", (f"x{i}",), alignment * s, max(i - 1, 0), i, "input" if i == 0 else f"n{i - 1}")
            for i, s in enumerate(sizes)]
    return bufs, alignment


@FAST
@given(chains())
def test_exact_solver_equals_the_lower_bound_on_chains(case):
    bufs, alignment = case
    n_steps = len(bufs)
    bound = lower_bound(bufs, n_steps)
    offsets, optimal = solve_exact(bufs, alignment, (), sum(b.nbytes for b in bufs), 2.0)
    assert optimal
    arena = max(offsets[b.name] + b.nbytes for b in bufs)
    assert arena == bound
    assert plan_memory(bufs, n_steps, alignment=alignment).arena_bytes == bound


@st.composite
def chains_with_overlaps(draw):
    """A chain where some steps allow the output over the dying input at a random safe distance."""
    sizes = draw(st.lists(st.integers(1, 30), min_size=2, max_size=8))
    bufs = [Buffer(f"x{i}", (f"x{i}",), 4 * s, max(i - 1, 0), i, "input" if i == 0 else f"n{i - 1}")
            for i, s in enumerate(sizes)]
    overlaps = []
    for i in range(1, len(bufs)):
        if draw(st.booleans()):
            d = 4 * draw(st.integers(-8, 30))
            overlaps.append(Overlap(bufs[i - 1].name, bufs[i].name, i - 1, d, 1))
    return bufs, tuple(overlaps)


@FAST
@given(chains_with_overlaps())
def test_overlap_rules_give_verified_plans_never_worse_than_without(case):
    bufs, overlaps = case
    n = len(bufs)
    with_rules = plan_memory(bufs, n, overlaps=overlaps)
    without = plan_memory(bufs, n)
    verify_plan(with_rules)
    assert with_rules.arena_bytes <= without.arena_bytes == without.lower_bound
    for ov in overlaps:
        if with_rules.shares_bytes(ov):
            assert with_rules.offsets[ov.output] <= with_rules.offsets[ov.input] - ov.distance
    # No plan can go below the largest single buffer, nor below any pair without a rule.
    assert with_rules.arena_bytes >= max(b.nbytes for b in bufs)
