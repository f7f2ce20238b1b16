"""Placement: heuristics vs the exact CP-SAT solver, the verifier, alignment, in-place and partial overlap."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from plan_graphs import GraphBuilder, chain_graph

from tinyaot.errors import PlanError
from tinyaot.ir import ops
from tinyaot.plan import Buffer, MemoryPlan, Overlap, buffers_of, plan_graph, plan_memory, verify_plan
from tinyaot.plan import overlap as overlap_mod
from tinyaot.plan.overlap import OverlapRule, elementwise_rules, streaming_distance
from tinyaot.ref import interpreter as interp_mod
from tinyaot.ref.interpreter import Interpreter

# Found by a random search: every greedy order needs 124 B, the busiest step holds 104 B.
GREEDY_TRAP = [(5, 5, 32), (0, 1, 32), (0, 4, 20), (0, 5, 28), (2, 6, 16), (3, 5, 16), (3, 5, 12)]


def _bufs(spec):
    return [Buffer(f"t{i}", (f"t{i}",), n, f, last, "input" if f == 0 else f"n{f}")
            for i, (f, last, n) in enumerate(spec)]


def test_exact_solver_reaches_the_bound_where_every_heuristic_fails():
    bufs = _bufs(GREEDY_TRAP)
    plan = plan_memory(bufs, 7, alignment=4)
    heuristics = [a for name, a in plan.candidates if name.startswith("greedy")]
    assert min(heuristics) == 124
    assert plan.lower_bound == 104
    assert plan.arena_bytes == 104 and plan.planner == "cp-sat (optimal)"
    verify_plan(plan)
    greedy_only = plan_memory(bufs, 7, alignment=4, exact=False)
    assert greedy_only.arena_bytes == 124


def test_exact_solver_is_deterministic():
    bufs = _bufs(GREEDY_TRAP)
    assert plan_memory(bufs, 7).offsets == plan_memory(bufs, 7).offsets


def test_alignment_16_is_honoured_and_bad_alignment_rejected():
    bufs = _bufs([(0, 1, 10), (1, 2, 6), (2, 3, 20), (0, 3, 3)])
    plan = plan_memory(bufs, 4, alignment=16)
    assert all(off % 16 == 0 for off in plan.offsets.values())
    assert plan.arena_bytes % 16 == 0 and plan.arena_bytes >= plan.lower_bound
    with pytest.raises(ValueError, match="power of two"):
        plan_memory(bufs, 4, alignment=12)


def _plan(bufs, offsets, arena, overlaps=(), alignment=4):
    return MemoryPlan(tuple(bufs), offsets, arena, 0, alignment, "hand", 8, tuple(overlaps))


def test_verifier_rejects_every_kind_of_bad_plan():
    a, b = Buffer("a", ("a",), 16, 0, 1, "input"), Buffer("b", ("b",), 16, 1, 2, "n1")
    verify_plan(_plan([a, b], {"a": 0, "b": 16}, 32))
    with pytest.raises(PlanError, match="overlaps"):
        verify_plan(_plan([a, b], {"a": 0, "b": 8}, 32))
    with pytest.raises(PlanError, match="not 4-byte aligned"):
        verify_plan(_plan([a, b], {"a": 0, "b": 18}, 36))
    with pytest.raises(PlanError, match="outside the arena"):
        verify_plan(_plan([a, b], {"a": 0, "b": 16}, 28))
    with pytest.raises(PlanError, match="no offset"):
        verify_plan(_plan([a, b], {"a": 0}, 32))
    # An overlap rule allows b over a at step 1 (a dies there, b is born there) at distance 4.
    rule = Overlap("a", "b", 1, 4, 4)
    verify_plan(_plan([a, b], {"a": 8, "b": 4}, 24, [rule]))
    with pytest.raises(PlanError, match="safe distance 4"):
        verify_plan(_plan([a, b], {"a": 8, "b": 8}, 24, [rule]))
    # The same rule cannot excuse an overlap when the input lives on past the output's birth.
    a_long = Buffer("a", ("a",), 16, 0, 2, "input")
    with pytest.raises(PlanError, match="only allowed when the input dies"):
        verify_plan(_plan([a_long, b], {"a": 8, "b": 4}, 24, [rule]))


def test_planners_honour_overlap_rules():
    a, b, c = (Buffer("a", ("a",), 64, 0, 1, "input"), Buffer("b", ("b",), 64, 1, 2, "n1"),
               Buffer("c", ("c",), 32, 2, 3, "n2"))
    full = plan_memory([a, b, c], 4, overlaps=(Overlap("a", "b", 1, 0, 8),))
    assert full.lower_bound == 128 and full.arena_bytes == 96  # b in place over a, c beside b
    partial = plan_memory([a, b, c], 4, overlaps=(Overlap("a", "b", 1, 16, 8),), exact=False)
    assert partial.arena_bytes == 96  # b at 0, a at 16: 80 B for the pair; c over the dead part of a
    assert partial.planner == "greedy-by-size-latest-first"
    for plan in (full, partial):
        assert plan.offsets["b"] <= plan.offsets["a"] - plan.overlaps[0].distance
        verify_plan(plan)


def test_streaming_distance():
    assert streaming_distance(800, 800, 100) == 8  # equal channels: input plus one pixel
    assert streaming_distance(800, 1600, 100) == 808  # expanding 8 -> 16: output plus one input pixel
    assert streaming_distance(640, 640, 640) == 1  # elementwise kernel seen as 1-byte units
    with pytest.raises(ValueError):
        streaming_distance(800, 801, 100)


def test_reshape_is_a_view_in_the_plan():
    b = GraphBuilder(3)
    x = b.input("x", (1, 4, 4, 2))
    f = b.reshape("flat", x, (1, 32))
    y = b.fc("fc", f, 8)
    b.output(y)
    plan = plan_graph(b.g)
    assert plan.offset_of("flat_out") == plan.offset_of("x")
    assert plan.buffer_of("flat_out").name == "x" and len(plan.buffers) == 2
    assert plan.arena_bytes == plan.lower_bound == 40


# ---- in place: a test-only elementwise op, and a wrong rule that the reference must expose ----------------

def _add_one(x, p):
    return np.clip(x.astype(np.int16) + 1, -128, 127).astype(np.int8)


def _reverse(x, p):
    return x.reshape(-1)[::-1].reshape(x.shape).copy()


@pytest.fixture()
def test_ops(monkeypatch):
    for name in ("t_add_one", "t_reverse"):  # test-only ops, registered like any op (ir/ops.py)
        monkeypatch.setitem(ops.OPS, name, ops.OpSpec(name, ("x",), ops.NoAttrs, "test op", ops.INHERIT,
                                                      overlap="elementwise"))
    monkeypatch.setitem(interp_mod.KERNELS, "t_add_one", (lambda node, g: None, _add_one))
    monkeypatch.setitem(interp_mod.KERNELS, "t_reverse", (lambda node, g: None, _reverse))
    monkeypatch.setitem(overlap_mod.OVERLAP_OPS, "t_add_one", elementwise_rules)
    # A wrong rule on purpose: reversal reads the end of its input while it writes the start.
    monkeypatch.setitem(overlap_mod.OVERLAP_OPS, "t_reverse", elementwise_rules)


def _elementwise_graph(op):
    b = GraphBuilder(5)
    x = b.input("x", (1, 6, 4))
    h = b.fc("fc1", x, 16)
    e = b.unary(op, "ew", h)
    y = b.fc("fc2", e, 4)
    b.output(y)
    return b.g


def _run_both(g):
    """Outputs with the overlapping plan and with a plan where nothing overlaps (the oracle)."""
    plan = plan_graph(g)
    disjoint = plan_memory(buffers_of(g), len(g.nodes))  # no overlap rules
    x = np.random.default_rng(0).integers(-128, 128, size=(5, 1, 6, 4)).astype(np.int8)
    return plan, disjoint, Interpreter(g, plan).run(x), Interpreter(g, disjoint).run(x)


def test_elementwise_op_runs_in_place_below_the_layer_by_layer_bound(test_ops):
    plan, disjoint, got, want = _run_both(_elementwise_graph("t_add_one"))
    (ov,) = plan.overlaps
    assert (ov.input, ov.output, ov.distance, ov.units) == ("fc1_out", "ew_out", 0, 6)
    assert plan.shares_bytes(ov)
    assert plan.arena_bytes == 120 < plan.lower_bound == disjoint.arena_bytes == 192
    np.testing.assert_array_equal(got, want)


def test_a_wrong_overlap_rule_gives_a_wrong_answer_in_the_reference(test_ops):
    plan, _, got, want = _run_both(_elementwise_graph("t_reverse"))
    assert plan.shares_bytes(plan.overlaps[0])
    assert (got != want).any()


def test_an_input_that_lives_on_is_never_overwritten(test_ops):
    b = GraphBuilder(6)
    x = b.input("x", (1, 16))
    h = b.fc("fc1", x, 16)
    e = b.unary("t_add_one", "ew", h)
    y1 = b.fc("fc2", e, 4)
    y2 = b.fc("fc3", h, 4)  # h is read after the elementwise op: no in-place
    b.output(y1)
    b.output(y2)
    plan = plan_graph(b.g, reorder=False)
    assert plan.overlaps == ()


# ---- partial overlap: fully_connected over NHWC pixels is a 1x1 convolution that streams pixel by pixel ---

def _pointwise_rules(distance_error: int):
    def rules(node, g):
        x, y = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
        if len(x.shape) != 4:
            return []
        pixels = x.size // x.shape[-1]
        d = streaming_distance(x.nbytes, y.nbytes, pixels) + distance_error
        return [OverlapRule(x.name, y.name, d, pixels)]
    return rules


def _pointwise_graph():
    b = GraphBuilder(8)
    x = b.input("x", (1, 6, 6, 8))
    h = b.fc("pw1", x, 8)  # 1x1 conv 8 -> 8 channels
    h = b.fc("pw2", h, 16)  # expanding 1x1 conv
    y = b.fc("head", b.reshape("flat", h, (1, 576)), 10)
    b.output(y)
    return b.g


def _pointwise_plan(monkeypatch, distance_error):
    monkeypatch.setitem(overlap_mod.OVERLAP_OPS, "fully_connected", _pointwise_rules(distance_error))
    g = _pointwise_graph()
    return g, plan_graph(g), plan_memory(buffers_of(g), len(g.nodes))


def test_pointwise_conv_overlaps_at_the_safe_distance(monkeypatch):
    g, plan, disjoint = _pointwise_plan(monkeypatch, 0)
    assert {(o.input, o.output, o.distance) for o in plan.overlaps} == {
        ("x", "pw1_out", 8), ("pw1_out", "pw2_out", 296)}
    assert plan.shares_bytes(next(o for o in plan.overlaps if o.output == "pw2_out"))
    # pw1 -> pw2: 288 + 576 B without overlap, 576 + 8 (one input pixel) streamed; the head step then
    # decides: 576 + 10 B, aligned to 588.
    assert disjoint.arena_bytes == plan.lower_bound == 864
    assert plan.arena_bytes == 588
    x = np.random.default_rng(1).integers(-128, 128, size=(4, 1, 6, 6, 8)).astype(np.int8)
    np.testing.assert_array_equal(Interpreter(g, plan).run(x), Interpreter(g, disjoint).run(x))


def test_pointwise_conv_too_close_gives_a_wrong_answer(monkeypatch):
    g, plan, disjoint = _pointwise_plan(monkeypatch, -24)  # three pixels too close: unsafe
    assert any(plan.shares_bytes(o) for o in plan.overlaps)
    x = np.random.default_rng(1).integers(-128, 128, size=(4, 1, 6, 6, 8)).astype(np.int8)
    assert (Interpreter(g, plan).run(x) != Interpreter(g, disjoint).run(x)).any()


@pytest.mark.host
def test_pointwise_conv_overlap_in_c_equals_reference(monkeypatch):
    from tinyaot.codegen import generate_c
    from tinyaot.targets.host import HostModel, build_shared_library

    g, plan, _ = _pointwise_plan(monkeypatch, 0)
    src = generate_c(g, plan, "pwover")
    lib = build_shared_library(src.files, "pwover")
    host = HostModel(lib, "pwover", 288, 10, plan.arena_bytes)
    host.init(None)
    x = np.random.default_rng(2).integers(-128, 128, size=(20, 1, 6, 6, 8)).astype(np.int8)
    np.testing.assert_array_equal(host.run(x.reshape(20, -1)), Interpreter(g, plan).run(x).reshape(20, -1))


def test_plan_graph_on_a_chain_is_at_the_bound():
    g = chain_graph([40, 12, 80, 8, 24])
    plan = plan_graph(copy.deepcopy(g))
    assert plan.arena_bytes == plan.lower_bound == 92
