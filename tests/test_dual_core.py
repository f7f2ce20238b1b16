"""compile(cores=2): the heavy layers split between two cores (plan/cores.py, codegen/emit_cores.py) give the
one-core bytes: on the host (no second core: core 0 runs both parts) for every kernel family a split reaches,
and on QEMU mps2-an521's two Cortex-M33s, with each core's instructions counted."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

import tinyaot
from tinyaot.backend import plan_and_generate
from tinyaot.model import CompiledModel
from tinyaot.options import CompileOptions
from tinyaot.plan.cores import plan_cores
from tinyaot.report.dual import dual_profile


class Small(nn.Module):
    """Odd heights (rows that do not halve evenly, padding at both borders), a depthwise, a residual conv, both
    poolings and a fully connected layer: every op family a split reaches."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(26)
        self.c1 = nn.Conv2d(3, 12, 3, padding=1)
        self.dw = nn.Conv2d(12, 12, 3, stride=2, padding=1, groups=12)
        self.c2 = nn.Conv2d(12, 16, 1)
        self.c3 = nn.Conv2d(16, 16, 3, padding=1)
        self.mp = nn.MaxPool2d(2, ceil_mode=True)
        self.ap = nn.AvgPool2d(3, stride=1, padding=1)
        self.fc = nn.Linear(16 * 8 * 6, 40)

    def forward(self, x):
        x = self.ap(self.mp(torch.relu(self.c1(x))))
        x = torch.relu(self.c2(torch.relu(self.dw(x))))
        x = torch.relu(self.c3(x) + x)
        return self.fc(x.flatten(1))


_compiled: dict = {}


def _models(optimize: str):
    if optimize not in _compiled:
        noise = torch.randn(32, 3, 29, 21, generator=torch.Generator().manual_seed(1))
        calib = nn.functional.avg_pool2d(noise, 3, stride=1, padding=1) * 3  # neighbours correlated, as in images
        one = tinyaot.compile(Small().eval(), calib[:1], calibration=calib, name="small", optimize=optimize)
        # The same int8 graph planned and generated again for two cores (no second quantization: cheaper).
        two = CompiledModel(plan_and_generate("small", replace(one.result.options, cores=2), one.graph))
        _compiled[optimize] = one, two
    return _compiled[optimize]


def _inputs(cm, n=3) -> np.ndarray:
    shape = cm.graph.tensor(cm.graph.inputs[0]).shape
    return np.random.default_rng(26).integers(-128, 128, size=(n, *shape[1:]), dtype=np.int16).astype(np.int8)


@pytest.mark.host
@pytest.mark.parametrize("optimize", ["speed", "size", "memory"])
def test_split_layers_give_the_one_core_bytes_on_the_host(optimize):
    one, two = _models(optimize)
    cplan = plan_cores(two.graph, two.result.plan, 2)
    ops = {n.name: n.op for n in two.graph.nodes}
    split_ops = {ops[s.node] for s in cplan.splits}
    assert {"conv2d", "depthwise_conv2d", "max_pool2d", "avg_pool2d", "fully_connected"} <= split_ops
    assert "_split(arena" in two.result.sources.files["small.c"]
    x = _inputs(one)
    assert np.array_equal(two.run(x, engine="host"), one.run(x, engine="host"))


def test_one_core_is_the_default():
    assert CompileOptions().cores == 1
    with pytest.raises(tinyaot.ModelError, match="cores must be 1"):
        CompileOptions(cores=3)


@pytest.mark.m33
def test_two_cortex_m33s_give_the_one_core_bytes_in_about_half_the_instructions():
    one, two = _models("speed")
    rep = dual_profile(two, _inputs(one, 1), one=one)
    assert rep.outputs_equal
    split = [r for r in rep.layers if r.core1]
    assert {r.layer for r in split} == {s.node for s in plan_cores(two.graph, two.plan, 2).splits}
    for r in split:  # the halves add up to the one-core layer, give or take the params copy, the handshake and
        #              the kernel's border work at the cut (a pairs stem's border pairs)
        assert 0.45 * r.single < max(r.core0, r.core1) < 0.62 * r.single, r
        assert r.core0 + r.core1 < 1.02 * r.single + 400, r
    assert rep.critical_path_instructions < 0.65 * rep.single_core_instructions
    assert rep.second_core_ram_bytes == rep.arena_bytes[1] - rep.arena_bytes[0] > 0
    core1 = [b for b in two.plan.buffers if b.name.endswith("__core1")]  # core 1's work buffers, in the arena
    assert core1 and max(b.nbytes for b in core1) == rep.core1_work_bytes


