"""Does it fit? The compiled model's constants and RAM against its target's (report/budget.py): a model that cannot
fit is warned about with the numbers and what would help; one that fits is not; target_memory= and
--target-memory change the target."""
from __future__ import annotations

import json
import textwrap
import warnings

import numpy as np
import pytest
import torch
from cli_runner import run_cli
from conftest import shared_file

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits
from tinyaot.diagnostics import CalibrationWarning, MemoryBudgetWarning, TinyAOTWarning
from tinyaot.errors import ModelError
from tinyaot.report.budget import PICO2, TargetMemory, check_budget, check_target_memory, parse_target_memory
from tinyaot.report.memory import MemoryReport

DIGITS = calibration_digits()


def _compile(model, example, cal, **kw):
    """The model and the budget warnings its compile gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cm = tinyaot.compile(model, example, calibration=cal, **kw)
    return cm, [str(w.message) for w in caught if issubclass(w.category, MemoryBudgetWarning)]


def _waves(n: int, features: int) -> np.ndarray:
    """Smooth deterministic signals: real-looking calibration data for an MLP (no noise warning)."""
    t = np.arange(features)[None]
    return np.sin(t / np.linspace(3, 9, n)[:, None] + np.linspace(0, 6, n)[:, None]).astype(np.float32)


@pytest.fixture(scope="module")
def seed():
    return _compile(build_seed_mlp(), torch.zeros(1, 28, 28), DIGITS)


@pytest.fixture(scope="module")
def big_linear():
    """2,097,152 weights: 4.2 MB of constants in speed mode (int16 weights), over the Pico 2's 4 MB less the
    firmware; about 2.1 MB in size mode."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048)).eval()
    return _compile(model, torch.zeros(1, 1024), _waves(32, 1024))


def test_the_pico2_budget_is_4mb_and_512kb_less_the_firmware():
    assert PICO2.flash_bytes == 4 * 1024 * 1024 - 64 * 1024 and PICO2.ram_bytes == 512 * 1024 - 16 * 1024
    from tinyaot.targets import pico2

    # the allowances hold what was measured of the Pico SDK runtime, with room for the model's code and the app
    assert pico2.SDK_FLASH_BYTES + 15_568 < pico2.PICO2_FLASH_BYTES - PICO2.flash_bytes
    assert pico2.SDK_RAM_BYTES < pico2.RP2350_MAIN_SRAM_BYTES - PICO2.ram_bytes


def test_a_model_that_does_not_fit_the_pico2_warns_with_the_numbers(big_linear):
    cm, said = big_linear
    assert not cm.budget.fits and cm.budget.target == PICO2
    assert cm.constant_bytes > PICO2.flash_bytes and cm.ram_bytes <= PICO2.ram_bytes
    assert len(said) == 1 and cm.budget.findings[0].code == "flash_budget"
    text = said[0]
    assert "does not fit the Pico 2 (RP2350)" in text
    assert f"{cm.constant_bytes:,} B of flash" in text and f"{PICO2.flash_bytes:,} B available" in text
    assert "optimize='size'" in text and "which fits" in text and "'0' 2,105,344 B" in text  # weights and int32 bias
    assert issubclass(MemoryBudgetWarning, TinyAOTWarning) and not issubclass(MemoryBudgetWarning, CalibrationWarning)
    assert cm.findings == []  # the calibration is fine: the budget is its own verdict
    # a target with more flash takes the same model
    assert check_budget(cm, check_target_memory((8 * 1024 * 1024, 512 * 1024))).fits


def test_the_size_mode_figure_is_what_size_mode_gives():
    """The advice's optimize='size' constants are what compiling with it gives, byte for byte."""
    torch.manual_seed(0)
    model = nn_mix()
    small = TargetMemory(100_000, 512 * 1024)  # speed mode: 140,088 B; size: 69,352 B
    x = torch.nn.functional.interpolate(torch.randn(32, 3, 4, 4, generator=torch.Generator().manual_seed(0)),
                                        size=(16, 16), mode="bilinear")
    speed, said = _compile(model, x[:1], x, target_memory=small)
    size, said_size = _compile(model, x[:1], x, target_memory=small, optimize="size")
    assert speed.constant_bytes > small.flash_bytes >= size.constant_bytes
    assert f"optimize='size', which keeps the weights int8 and drops the speed-only tables ({size.constant_bytes:,} " \
           "B of constants, which fits)" in said[0]
    assert said_size == []


