"""Cortex-M33 target: build a hand-written model in the generated-code API, run it on QEMU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tinyaot.targets.base import ModelSources
from tinyaot.targets.m33 import M33RunError, run_m33
from tinyaot.targets.toolchain import INSTALL_HINT, ToolchainMissing, have_m33_toolchain

INPUT_SIZE = 16
OUTPUT_SIZE = INPUT_SIZE + 4  # input ^ 0x5a, then the int32 sum of squares (little-endian)

TOY_H = """\
#ifndef TOY_H
#define TOY_H
#include <stddef.h>
#include <stdint.h>
#define TOY_ARENA_SIZE  48
#define TOY_INPUT_SIZE  16
#define TOY_OUTPUT_SIZE 20
int toy_init(uint8_t *arena, size_t arena_size);
int8_t *toy_input(void);
int toy_invoke(void);
const int8_t *toy_output(void);
#endif
"""

TOY_KERNELS_H = """\
#ifndef TOY_KERNELS_H
#define TOY_KERNELS_H
#include <stddef.h>
#include <stdint.h>
void toy_xor_5a(const int8_t *in, int8_t *out, size_t n);
int32_t toy_sum_squares(const int8_t *x, size_t n);
#endif
"""

# The sum of squares takes the SMLAD path when the DSP extension is present.
TOY_KERNELS_C = """\
#include "toy_kernels.h"
#include <string.h>
#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

void toy_xor_5a(const int8_t *in, int8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = (int8_t)(in[i] ^ 0x5a);
    }
}

int32_t toy_sum_squares(const int8_t *x, size_t n)
{
    int32_t acc = 0;
    size_t i = 0;
#if defined(__ARM_FEATURE_DSP)
    for (; i + 4 <= n; i += 4) {
        uint32_t w;
        memcpy(&w, x + i, sizeof w);
        int16x2_t even = __sxtb16(w);
        int16x2_t odd = __sxtb16((w >> 8) | (w << 24)); /* GCC 12 has no __ror */
        acc = __smlad(even, even, acc);
        acc = __smlad(odd, odd, acc);
    }
#endif
    for (; i < n; i++) {
        acc += (int32_t)x[i] * x[i];
    }
    return acc;
}
"""

TOY_C = """\
#include "toy.h"
#include <string.h>
#include "toy_kernels.h"

static uint8_t s_arena[TOY_ARENA_SIZE] __attribute__((aligned(16)));
static uint8_t *g_arena;

int toy_init(uint8_t *arena, size_t arena_size)
{
    if (arena == NULL) {
        arena = s_arena;
    } else if (arena_size < TOY_ARENA_SIZE) {
        return -1;
    }
    g_arena = arena;
    memset(g_arena, 0, TOY_ARENA_SIZE);
    return 0;
}

int8_t *toy_input(void) { return (int8_t *)g_arena; }
const int8_t *toy_output(void) { return (const int8_t *)(g_arena + 16); }

