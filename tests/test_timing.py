"""The Cortex-M33 timing model (targets/m33/timing.py, docs/timing.md): estimated cycles of hand-counted
instruction sequences, the Pico 2's XIP estimate, and the share of conv / FC MACs on fast kernels."""
from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from tinyaot.plan.choice import KernelChoice
from tinyaot.report.kernels import fast_kernel_coverage
from tinyaot.report.profile import OpProfile, ProfileReport
from tinyaot.targets.m33.mix import BRANCH, InstructionMix, classify
from tinyaot.targets.m33.timing import CYCLE_TABLE, cycles_to_ms, estimate_cycles, qspi_bytes_per_second, xip_estimate


def mix_of(trace: list[tuple[str, str, bool]]) -> InstructionMix:
    """The mix of an executed trace of (mnemonic, operands, taken), classified as the profiler does."""
    n = Counter()
    for mnemonic, operands, taken in trace:
        kind = classify(mnemonic, operands)
        field = {"load": "loads", "multi_load": "loads", "store": "stores", "multi_store": "stores", "mac": "macs",
                 "branch": "branches", "other": "other"}[kind]
        n[field] += 1
        if kind.startswith("multi_"):
            n[kind + "s"] += 1
        if kind == BRANCH and taken:
            n["taken"] += 1
    return InstructionMix(**n)


# A dual-MAC inner loop, 10 iterations; the last bne falls through.  Per iteration by hand, M4 TRM figures:
# ldrd 1 + N = 3, ldr 2, smlad 1, smlad 1, subs 1, bne taken 1 + P = 4 (P = 3)  -> 12;  10 x 12 - 3 = 117.
LOOP = [("ldrd", "r4, r5, [r0], #8", False), ("ldr.w", "r6, [r1], #4", False), ("smlad", "r2, r4, r6, r2", False),
        ("smlad", "r3, r5, r6, r3", False), ("subs", "r7, #1", False)]
LOOP_TRACE = [ins for i in range(10) for ins in LOOP + [("bne.n", "100000c4 <f+0x10>", i < 9)]]

# A leaf function: push {r4, lr} 3, str 2, strd 3, mul 1, cmp 1, beq not taken 1, pop {r4, pc} 4 + N -> counted as
# a taken branch: 4.  3 + 2 + 3 + 1 + 1 + 1 + 4 = 15.
LEAF = [("push", "{r4, lr}", False), ("str", "r0, [r1]", False), ("strd", "r2, r3, [r1, #4]", False),
        ("mul", "r0, r1", False), ("cmp", "r0, #0", False), ("beq.n", "100000c4 <f+0x10>", False),
        ("pop", "{r4, pc}", True)]

# Straight-line requantization: 2 loads, smmulr, 3 ALU, ssat, strb -> 2 + 2 + 1 + 3 + 1 + 2 = 11.
REQUANT = [("ldr", "r0, [r2]", False), ("ldrsb.w", "r1, [r3]", False), ("smmulr", "r0, r0, r4", False),
           ("asrs", "r0, r5", False), ("add", "r0, r6", False), ("adds", "r0, #128", False),
           ("ssat", "r0, #8, r0", False), ("strb", "r0, [r7], #1", False)]


@pytest.mark.parametrize("trace, cycles", [(LOOP_TRACE, 117), (LEAF, 15), (REQUANT, 11)])
def test_estimate_cycles_of_hand_counted_sequences(trace, cycles):
    mix = mix_of(trace)
    assert mix.total == len(trace)
    assert estimate_cycles(mix) == cycles


def test_the_table_counts_every_field_once():
    assert sorted(r.field for r in CYCLE_TABLE) == sorted(InstructionMix().to_dict())
    assert all(r.source for r in CYCLE_TABLE)


def test_xip_estimate_by_hand():
    # Pico SDK 2.2.0: 150 MHz clk_sys, PICO_FLASH_SPI_CLKDIV 2 -> 75 MHz QSPI, quad: 4 bits a clock = 37.5 MB/s.
    assert qspi_bytes_per_second() == 37_500_000
    x = xip_estimate(100_000)
    assert x.streamed_bytes == 100_000 and x.cycles == 400_000  # 4 clk_sys per byte
    assert x.ms == pytest.approx(100_000 / 37.5e6 * 1e3)  # 2.667 ms
    assert xip_estimate(16 * 1024).streamed_bytes == 0  # fits the 16 KB cache: nothing read per inference
    assert xip_estimate(16 * 1024 + 1).cycles == (16 * 1024 + 1) * 4
    assert cycles_to_ms(150_000) == pytest.approx(1.0)


