"""`--target pico2` with the real Raspberry Pi Pico SDK 2.2.0: the demo's project and a KWS export build into
`.uf2` files with zero warnings, picotool reads them as RP2350 / pico2 binaries, and what the project and its
README state (stack reservation, code, flash, SRAM, copy_to_ram's cost) holds for the firmware that was built.

The SDK (with tinyusb) and picotool's source come from the shared test data (`toolchains/pico-sdk-2.2.0.tar.xz`);
the first run extracts it and builds picotool (no libusb) into a cache, `$TINYAOT_CACHE_DIR/pico-sdk-2.2.0` or
`~/.cache/tinyaot/pico-sdk-2.2.0`, which later runs reuse.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import shared_file
from elftools.elf.elffile import ELFFile

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits, demo_digits
from tinyaot.targets import pico2
from tinyaot.targets.pico2 import CallGraph

SDK_VERSION = "2.2.0"
SDK_TARBALL = f"toolchains/pico-sdk-{SDK_VERSION}.tar.xz"
KWS = "models/mlperf_tiny/kws_ref_model.tflite"
KWS_INPUT = "models/mlperf_tiny/kws_input_int8_1x49x10x1.npy"
KWS_WORD_ON = 5

APT_HINT = ("apt-get install --no-install-recommends cmake make g++ python3 gcc-arm-none-eabi "
            "libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib")
TOOLS = {
    "cmake": "cmake", "make": "make", "g++": "g++ (builds picotool)", "python3": "python3 (the SDK's scripts)",
    "arm-none-eabi-gcc": "gcc-arm-none-eabi", "arm-none-eabi-g++": "gcc-arm-none-eabi (its C++ driver)",
}
BUILD_TIMEOUT = 900

pytestmark = [pytest.mark.arm, pytest.mark.slow]

# The SDK's call graph, for the stack the firmware needs (gcc -fcallgraph-info=su on every file of the build).
# Calls through function pointers may go to any of these: from main (app.c's print and clock callbacks, the
# stdio drivers, printf's output functions) and from interrupt handlers (the USB class drivers, timer alarms).
THREAD_CALLBACKS = ("board_print", "board_time_us", "stdio_usb_out_chars", "stdio_usb_out_flush",
                    "stdio_uart_out_chars", "stdio_uart_out_flush", "_out_char", "_out_fct", "_out_buffer",
                    "_out_null")
IRQ_CALLBACKS = ("cdcd_init", "cdcd_deinit", "cdcd_reset", "cdcd_open", "cdcd_control_xfer_cb", "cdcd_xfer_cb",
                 "resetd_init", "resetd_reset", "resetd_open", "resetd_control_xfer_cb", "resetd_xfer_cb",
                 "vendord_init", "vendord_deinit", "vendord_reset", "vendord_open", "vendord_xfer_cb",
                 "sleep_until_callback", "stdio_usb_call_chars_available_callback")
# stdio_usb's worker runs at the lowest priority; one default-priority handler can preempt it.
LOW_PRIORITY_IRQ = "low_priority_worker_irq"
DEFAULT_PRIORITY_IRQS = ("usb_irq", "dcd_rp2040_irq", "hardware_alarm_irq_handler", "alarm_pool_irq_handler",
                         "on_uart_rx")
NORETURN = ("panic", "panic_unsupported", "hard_assertion_failure", "__assert_func", "_exit", "exit")
EXCEPTION_FRAME_BYTES = 26 * 4 + 4  # basic frame + FP state (s0-s15, FPSCR, reserved) + alignment
SHARED_IRQ_CHAIN_BYTES = 8  # the SDK's shared-handler trampoline: push {r0, lr}


# --- the SDK and picotool, once per session ---------------------------------------------------------------


@dataclass(frozen=True)
class PicoSDK:
    sdk: Path  # PICO_SDK_PATH
    picotool_prefix: Path  # PICOTOOL_FETCH_FROM_GIT_PATH: <prefix>/picotool/picotool
    picotool_build_seconds: float | None  # None: reused from the cache

    @property
    def picotool(self) -> Path:
        return self.picotool_prefix / "picotool" / "picotool"


def _cache_root() -> Path:
    from tinyaot.targets.host import cache_root

    return cache_root() / f"pico-sdk-{SDK_VERSION}"


def _check_tools() -> None:
    missing = [f"{tool} ({package})" for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the real Pico SDK build needs {', '.join(missing)}: {APT_HINT}")
    # The SDK always compiles pico_cxx_options/new_delete.cpp, which includes <cstdlib>.
    probe = subprocess.run(["arm-none-eabi-g++", *pico2.RP2350_CPU_FLAGS, "-x", "c++", "-E", "-", "-o", os.devnull],
                           input="#include <cstdlib>\n", capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"arm-none-eabi-g++ has no C++ library (<cstdlib>: {probe.stderr.strip()[:120]}); install "
                    f"libstdc++-arm-none-eabi-newlib: {APT_HINT}")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without the user's own SDK, picotool or compiler flags, plus `extra`."""
    drop = {"PICO_SDK_PATH", "PICOTOOL_FETCH_FROM_GIT_PATH", "picotool_DIR", "PICO_BOARD", "PICO_PLATFORM",
            "CFLAGS", "CXXFLAGS", "ASMFLAGS", "LDFLAGS", "MAKEFLAGS", "CMAKE_GENERATOR", "CMAKE_BUILD_TYPE"}
    return {k: v for k, v in os.environ.items() if k not in drop} | extra


