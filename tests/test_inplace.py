"""In-place ring kernels (plan/inplace.py): KWS at one feature map plus a ring, the ring's write order emulated
in the reference (a ring too small or misplaced gives a wrong answer), the verifier's ring checks, and random
conv / depthwise layers run exactly over their input: reference == plain kernel == host C == Cortex-M33."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_int8, shared_file
from kernel_suite import Case, one_op_graph, run_host, run_m33_suite
from test_cnn_kernels import gen_conv

import tinyaot
import tinyaot.backend
from tinyaot.codegen import generate_c
from tinyaot.errors import PlanError
from tinyaot.plan import MemoryPlan, buffer_overlaps, buffers_of, plan_memory, verify_plan
from tinyaot.plan.choice import ring_choice
from tinyaot.plan.inplace import choose_variants, ring_buffer, ring_distance, smallest_delay
from tinyaot.plan.overlap import window_need
from tinyaot.ref.interpreter import Interpreter

KWS = "models/mlperf_tiny/kws_ref_model.tflite"
_cache: dict = {}


def _kws(optimize: str = "memory"):
    """memory: the plain int8 kernels, whose rings this file is about; the speed plan is checked once below."""
    if optimize not in _cache:
        _cache[optimize] = tinyaot.compile(str(shared_file(KWS)), name="kws", optimize=optimize)
    return _cache[optimize]


def _trace(g, plan, x) -> dict[str, np.ndarray]:
    """Every node's output for one sample, run at the plan's offsets."""
    seen: dict[str, np.ndarray] = {}
    Interpreter(g, plan).invoke(x, trace=lambda node, y: seen.__setitem__(node.name, y))
    return seen


def test_kws_fits_one_feature_map_plus_one_ring():
    """Eight layers write over their own input (rings of 7 pixels for the 3x3 depthwise, one pixel for the
    1x1 convs), so the arena is one 25x5x64 map plus the largest ring, against 10,048 B with the plain
    kernels, 16,000 B layer by layer and 22,824 B in TFLM."""
    cm = _kws()
    plan = cm.plan
    assert cm.lower_bound_bytes == 16_000
    assert cm.arena_bytes == 8_000 + 7 * 64 == 8_448
    rings = {(cm.graph.producer(v.output).op, v.ring_pixels, v.distance) for v in plan.rings}
    assert rings == {("depthwise_conv2d", 7, 0), ("conv2d", 1, 0)}
    assert len(plan.rings) == 8
    for v in plan.rings:  # exactly over the input, the ring beside them only during its step
        assert plan.offsets[v.output] == plan.offsets[v.input]
        ring = plan.buffer_of_name(v.scratch)
        assert ring.scratch and ring.first == ring.last == v.step
    src = cm.c_sources.files["kws.c"]
    assert src.count("tinyaot_depthwise_conv2d_inplace_s8(") == 4 and src.count("tinyaot_conv2d_1x1_inplace_s8(") == 4
    assert "tinyaot_conv2d_patch_s8(" in src  # the first layer keeps a plain kernel (its ring would not pay)


def test_kws_speed_plan_runs_the_pointwise_convs_in_place_and_the_depthwise_convs_on_the_rows_kernel():
    """The pairs kernel reads a pixel pair before writing it, so its 1x1 convs (64 -> 64 channels) may write
    exactly over their input (distance 0) with no ring; the depthwise convs run the rows kernel
    (ref/depthwise_conv2d_rows_s8.py), whose ring of widened input rows is a work buffer beside their input and
    output: 13,056 B, where the plain kernels' in-place rings gave 8,448 B (memory mode keeps them)."""
    cm = _kws("speed")
    plan = cm.plan
    assert cm.arena_bytes == 13_056 and cm.lower_bound_bytes == 16_000 and plan.rings == ()
    rows = {k.node for k in plan.kernels if k.variant == "rows"}
    assert rows == {n.name for n in cm.graph.nodes if n.op == "depthwise_conv2d"}
    pairs = {k.node for k in plan.kernels if k.variant == "pairs"}
    assert pairs == {n.name for n in cm.graph.nodes if n.op == "conv2d"}
    in_place = [n for n in cm.graph.nodes if n.name in pairs and n.name != "conv2d_0"]
    assert len(in_place) == 4
    for n in in_place:  # over their input (at or below it: the rule allows any distance down)
        out, x = plan.offset_of(n.outputs[0]), plan.offset_of(n.inputs[0])
        assert out <= x < out + cm.graph.tensor(n.outputs[0]).nbytes
    src = cm.c_sources.files["kws.c"]
    assert src.count("tinyaot_conv2d_pairs_s8(") == 5 and "_inplace_s8(" not in src
    assert src.count("tinyaot_depthwise_conv2d_rows_s8(") == 4


