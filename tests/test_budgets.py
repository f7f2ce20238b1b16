"""Budgets (budgets.py): compile(ram=, flash=) gives the fastest plan that fits, at least as fast as the fastest
single optimize mode that fits, with the same output bytes; an impossible budget is an error that names what
overflows and the smallest RAM and flash that would fit; layer_optimize gives one layer its own mode."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
import torch
from cli_runner import run_cli

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits
from tinyaot.errors import ModelError

DIGITS = calibration_digits()


def _seed(**kw):
    return tinyaot.compile(build_seed_mlp(), torch.zeros(1, 28, 28), calibration=DIGITS, **kw)


@pytest.fixture(scope="module")
def speed():
    return _seed()


def test_layer_optimize_gives_one_layer_its_own_mode(speed):
    cm = _seed(layer_optimize={"fc1": "size"})
    assert [(k.node, k.variant) for k in cm.plan.kernels] == [("fc1", "wide_w8"), ("fc2", "wide"), ("fc3", "wide")]
    assert cm.plan.mode_of("fc1") == "size" and cm.plan.mode_of("fc2") == "speed"
    assert cm.constant_bytes < speed.constant_bytes  # fc1's weights are int8 again
    x = speed.quantize_input(DIGITS[:8])
    np.testing.assert_array_equal(cm.run(x), speed.run(x))


@pytest.mark.parametrize("bad, match", [(dict(ram=0), "ram must be a budget in bytes"),
                                        (dict(flash=1.5), "flash must be a budget in bytes"),
                                        (dict(layer_optimize={"fc1": "fast"}), "optimize must be one of")])
def test_bad_budgets_are_clear_errors(bad, match):
    with pytest.raises(ModelError, match=match):
        _seed(**bad)


@pytest.fixture(scope="module")
def within_40k_flash():
    return _seed(flash=40_000)


@pytest.mark.m33
def test_a_flash_budget_gives_the_fastest_plan_that_fits(speed, within_40k_flash):
    cm, t = within_40k_flash, within_40k_flash.tradeoffs
    assert speed.constant_bytes > 40_000 and cm.constant_bytes <= 40_000 and cm.ram_bytes <= t.ram_budget
    single = {p.label: p for p in t.points if not p.layer_modes and not p.sram_constants}
    assert not single["speed"].fits and single["size"].fits
    fastest_single = min((p for p in single.values() if p.fits), key=lambda p: p.estimated_cycles)
    assert t.chosen.fits and t.chosen.estimated_cycles <= fastest_single.estimated_cycles
    assert cm.plan.layer_modes == t.chosen.layer_modes and cm.c_sources.sram_layers == t.chosen.sram_constants
    assert cm.plan.mode_of("fc1") != "speed"  # its int16 weights alone are 50 KB
    x = speed.quantize_input(DIGITS[:8])
    for engine in ("reference", "m33"):
        np.testing.assert_array_equal(cm.run(x, engine=engine), speed.run(x))


def test_an_impossible_budget_names_what_overflows_and_what_would_fit():
    """Said from the plans' bytes alone: nothing is profiled, so no Cortex-M33 toolchain is needed."""
    with pytest.raises(ModelError) as e:
        _seed(ram=512, flash=20_000)
    said = str(e.value)
    assert "no plan fits the budget: RAM: the smallest plan" in said and "304 B over the 512 B budget" in said
    assert "(its busiest step 1: input 784 B + fc1_out 32 B)" in said
    assert "flash: the smallest plan (memory) needs 26,576 B of constants, 6,576 B over the 20,000 B" in said
    assert "The smallest RAM any plan needs is 816 B and the smallest flash 26,576 B" in said


@pytest.mark.m33
def test_report_tradeoffs_lists_the_plans(tmp_path):
    (tmp_path / "seed.py").write_text(textwrap.dedent("""
        from tinyaot.demo_model import build_seed_mlp
        model = build_seed_mlp()
    """))
    np.save(tmp_path / "cal.npy", DIGITS[:64])
    args = ["report", "seed.py:model", "--calibration", "cal.npy", "--no-m33", "--json", "--tradeoffs",
            "--flash", "40K"]
    d = json.loads(run_cli(args, tmp_path).stdout)["tradeoffs"]
    assert d["flash_budget"] == 40 * 1024 and d["chosen"] is not None
    labels = [p["label"] for p in d["points"]]
    assert labels[:3] == ["speed", "size", "memory"] and d["chosen"] in labels
    assert all(p["fits"] == (p["flash_bytes"] <= 40 * 1024 and p["ram_bytes"] <= d["ram_budget"])
               for p in d["points"])