def _run(cmd, what: str, env: dict[str, str], cwd=None) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{what} failed (exit {proc.returncode}): {' '.join(map(str, cmd))}\n{log[-6000:]}"
    return log


def _sdk_complete(src: Path) -> bool:
    return (src / "pico-sdk" / "pico_sdk_init.cmake").is_file() and (src / "picotool-src" / "CMakeLists.txt").is_file()


def _extract_sdk(root: Path) -> Path:
    """The tarball's pico-sdk/ and picotool-src/ under root/src: extracted next to it, then renamed into place,
    so root/src is complete whenever it exists (another run may be extracting at the same time)."""
    src = root / "src"
    if _sdk_complete(src):
        return src
    tarball = shared_file(SDK_TARBALL)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=root))
    try:
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="data")
        if src.exists() and not _sdk_complete(src):  # left incomplete by hand; rename() never does
            shutil.rmtree(src)
        os.rename(tmp, src)
    except OSError:
        if not _sdk_complete(src):  # unless another run got there first
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert _sdk_complete(src), f"{tarball} holds no pico-sdk/pico_sdk_init.cmake and picotool-src/"
    return src


def _picotool_works(prefix: Path) -> bool:
    exe = prefix / "picotool" / "picotool"
    if not (exe.is_file() and (prefix / "picotool" / "picotoolConfig.cmake").is_file()):
        return False
    proc = subprocess.run([str(exe), "version"], capture_output=True, text=True, check=False)
    return proc.returncode == 0 and f"picotool v{SDK_VERSION}" in proc.stdout