def test_ring_distances_follow_the_geometry():
    """3x3 depthwise, pad 1, 5 columns: holding one row + one pixel back (a ring of 7) brings the distance from
    one row + two pixels to 0; a 1x1 conv with equal channels needs a ring of one pixel."""
    g = _kws().graph
    dw, pw = g.nodes[1], g.nodes[2]
    need, oc = window_need(dw, g)
    assert smallest_delay(need, oc, 8000) == 6 and ring_distance(need, oc, 6, 8000) == 0
    assert ring_distance(need, oc, 5, 8000) == 64 and ring_distance(need, oc, 0, 8000) == 384
    need, oc = window_need(pw, g)
    assert smallest_delay(need, oc, 8000) == 0 and ring_distance(need, oc, 0, 8000) == 0


def _with_ring(plan: MemoryPlan, node: str, **changes) -> MemoryPlan:
    """The plan with the ring of `node` changed (its record's geometry)."""
    kernels = tuple(replace(k, ring=replace(k.ring, **changes)) if k.node == node and k.ring else k
                    for k in plan.kernels)
    return replace(plan, kernels=kernels)


def test_a_ring_one_pixel_short_gives_a_wrong_answer_in_the_reference():
    cm = _kws()
    g, plan = cm.graph, cm.plan
    x = random_int8((1,) + cm.input_shape[1:], seed=5)[0]
    good = _trace(g, plan, x)
    disjoint = plan_memory(buffers_of(g), len(g.nodes))
    want = _trace(g, disjoint, x)
    for name in good:
        np.testing.assert_array_equal(good[name], want[name])
    short = _with_ring(plan, "depthwise_conv2d_3", ring_pixels=6)  # claims distance 0 still: a lie
    verify_plan(short)  # the plan itself is consistent; only the kernel's write order exposes the lie
    bad = _trace(g, short, x)
    np.testing.assert_array_equal(bad["conv2d_2"], want["conv2d_2"])
    assert (bad["depthwise_conv2d_3"] != want["depthwise_conv2d_3"]).any()


def test_verifier_rejects_a_misplaced_ring_and_the_reference_shows_it():
    cm = _kws()
    g, plan = cm.graph, cm.plan
    v = plan.ring_of("conv2d_4")
    offsets = dict(plan.offsets)
    offsets[v.scratch] = plan.offsets[v.output] + 4_000  # inside the map being rewritten
    moved = replace(plan, offsets=offsets)
    with pytest.raises(PlanError, match=v.scratch):
        verify_plan(moved)
    x = random_int8((1,) + cm.input_shape[1:], seed=6)[0]
    assert (_trace(g, moved, x)["conv2d_4"] != _trace(g, plan, x)["conv2d_4"]).any()


def test_verifier_checks_the_ring_lifetime_size_and_rule():
    plan = _kws().plan
    v = plan.ring_of("depthwise_conv2d_5")
    with pytest.raises(PlanError, match="distance"):
        verify_plan(_with_ring(plan, v.node, distance=-64))
    with pytest.raises(PlanError, match="writes 8 x 64 B"):
        verify_plan(_with_ring(plan, v.node, ring_pixels=8))
    bufs = tuple(replace(b, last=b.last + 1) if b.name == v.scratch else b for b in plan.buffers)
    with pytest.raises(PlanError, match="only"):
        verify_plan(replace(plan, buffers=bufs))
    with pytest.raises(PlanError, match="no scratch buffer"):
        verify_plan(replace(plan, buffers=tuple(b for b in plan.buffers if b.name != v.scratch)))