def test_the_two_core_plan_places_split_layers_apart_and_refuses_a_one_core_plan():
    one, two = _models("speed")
    cplan = plan_cores(two.graph, two.plan, 2)
    nodes = {n.name: n for n in two.graph.nodes}
    for s in cplan.splits:  # no half may be written over bytes the other core still reads
        out = two.plan.offset_of(nodes[s.node].outputs[0])
        out_end = out + two.graph.tensor(nodes[s.node].outputs[0]).nbytes
        for t in nodes[s.node].inputs:
            if not two.graph.tensor(t).is_const:
                start = two.plan.offset_of(t)
                assert start >= out_end or start + two.graph.tensor(t).nbytes <= out, (s.node, t)
        assert 0 < s.cut < s.total and abs(s.cost[0] - s.cost[1]) <= max(s.cost) // 2
    works = {b.name for b in two.plan.buffers}
    assert all(c.work + "__core1" in works for c in two.plan.kernels if c.work and cplan.split_of(c.node))
    # The one-core plan of the same graph: its split candidates overlap their inputs or lack core 1's work buffer.
    refused = dict(plan_cores(one.graph, one.plan, 2).kept)
    assert any("work buffer for core 1" in why for why in refused.values())


class Tokens(nn.Module):
    """Linear layers over 15 tokens: the kernel's batches are the tokens, split by rows (a channel half would be
    strided in every row)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(27)
        self.fc1, self.fc2 = nn.Linear(24, 40), nn.Linear(40, 20)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.mark.host
def test_fully_connected_over_tokens_splits_by_rows():
    calib = torch.randn(32, 15, 24, generator=torch.Generator().manual_seed(2)).cumsum(-1) / 4
    one = tinyaot.compile(Tokens().eval(), calib[:1], calibration=calib, name="tok")
    two = CompiledModel(plan_and_generate("tok", replace(one.result.options, cores=2), one.graph))
    splits = plan_cores(two.graph, two.plan, 2).splits
    assert [(s.axis, s.total) for s in splits] == [("rows", 15), ("rows", 15)]
    x = _inputs(one)
    assert np.array_equal(two.run(x, engine="host"), one.run(x, engine="host"))


class Sensor(nn.Module):
    """1-D layers (one row of 241 samples): their columns are split, the kernel seeing the row as a column."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(28)
        self.c1 = nn.Conv1d(4, 32, 5, padding=2)
        self.c2 = nn.Conv1d(32, 48, 3, stride=2, padding=2, dilation=2)
        self.mp = nn.MaxPool1d(2, ceil_mode=True)
        self.ap = nn.AvgPool1d(3, stride=1, padding=1)

    def forward(self, x):
        return self.ap(self.c2(self.mp(torch.relu(self.c1(x)))))


@pytest.mark.host
@pytest.mark.parametrize("optimize", ["speed", "memory"])
def test_one_row_layers_split_by_columns(optimize):
    noise = torch.randn(32, 4, 241, generator=torch.Generator().manual_seed(3))
    calib = nn.functional.avg_pool1d(noise, 3, stride=1, padding=1) * 3
    one = tinyaot.compile(Sensor().eval(), calib[:1], calibration=calib, name="sen", optimize=optimize)
    two = CompiledModel(plan_and_generate("sen", replace(one.result.options, cores=2), one.graph))
    splits = plan_cores(two.graph, two.plan, 2).splits
    ops = {n.name: n.op for n in two.graph.nodes}
    assert {ops[s.node] for s in splits} == {"conv2d", "max_pool2d", "avg_pool2d"}
    assert {s.axis for s in splits} == {"columns"}
    x = _inputs(one)
    assert np.array_equal(two.run(x, engine="host"), one.run(x, engine="host"))


@pytest.mark.host
def test_the_depthwise_rows_kernel_splits_by_rows_with_the_one_core_bytes():
    """The speed plan's rows kernel (a ring of widened input rows in its work buffer) takes a half of the output
    rows like the plain kernel: its geometry moves, core 1 gets its own ring."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(3, 8, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU()).eval()
    calib = torch.randn(16, 3, 17, 16, generator=torch.Generator().manual_seed(2))
    one = tinyaot.compile(model, calib[:1], calibration=calib, name="dwr")
    two = CompiledModel(plan_and_generate("dwr", replace(one.result.options, cores=2), one.graph))
    dw = next(n.name for n in two.graph.nodes if n.op == "depthwise_conv2d")
    assert two.plan.kernel_of(dw).variant == "rows"
    assert dw in {s.node for s in plan_cores(two.graph, two.result.plan, 2).splits}
    x = _inputs(one)
    assert np.array_equal(two.run(x, engine="host"), one.run(x, engine="host"))