def _build_picotool(root: Path, src: Path) -> tuple[Path, float | None]:
    """picotool without libusb, installed flat into root/picotool-install: built and installed next to it, then
    renamed into place, once per cache."""
    prefix = root / "picotool-install"
    if _picotool_works(prefix):
        return prefix, None
    start = time.monotonic()
    tmp_prefix = Path(tempfile.mkdtemp(prefix=".picotool-install-", dir=root))
    build = Path(tempfile.mkdtemp(prefix=".picotool-build-", dir=root))
    env = _clean_env(PICO_SDK_PATH=str(src / "pico-sdk"))
    try:
        _run(["cmake", "-S", src / "picotool-src", "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DPICOTOOL_NO_LIBUSB=1",
              "-DPICOTOOL_FLAT_INSTALL=1", f"-DCMAKE_INSTALL_PREFIX={tmp_prefix}"], "configuring picotool", env)
        _run(["cmake", "--build", build, "-j2"], "building picotool", env)
        _run(["cmake", "--install", build], "installing picotool", env)
        if prefix.exists() and not _picotool_works(prefix):
            shutil.rmtree(prefix)
        os.rename(tmp_prefix, prefix)  # picotool's CMake package files are relocatable
    except OSError:
        if not _picotool_works(prefix):
            raise
    finally:
        shutil.rmtree(build, ignore_errors=True)
        shutil.rmtree(tmp_prefix, ignore_errors=True)
    assert _picotool_works(prefix), f"picotool built into {prefix} does not run `picotool version`"
    return prefix, time.monotonic() - start


@pytest.fixture(scope="session")
def pico_sdk() -> PicoSDK:
    shared_file(SDK_TARBALL)
    _check_tools()
    root = _cache_root()
    src = _extract_sdk(root)
    prefix, seconds = _build_picotool(root, src)
    return PicoSDK(src / "pico-sdk", prefix, seconds)


# --- building projects -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    project: Path
    dir: Path
    target: str
    log: str
    seconds: float

    @property
    def uf2(self) -> Path:
        return self.dir / f"{self.target}.uf2"

    @property
    def bin(self) -> Path:
        return self.dir / f"{self.target}.bin"

    @property
    def elf(self) -> Path:
        return self.dir / f"{self.target}.elf"

    def call_graph(self) -> CallGraph:
        files = sorted((self.dir / "CMakeFiles" / f"{self.target}.dir").rglob("*.ci"))
        assert files, f"no call graphs in {self.dir}: was the project built with CFLAGS=-fcallgraph-info=su?"
        return CallGraph.read(files)


def _build(sdk: PicoSDK, project: Path, build_dir: Path, target: str, call_graph: bool = False) -> Build:
    """cmake + make -j2 the way the project's README says, with the SDK and picotool from the cache.

    `call_graph` adds -fcallgraph-info=su through CFLAGS (the SDK's own flags stay; the code is the same)."""
    env = _clean_env(PICO_SDK_PATH=str(sdk.sdk), PICOTOOL_FETCH_FROM_GIT_PATH=str(sdk.picotool_prefix),
                     **({"CFLAGS": "-fcallgraph-info=su"} if call_graph else {}))
    start = time.monotonic()
    log = _run(["cmake", "-S", project, "-B", build_dir, "-DPICO_BOARD=pico2"], f"configuring {project.name}", env)
    log += _run(["make", "-C", build_dir, "-j2"], f"building {project.name}", env)
    return Build(project, build_dir, target, log, time.monotonic() - start)


def _demo_model():
    """The model `tinyaot demo` compiles and the four digits it embeds (demo.run_demo's own calls)."""
    images, labels = demo_digits()
    cm = tinyaot.compile(build_seed_mlp(), torch.from_numpy(images[:1]), calibration=calibration_digits(),
                         name="mnist", data=(images, labels))
    return cm, cm.quantize_input(images), labels


@pytest.fixture(scope="module")
def demo_model():
    return _demo_model()


@pytest.fixture(scope="module")
def demo(pico_sdk, demo_model, tmp_path_factory):
    """The demo's pico2/ project, built exactly as its README says."""
    cm, x_q, labels = demo_model
    root = tmp_path_factory.mktemp("demo")
    cm.export(root / "pico2", target="pico2", inputs=x_q, labels=labels)
    return cm, _build(pico_sdk, root / "pico2", root / "build", "mnist_pico2")


@pytest.fixture(scope="module")
def demo_in_ram(pico_sdk, demo_model, tmp_path_factory):
    cm, x_q, labels = demo_model
    root = tmp_path_factory.mktemp("demo_ram")
    cm.export(root / "pico2", target="pico2", inputs=x_q, labels=labels, copy_to_ram=True)
    return cm, _build(pico_sdk, root / "pico2", root / "build", "mnist_pico2", call_graph=True)