def test_rings_only_where_they_shrink_the_arena():
    """A lone layer gains nothing from a ring (the ring costs what the distance saved), so the plain kernel
    stays; a chain of them (KWS) drops the drift."""
    rng = np.random.default_rng(3)
    ins, out, attrs, _ = gen_conv(rng, depthwise=True)
    g = one_op_graph("depthwise_conv2d", ins, out, attrs)
    plan = tinyaot.backend.plan(g, optimize="memory")  # the plain kernel's rings (speed runs the rows kernel)
    assert plan.rings == ()
    assert "ring" not in plan.planner
    assert dict(plan.kernels[0].rejected)["ring"] == "the arena is no smaller with its ring"  # what a report says


# ---- random layers forced over their own input ------------------------------------------------------------
N_CASES, N_SAMPLES = 24, 3


def _forced_ring_plan(g) -> MemoryPlan | None:
    """Output and input both at offset 0 (the ring allows it: distance <= 0), the ring after them."""
    bufs = buffers_of(g)
    overlaps = buffer_overlaps(g, bufs)
    variants = choose_variants(g, overlaps)
    if not variants:
        return None
    (v,) = variants
    rules = tuple(replace(o, distance=v.distance, units=v.pixels) if (o.input, o.output) == (v.input, v.output)
                  else o for o in overlaps)
    ring = ring_buffer(v)
    top = -(-max(b.nbytes for b in bufs) // 4) * 4
    offsets = {b.name: 0 for b in bufs} | {ring.name: top}
    arena = -(-(top + ring.nbytes) // 4) * 4
    plan = MemoryPlan(tuple(bufs) + (ring,), offsets, arena, top, 4, "forced ring", len(g.nodes), rules,
                      kernels=(ring_choice(v),))
    verify_plan(plan)
    return plan


def _ring_cases(depthwise: bool) -> list[Case]:
    key = ("cases", depthwise)
    if key not in _cache:
        op = "depthwise_conv2d" if depthwise else "conv2d"
        rng = np.random.default_rng(41 if depthwise else 42)
        found = []
        while len(found) < N_CASES:
            ins, out, attrs, _ = gen_conv(rng, depthwise=depthwise)
            g = one_op_graph(op, ins, out, attrs)
            plan = _forced_ring_plan(g)
            if plan is None:
                continue
            case = Case(f"ring_{op}{len(found)}", g,
                        [rng.integers(-128, 128, size=(N_SAMPLES,) + ins[0].shape).astype(np.int8)])
            case.plan = plan
            found.append(case)
        _cache[key] = found
    return _cache[key]


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv2d", "depthwise"])
def test_random_layers_over_their_own_input_equal_the_plain_kernel(depthwise):
    cases = _ring_cases(depthwise)
    wrong = 0
    for c in cases:
        disjoint = plan_memory(buffers_of(c.graph), 1)
        x = c.samples[0]
        np.testing.assert_array_equal(Interpreter(c.graph, c.plan).run(x), Interpreter(c.graph, disjoint).run(x),
                                      err_msg=c.name)
        v = c.plan.rings[0]
        if v.delay:
            short = _with_ring(c.plan, v.node, ring_pixels=v.delay)
            wrong += bool((Interpreter(c.graph, short).run(x) != Interpreter(c.graph, disjoint).run(x)).any())
    delayed = sum(c.plan.rings[0].delay > 0 for c in cases)
    assert delayed >= 4 and wrong >= delayed // 2  # one pixel short is usually caught by the emulation


@pytest.mark.host
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv2d", "depthwise"])
def test_random_layers_over_their_own_input_in_host_c(depthwise):
    cases = _ring_cases(depthwise)
    calls = "".join(generate_c(c.graph, c.plan, c.name).files[f"{c.name}.c"] for c in cases)
    if not depthwise:  # both conv ring kernels are exercised: the general one and the pointwise one
        assert calls.count("tinyaot_conv2d_1x1_inplace_s8(") >= 2 and calls.count("tinyaot_conv2d_inplace_s8(") >= 2
    got = run_host(cases)
    for c, out in zip(cases, got):
        np.testing.assert_array_equal(out, c.reference(), err_msg=c.name)


@pytest.mark.m33
def test_random_layers_over_their_own_input_on_cortex_m33(tmp_path):
    cases = _ring_cases(False)[:6] + _ring_cases(True)[:6]
    got, result = run_m33_suite(cases, tmp_path)
    assert result.instructions > 0
    for c, out in zip(cases, got):
        np.testing.assert_array_equal(out, c.reference(), err_msg=c.name)
