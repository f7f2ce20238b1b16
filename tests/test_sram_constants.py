"""Constants in SRAM (compile(sram_constants=...), codegen/placement.py) and the Pico 2 offer of which to place
(report/sram_offer.py): placing changes where the arrays live, never a byte of output; the offer is the XIP
estimate's arithmetic (targets/m33/timing.py) over the layers that fit the RAM left."""
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
from tinyaot.targets.m33.timing import xip_estimate
from tinyaot.targets.sizes import m33_static_state_bytes

DIGITS = calibration_digits()


def _seed(**kw):
    return tinyaot.compile(build_seed_mlp(), torch.zeros(1, 28, 28), calibration=DIGITS, **kw)


@pytest.fixture(scope="module")
def flash():
    return _seed()


@pytest.fixture(scope="module")
def fc1_in_sram():
    return _seed(sram_constants=["fc1"])


def test_default_keeps_every_constant_in_flash(flash):
    assert "_IN_SRAM" not in flash.c_sources.files["model.c"]
    assert flash.sram_constant_bytes == 0 and flash.ram_bytes == flash.arena_bytes


def test_placed_arrays_are_counted_as_ram_and_still_as_flash(flash, fc1_in_sram):
    src = fc1_in_sram.c_sources
    fc1 = src.layer_array_bytes["fc1"]
    assert src.sram_layers == ("fc1",) and fc1_in_sram.sram_constant_bytes == fc1 > 784 * 32
    assert fc1_in_sram.constant_bytes == flash.constant_bytes  # flash keeps the load image
    assert fc1_in_sram.ram_bytes == flash.ram_bytes + fc1
    text = src.files["model.c"]
    assert text.count("#define MODEL_IN_SRAM(symbol)") == 2  # GCC / Clang, and the others' empty one
    assert all("MODEL_IN_SRAM(model_fc1_" in line for line in text.splitlines()
               if line.startswith("static const") and "_fc1_" in line and "[" in line)
    assert "MODEL_IN_SRAM(model_fc2" not in text


@pytest.mark.arm
def test_the_cortex_m33_object_holds_them_in_data(flash, fc1_in_sram):
    """The compiled object's .data grows by exactly the placed bytes (the start-up code copies .data)."""
    extra = (m33_static_state_bytes(fc1_in_sram.c_sources, fc1_in_sram.arena_bytes)
             - m33_static_state_bytes(flash.c_sources, flash.arena_bytes))
    assert extra == fc1_in_sram.sram_constant_bytes


@pytest.mark.m33
def test_outputs_are_the_same_bytes_on_every_engine(flash, fc1_in_sram):
    x = flash.quantize_input(DIGITS[:4])
    want = flash.run(x, engine="reference")
    for engine in ("reference", "host", "m33"):
        np.testing.assert_array_equal(fc1_in_sram.run(x, engine=engine), want)


def test_a_layer_without_constants_is_refused_naming_those_with():
    with pytest.raises(ModelError, match=r"no layer named 'fc9' holds constants; the layers with constants are "
                                         r"fc1, fc2, fc3 \(or pass 'all'\)"):
        _seed(sram_constants=["fc9"])
    with pytest.raises(ModelError, match="sram_constants must be a list of layer names or 'all'"):
        _seed(sram_constants="fc1")


def test_the_offer_is_every_layer_when_the_ram_has_room(flash):
    offer = flash.sram_offer()
    arrays = flash.c_sources.layer_array_bytes
    assert offer.option == "all" and offer.sram_bytes == sum(arrays.values())
    assert [b for _, b in offer.layers] == sorted(arrays.values(), reverse=True)
    # what stays in flash (the params structs) fits the XIP cache: the whole estimate is saved
    assert offer.after.streamed_bytes == 0
    assert offer.saved_cycles == xip_estimate(flash.constant_bytes).cycles > 0
    assert offer.free_ram_bytes == 496 * 1024 - flash.ram_bytes


def test_the_offer_takes_the_largest_layers_that_fit(flash):
    arrays = flash.c_sources.layer_array_bytes
    small = arrays["fc2"] + arrays["fc3"]
    offer = flash.sram_offer(target_memory=(4 * 1024 * 1024, flash.ram_bytes + small + 10))
    assert [n for n, _ in offer.layers] == ["fc2", "fc3"] and offer.option == ["fc2", "fc3"]
    assert offer.saved_cycles == 4 * small  # 150 MHz over 37.5 MB/s: 4 cycles a byte still streamed from flash
    assert flash.sram_offer(target_memory=(4 * 1024 * 1024, flash.ram_bytes + 8)) is None  # nothing fits


def test_nothing_is_offered_once_what_stays_in_flash_fits_the_cache(fc1_in_sram):
    left = fc1_in_sram.constant_bytes - fc1_in_sram.sram_constant_bytes
    assert 0 < left <= 16 * 1024 and fc1_in_sram.sram_offer() is None


@pytest.mark.arm
def test_cli_places_and_reports(tmp_path):
    (tmp_path / "seed.py").write_text(textwrap.dedent("""
        from tinyaot.demo_model import build_seed_mlp
        model = build_seed_mlp()
    """))
    np.save(tmp_path / "cal.npy", DIGITS[:64])
    args = ["report", "seed.py:model", "--calibration", "cal.npy", "--no-m33", "--json"]
    d = json.loads(run_cli(args, tmp_path).stdout)
    assert d["sram_offer"]["sram_constants"] == "all" and d["sram_constant_bytes"] == 0
    d = json.loads(run_cli([*args, "--sram-constants", "fc1"], tmp_path).stdout)
    assert d["sram_offer"] is None and d["sram_constant_bytes"] > 784 * 32