@pytest.fixture(scope="module")
def kws(pico_sdk, tmp_path_factory):
    cm = tinyaot.compile(str(shared_file(KWS)), name="kws")
    x = np.load(shared_file(KWS_INPUT))
    root = tmp_path_factory.mktemp("kws")
    cm.export(root / "pico2", target="pico2", inputs=x, labels=[KWS_WORD_ON])
    return cm, _build(pico_sdk, root / "pico2", root / "build", "kws_pico2", call_graph=True)


@pytest.fixture(scope="module")
def kws_two_cores(pico_sdk, tmp_path_factory):
    cm = tinyaot.compile(str(shared_file(KWS)), name="kws", cores=2)
    root = tmp_path_factory.mktemp("kws2")
    cm.export(root / "pico2", target="pico2", inputs=np.load(shared_file(KWS_INPUT)), labels=[KWS_WORD_ON])
    return cm, _build(pico_sdk, root / "pico2", root / "build", "kws_pico2")


# --- what a build must show --------------------------------------------------------------------------------


def _picotool_info(sdk: PicoSDK, uf2: Path) -> str:
    """`picotool info -a`, run beside the file: picotool wraps its lines at 80 columns, and the first one names the
    file, so a long path (a pytest-xdist worker's temporary directory) would split the words asserted on."""
    return _run([sdk.picotool, "info", "-a", uf2.name], f"picotool info {uf2.name}", _clean_env(), cwd=uf2.parent)


def _field(info: str, name: str) -> str:
    m = re.search(rf"^\s*{re.escape(name)}:\s+(.+?)\s*$", info, re.MULTILINE)
    assert m, f"picotool info printed no '{name}':\n{info}"
    return m.group(1)


def _stack_size(project: Path) -> int:
    m = re.search(r"^\s*PICO_STACK_SIZE=(0x[0-9a-f]+)\s*$", (project / "CMakeLists.txt").read_text(), re.MULTILINE)
    assert m, "CMakeLists.txt sets no PICO_STACK_SIZE"
    return int(m.group(1), 16)


def _readme_bytes(project: Path, row: str) -> int:
    m = re.search(rf"^\| {re.escape(row)} \| (?:about )?([\d,]+)", (project / "README.md").read_text(), re.MULTILINE)
    assert m, f"README.md has no figure in row '{row}'"
    return int(m.group(1).replace(",", ""))


def _sections(elf: Path) -> dict[str, tuple[int, int]]:
    with open(elf, "rb") as f:
        return {s.name: (s["sh_addr"], s["sh_size"]) for s in ELFFile(f).iter_sections() if s["sh_flags"] & 2}


def _sram_bytes(elf: Path) -> int:
    """Every allocated section in SRAM (0x2000_0000-0x2008_2000, the SCRATCH banks with the stack included)."""
    return sum(size for addr, size in _sections(elf).values() if 0x2000_0000 <= addr < 0x2008_2000)


_MAP_SECTION = re.compile(r"^ (\.[^\s*]+)(?:[ \t]*\n[ \t]+|[ \t]+)0x([0-9a-f]+)[ \t]+0x([0-9a-f]+)[ \t]+(\S[^\n]*)$",
                          re.MULTILINE)


def _linked_bytes(build: Build, object_pattern: str, kinds: tuple[str, ...]) -> int:
    """Bytes of the input sections of the given kinds (.text, .rodata, ...) that the link kept, per object."""
    text = (build.dir / f"{build.target}.elf.map").read_text()
    body = text.split("Linker script and memory map", 1)[1]
    return sum(int(size, 16) for name, addr, size, obj in _MAP_SECTION.findall(body)
               if int(addr, 16) != 0 and re.search(object_pattern, obj.strip())
               and name.split(".")[1] in kinds)