def test_profile_shows_estimates_side_by_side():
    mix = mix_of(LOOP_TRACE)  # 60 instructions, 117 cycles
    rep = ProfileReport("m", 66, (OpProfile(0, "fc", "fully_connected", 40, 60, mix),
                                  OpProfile(1, "sm", "softmax", 0, 6, mix_of(REQUANT[:6]))), 64, 20_000)
    # The 6-instruction op: 2 + 2 + 1 + 3 = 8 cycles; the inference: 66 instructions at (117 + 8) / 66 each.
    assert rep.ops[1].estimated_cycles == 8 and rep.estimated_cycles == 125
    d = rep.to_dict()
    assert d["ops"][0]["estimated_cycles"] == 117 and d["estimated"]["cycles"] == 125
    assert d["estimated"]["pico2_xip"]["streamed_bytes"] == 20_000
    text = str(rep)
    assert "est. cycles" in text and "117" in text and "estimated: 125 cycles" in text


def _graph():
    """conv 3 -> 8 (3x3, pad 1) on 8x8: 8*8*8*27 = 13,824 MACs; depthwise 3x3 on 8 channels: 8*8*8*9 = 4,608;
    fully connected 512 -> 10: 5,120."""
    torch = pytest.importorskip("torch")
    import tinyaot

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.fc = torch.nn.Linear(512, 10)

        def forward(self, x):
            return self.fc(torch.flatten(torch.relu(self.dw(torch.relu(self.conv(x)))), 1))

    torch.manual_seed(0)
    cal = torch.rand(8, 3, 8, 8)
    return tinyaot.compile(Net().eval(), cal[:1], calibration=cal, name="m")


@pytest.mark.filterwarnings("ignore:model 'm'")  # the calibration warnings of a tiny random calibration set
def test_fast_kernel_coverage():
    cm = _graph()
    names = {n.op: n.name for n in cm.graph.nodes}
    conv, dw, fc = names["conv2d"], names["depthwise_conv2d"], names["fully_connected"]
    # The coverage reads only the plan's records: a conv on pairs, the depthwise through its ring, the FC plain.
    plan = SimpleNamespace(kernel_of={conv: KernelChoice(conv, "pairs"), dw: KernelChoice(dw, "ring")}.get)
    c = fast_kernel_coverage(cm.graph, plan)
    assert (c.fast_macs, c.macs) == (13_824, 13_824 + 4_608 + 5_120)
    plan = SimpleNamespace(kernel_of={conv: KernelChoice(conv, "pairs_w8"), fc: KernelChoice(fc, "wide")}.get)
    assert fast_kernel_coverage(cm.graph, plan).fast_macs == 13_824 + 5_120
    # The depthwise's rows kernel is a fast one too.
    plan = SimpleNamespace(kernel_of={conv: KernelChoice(conv, "pairs"), dw: KernelChoice(dw, "rows")}.get)
    assert fast_kernel_coverage(cm.graph, plan).fast_macs == 13_824 + 4_608
    # The real plan (speed): this small graph's peak is the depthwise, whose rows kernel's ring would lift the
    # arena above the layer-by-layer bound, so it runs its plain kernel and says why.
    real = fast_kernel_coverage(cm.graph, cm.plan)
    assert cm.plan.kernel_of(dw).variant == "plain" and real.macs == 23_552 and real.fast_macs >= 13_824
    assert "above the layer-by-layer bound" in dict(cm.plan.kernel_of(dw).rejected)["rows"]


def test_corpus_table_has_the_coverage_column(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    rows = [{"model": "a", "source": "s", "status": "ok", "arena_bytes": 100, "fast_mac_share": 0.8924}]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus.py"
    proc = subprocess.run([sys.executable, str(script), "--rows", str(tmp_path / "rows.json"), "--markdown"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    head, _, row = proc.stdout.splitlines()[:3]
    assert "fast MACs" in head and "| 89.2% |" in row
