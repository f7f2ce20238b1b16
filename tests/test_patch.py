"""Patch-based execution (plan/patch.py): a chain of the first layers run band by band. The patched plan gives
the same bytes as layer by layer on the reference and host C, its verifier catches a broken stage (and the
reference shows what it breaks), and VWW's arena is pinned."""
from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import random_int8, shared_file
from torch import nn

import tinyaot
from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.request import Request
from tinyaot.errors import ModelError, PlanError
from tinyaot.model import CompiledModel
from tinyaot.plan import plan_graph, verify_plan
from tinyaot.plan.patch import EXTRA_MACS, band_edges, chains, stage_of
from tinyaot.ref.interpreter import Interpreter
from tinyaot.report.memory import patch_lines, tensor_rows

VWW = "models/mlperf_tiny/vww_96_int8.tflite"
_cache: dict = {}


def _chain_model() -> nn.Module:
    """A stem like a small MobileNet's: its 16x16x16 map is the layer-by-layer peak, which bands avoid."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),  # 32x32x3 -> 16x16x8
        nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(),  # depthwise
        nn.Conv2d(8, 16, 1), nn.ReLU(),  # 16x16x16: the peak
        nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16), nn.ReLU(),  # 8x8x16
        nn.MaxPool2d(2),  # 4x4x16
        nn.Conv2d(16, 8, 1), nn.ReLU(),
        nn.Flatten(), nn.Linear(4 * 4 * 8, 10),
    ).eval()


def _calibration() -> torch.Tensor:
    rng = np.random.default_rng(1)  # smooth images: a random walk along each row
    return torch.from_numpy(np.cumsum(rng.normal(0, 0.2, (32, 3, 32, 32)), axis=3).astype(np.float32))


def _chain(patch):
    if patch not in _cache:
        calib = _calibration()
        _cache[patch] = tinyaot.compile(_chain_model(), calib[:1], calibration=calib, name="stem",
                                        optimize="memory", patch=patch)
    return _cache[patch]


def _samples(cm, n: int, seed: int) -> np.ndarray:
    return random_int8((n,) + tuple(cm.input_shape[1:]), seed=seed)


def test_bands_compute_back_every_layers_rows():
    """The windows chain: each layer reads what the layer before wrote, the first band starts in the padding
    above the image, the windows cover the whole output, and the halos cost some MACs."""
    g = _chain(False).graph
    (first, last), = chains(g)
    stage = stage_of(g, first, last, 4)
    assert [w[-1].out_lo for w in stage.windows] == [lo for lo, _ in band_edges(g.tensor(stage.output).shape[1], 4)]
    for band in stage.windows:
        for a, b in zip(band, band[1:]):
            assert (b.in_lo, b.in_hi) == (a.out_lo, a.out_hi)
    assert stage.windows[0][0].pad_top == 1 and all(w[0].pad_top == 0 for w in stage.windows[1:])
    assert stage.windows[-1][-1].out_hi == g.tensor(stage.output).shape[1]
    assert stage.extra_macs > 0 and stage.macs == stage.base_macs + stage.extra_macs


def test_patched_plan_gives_the_layer_by_layer_bytes_on_reference():
    plain, patched = _chain(False), _chain(True)
    assert len(patched.plan.patches) == 1 and plain.plan.patches == ()
    assert patched.arena_bytes < plain.arena_bytes
    x = _samples(plain, 3, seed=11)
    np.testing.assert_array_equal(patched.run(x), plain.run(x))


@pytest.mark.host
def test_patched_plan_gives_the_layer_by_layer_bytes_on_host_c():
    plain, patched = _chain(False), _chain(True)
    src = patched.c_sources.files["stem.c"]
    assert "patch stage:" in src and "patch stage:" not in plain.c_sources.files["stem.c"]
    x = _samples(plain, 3, seed=12)
    np.testing.assert_array_equal(patched.run(x, engine="host"), plain.run(x))


def test_verifier_rejects_a_broken_stage_and_the_reference_shows_it():
    cm = _chain(True)
    g, plan = cm.graph, cm.plan
    stage = plan.patches[0]
    verify_plan(plan)
    with pytest.raises(PlanError, match="scratch"):
        verify_plan(replace(plan, patches=(replace(stage, scratch_bytes=stage.scratch_bytes + 4),)))
    w = stage.windows[1]
    broken = w[:1] + (replace(w[1], in_lo=w[1].in_lo + 1),) + w[2:]
    with pytest.raises(PlanError, match="reads rows"):
        verify_plan(replace(plan, patches=(replace(stage, windows=(stage.windows[0], broken) + stage.windows[2:]),)))
    ov = next((o for o in plan.overlaps if o.step == stage.start), None)
    if ov is not None:  # the output over the input: a rule closer than the bands allow is refused
        overlaps = tuple(replace(o, distance=o.distance - 64) if o is ov else o for o in plan.overlaps)
        with pytest.raises(PlanError, match="bands need"):
            verify_plan(replace(plan, overlaps=overlaps))
    offsets = dict(plan.offsets)  # the scratch moved over the stage's output: the answer changes
    offsets[stage.scratch] = plan.offset_of(stage.output)
    x = _samples(cm, 1, seed=13)[0]
    assert (Interpreter(g, replace(plan, offsets=offsets)).invoke(x) != Interpreter(g, plan).invoke(x)).any()


def test_patch_option_is_checked():
    with pytest.raises(ModelError, match="patch"):
        tinyaot.compile(_chain_model(), torch.zeros(1, 3, 32, 32), patch="yes")


def _vww(patch: bool):
    """VWW layer by layer (memory mode), or the same int8 graph planned with patch stages (what patch=True
    compiles, without quantizing it again)."""
    key = ("vww", patch)
    if key not in _cache:
        if not patch:
            _cache[key] = tinyaot.compile(str(shared_file(VWW)), name="vww", optimize="memory")
        else:
            plain = _vww(False)
            g = plain.graph.replace()
            plan = plan_graph(g, optimize="memory", reorder=False, patch=EXTRA_MACS)
            _cache[key] = CompiledModel(replace(plain.result, graph=g, plan=plan, sources=None))
    return _cache[key]


def test_vww_patched_arena():
    """The 48x48x16 map and the 24x24x16 one after it run in 24 one-row bands: 36,880 B -> 27,752 B, the input
    (27,648 B, in the arena, which no stage can go below) plus 104 B; 141,312 more MACs (1.9 % of the model's)."""
    plain, patched = _vww(False), _vww(True)
    assert plain.arena_bytes == 36_880
    assert patched.arena_bytes == 27_752
    stage, = patched.plan.patches
    assert (stage.nodes, stage.bands, stage.extra_macs) == (("conv2d_2", "depthwise_conv2d_3"), 24, 141_312)


@pytest.mark.host
def test_vww_patched_equals_layer_by_layer_on_reference_and_host_c():
    plain, patched = _vww(False), _vww(True)
    x = _samples(plain, 1, seed=14)
    want = plain.run(x)
    np.testing.assert_array_equal(patched.run(x), want)
    np.testing.assert_array_equal(patched.run(x, engine="host"), want)


def _whole_chain():
    """The stem's whole chain (six layers) as one stage of three bands."""
    if "whole" not in _cache:
        cm = _chain(False)
        g = cm.graph.replace()
        (first, last), = chains(g)
        _cache["whole"] = cm, g, plan_graph(g, optimize="memory", reorder=False,
                                           stages=(stage_of(g, first, last, 3),))
    return _cache["whole"]


@pytest.mark.host
def test_a_stage_through_the_whole_chain_pools_and_padding_included():
    """Every layer of the stem in three bands (the first starts in the padding above the image, the max pool's
    windows too): the same bytes on the reference and host C as layer by layer."""
    cm, g, plan = _whole_chain()
    stage = plan.patches[0]
    assert [g.nodes[s].op for s in range(stage.start, stage.end + 1)][-2:] == ["max_pool2d", "conv2d"]
    patched = CompiledModel(replace(cm.result, graph=g, plan=plan, sources=None))
    x = _samples(cm, 2, seed=15)
    want = cm.run(x)
    np.testing.assert_array_equal(patched.run(x), want)
    np.testing.assert_array_equal(patched.run(x, engine="host"), want)



def test_verifier_rejects_windows_that_share_scratch_bytes():
    _, g, plan = _whole_chain()
    stage = plan.patches[0]
    assert len(stage.offsets) == 5 and stage.offsets[0] != stage.offsets[1]
    with pytest.raises(PlanError, match="over the window it reads"):
        verify_plan(replace(plan, patches=(replace(stage, offsets=(0,) * len(stage.offsets)),)))


def test_memory_report_lists_the_stage_and_its_scratch():
    cm = _chain(True)
    stage, = cm.plan.patches
    line, = patch_lines(cm.plan)
    assert f"at step {stage.start}" in line and f"+{stage.extra_macs:,} MACs" in line
    row = next(r for r in tensor_rows(cm.plan, cm.graph) if r.name == stage.scratch)
    assert row.nbytes == stage.scratch_bytes and row.note.startswith("patch stage scratch")


def test_cli_patch_flag_reaches_the_compile_options():
    parser = argparse.ArgumentParser()
    add_model_args(parser)
    ns = parser.parse_args(["model.tflite", "--patch"])
    assert ns.patch is True and Request("compile", patch=True).compile_options(print)["patch"] is True
    assert "patch" not in Request("compile").compile_options(print)


@pytest.mark.m33
def test_patched_stem_on_the_cortex_m33():
    """The searched stage and the whole-chain stage give the layer-by-layer bytes on the emulated Cortex-M33."""
    plain, patched = _chain(False), _chain(True)
    cm, g, plan = _whole_chain()
    whole = CompiledModel(replace(cm.result, graph=g, plan=plan, sources=None))
    x = _samples(plain, 1, seed=16)
    want = plain.run(x)
    np.testing.assert_array_equal(patched.run(x, engine="m33"), want)
    np.testing.assert_array_equal(whole.run(x, engine="m33"), want)


@pytest.mark.m33
def test_speed_mode_stage_keeps_the_pairs_kernel_on_its_windows():
    """optimize="speed": a stage's 1x1 / 3x3 convs keep the pairs kernel (its work buffer at the stage's step), the
    depthwise ones their plain kernel; the bytes stay the layer-by-layer ones on host C and the Cortex-M33."""
    cm = tinyaot.compile(_chain_model(), torch.zeros(1, 3, 32, 32), calibration=_calibration(), name="stem",
                         optimize="speed", patch=True)
    stage, = cm.plan.patches
    pairs = [n for n in stage.nodes if cm.plan.kernel_of(n) is not None and cm.plan.kernel_of(n).variant == "pairs"]
    assert pairs
    for n in pairs:
        work = cm.plan.buffer_of_name(cm.plan.kernel_of(n).work)
        assert work.first == work.last == stage.start
    assert "tinyaot_conv2d_pairs_s8((const int8_t *)(arena + STEM_OFFSET" in cm.c_sources.files["stem.c"]
    x = _samples(cm, 1, seed=17)
    want = _chain(False).run(x)
    np.testing.assert_array_equal(cm.run(x), want)
    np.testing.assert_array_equal(cm.run(x, engine="host"), want)
    np.testing.assert_array_equal(cm.run(x, engine="m33"), want)



def test_compile_json_lists_the_stages():
    from tinyaot.cli.summary import stage_dict

    stage, = _chain(True).plan.patches
    assert stage_dict(stage) == {"layers": list(stage.nodes), "step": stage.start, "bands": stage.bands,
                                 "scratch_bytes": stage.scratch_bytes, "macs": stage.macs,
                                 "extra_macs": stage.extra_macs}