def _check_build(sdk: PicoSDK, cm, build: Build) -> str:
    assert build.uf2.is_file(), f"no {build.uf2.name} after the build:\n{build.log[-3000:]}"
    warnings = [line for line in build.log.splitlines() if "warning:" in line or "CMake Warning" in line]
    assert warnings == [], "\n".join(warnings)
    assert f"Using picotool from {sdk.picotool}" in build.log  # the cached one, nothing cloned
    info = _picotool_info(sdk, build.uf2)
    assert "family ID 'rp2350-arm-s'" in info, info
    assert _field(info, "target chip") == "RP2350"
    assert _field(info, "image type") == "ARM Secure"
    assert _field(info, "pico_board") == "pico2"
    assert _field(info, "sdk version") == SDK_VERSION
    assert _field(info, "name") == build.target
    assert _field(info, "build attributes") == "Release"
    features = info.split("features:")[1].split("binary start")[0]
    assert "USB stdin / stdout" in features and "UART stdin / stdout" in features, info
    # The image picotool describes, and the one the .uf2 carries, is the .bin, byte for byte.
    image = build.bin.read_bytes()
    start, end = (int(_field(info, f"binary {k}"), 16) for k in ("start", "end"))
    assert (start, end - start) == (FLASH_BASE, len(image))
    carried = _uf2_image(build.uf2, RP2350_ARM_S_FAMILY)
    assert carried[:len(image)] == image and len(carried) - len(image) < 256  # the last block is padded
    assert set(carried[len(image):]) <= {0}
    return info


FLASH_BASE = 0x1000_0000
RP2350_ARM_S_FAMILY = 0xE48B_FF59
UF2_MAGIC = (0x0A32_4655, 0x9E5D_5157, 0x0AB1_6F30)


def _uf2_image(uf2: Path, family: int) -> bytes:
    """The bytes the .uf2's blocks of `family` write, from the flash base on (UF2: 512 B blocks)."""
    data = uf2.read_bytes()
    assert len(data) % 512 == 0, f"{uf2.name} is not a whole number of 512 B UF2 blocks"
    image = bytearray()
    for off in range(0, len(data), 512):
        block = data[off:off + 512]
        magic0, magic1, flags, addr, size, _, _, fam = struct.unpack_from("<8I", block)
        assert (magic0, magic1, struct.unpack_from("<I", block, 508)[0]) == UF2_MAGIC, f"bad block at {off}"
        if fam != family:  # e.g. SDK 2.x's extra block for the RP2350-E10 erratum
            continue
        assert flags & 0x2000 and addr >= FLASH_BASE and size <= 476
        end = addr - FLASH_BASE + size
        image.extend(b"\xff" * max(0, end - len(image)))
        image[addr - FLASH_BASE:end] = block[32:32 + size]
    return bytes(image)


def _check_flags(build: Build) -> None:
    """The project's files compile with the flags and defines tinyaot emulates them with, and its stack size."""
    flags = (build.dir / "CMakeFiles" / f"{build.target}.dir" / "flags.make").read_text()
    c_flags = re.search(r"^C_FLAGS = (.*)$", flags, re.MULTILINE).group(1).split()
    c_defines = re.search(r"^C_DEFINES = (.*)$", flags, re.MULTILINE).group(1).split()
    asm_defines = re.search(r"^ASM_DEFINES = (.*)$", flags, re.MULTILINE).group(1).split()
    for flag in (*pico2.RP2350_CPU_FLAGS, *pico2.RP2350_C_FLAGS):
        assert flag in c_flags, f"{flag} not in the SDK's C flags {c_flags}"
    for define in pico2.RP2350_DEFINES:
        assert define.replace('"', '\\"') in c_defines, define
    stack = f"-DPICO_STACK_SIZE=0x{_stack_size(build.project):x}"
    assert stack in c_defines and stack in asm_defines  # crt0.S reserves it
    assert _sections(build.elf)[".stack_dummy"][1] == _stack_size(build.project)


