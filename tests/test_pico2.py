"""`--target pico2`: the Pico SDK project builds with the RP2350 flags, its app logic runs on the emulated
Cortex-M33 with the reference's exact outputs, and its CMakeLists configures against a stand-in SDK."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import have_m33

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits, demo_digits
from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.targets import pico2
from tinyaot.targets.pico2 import (
    RP2350_C_FLAGS,
    RP2350_CPU_FLAGS,
    RP2350_DEFINES,
    CallGraph,
    CallGraphError,
    Pico2ExportError,
    app_checksum,
    export_pico2,
    run_app_m33,
)

WARN = ("-Wall", "-Wextra", "-Werror")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")


@pytest.fixture(scope="module")
def seed():
    """The demo's model, its four digits (int8) and their labels."""
    images, labels = demo_digits()
    cm = tinyaot.compile(build_seed_mlp(), torch.from_numpy(images[:1]), calibration=calibration_digits(),
                         name="mnist")
    return cm, cm.quantize_input(images), labels


@pytest.fixture(scope="module")
def project(seed, tmp_path_factory):
    cm, x_q, labels = seed
    out = tmp_path_factory.mktemp("pico2") / "proj"
    files = cm.export(out, target="pico2", inputs=x_q, labels=labels)
    return out, files


def _vectors(project_dir: Path) -> tuple[np.ndarray, list[int]]:
    """Read the embedded inputs and labels back out of test_vectors.c."""
    text = re.sub(r"/\*.*?\*/", "", (project_dir / "test_vectors.c").read_text(), flags=re.DOTALL)
    inputs = text.split("app_inputs[APP_N_INPUTS]")[1].split("};")[0].split("=", 1)[1]
    labels = text.split("app_labels[APP_N_INPUTS] =")[1].split("};")[0]
    rows = [[int(v) for v in re.findall(r"-?\d+", row)] for row in re.findall(r"\{([^{}]*)\}", inputs)]
    return np.array(rows, dtype=np.int8), [int(v) for v in re.findall(r"-?\d+", labels)]


# --- the written project (pure Python) ------------------------------------------------------------


@pytest.mark.arm
def test_project_layout_and_cmake_order(project, seed):
    cm, _, _ = seed
    out, files = project
    names = {str(f.relative_to(out)) for f in files}
    assert {"CMakeLists.txt", "pico_sdk_import.cmake", "main.c", "app.c", "app.h", "test_vectors.c",
            "test_vectors.h", "README.md", "model/mnist.c", "model/mnist.h", "model/fully_connected_s8.c"} <= names
    assert all(f.is_file() for f in files)
    cmake = (out / "CMakeLists.txt").read_text()
    order = [cmake.index(s) for s in ("set(PICO_BOARD pico2", "include(pico_sdk_import.cmake)",
                                      "project(mnist_pico2 C CXX ASM)", "pico_sdk_init()",
                                      "add_executable(mnist_pico2", "pico_add_extra_outputs(mnist_pico2)")]
    assert order == sorted(order)
    for line in ("pico_enable_stdio_usb(mnist_pico2 1)", "pico_enable_stdio_uart(mnist_pico2 1)",
                 "target_link_libraries(mnist_pico2 pico_stdlib)"):
        assert line in cmake
    sources = cmake.split("add_executable(mnist_pico2")[1].split(")")[0].split()
    assert sorted(sources) == sorted(["main.c", "app.c", "test_vectors.c"]
                                     + [f"model/{c}" for c in cm.c_sources.c_files])
    # The arena is the plan's, in the model header; nothing in the board files sizes memory by hand.
    assert f"#define MNIST_ARENA_SIZE {cm.arena_bytes}\n" in (out / "model/mnist.h").read_text()
    for f in ("main.c", "app.c"):
        code = re.sub(r"/\*.*?\*/", "", (out / f).read_text(), flags=re.DOTALL)
        assert not re.search(r"\b(malloc|float|double)\b", code), f
    assert "mnist_init(NULL, MNIST_ARENA_SIZE)" in (out / "app.c").read_text()
    assert "time_us_64()" in (out / "main.c").read_text() and "stdio_init_all()" in (out / "main.c").read_text()


