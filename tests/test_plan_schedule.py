"""Memory-aware op order: the chosen order's peak beats the source order's on branchy graphs, never loses."""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import GraphBuilder, branchy_concat_graph, branchy_graph

from tinyaot.ir import Graph
from tinyaot.plan import buffers_of, plan_graph, plan_memory
from tinyaot.plan.schedule import best_order, peak_of, schedule


def _is_topological(g: Graph) -> bool:
    seen = set(g.inputs) | {t.name for t in g.constants()}
    for n in g.nodes:
        if not set(n.inputs) <= seen:
            return False
        seen.update(n.outputs)
    return True


def _with_order(g: Graph, names) -> Graph:
    by = {n.name: n for n in g.nodes}
    return Graph(g.tensors, [by[n] for n in names], g.inputs, g.outputs, g.layout)


def _all_orders(g: Graph):
    for perm in itertools.permutations(g.nodes):
        trial = Graph(g.tensors, list(perm), g.inputs, g.outputs, g.layout)
        if _is_topological(trial):
            yield trial


def test_branchy_graph_order_beats_the_source_order_and_computes_the_same():
    g = branchy_graph()
    source = copy.deepcopy(g)
    result = schedule(g)
    assert result.method == "exact"
    assert result.source_peak == 16 + 64 + 64 == 144  # source order: both wide tensors live at once
    assert result.peak == 16 + 64 + 4 == 84 < result.source_peak
    assert [n.name for n in g.nodes] == list(result.order) == ["a1", "a2", "c1", "c2"]
    assert _is_topological(g)
    plan, source_plan = plan_graph(g, reorder=False), plan_graph(source, reorder=False)
    assert plan.arena_bytes == plan.lower_bound == 84 and source_plan.arena_bytes == 144
    from tinyaot.ref.interpreter import Interpreter

    x = np.random.default_rng(3).integers(-128, 128, size=(6, 1, 16)).astype(np.int8)
    for name in ("a2_out", "c2_out"):
        got, want = [], []
        for xi in x:
            a, b = Interpreter(g, plan), Interpreter(source, source_plan)
            a.invoke(xi)
            b.invoke(xi)
            got.append(a.view(name).copy())
            want.append(b.view(name).copy())
        np.testing.assert_array_equal(np.stack(got), np.stack(want))


def test_exact_search_matches_brute_force_over_every_order():
    g = branchy_graph(width=40)
    b = GraphBuilder(4)
    x = b.input("x", (1, 8))
    h = b.fc("h", x, 48)
    t1 = b.fc("t1", h, 12)
    t2 = b.fc("t2", b.reshape("r", h, (1, 6, 8)), 20)
    u = b.fc("u", t1, 100)
    b.output(b.fc("v", u, 2))
    b.output(t2)
    for graph in (g, b.g):
        best = min(peak_of(o) for o in _all_orders(graph))
        assert best_order(graph).peak == best


def test_wide_graph_falls_back_to_beam_search_and_stays_valid():
    b = GraphBuilder(9)
    x = b.input("x", (1, 8))
    for i in range(12):  # 12 independent two-layer branches: 3^12 downsets, too many for the exact search
        b.output(b.fc(f"n{i}", b.fc(f"w{i}", x, 32 + i), 2))
    g = b.g
    result = best_order(g)
    assert result.method in ("beam", "source")
    assert result.peak <= result.source_peak
    schedule(g)
    assert _is_topological(g) and peak_of(g) == result.peak


@st.composite
def random_dags(draw):
    """Random fully_connected DAGs: each node reads one earlier tensor; unread tensors are outputs."""
    seed = draw(st.integers(0, 10_000))
    n = draw(st.integers(2, 7))
    b = GraphBuilder(seed)
    tensors = [b.input("x", (1, draw(st.integers(1, 24))))]
    read = set()
    for i in range(n):
        src = tensors[draw(st.integers(0, len(tensors) - 1))]
        read.add(src)
        tensors.append(b.fc(f"n{i}", src, draw(st.integers(1, 40))))
    for t in tensors[1:]:
        if t not in read:
            b.output(t)
    return b.g


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dags())
def test_random_dags_never_worse_than_source_and_plans_verify(g):
    result = best_order(g)
    assert result.peak <= result.source_peak
    if len(g.nodes) <= 6:
        assert result.peak == min(peak_of(o) for o in _all_orders(g))
    schedule(g)
    assert _is_topological(g)
    plan = plan_memory(buffers_of(g), len(g.nodes))  # verified inside
    assert plan.lower_bound == result.peak <= plan.arena_bytes


@pytest.mark.host
def test_branchy_concat_model_reordered_runs_bit_exact_in_reference_and_c():
    from conftest import have_host_cc

    from tinyaot.codegen import generate_c
    from tinyaot.ref.interpreter import Interpreter

    g = branchy_concat_graph()
    source = copy.deepcopy(g)
    source_plan = plan_graph(source, reorder=False)
    plan = plan_graph(g)
    assert plan.schedule == "exact" and plan.source_lower_bound == source_plan.lower_bound == 16 + 96 + 96
    assert plan.lower_bound == plan.arena_bytes == 16 + 96 + 8 < source_plan.arena_bytes
    x = np.random.default_rng(4).integers(-128, 128, size=(30, 1, 16)).astype(np.int8)
    ref = Interpreter(g, plan).run(x)
    np.testing.assert_array_equal(ref, Interpreter(source, source_plan).run(x))
    if have_host_cc():
        from tinyaot.targets.host import HostModel, build_shared_library

        host = HostModel(build_shared_library(generate_c(g, plan, "branchy").files, "branchy"), "branchy", 16, 16,
                         plan.arena_bytes)
        host.init(None)
        np.testing.assert_array_equal(host.run(x.reshape(30, 16)), ref.reshape(30, 16))