def _firmware_stack_need(build: Build) -> tuple[int, int, str]:
    """The most stack core 0 can need (the worst path from main() plus two nested interrupts), and the SDK's
    share of it as pico2.SDK_STACK_MEASURED_BYTES counts it (main's frame + printf + the interrupts)."""
    graph = build.call_graph()

    def path(root, callbacks):
        return graph.worst_path(root, indirect=callbacks, leaf_bytes=pico2.LIBRARY_CALL_BYTES, stop=NORETURN,
                                cut_cycles=True)

    thread = path("main", THREAD_CALLBACKS)
    worker = path(LOW_PRIORITY_IRQ, IRQ_CALLBACKS)
    handlers = [path(h, IRQ_CALLBACKS) for h in DEFAULT_PRIORITY_IRQS]
    handler = max(handlers, key=lambda p: p.bytes)
    interrupts = worker.bytes + handler.bytes + SHARED_IRQ_CHAIN_BYTES + 2 * EXCEPTION_FRAME_BYTES
    printf = path("board_print", THREAD_CALLBACKS)
    sdk_share = graph.frames["main"][0] + printf.bytes + interrupts
    how = "\n".join(f"  {p.bytes:5} B  {' -> '.join(f.rsplit(':', 1)[-1] for f in p.path)}"
                    for p in (thread, worker, handler))
    return thread.bytes + interrupts, sdk_share, how


# --- the tests ---------------------------------------------------------------------------------------------


def test_demo_project_builds_into_a_pico2_uf2(pico_sdk, demo):
    cm, build = demo
    _check_build(pico_sdk, cm, build)
    _check_flags(build)
    project = build.project
    # The README's figures are the firmware's: model code as linked, flash as the .bin, SRAM as the sections.
    assert _readme_bytes(project, "flash: model code") == _linked_bytes(build, r"/model/[^/]+\.c\.o(bj)?$",
                                                                        ("text",))
    assert _readme_bytes(project, "flash: model constants") == cm.constant_bytes == _linked_bytes(
        build, r"/model/[^/]+\.c\.o(bj)?$", ("rodata",))
    assert abs(_readme_bytes(project, "flash: whole firmware") - build.bin.stat().st_size) <= 64
    assert abs(_readme_bytes(project, "RAM: whole firmware") - _sram_bytes(build.elf)) <= 64
    assert _sections(build.elf)[".bss"][1] >= cm.arena_bytes
    print(f"\ndemo: picotool built in {pico_sdk.picotool_build_seconds or 0:.0f} s (0: cached), project built in "
          f"{build.seconds:.1f} s, .bin {build.bin.stat().st_size:,} B, .uf2 {build.uf2.stat().st_size:,} B, "
          f"PICO_STACK_SIZE {_stack_size(project):#x}")


def test_kws_export_builds_into_a_pico2_uf2(pico_sdk, kws):
    cm, build = kws
    _check_build(pico_sdk, cm, build)
    _check_flags(build)
    project = build.project
    assert _readme_bytes(project, "flash: model code") == _linked_bytes(build, r"/model/[^/]+\.c\.o(bj)?$",
                                                                        ("text",))
    assert abs(_readme_bytes(project, "flash: whole firmware") - build.bin.stat().st_size) <= 64
    assert abs(_readme_bytes(project, "RAM: whole firmware") - _sram_bytes(build.elf)) <= 64
    print(f"\nkws: project built in {build.seconds:.1f} s, .bin {build.bin.stat().st_size:,} B, "
          f".uf2 {build.uf2.stat().st_size:,} B, PICO_STACK_SIZE {_stack_size(project):#x}")


