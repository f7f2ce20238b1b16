"""The instruction mix of `tinyaot profile --mix`: per op, the executed loads, stores, multiplies and branches."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import shared_file

from tinyaot.report.profile import OpProfile, ProfileReport
from tinyaot.targets.m33.mix import InstructionMix, classify

AD = "models/mlperf_tiny/ad01_int8.tflite"


@pytest.mark.parametrize("mnemonic, operands, kind", [
    ("smlad", "r4, r3, ip, r4", "mac"),
    ("smlabb", "r0, r1, r2, r0", "mac"),
    ("smmulr", "r0, r1, r2", "mac"),
    ("smlal", "r0, r1, r2, r3", "mac"),
    ("mul", "r0, r1", "mac"),
    ("vmul.f32", "s0, s1, s2", "mac"),
    ("ldr.w", "r3, [r0], #4", "load"),
    ("ldrbne", "r2, [r1]", "load"),
    ("vldr", "s0, [r3]", "load"),
    ("pop", "{r4}", "load"),
    ("ldrd", "ip, lr, [r1], #8", "multi_load"),
    ("ldmia.w", "r3, {r4, r5, r6, r7}", "multi_load"),
    ("str", "r2, [r3, #0]", "store"),
    ("strd", "r0, r1, [sp]", "multi_store"),
    ("push", "{r4, r5, r6, lr}", "multi_store"),
    ("stmdb", "sp!, {r2, r3, r4, lr}", "multi_store"),
    ("b.n", "100000c4 <f+0x10>", "branch"),
    ("bne", "100000c4 <f+0x10>", "branch"),
    ("bls.n", "100000c4 <f+0x10>", "branch"),
    ("bl", "10000200 <g>", "branch"),
    ("bx", "lr", "branch"),
    ("cbz", "r3, 100000c4 <f+0x10>", "branch"),
    ("tbb", "[pc, r3]", "branch"),
    ("pop", "{r4, r5, pc}", "branch"),
    ("ldmia.w", "sp!, {r4, r5, r6, r7, r8, pc}", "branch"),
    ("ldr.w", "pc, [sp], #4", "branch"),
    ("bics", "r0, r1", "other"),
    ("bfi", "r0, r1, #0, #8", "other"),
    ("sxtb16", "r3, r3", "other"),
    ("ssat", "r0, #8, r0", "other"),
    ("it", "ne", "other"),
    ("sdiv", "r0, r1, r2", "other"),
])
def test_classify(mnemonic, operands, kind):
    assert classify(mnemonic, operands) == kind


def test_report_shows_and_writes_the_mix():
    mix = InstructionMix(loads=30, multi_loads=20, stores=5, multi_stores=1, macs=40, branches=10, taken=8, other=15)
    rep = ProfileReport("m", 120, (OpProfile(0, "fc", "fully_connected", 80, 100, mix),
                                   OpProfile(1, "sm", "softmax", 0, 20)), 64)
    d = rep.to_dict()
    assert d["ops"][0]["mix"] == mix.to_dict() and "mix" not in d["ops"][1]
    text = str(rep)
    assert "Instruction mix" in text and "40.0%" in text  # 40 of the op's 100 instructions are multiplies
    plain = str(ProfileReport("m", 120, (OpProfile(0, "fc", "fully_connected", 80, 100),), 64))
    assert "Instruction mix" not in plain and "mix" not in ProfileReport(
        "m", 120, (OpProfile(0, "fc", "fully_connected", 80, 100),), 64).to_dict()["ops"][0]


@pytest.mark.m33
def test_mix_adds_up_to_each_ops_instructions():
    import tinyaot

    cm = tinyaot.compile(str(shared_file(AD)))
    rep = cm.profile(mix=True)
    assert rep.has_mix and len(rep.ops) == 10
    for o in rep.ops:
        m = o.mix
        assert m.total == m.loads + m.stores + m.macs + m.branches + m.other == o.instructions
        assert min(m.to_dict().values()) >= 0 and m.multi_loads <= m.loads and m.taken <= m.branches
        assert o.op == "fully_connected" and m.loads > 0 and m.branches > 0
    big = [o for o in rep.ops if o.macs >= 16384]
    assert len(big) == 8
    for o in big:
        # Fewer multiply instructions than MACs, yet about one per two MACs: SMLAD-class dual MACs at work.
        assert o.macs // 2 <= o.mix.macs < o.macs, (o.layer, o.macs, o.mix)


@pytest.mark.m33
def test_cli_profile_mix_json(tmp_path):
    env = dict(os.environ, COLUMNS="120")
    proc = subprocess.run([sys.executable, "-m", "tinyaot", "profile", str(shared_file(AD)), "--mix", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    d = json.loads(proc.stdout)
    assert {o["kernel"] for o in d["ops"]} == {"tinyaot_fully_connected_wide_s8"}  # the plan's speed-mode choice
    for o in d["ops"]:
        mix = o["mix"]
        assert sum(mix[k] for k in ("loads", "stores", "macs", "branches", "other")) == o["instructions"]