def nn_mix():
    """A conv (pairs kernel), a residual add (its tables) and a linear layer (wide kernel): what size mode shrinks."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.conv = torch.nn.Conv2d(16, 16, 3, padding=1)
            self.fc = torch.nn.Linear(16 * 16 * 16, 10)

        def forward(self, x):
            y = torch.relu(self.stem(x))
            return self.fc(torch.flatten(torch.relu(self.conv(y)) + y, 1))

    return Net().eval()


def test_models_that_fit_are_silent(seed):
    cm, said = seed
    assert said == [] and cm.budget.fits and cm.budget.flash_bytes == cm.constant_bytes
    assert cm.budget.ram_bytes == cm.ram_bytes == 816


@pytest.mark.parametrize("name", ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "vww_96_int8"])
def test_the_mlperf_models_fit_the_pico2(name):
    cm, said = _compile(str(shared_file(f"models/mlperf_tiny/{name}.tflite")), None, None)
    assert said == [] and cm.budget.fits


def test_target_memory_changes_the_verdict(seed):
    cm, said = _compile(build_seed_mlp(), torch.zeros(1, 28, 28), DIGITS, target_memory=(40_000, 512))
    assert [f.code for f in cm.budget.findings] == ["flash_budget", "ram_budget"] and len(said) == 2
    flash, ram = said
    assert f"its constants take {cm.constant_bytes:,} B of flash" in flash and "40,000 B available" in flash
    assert "its arena takes 816 B of RAM, 1.59x the 512 B available" in ram
    assert "optimize='memory'" in ram and "input 784 B" in ram  # the peak: what fewer channels would shrink
    assert "does not fit the target" in flash
    named = TargetMemory(40_000, 512, "my board")
    _, said = _compile(build_seed_mlp(), torch.zeros(1, 28, 28), DIGITS, target_memory=named)
    assert "does not fit my board" in said[0]
    _, said = _compile(build_seed_mlp(), torch.zeros(1, 28, 28), DIGITS, target_memory=(60_000, 1024))
    assert said == []


@pytest.mark.arm
def test_the_report_shows_the_budget(seed):
    cm, _ = seed
    text = str(MemoryReport.of(cm))
    assert "flash budget" in text and f"{PICO2.flash_bytes:,}" in text and "RAM budget" in text
    d = MemoryReport.of(cm).to_dict()["budget"]
    assert d["fits"] is True and d["ram_bytes"] == 816 and d["target"]["ram_bytes"] == PICO2.ram_bytes


@pytest.mark.parametrize("bad", [(1, 2, 3), (0, 10), (1.5, 10), "big", (True, 10), (-1, 5), 4096])
def test_bad_target_memory_is_a_clear_error(bad):
    with pytest.raises(ModelError, match=r"target_memory must be \(flash_bytes, ram_bytes\)"):
        check_target_memory(bad)


def test_target_memory_on_the_command_line_parses_units():
    assert parse_target_memory("2MB,264KB") == TargetMemory(2 * 1024 * 1024, 264 * 1024)
    assert parse_target_memory("1048576, 65536") == TargetMemory(1024 * 1024, 64 * 1024)
    assert parse_target_memory("pico2") == PICO2 and parse_target_memory("0.5M,8k").flash_bytes == 512 * 1024
    for bad in ("2MB", "2GB,1MB", "x,y", "0,1"):
        with pytest.raises(ModelError, match="--target-memory"):
            parse_target_memory(bad)


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("budget_cli")
    (d / "seed.py").write_text(textwrap.dedent("""
        from tinyaot.demo_model import build_seed_mlp
        model = build_seed_mlp()
    """))
    np.save(d / "cal.npy", DIGITS[:64])
    return d


@pytest.mark.arm
def test_cli_target_memory(cli_dir):
    args = ["compile", "seed.py:model", "--calibration", "cal.npy", "--name", "seed", "-o", "out"]
    out = run_cli([*args, "--target-memory", "40KB,1KB"], cli_dir)
    assert "tinyaot: warning: model 'seed' does not fit the target: its constants take" in out.stderr
    assert "does not fit the target: constants" in out.stdout and "RAM budget" not in out.stdout
    fits = run_cli(args, cli_dir)
    assert "warning" not in fits.stderr and "fits the Pico 2 (RP2350)" in fits.stdout
    info = json.loads(run_cli([*args, "--target-memory", "40KB,1KB", "--json"], cli_dir).stdout)
    assert info["budget"]["fits"] is False and info["budget"]["target"]["flash_bytes"] == 40 * 1024
    assert [f["code"] for f in info["budget"]["findings"]] == ["flash_budget"]
    bad = run_cli([*args, "--target-memory", "lots"], cli_dir, check=False)
    assert bad.returncode == 2 and "--target-memory 'lots': give FLASH,RAM" in bad.stderr