@pytest.mark.arm
def test_export_is_deterministic_and_embeds_the_inputs(project, seed, tmp_path):
    cm, x_q, labels = seed
    out, files = project
    again = cm.export(tmp_path / "again", target="pico2", inputs=x_q, labels=labels)
    assert [f.relative_to(tmp_path / "again") for f in again] == [f.relative_to(out) for f in files]
    for a, b in zip(again, files):
        assert a.read_bytes() == b.read_bytes(), a.name
    inputs, got_labels = _vectors(out)
    np.testing.assert_array_equal(inputs, x_q.reshape(len(x_q), -1))
    assert got_labels == [0, 1, 4, 7] == labels.tolist()


@pytest.mark.arm
def test_readme_tells_a_new_user_everything(project, seed):
    cm, x_q, _ = seed
    out, _ = project
    readme = (out / "README.md").read_text()
    for needle in ("PICO_SDK_PATH", "cmake -B build", "make -C build", "BOOTSEL", "build/mnist_pico2.uf2",
                   "115200", "/dev/ttyACM0", "UART0", f"| RAM: model arena | {cm.arena_bytes:,} |",
                   f"| flash: model constants | {cm.constant_bytes:,} |",
                   # what to install, and why the less obvious packages
                   "gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib", "python3",
                   "pico_cxx_options/new_delete.cpp", "CMake 3.15 or newer", "3.17",
                   # picotool: cloned at configure time unless one is installed, and how to point at one
                   "clones picotool's source", "PICOTOOL_FETCH_FROM_GIT_PATH=<dir>", "-Dpicotool_DIR=",
                   "-DPICOTOOL_NO_LIBUSB=1", "picotool info -a build/mnist_pico2.uf2",
                   # honest sizes
                   "`build/mnist_pico2.bin` is the image written to flash", "`arm-none-eabi-size -A`",
                   "copy_to_ram=True", "pico_set_binary_type(mnist_pico2 copy_to_ram)"):
        assert needle in readme, needle
    assert not re.search(r"@[A-Z_]+@", readme)  # every placeholder filled
    reserved = _stack_size(out)
    assert f"| RAM: stack reserved, `PICO_STACK_SIZE` | {reserved:,} (0x{reserved:x}) |" in readme
    if have_m33():
        assert re.search(r"\| RAM: stack of one inference \| [\d,]+ \| the worst call path of `mnist_invoke\(\)`: "
                         r"`mnist_invoke` -> .*-fcallgraph-info", readme)
        assert re.search(r"\| flash: model code \| [\d,]+ \| model \+ kernels: the functions `app_run\(\)` reaches",
                         readme)
        assert re.search(r"\| flash: whole firmware \| about [\d,]+ \|", readme)
    ref = cm.run(x_q)
    for k, y in enumerate(ref):
        assert f"#{k} predicted {int(np.argmax(y))} expected {[0, 1, 4, 7][k]} ok, <time> us, " \
               f"output {y.tobytes().hex()}" in readme
    assert "4/4 predictions match the labels" in readme
    assert f"checksum {app_checksum(ref):08x}, next run in 5000 ms" in readme


def _stack_size(project_dir: Path) -> int:
    m = re.search(r"^  PICO_STACK_SIZE=(0x[0-9a-f]+)$", (project_dir / "CMakeLists.txt").read_text(), re.MULTILINE)
    assert m, "CMakeLists.txt sets no PICO_STACK_SIZE"
    return int(m.group(1), 16)


def _readme_figure(project_dir: Path, row: str) -> int | None:
    m = re.search(rf"^\| {re.escape(row)} \| (?:about )?([\d,]+|n/a)", (project_dir / "README.md").read_text(),
                  re.MULTILINE)
    assert m, f"no row '{row}' in README.md"
    return None if m.group(1) == "n/a" else int(m.group(1).replace(",", ""))