def test_kws_for_two_cores_builds_with_pico_multicore(pico_sdk, kws_two_cores):
    """compile(cores=2): main.c launches core 1 through pico_multicore (its tinyaot_core1_launch replaces the
    model's weak one-core fallback) and the firmware builds with zero warnings."""
    cm, build = kws_two_cores
    _check_build(pico_sdk, cm, build)
    assert "multicore_launch_core1" in (build.project / "main.c").read_text()
    assert "pico_multicore" in (build.project / "CMakeLists.txt").read_text()
    with open(build.elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        names = {sym.name for sym in symtab.iter_symbols()}
    assert {"multicore_launch_core1", "tinyaot_core1_launch", "kws_core1_main"} <= names


@pytest.mark.parametrize("which", ["kws", "demo_in_ram"])
def test_the_stack_reserved_covers_what_the_firmware_can_need(pico_sdk, which, request):
    cm, build = request.getfixturevalue(which)
    reserved = _stack_size(build.project)
    need, sdk_share, how = _firmware_stack_need(build)
    assert need <= reserved, f"the firmware can need {need:,} B of stack, PICO_STACK_SIZE is {reserved:,}:\n{how}"
    assert reserved <= pico2.CORE0_STACK_LIMIT_BYTES
    # What the project adds to app.c + the model for the SDK covers what the SDK's code needs, as the README says.
    app = _readme_app_stack(build.project)
    assert need - app <= sdk_share <= pico2.SDK_STACK_MEASURED_BYTES <= pico2.SDK_STACK_BYTES, (sdk_share, how)
    assert f"at most {pico2.SDK_STACK_MEASURED_BYTES:,} B" in (build.project / "README.md").read_text()
    # The inference itself, as the emulated Cortex-M33 measures it (other flags: -O2, hard float), is in the
    # same range as the bound for the board's build.
    inference = _readme_bytes(build.project, "RAM: stack of one inference")
    assert inference < app < reserved
    print(f"\n{cm.name}: stack need {need:,} B (app.c + inference bound {app:,} B, the SDK's share {sdk_share:,} B), "
          f"reserved {reserved:,} B\n{how}")


def _readme_app_stack(project: Path) -> int:
    m = re.search(r"at most ([\d,]+) B for app\.c with one inference", (project / "README.md").read_text())
    assert m, "README.md does not say what app.c with the inference needs"
    return int(m.group(1).replace(",", ""))


def test_copy_to_ram_runs_the_demo_from_sram(pico_sdk, demo, demo_in_ram):
    cm, in_ram = demo_in_ram
    _, in_flash = demo
    _check_build(pico_sdk, cm, in_ram)
    assert "pico_set_binary_type(mnist_pico2 copy_to_ram)" in (in_ram.project / "CMakeLists.txt").read_text()
    assert re.search(r"^#\s+pico_set_binary_type\(mnist_pico2 copy_to_ram\)$",
                     (in_flash.project / "CMakeLists.txt").read_text(), re.MULTILINE)  # offered, commented out
    flash_sections, ram_sections = _sections(in_flash.elf), _sections(in_ram.elf)
    assert flash_sections[".text"][0] < 0x2000_0000 <= ram_sections[".text"][0]  # code runs from SRAM
    # The constants too: the model's .rodata is in an SRAM section.
    assert _linked_bytes(in_ram, r"/model/[^/]+\.c\.o(bj)?$", ("rodata",)) == cm.constant_bytes
    cost = _sram_bytes(in_ram.elf) - _sram_bytes(in_flash.elf)
    said = re.search(r"which\s+costs\s+about\s+([\d,]+)\s+B", (in_flash.project / "README.md").read_text())
    told = re.search(r"This\s+costs\s+about\s+([\d,]+)\s+B", (in_ram.project / "README.md").read_text())
    assert said and told and said.group(1) == told.group(1)
    assert abs(int(told.group(1).replace(",", "")) - cost) <= 64, f"copy_to_ram costs {cost:,} B of SRAM"
    assert abs(_readme_bytes(in_ram.project, "RAM: whole firmware") - _sram_bytes(in_ram.elf)) <= 64
    print(f"\ncopy_to_ram: {cost:,} B more SRAM, built in {in_ram.seconds:.1f} s")