int toy_invoke(void)
{
    const int8_t *in = (const int8_t *)g_arena;
    int8_t *out = (int8_t *)(g_arena + 16);
    int32_t s = toy_sum_squares(in, TOY_INPUT_SIZE);
    toy_xor_5a(in, out, TOY_INPUT_SIZE);
    memcpy(out + TOY_INPUT_SIZE, &s, sizeof s);
    @EXTRA@
    return 0;
}
"""


def write_toy(model_dir: Path, extra: str = "") -> Path:
    """Write the toy model; `extra` is C placed at the end of toy_invoke."""
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "toy.h").write_text(TOY_H)
    (model_dir / "toy.c").write_text(TOY_C.replace("@EXTRA@", extra))
    (model_dir / "toy_kernels.h").write_text(TOY_KERNELS_H)
    (model_dir / "toy_kernels.c").write_text(TOY_KERNELS_C)
    return model_dir


def toy_expected(inputs: np.ndarray) -> np.ndarray:
    xored = inputs ^ np.int8(0x5A)
    sums = (inputs.astype(np.int32) ** 2).sum(axis=1).astype("<i4")
    return np.concatenate([xored, sums.view(np.int8).reshape(len(inputs), 4)], axis=1)


def random_inputs(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-128, 128, size=(n, INPUT_SIZE), dtype=np.int8)


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy(tmp_path_factory.mktemp("toy"))


@pytest.mark.m33
@pytest.mark.parametrize("dsp", [True, False], ids=["dsp", "nodsp"])
def test_outputs_match_numpy(toy_dir: Path, tmp_path: Path, dsp: bool) -> None:
    inputs = random_inputs(20)
    result = run_m33(toy_dir, "toy", inputs, OUTPUT_SIZE, build_dir=tmp_path, dsp=dsp)
    assert result.outputs.dtype == np.int8
    np.testing.assert_array_equal(result.outputs, toy_expected(inputs))
    assert result.elf_path.is_file()
    assert result.text_bytes > 0 and result.bss_bytes >= 48  # the static arena


@pytest.mark.m33
def test_instruction_count_is_deterministic(toy_dir: Path, tmp_path: Path) -> None:
    inputs = random_inputs(20)
    first = run_m33(toy_dir, "toy", inputs, OUTPUT_SIZE, build_dir=tmp_path / "a")
    second = run_m33(toy_dir, "toy", inputs, OUTPUT_SIZE, build_dir=tmp_path / "b")
    assert first.instructions == second.instructions
    # 16 XORs and a 16-element dot product: dozens to a few hundred instructions.
    assert 20 < first.instructions < 1000
    assert 0 < first.stack_bytes == second.stack_bytes < 1024


@pytest.mark.m33
def test_dsp_path_changes_the_code(toy_dir: Path, tmp_path: Path) -> None:
    inputs = random_inputs(4)
    with_dsp = run_m33(toy_dir, "toy", inputs, OUTPUT_SIZE, build_dir=tmp_path / "a", dsp=True)
    without = run_m33(toy_dir, "toy", inputs, OUTPUT_SIZE, build_dir=tmp_path / "b", dsp=False)
    assert "smlad" in _disassembly(with_dsp.elf_path)
    assert "smlad" not in _disassembly(without.elf_path)
    np.testing.assert_array_equal(with_dsp.outputs, without.outputs)


@pytest.mark.m33
def test_batches_larger_than_one_run_are_split(toy_dir: Path, tmp_path: Path) -> None:
    from tinyaot.targets import m33

    probe_size = sum(m33.elf_sizes(_build_once(toy_dir, tmp_path / "probe"))[:2])
    # Leave room for exactly 7 inputs per run, so 20 inputs take 3 runs.
    target = m33.M33Target(build_dir=tmp_path / "split", flash_bytes=probe_size + m33.FLASH_MARGIN + 7 * INPUT_SIZE)
    build = target.build(ModelSources.in_directory(toy_dir, "toy", INPUT_SIZE, OUTPUT_SIZE))
    assert build.inputs_per_run == 7
    inputs = random_inputs(20, seed=1)
    result = target.run(build, inputs)
    np.testing.assert_array_equal(result.outputs, toy_expected(inputs))
    assert (tmp_path / "split" / "toy_batch.elf").is_file()


@pytest.mark.m33
def test_fault_raises_with_guest_output(tmp_path: Path) -> None:
    model = write_toy(tmp_path / "model", extra="__builtin_trap();")
    with pytest.raises(M33RunError, match=r"status 99 .*fault in toy_invoke.*UNDEFINSTR") as info:
        run_m33(model, "toy", random_inputs(2), OUTPUT_SIZE, build_dir=tmp_path / "build")
    assert "FAULT CFSR=" in str(info.value)


@pytest.mark.m33
def test_model_error_code_is_reported(tmp_path: Path) -> None:
    model = write_toy(tmp_path / "model", extra="return -7;")
    with pytest.raises(M33RunError, match=r"(?s)status 2 .*ERROR toy_invoke returned -7"):
        run_m33(model, "toy", random_inputs(1), OUTPUT_SIZE, build_dir=tmp_path / "build")


@pytest.mark.m33
def test_hang_hits_the_timeout(tmp_path: Path) -> None:
    model = write_toy(tmp_path / "model", extra="for (volatile int i = 0; ; i++) { }")
    with pytest.raises(M33RunError, match="did not finish within 2 s"):
        run_m33(model, "toy", random_inputs(1), OUTPUT_SIZE, build_dir=tmp_path / "b", timeout=2)


@pytest.mark.m33
def test_wrong_output_size_fails_at_compile_time(toy_dir: Path, tmp_path: Path) -> None:
    from tinyaot.targets.m33 import M33BuildError

    with pytest.raises(M33BuildError, match="TOY_OUTPUT_SIZE"):
        run_m33(toy_dir, "toy", random_inputs(1), OUTPUT_SIZE + 1, build_dir=tmp_path)


def test_missing_compiler_names_the_install_command(
    toy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-arm-none-eabi-gcc"
    monkeypatch.setenv("TINYAOT_ARM_GCC", str(missing))
    assert not have_m33_toolchain()
    with pytest.raises(ToolchainMissing) as info:
        run_m33(toy_dir, "toy", random_inputs(1), OUTPUT_SIZE, build_dir=tmp_path / "b")
    message = str(info.value)
    assert "arm-none-eabi-gcc" in message and str(missing) in message
    assert INSTALL_HINT in message


def _build_once(model_dir: Path, build_dir: Path) -> Path:
    """The probe ELF (no embedded inputs) of one successful run."""
    run_m33(model_dir, "toy", random_inputs(1), OUTPUT_SIZE, build_dir=build_dir)
    return build_dir / "toy_probe.elf"


def _disassembly(elf: Path) -> str:
    import subprocess

    from tinyaot.targets.toolchain import find_m33_toolchain

    gcc = find_m33_toolchain().gcc
    objdump = gcc.with_name(gcc.name.replace("gcc", "objdump"))
    return subprocess.run(
        [str(objdump), "-d", str(elf)], capture_output=True, text=True, check=True
    ).stdout


# ---- the common target interface ------------------------------------------------------------------------


@pytest.mark.m33
def test_m33_target_builds_once_and_runs_in_memory_sources(tmp_path: Path) -> None:
    """Sources held only in memory are written under build_dir; one build serves several runs."""
    from tinyaot.targets.base import Artifact, Target
    from tinyaot.targets.m33 import M33Result, M33Target

    files = {p.name: p.read_text() for p in write_toy(tmp_path / "src").iterdir()}
    target = M33Target(build_dir=tmp_path / "build")
    assert isinstance(target, Target)
    build = target.build(ModelSources("toy", INPUT_SIZE, OUTPUT_SIZE, files))
    assert isinstance(build, Artifact) and build.path.is_file()
    first, second = target.run(build, random_inputs(3, seed=2)), target.run(build, random_inputs(5, seed=3))
    assert isinstance(first, M33Result)
    np.testing.assert_array_equal(second.outputs, toy_expected(random_inputs(5, seed=3)))
    assert first.instructions == second.instructions and first.sizes == second.sizes
    assert first.text_bytes == first.sizes.text > 0 and first.bss_bytes >= 48


def test_harness_main_comes_from_its_template() -> None:
    from tinyaot.targets.m33 import SUPPORT_DIR
    from tinyaot.targets.m33.build import harness_main

    template = (SUPPORT_DIR / "harness_main.c").read_text()
    assert "@NAME@" in template
    text = harness_main("toy", INPUT_SIZE, OUTPUT_SIZE)
    assert '#include "toy.h"' in text and "TOY_INPUT_SIZE != 16" in text and "@" not in text


def test_inputs_run_m33_cannot_use_are_tinyaot_errors(toy_dir: Path) -> None:
    from tinyaot.errors import TinyAOTError
    from tinyaot.targets.m33 import M33InputError

    for bad in (random_inputs(2).astype(np.int16), random_inputs(2)[0], random_inputs(2)[:0]):
        with pytest.raises(M33InputError) as info:
            run_m33(toy_dir, "toy", bad, OUTPUT_SIZE)
        assert isinstance(info.value, TinyAOTError) and isinstance(info.value, ValueError)


def test_engines_come_from_one_registry() -> None:
    import tinyaot.model
    from tinyaot.errors import ModelError
    from tinyaot.targets.engines import ENGINES, REGISTRY, engine_named

    assert ENGINES == tuple(REGISTRY) == ("reference", "host", "m33")
    assert tinyaot.model.ENGINES == ENGINES
    assert [e.name for e in REGISTRY.values() if e.emulated] == ["m33"]
    with pytest.raises(ModelError, match="unknown engine 'gpu'; choose one of reference, host, m33"):
        engine_named("gpu")


def _modules(package: str):
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    yield pkg
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        yield importlib.import_module(info.name)


def test_every_error_of_the_targets_and_reports_is_a_tinyaot_error() -> None:
    """Exception classes defined there derive from TinyAOTError, and no `raise` there names a builtin one."""
    import ast
    import builtins
    import inspect

    from tinyaot.errors import TinyAOTError

    builtin_errors = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}
    offenders = []
    for mod in (*_modules("tinyaot.targets"), *_modules("tinyaot.report")):
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.__name__:
                if not issubclass(obj, TinyAOTError):
                    offenders.append(f"{mod.__name__}.{name}")
        for node in ast.walk(ast.parse(inspect.getsource(mod))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(call, ast.Name) and call.id in builtin_errors:
                    offenders.append(f"{mod.__name__}:{node.lineno} raises {call.id}")
    assert not offenders, offenders