@pytest.mark.arm
def test_cmake_asks_for_the_cmake_the_sdk_needs(project):
    out, _ = project
    cmake = (out / "CMakeLists.txt").read_text()
    assert re.search(r"^cmake_minimum_required\(VERSION 3\.15\)$", cmake, re.MULTILINE)
    assert "3.17 (tools/Findpicotool.cmake)" in cmake
    # Offered, not used: the program runs from flash unless exported with copy_to_ram=True.
    assert re.search(r"^#   pico_set_binary_type\(mnist_pico2 copy_to_ram\)$", cmake, re.MULTILINE)
    assert not re.search(r"^pico_set_binary_type", cmake, re.MULTILINE)


@pytest.mark.arm
def test_the_stack_is_sized_from_the_measured_call_graph(project, seed):
    cm, _, _ = seed
    out, _ = project
    inference = _readme_figure(out, "RAM: stack of one inference")
    app = int(re.search(r"at most ([\d,]+) B for app\.c with one inference", (out / "README.md").read_text()
                        ).group(1).replace(",", ""))
    assert 0 < inference < app
    expected = max(pico2.SDK_DEFAULT_STACK_BYTES, -(-(app + pico2.SDK_STACK_BYTES) // 256) * 256)
    assert _stack_size(out) == expected <= pico2.CORE0_STACK_LIMIT_BYTES
    assert pico2.SDK_STACK_MEASURED_BYTES <= pico2.SDK_STACK_BYTES


def test_without_the_cross_compiler_the_stack_is_the_documented_default(seed, tmp_path, monkeypatch):
    from tinyaot.targets.toolchain import GCC_ENV

    cm, x_q, labels = seed
    monkeypatch.setenv(GCC_ENV, str(tmp_path / "no-such-arm-none-eabi-gcc"))
    export_pico2(cm, tmp_path / "p", inputs=x_q, labels=labels)
    assert _stack_size(tmp_path / "p") == pico2.UNMEASURED_STACK_BYTES == pico2.CORE0_STACK_LIMIT_BYTES
    readme = (tmp_path / "p" / "README.md").read_text()
    assert "not measured: arm-none-eabi-gcc was missing when this project was written" in readme
    assert _readme_figure(tmp_path / "p", "RAM: stack of one inference") is None
    assert _readme_figure(tmp_path / "p", "flash: model code") is None
    assert not re.search(r"@[A-Z_]+@", readme)


@pytest.mark.arm
def test_a_stack_beyond_the_scratch_bank_is_refused(seed, tmp_path, monkeypatch):
    cm, x_q, _ = seed
    monkeypatch.setattr(pico2.measure, "SDK_STACK_BYTES", pico2.CORE0_STACK_LIMIT_BYTES)  # where the stack is planned
    with pytest.raises(Pico2ExportError, match=r"more than the 4,096 B the Pico SDK's default memory map gives "
                                               r"core 0 \(the SCRATCH_Y bank\)") as info:
        export_pico2(cm, tmp_path / "p", inputs=x_q)
    assert "mnist_invoke -> " in str(info.value)
    assert not (tmp_path / "p").exists()  # nothing half-written


@pytest.mark.arm
def test_copy_to_ram_runs_the_program_from_sram(seed, tmp_path):
    cm, x_q, labels = seed
    export_pico2(cm, tmp_path / "p", inputs=x_q, labels=labels, copy_to_ram=True)
    cmake = (tmp_path / "p" / "CMakeLists.txt").read_text()
    order = [cmake.index(s) for s in ("add_executable(mnist_pico2", "pico_set_binary_type(mnist_pico2 copy_to_ram)",
                                      "pico_add_extra_outputs(mnist_pico2)")]
    assert order == sorted(order) and re.search(r"^pico_set_binary_type", cmake, re.MULTILINE)
    readme = (tmp_path / "p" / "README.md").read_text()
    assert "exported with `copy_to_ram=True`" in readme and "copied to SRAM at boot by copy_to_ram" in readme
    if have_m33():
        cost = int(re.search(r"This\s+costs\s+about\s+([\d,]+)\s+B", readme).group(1).replace(",", ""))
        assert cost > cm.constant_bytes + x_q.nbytes  # the constants, the inputs and code
        ram = _readme_figure(tmp_path / "p", "RAM: whole firmware")
        assert ram >= cost + cm.arena_bytes + _stack_size(tmp_path / "p")


def test_call_graph_bounds(tmp_path):
    """The call-graph reader on gcc's .ci format: worst path, library leaves, function pointers, --wrap,
    error paths left out, and recursion, which has no bound."""
    (tmp_path / "a.ci").write_text(textwrap.dedent("""\
        graph: { title: "a.c"
        node: { title: "main" label: "main\\na.c:1:5\\n16 bytes (static)" }
        node: { title: "a.c:helper" label: "helper\\na.c:2:13\\n40 bytes (static)" }
        node: { title: "printf" label: "printf\\nstdio.h:3:5" shape : ellipse }
        node: { title: "memcpy" label: "__builtin_memcpy\\n<built-in>" shape : ellipse }
        node: { title: "__indirect_call" label: "Indirect Call Placeholder" shape : ellipse }
        edge: { sourcename: "main" targetname: "a.c:helper" label: "a.c:9:5" }
        edge: { sourcename: "main" targetname: "printf" label: "a.c:10:5" }
        edge: { sourcename: "main" targetname: "panic" label: "a.c:11:5" }
        edge: { sourcename: "a.c:helper" targetname: "memcpy" }
        edge: { sourcename: "a.c:helper" targetname: "__indirect_call" label: "a.c:4:5" }
        node: { title: "a.c:callback" label: "callback\\na.c:5:13\\n8 bytes (static)" }
        }
        """))
    (tmp_path / "b.ci").write_text(textwrap.dedent("""\
        graph: { title: "b.c"
        node: { title: "__wrap_printf" label: "__wrap_printf\\nb.c:1:5\\n100 bytes (static)" }
        node: { title: "panic" label: "panic\\nb.c:2:5\\n500 bytes (static)" }
        node: { title: "loop" label: "loop\\nb.c:3:5\\n8 bytes (static)" }
        node: { title: "alloca_user" label: "alloca_user\\nb.c:4:5\\n24 bytes (dynamic)" }
        edge: { sourcename: "loop" targetname: "loop" label: "b.c:3:20" }
        }
        """))
    graph = CallGraph.read([tmp_path / "a.ci", tmp_path / "b.ci"])
    assert graph.worst_path("main").bytes == 16 + 500  # panic is the deepest
    assert graph.worst_path("main", stop=("panic",)).bytes == 16 + 100  # printf is linked as __wrap_printf
    both = graph.worst_path("main", stop=("panic",), leaf_bytes=32, indirect=("callback",))
    assert both.bytes == 16 + max(100, 40 + 32) and both.path == ("main", "__wrap_printf")
    deep = graph.worst_path("helper", indirect=("callback",), leaf_bytes=4)
    assert deep.bytes == 40 + 8 and deep.path == ("a.c:helper", "a.c:callback")
    assert graph.reachable(["main"]) == {"main", "a.c:helper", "__wrap_printf", "panic"}
    with pytest.raises(CallGraphError, match="loop is recursive"):
        graph.worst_path("loop")
    assert graph.worst_path("loop", cut_cycles=True).bytes == 8
    with pytest.raises(CallGraphError, match="alloca_user has a dynamic stack frame"):
        graph.worst_path("alloca_user")
    with pytest.raises(CallGraphError, match="no function 'nothing'"):
        graph.worst_path("nothing")


@pytest.mark.arm
def test_float_inputs_are_quantized_and_default_is_one_zero_input(seed, tmp_path):
    cm, x_q, _ = seed
    images, _ = demo_digits()
    export_pico2(cm, tmp_path / "f", inputs=images[:2])
    inputs, labels = _vectors(tmp_path / "f")
    np.testing.assert_array_equal(inputs, x_q[:2].reshape(2, -1))
    assert labels == [-1, -1]
    export_pico2(cm, tmp_path / "z")
    inputs, labels = _vectors(tmp_path / "z")
    assert inputs.shape == (1, cm.input_size) and (inputs == cm.input_qparams[1]).all() and labels == [-1]
    export_pico2(cm, tmp_path / "one", inputs=x_q[3], labels=[7])  # a single sample, no batch dimension
    assert _vectors(tmp_path / "one")[1] == [7]


@pytest.mark.parametrize("inputs, labels, match", [
    ("bad_shape", None, "does not fit model"),
    ("ok", [0, 1, 4], "3 labels for 4 test inputs"),
    ("ok", [0, 1, 4, 10], r"class indices in \[0, 9\]"),
    ("ok", [0.5, 1, 4, 7], "class indices"),
    ("int32", None, "neither int8 nor float"),
])
def test_bad_test_vectors_say_what_to_do(seed, tmp_path, inputs, labels, match):
    cm, x_q, _ = seed
    x = {"bad_shape": np.zeros((2, 27, 28), np.int8), "ok": x_q,
         "int32": x_q.astype(np.int32) * 300}[inputs]
    with pytest.raises(Pico2ExportError, match=match) as info:
        cm.export(tmp_path / "bad", target="pico2", inputs=x, labels=labels)
    assert isinstance(info.value, TinyAOTError)


def test_export_targets(seed, tmp_path):
    cm, x_q, _ = seed
    with pytest.raises(ModelError, match="available: 'c', 'pico2'"):
        cm.export(tmp_path / "x", target="pico3")
    with pytest.raises(ModelError, match="target 'pico2'"):
        cm.export(tmp_path / "x", target="c", inputs=x_q)


# --- compiling and running the app logic -----------------------------------------------------------


def _project_c_files(out: Path) -> list[Path]:
    return [out / "app.c", out / "test_vectors.c", *sorted((out / "model").glob("*.c"))]


@pytest.mark.arm
def test_sources_compile_warning_free_with_rp2350_flags(project, tmp_path):
    out, _ = project
    gcc = shutil.which("arm-none-eabi-gcc")
    inc = [f"-I{out}", f"-I{out / 'model'}"]
    for i, std in enumerate((list(RP2350_C_FLAGS), [*RP2350_C_FLAGS, "-std=c99", "-pedantic"])):
        obj = tmp_path / f"o{i}"
        obj.mkdir()
        cmd = [gcc, *RP2350_CPU_FLAGS, *std, *RP2350_DEFINES, *WARN, *inc, "-c", *map(str, _project_c_files(out))]
        proc = subprocess.run(cmd, cwd=obj, capture_output=True, text=True, check=False)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert len(list(obj.glob("*.o"))) == len(_project_c_files(out))
    # main.c against the SDK functions it uses, declared with the SDK's signatures.
    stub = tmp_path / "stub" / "pico"
    stub.mkdir(parents=True)
    (stub / "stdlib.h").write_text(PICO_STDLIB_STUB)
    proc = subprocess.run([gcc, *RP2350_CPU_FLAGS, *RP2350_C_FLAGS, *RP2350_DEFINES, *WARN, f"-I{stub.parent}",
                           *inc, "-c", str(out / "main.c"), "-o", str(tmp_path / "main.o")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.m33
def test_app_on_qemu_m33_equals_the_reference(project, seed, tmp_path):
    cm, x_q, labels = seed
    out, _ = project
    run = run_app_m33(out, build_dir=tmp_path / "qemu")
    ref = cm.run(x_q, engine="reference")
    np.testing.assert_array_equal(run.outputs, ref)
    assert run.predictions == ref.argmax(-1).tolist() == [0, 1, 4, 7]
    assert run.labels == labels.tolist()
    assert run.checksum == app_checksum(ref) != 0
    macs = 784 * 32 + 32 * 16 + 16 * 10
    # The board's timer path works: an inference costs at least one instruction per two MACs (SMLAD).
    each = run.inference_instructions
    assert all(macs // 2 < n < 20 * macs for n in each) and run.instructions == each[0], each
    assert run.bss_bytes >= cm.arena_bytes
    assert run.text_bytes > cm.constant_bytes + x_q.nbytes
    # The static bound the project's stack is sized from holds on the same code, and is tight: the painted stack
    # below app_run() on QEMU never goes deeper than app_run()'s worst call path in the image's call graph.
    assert 0 < run.stack_bytes <= run.stack_bound <= run.stack_bytes + 64, (run.stack_bytes, run.stack_bound)
    readme = (out / "README.md").read_text()
    app = int(re.search(r"at most ([\d,]+) B for app\.c with one inference", readme).group(1).replace(",", ""))
    assert app <= run.stack_bound  # the export's figure leaves out only the board's print callback


@pytest.mark.m33
def test_the_app_target_runs_only_the_embedded_vectors(project, tmp_path):
    from tinyaot.targets.base import RunResult, Target

    out, _ = project
    target = pico2.Pico2AppTarget(build_dir=tmp_path / "qemu")
    assert isinstance(target, Target)
    build = target.build(out)
    assert isinstance(target.run(build), RunResult)
    with pytest.raises(Pico2ExportError, match="embedded"):
        target.run(build, np.zeros((1, 784), np.int8))


@pytest.mark.arm
def test_app_on_host_equals_the_reference(project, seed, tmp_path):
    """The same app.c through a third board layer (stdout, clock()) with the host compiler, C99 pedantic."""
    cm, x_q, _ = seed
    out, _ = project
    (tmp_path / "host_main.c").write_text(HOST_MAIN)
    exe = tmp_path / "app"
    cc = os.environ.get("CC", "gcc")
    proc = subprocess.run([cc, "-std=c99", "-pedantic", *WARN, "-O2", f"-I{out}", f"-I{out / 'model'}",
                           str(tmp_path / "host_main.c"), *map(str, _project_c_files(out)), "-o", str(exe)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    stdout = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    ref = cm.run(x_q)
    for k, y in enumerate(ref):
        assert re.search(rf"^#{k} predicted {int(np.argmax(y))} expected \d ok, \d+ ticks, output "
                         rf"{y.tobytes().hex()}$", stdout, re.MULTILINE), stdout
    assert "summary: 4/4 predictions match the labels" in stdout


PICO_STDLIB_STUB = """\
#include <stdbool.h>
#include <stdint.h>
bool stdio_init_all(void);
void stdio_flush(void);
void sleep_ms(uint32_t ms);
uint64_t time_us_64(void);
"""

HOST_MAIN = """\
#include <stdio.h>
#include <time.h>
#include "app.h"
static void print(const char *text) { fputs(text, stdout); }
static uint64_t now(void) { return (uint64_t)clock(); }
int main(void) { return app_run(print, now, "ticks"); }
"""


# --- CMake ------------------------------------------------------------------------------------------

STAND_IN_SDK = """\
# A stand-in for the Pico SDK: just enough to configure (and, with a cross compiler, build) a project.
if(DEFINED PROJECT_NAME)
  message(FATAL_ERROR "pico_sdk_import.cmake must be included before project()")
endif()
if(NOT PICO_BOARD STREQUAL "pico2")
  message(FATAL_ERROR "PICO_BOARD must be pico2 before the SDK import, got '${PICO_BOARD}'")
endif()
@TOOLCHAIN@
set(STAND_IN_DIR ${CMAKE_CURRENT_LIST_DIR})

function(pico_sdk_init)
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(lang C CXX ASM)
    if(NOT lang IN_LIST langs)
      message(FATAL_ERROR "project() must enable ${lang}")
    endif()
  endforeach()
  add_library(pico_stdlib INTERFACE)
  target_include_directories(pico_stdlib INTERFACE ${STAND_IN_DIR}/include)
  target_sources(pico_stdlib INTERFACE ${STAND_IN_DIR}/stdlib_stub.c)
  target_compile_definitions(pico_stdlib INTERFACE PICO_RP2350=1 PICO_ON_DEVICE=1 "PICO_BOARD=\\"pico2\\"")
  target_link_options(pico_stdlib INTERFACE --specs=nosys.specs)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "init\\n")
endfunction()
function(pico_enable_stdio_usb target enabled)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "usb ${target} ${enabled}\\n")
endfunction()
function(pico_enable_stdio_uart target enabled)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "uart ${target} ${enabled}\\n")
endfunction()
function(pico_add_extra_outputs target)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "extra ${target}\\n")
endfunction()
function(pico_set_binary_type target type)
  file(APPEND ${CMAKE_BINARY_DIR}/calls.txt "binary_type ${target} ${type}\\n")
endfunction()
"""

CROSS_TOOLCHAIN = """\
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR cortex-m33)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "@FLAGS@")
set(CMAKE_CXX_FLAGS_INIT "@FLAGS@")
set(CMAKE_ASM_FLAGS_INIT "@FLAGS@")
"""

STDLIB_STUB_C = """\
#include "pico/stdlib.h"
bool stdio_init_all(void) { return true; }
void stdio_flush(void) {}
void sleep_ms(uint32_t ms) { (void)ms; }
uint64_t time_us_64(void) { static uint64_t t; return t += 7u; }
"""


def _cross() -> bool:
    return have_m33() and shutil.which("arm-none-eabi-g++") is not None


def _stand_in_sdk(root: Path) -> Path:
    sdk = root / "sdk"
    (sdk / "include" / "pico").mkdir(parents=True)
    flags = " ".join([*RP2350_CPU_FLAGS, "-Werror"])
    toolchain = CROSS_TOOLCHAIN.replace("@FLAGS@", flags) if _cross() else ""
    (sdk / "pico_sdk_init.cmake").write_text(STAND_IN_SDK.replace("@TOOLCHAIN@", toolchain))
    (sdk / "include" / "pico" / "stdlib.h").write_text(PICO_STDLIB_STUB)
    (sdk / "stdlib_stub.c").write_text(STDLIB_STUB_C)
    return sdk


def _cmake(args, env_sdk=None):
    env = {k: v for k, v in os.environ.items() if k != "PICO_SDK_PATH"}
    if env_sdk is not None:
        env["PICO_SDK_PATH"] = str(env_sdk)
    return subprocess.run(["cmake", *args], capture_output=True, text=True, env=env, timeout=300, check=False)


@needs_cmake
@pytest.mark.arm
def test_cmake_configures_and_builds_against_a_stand_in_sdk(project, tmp_path):
    out, _ = project
    sdk = _stand_in_sdk(tmp_path)
    build = tmp_path / "build"
    proc = _cmake(["-S", str(out), "-B", str(build), f"-DPICO_SDK_PATH={sdk}"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (build / "calls.txt").read_text().splitlines() == [
        "init", "usb mnist_pico2 1", "uart mnist_pico2 1", "extra mnist_pico2"]
    cache = (build / "CMakeCache.txt").read_text()
    assert "PICO_BOARD:STRING=pico2" in cache and "CMAKE_BUILD_TYPE:STRING=Release" in cache
    if not _cross():
        return
    # With the cross compiler, every project file compiles with the SDK's Release flags plus -Werror.
    proc = _cmake(["--build", str(build), "--", "VERBOSE=1"])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert (build / "mnist_pico2").is_file() or (build / "mnist_pico2.elf").is_file()
    app_cmd = next(line for line in proc.stdout.splitlines() if line.rstrip().endswith("/app.c"))
    for flag in (*RP2350_CPU_FLAGS, "-O3", "-DNDEBUG", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                 "-DPICO_STDIO_USB_CONNECT_WAIT_TIMEOUT_MS=3000", f"-DPICO_STACK_SIZE=0x{_stack_size(out):x}"):
        assert flag in app_cmd.split(), flag


@needs_cmake
@pytest.mark.arm
def test_cmake_with_copy_to_ram_configures_against_a_stand_in_sdk(seed, tmp_path):
    cm, x_q, labels = seed
    export_pico2(cm, tmp_path / "p", inputs=x_q, labels=labels, copy_to_ram=True)
    build = tmp_path / "build"
    proc = _cmake(["-S", str(tmp_path / "p"), "-B", str(build), f"-DPICO_SDK_PATH={_stand_in_sdk(tmp_path)}"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (build / "calls.txt").read_text().splitlines() == [
        "init", "binary_type mnist_pico2 copy_to_ram", "usb mnist_pico2 1", "uart mnist_pico2 1", "extra mnist_pico2"]


@needs_cmake
@pytest.mark.arm
def test_cmake_finds_the_sdk_through_the_environment(project, tmp_path):
    out, _ = project
    proc = _cmake(["-S", str(out), "-B", str(tmp_path / "b")], env_sdk=_stand_in_sdk(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PICO_SDK_PATH environment variable" in proc.stdout


@needs_cmake
@pytest.mark.arm
def test_cmake_without_the_sdk_says_what_to_do(project, tmp_path):
    out, _ = project
    proc = _cmake(["-S", str(out), "-B", str(tmp_path / "b1")])
    assert proc.returncode != 0
    assert "Pico SDK not found: PICO_SDK_PATH is not set" in proc.stderr
    assert "export PICO_SDK_PATH=" in proc.stderr and "cmake -B build -DPICO_SDK_PATH=" in proc.stderr
    proc = _cmake(["-S", str(out), "-B", str(tmp_path / "b2"), f"-DPICO_SDK_PATH={tmp_path}"])
    assert proc.returncode != 0
    assert "does not hold pico_sdk_init.cmake" in proc.stderr


# --- CLI and demo -----------------------------------------------------------------------------------


@pytest.mark.arm
def test_cli_export_pico2(tmp_path):
    from tinyaot.cli import main

    (tmp_path / "net.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn

        def build():
            torch.manual_seed(5)
            return nn.Sequential(nn.Flatten(), nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))
    """))
    rng = np.random.default_rng(1)
    cal = rng.normal(size=(32, 3, 4)).astype(np.float32)
    np.save(tmp_path / "cal.npy", cal)
    np.save(tmp_path / "x.npy", cal[5:8])
    np.save(tmp_path / "y.npy", np.array([0, 3, 2]))
    model = [f"{tmp_path / 'net.py'}:build", "--calibration", str(tmp_path / "cal.npy"), "--name", "net"]
    assert main(["export", *model, "--target", "pico2", "-o", str(tmp_path / "p"), "--json"]) == 0
    inputs, labels = _vectors(tmp_path / "p")
    assert inputs.shape == (4, 12) and labels == [-1] * 4  # default: the first four calibration samples
    assert main(["export", *model, "--target", "pico2", "-o", str(tmp_path / "q"), "--input",
                 str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy")]) == 0
    inputs, labels = _vectors(tmp_path / "q")
    assert inputs.shape == (3, 12) and labels == [0, 3, 2]
    assert "net_pico2" in (tmp_path / "q" / "CMakeLists.txt").read_text()
    assert main(["export", *model, "-o", str(tmp_path / "c")]) == 0
    # (plus the folder's tinyaot_manifest.json, which other tests cover, where this tinyaot writes one)
    assert sorted(p.name for p in (tmp_path / "c").iterdir() if p.name != "tinyaot_manifest.json") == sorted(
        ["net.c", "net.h", "fully_connected_s8.c", "tinyaot_kernels.h", "tinyaot_fixedpoint.h", "tinyaot_dsp.h"])
    assert main(["export", *model, "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "d")]) == 2
    assert main(["export", *model, "--target", "pico2", "--labels", str(tmp_path / "y.npy"),
                 "-o", str(tmp_path / "e")]) == 2  # 3 labels for the 4 default inputs


@pytest.mark.arm
def test_demo_writes_the_pico2_project(project, tmp_path):
    from tinyaot.demo import run_demo

    result = run_demo(tmp_path / "demo", use_m33=False)
    assert result.all_correct
    inputs, labels = _vectors(tmp_path / "demo" / "pico2")
    assert labels == [0, 1, 4, 7] and inputs.shape == (4, 784)
    assert "4/4 predictions match the labels" in (tmp_path / "demo" / "pico2" / "README.md").read_text()
    # It is the project the other tests (and tests/test_pico_sdk.py) build: the same files, byte for byte.
    out, files = project
    for f in files:
        rel = f.relative_to(out)
        assert (tmp_path / "demo" / "pico2" / rel).read_bytes() == f.read_bytes(), rel
