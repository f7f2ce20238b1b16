"""Cortex-M33 target: cross-compile a generated model, run it on QEMU, count instructions.

The model is built with arm-none-eabi-gcc for the RP2350's core (ARMv8-M
Mainline, DSP, single-precision FPU) and run on ``qemu-system-arm -M
mps2-an505`` with ``-icount``: virtual time then advances 2^7 ns per executed
instruction, so the guest's 20 MHz timer reads become an exact, deterministic
instruction count for one inference.  Outputs, timer ticks and the stack
high-water mark come back over semihosting as text lines.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from tinyaot.errors import TinyAOTError
from tinyaot.targets.toolchain import M33Toolchain, find_m33_toolchain

SUPPORT_DIR = Path(__file__).with_name("m33")
SUPPORT_SOURCES = ("startup.c", "bench.c", "console.c")
LINKER_SCRIPT = "an505.ld"

FLASH_BYTES = 4 * 1024 * 1024
# Room for the alignment of the inputs section and its count word.
_FLASH_MARGIN = 256
INPUTS_SECTION = ".tinyaot_inputs"

ICOUNT_SHIFT = 7  # 2^7 ns per instruction; the 32-bit timer wraps after ~1.68 G instructions
TIMER_NS_PER_TICK = 50  # IoTKit TIMER0 runs at 20 MHz
FAULT_EXIT_STATUS = 99  # set by Fault_Handler in startup.c

CPU_FLAGS = ("-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16")
C_FLAGS = (
    "-O2",
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-ffp-contract=off",  # no FMA contraction: float code matches the host build
    "-ffunction-sections",
    "-fdata-sections",
    "-g",
)
# Only the harness is freestanding: with -ffreestanding GCC stops expanding
# small memcpy calls inline, which would make model code several times slower.
SUPPORT_C_FLAGS = ("-ffreestanding",)
LINK_FLAGS = ("-nostartfiles", "--specs=nosys.specs", "-Wl,--gc-sections")

_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*\Z")


class M33Error(TinyAOTError, RuntimeError):
    """The model could not be built or run on the Cortex-M33 target."""


class M33BuildError(M33Error):
    """Compiling or linking for the target failed."""


class M33RunError(M33Error):
    """QEMU faulted, timed out, exited non-zero or printed unexpected output."""


@dataclass(frozen=True)
class M33Result:
    """What one run_m33 call measured."""

    outputs: np.ndarray  # int8, shape (n_inputs, output_size)
    instructions: int  # one inference (the first input), net of the empty-region calibration
    stack_bytes: int  # stack high-water mark of that inference, below the caller's SP
    text_bytes: int  # flash: code + rodata, harness included, embedded inputs excluded
    data_bytes: int  # initialised RAM (its load image is also in flash)
    bss_bytes: int  # zeroed RAM, including the model's static arena
    elf_path: Path
    step_instructions: dict[int, int] | None = None  # profile=True: generated step index -> instructions


@dataclass(frozen=True)
class _RunReport:
    """The parsed text one QEMU run printed."""

    outputs: np.ndarray
    empty_ticks: int
    invoke_ticks: int
    stack_bytes: int
    begin: int = 0  # timer value at bench_begin of the measured inference
    marks: tuple[tuple[int, int], ...] = ()  # (step, timer value) after each kernel
    mark_cost: int = 0  # ticks of one profile mark, measured back to back

    def step_instructions(self) -> dict[int, int] | None:
        if not self.marks:
            return None
        out, prev = {}, self.begin
        cost = ticks_to_instructions(self.mark_cost)
        for step, value in self.marks:
            out[step] = max(ticks_to_instructions((prev - value) & 0xFFFFFFFF) - cost, 0)
            prev = value
        return out


def run_m33(
    model_dir: Path,
    name: str,
    inputs: np.ndarray,
    output_size: int,
    *,
    build_dir: Path | None = None,
    timeout: float = 120.0,
    dsp: bool = True,
    profile: bool = False,
) -> M33Result:
    """Build the model in `model_dir` for Cortex-M33, run `inputs` through it on QEMU.

    `profile=True` builds the model with a timestamp after every kernel call and fills
    `M33Result.step_instructions` (step index -> instructions of that op, marker cost removed).

    `inputs` is int8 with one row per sample (extra dimensions are flattened).
    Batches too big for flash are split over several QEMU runs; `timeout`
    applies to each run.  `dsp=False` builds for an M33 without the DSP
    extension so the portable C kernels are used.  `build_dir` defaults to
    ``model_dir / "build_m33"``.
    """
    model_dir = Path(model_dir).resolve()
    _check_model(model_dir, name)
    samples = _as_samples(inputs)
    # Absolute, because gcc runs in several subdirectories of it.
    build = Path(build_dir).resolve() if build_dir is not None else model_dir / "build_m33"
    tc = find_m33_toolchain()
    objects = _compile_all(tc, model_dir, name, build, samples.shape[1], output_size, dsp, profile)

    probe = _link_with_inputs(tc, objects, samples[:0], build, f"{name}_probe", dsp)
    per_run = _inputs_per_run(probe, samples.shape[1])
    chunks = [samples[i : i + per_run] for i in range(0, len(samples), per_run)]
    elf = _link_with_inputs(tc, objects, chunks[0], build, name, dsp)
    first = _run_and_parse(tc, elf, len(chunks[0]), output_size, timeout)
    outputs = [first.outputs]
    for chunk in chunks[1:]:
        batch_elf = _link_with_inputs(tc, objects, chunk, build, f"{name}_batch", dsp)
        outputs.append(_run_and_parse(tc, batch_elf, len(chunk), output_size, timeout).outputs)

    text, data, bss = elf_sizes(elf)
    return M33Result(
        outputs=np.concatenate(outputs),
        instructions=ticks_to_instructions(first.invoke_ticks)
        - ticks_to_instructions(first.empty_ticks),
        stack_bytes=first.stack_bytes,
        text_bytes=text,
        data_bytes=data,
        bss_bytes=bss,
        elf_path=elf,
        step_instructions=first.step_instructions(),
    )


def ticks_to_instructions(ticks: int, shift: int = ICOUNT_SHIFT) -> int:
    """Timer ticks under ``-icount shift=N`` -> instructions, rounded to nearest."""
    scale = 1 << shift
    return (ticks * TIMER_NS_PER_TICK + scale // 2) // scale


def elf_sizes(elf: Path) -> tuple[int, int, int]:
    """Berkeley-style (text, data, bss) of an ELF, leaving out the embedded inputs."""
    text = data = bss = 0
    with open(elf, "rb") as f:
        for section in ELFFile(f).iter_sections():
            flags = section["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or section.name == INPUTS_SECTION:
                continue
            if section["sh_type"] == "SHT_NOBITS":
                bss += section["sh_size"]
            elif flags & SH_FLAGS.SHF_WRITE:
                data += section["sh_size"]
            else:
                text += section["sh_size"]
    return text, data, bss


def build_and_run_m33(
    sources: list[Path],
    build_dir: Path,
    *,
    include_dirs: tuple[Path, ...] = (),
    cpu_flags: tuple[str, ...] | None = None,
    c_flags: tuple[str, ...] = C_FLAGS,
    elf_name: str = "app",
    timeout: float = 120.0,
) -> tuple[str, Path]:
    """Build a program that brings its own main() with the harness's startup, console and bench code; run it.

    For callers whose main() is not run_m33's (e.g. a board layer around app logic).  Sources see the
    harness headers (console.h, bench.h, semihost.h).  `cpu_flags` defaults to run_m33's DSP build.
    Returns what the guest printed and the ELF; raises M33BuildError / M33RunError as run_m33 does.
    """
    tc = find_m33_toolchain()
    build = Path(build_dir).resolve()
    obj = build / "obj"
    if obj.exists():
        shutil.rmtree(obj)
    cpu = list(cpu_flags) if cpu_flags is not None else _cpu_flags(True)
    base = [*cpu, *c_flags]
    incs = [f"-I{Path(d).resolve()}" for d in include_dirs] + [f"-I{SUPPORT_DIR}"]
    by_dir: dict[Path, list[Path]] = {}
    for src in sources:  # one object dir per source dir keeps equal basenames apart
        src = Path(src).resolve()
        by_dir.setdefault(src.parent, []).append(src)
    objects = [
        *_compile(tc, [SUPPORT_DIR / s for s in SUPPORT_SOURCES], obj / "support",
                  [*base, *SUPPORT_C_FLAGS, f"-I{SUPPORT_DIR}"]),
    ]
    for i, (_, group) in enumerate(sorted(by_dir.items())):
        objects += _compile(tc, group, obj / f"src{i}", [*base, *incs])
    elf = build / f"{elf_name}.elf"
    _gcc(tc, [*cpu, *LINK_FLAGS, "-T", str(SUPPORT_DIR / LINKER_SCRIPT), f"-Wl,-Map={elf_name}.map",
              *(str(o) for o in objects), "-o", elf.name], build)
    return _run_qemu(tc, elf, timeout), elf


# --- inputs and model checks -------------------------------------------------


def _check_model(model_dir: Path, name: str) -> None:
    if not _NAME_RE.match(name):
        raise ValueError(f"model name {name!r} is not a lowercase C identifier")
    if not (model_dir / f"{name}.h").is_file():
        raise FileNotFoundError(f"{model_dir / (name + '.h')} does not exist")
    if not any(model_dir.glob("*.c")):
        raise FileNotFoundError(f"no .c files in {model_dir}")


def _as_samples(inputs: np.ndarray) -> np.ndarray:
    """One contiguous int8 row per sample; refuses silent casts from other dtypes."""
    arr = np.asarray(inputs)
    if arr.dtype != np.int8:
        raise TypeError(f"inputs must be int8, got {arr.dtype}")
    if arr.ndim < 2 or arr.shape[0] == 0 or arr[0].size == 0:
        raise ValueError(f"inputs must have shape (n >= 1, input_size, ...), got {arr.shape}")
    return np.ascontiguousarray(arr.reshape(arr.shape[0], -1))


# --- building -----------------------------------------------------------------


def _cpu_flags(dsp: bool) -> list[str]:
    return ["-mcpu=cortex-m33" if dsp else "-mcpu=cortex-m33+nodsp", *CPU_FLAGS]


def _gcc(tc: M33Toolchain, args: list[str], cwd: Path) -> None:
    cmd = [str(tc.gcc), *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise M33BuildError(
            f"arm-none-eabi-gcc failed (exit {proc.returncode}) in {cwd}:\n"
            f"  {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        )


def _compile(
    tc: M33Toolchain, sources: list[Path], out_dir: Path, flags: list[str]
) -> list[Path]:
    """Compile `sources` into `out_dir`; separate dirs keep equal basenames apart."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _gcc(tc, [*flags, "-c", *(str(s) for s in sources)], out_dir)
    return [out_dir / (s.stem + ".o") for s in sources]


def _compile_all(
    tc: M33Toolchain,
    model_dir: Path,
    name: str,
    build: Path,
    input_size: int,
    output_size: int,
    dsp: bool,
    profile: bool = False,
) -> list[Path]:
    obj = build / "obj"
    if obj.exists():
        shutil.rmtree(obj)  # no stale objects from an earlier model in this build dir
    build.mkdir(parents=True, exist_ok=True)
    main_c = build / "main.c"
    main_c.write_text(_main_c(name, input_size, output_size))
    base = [*_cpu_flags(dsp), *C_FLAGS]
    model_inc = f"-I{model_dir}"
    support_inc = f"-I{SUPPORT_DIR}"
    support = [SUPPORT_DIR / s for s in SUPPORT_SOURCES]
    return [
        *_compile(tc, sorted(model_dir.glob("*.c")), obj / "model", [*base, model_inc, *_profile_flags(name, profile)]),
        *_compile(tc, support, obj / "support", [*base, *SUPPORT_C_FLAGS, support_inc]),
        *_compile(tc, [main_c], obj / "main", [*base, *SUPPORT_C_FLAGS, support_inc, model_inc]),
    ]


def _profile_flags(name: str, profile: bool) -> list[str]:
    if not profile:
        return []
    hook = f"-D{name.upper()}_PROFILE_STEP(step)=tinyaot_profile_step(step)"
    return ["-include", str(SUPPORT_DIR / "profile.h"), hook]


def _link_with_inputs(
    tc: M33Toolchain,
    objects: list[Path],
    samples: np.ndarray,
    build: Path,
    stem: str,
    dsp: bool,
) -> Path:
    """Link the objects with `samples` embedded in flash as the harness's inputs."""
    inputs_dir = build / "obj" / "inputs"  # .incbin resolves against the assembler's cwd
    inputs_dir.mkdir(parents=True, exist_ok=True)
    (inputs_dir / "inputs.bin").write_bytes(samples.tobytes())
    (inputs_dir / "inputs.S").write_text(_inputs_asm(len(samples)))
    inputs_obj = _compile(tc, [inputs_dir / "inputs.S"], inputs_dir, _cpu_flags(dsp))
    elf = build / f"{stem}.elf"
    _gcc(
        tc,
        [
            *_cpu_flags(dsp),
            *LINK_FLAGS,
            "-T",
            str(SUPPORT_DIR / LINKER_SCRIPT),
            f"-Wl,-Map={stem}.map",
            *(str(o) for o in [*objects, *inputs_obj]),
            "-o",
            elf.name,
        ],
        build,
    )
    return elf


def _inputs_per_run(probe_elf: Path, input_size: int) -> int:
    """How many samples fit in the flash the model image leaves free."""
    text, data, _ = elf_sizes(probe_elf)
    free = FLASH_BYTES - text - data - _FLASH_MARGIN
    if free < input_size:
        raise M33BuildError(
            f"the model image ({text + data} bytes) leaves no room in the "
            f"{FLASH_BYTES // 1024} KiB flash for one {input_size}-byte input"
        )
    return free // input_size


def _inputs_asm(count: int) -> str:
    # .incbin keeps big batches fast to build: no C initialiser to parse.
    return f"""\
/* Generated by tinyaot.targets.m33: the samples main.c runs, in flash. */
    .section {INPUTS_SECTION},"a",%progbits
    .balign 16
    .global tinyaot_inputs
    .type tinyaot_inputs, %object
tinyaot_inputs:
    .incbin "inputs.bin"
    .size tinyaot_inputs, . - tinyaot_inputs
    .balign 4
    .global tinyaot_n_inputs
    .type tinyaot_n_inputs, %object
tinyaot_n_inputs:
    .word {count}
    .size tinyaot_n_inputs, 4
"""


_MAIN_C = """\
/* Generated by tinyaot.targets.m33: runs the embedded inputs through the model
 * and prints, over semihosting, one "OUT <k> <hex bytes>" line per input, then
 * "TICKS empty|invoke <timer ticks>", "STACK <bytes>" and "DONE <n>". */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"
#include "console.h"
#include "@NAME@.h"

#if @UNAME@_INPUT_SIZE != @INPUT_SIZE@
#error "run_m33 got @INPUT_SIZE@-byte input rows, but @NAME@.h declares another @UNAME@_INPUT_SIZE"
#endif
#if @UNAME@_OUTPUT_SIZE != @OUTPUT_SIZE@
#error "run_m33 expects @OUTPUT_SIZE@ output bytes, but @NAME@.h declares another @UNAME@_OUTPUT_SIZE"
#endif

extern const int8_t tinyaot_inputs[];
extern const uint32_t tinyaot_n_inputs;

static int fail(const char *what, int rc)
{
    console_puts("ERROR ");
    console_puts(what);
    console_puts(" returned ");
    console_put_i32(rc);
    console_putc('\\n');
    return 2;
}

static void report(const char *label, uint32_t value)
{
    console_puts(label);
    console_put_u32(value);
    console_putc('\\n');
}

/* Profiling builds of the model call this after every kernel (see profile.h). */
#define MAX_MARKS 1024u
static volatile uint32_t s_profiling;
static uint32_t s_n_marks;
static int32_t s_mark_step[MAX_MARKS];
static uint32_t s_mark_value[MAX_MARKS];

void tinyaot_profile_step(int step);
void tinyaot_profile_step(int step)
{
    if (s_profiling != 0u && s_n_marks < MAX_MARKS) {
        s_mark_value[s_n_marks] = bench_now();
        s_mark_step[s_n_marks] = step;
        s_n_marks++;
    }
}

/* Only the first inference is measured; the others just produce outputs. */
static int invoke(uint32_t k, uint32_t *ticks, uint32_t *stack)
{
    if (k != 0u) {
        return @NAME@_invoke();
    }
    bench_stack_paint();
    s_profiling = 1u;
    bench_begin();
    int rc = @NAME@_invoke();
    bench_end();
    s_profiling = 0u;
    *ticks = bench_ticks();
    *stack = bench_stack_used();
    return rc;
}

int main(void)
{
    uint32_t empty_ticks, invoke_ticks = 0u, stack_bytes = 0u;
    int rc = @NAME@_init(NULL, @UNAME@_ARENA_SIZE);
    if (rc != 0) {
        return fail("@NAME@_init", rc);
    }
    bench_timer_start();
    bench_begin();
    bench_end();
    empty_ticks = bench_ticks();
    /* The cost of one mark, measured back to back, is removed from every step. */
    s_profiling = 1u;
    tinyaot_profile_step(-1);
    tinyaot_profile_step(-1);
    s_profiling = 0u;
    uint32_t mark_cost = s_mark_value[0] - s_mark_value[1];
    s_n_marks = 0u;

    for (uint32_t k = 0u; k < tinyaot_n_inputs; k++) {
        memcpy(@NAME@_input(), tinyaot_inputs + (size_t)k * @UNAME@_INPUT_SIZE,
               @UNAME@_INPUT_SIZE);
        rc = invoke(k, &invoke_ticks, &stack_bytes);
        if (rc != 0) {
            return fail("@NAME@_invoke", rc);
        }
        console_puts("OUT ");
        console_put_u32(k);
        console_putc(' ');
        console_put_hex_bytes(@NAME@_output(), @UNAME@_OUTPUT_SIZE);
        console_putc('\\n');
    }
    report("TICKS empty ", empty_ticks);
    report("TICKS invoke ", invoke_ticks);
    report("STACK ", stack_bytes);
    report("MARKCOST ", mark_cost);
    report("BEGIN ", bench_begin_value());
    for (uint32_t i = 0u; i < s_n_marks; i++) {
        console_puts("MARK ");
        console_put_i32(s_mark_step[i]);
        console_putc(' ');
        console_put_u32(s_mark_value[i]);
        console_putc('\\n');
    }
    report("DONE ", tinyaot_n_inputs);
    return 0;
}
"""


def _main_c(name: str, input_size: int, output_size: int) -> str:
    fields = {
        "@NAME@": name,
        "@UNAME@": name.upper(),
        "@INPUT_SIZE@": str(input_size),
        "@OUTPUT_SIZE@": str(output_size),
    }
    text = _MAIN_C
    for key, value in fields.items():
        text = text.replace(key, value)
    return text


# --- running ------------------------------------------------------------------


def _qemu_cmd(tc: M33Toolchain, elf: Path) -> list[str]:
    return [
        str(tc.qemu),
        "-M", "mps2-an505",
        "-display", "none",
        "-monitor", "none",
        "-serial", "null",
        # semihosting output to stdout; QEMU's own messages stay on stderr
        "-chardev", "stdio,id=semi",
        "-semihosting-config", "enable=on,target=native,chardev=semi",
        "-icount", f"shift={ICOUNT_SHIFT},sleep=off",
        "-kernel", str(elf),
    ]  # fmt: skip


def _run_and_parse(
    tc: M33Toolchain, elf: Path, n_inputs: int, output_size: int, timeout: float
) -> _RunReport:
    stdout = _run_qemu(tc, elf, timeout)
    try:
        return _parse(stdout, n_inputs, output_size)
    except ValueError as exc:
        raise M33RunError(f"{elf.name}: {exc}\n--- guest output ---\n{_tail(stdout)}") from exc


def _run_qemu(tc: M33Toolchain, elf: Path, timeout: float) -> str:
    cmd = _qemu_cmd(tc, elf)
    try:
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise M33RunError(
            f"{elf.name} did not finish within {timeout:g} s on QEMU (hang or endless loop?)\n"
            f"--- guest output ---\n{_tail(_text(exc.stdout))}{_stderr_block(_text(exc.stderr))}"
        ) from None
    stdout, stderr = _text(proc.stdout), _text(proc.stderr)
    if proc.returncode != 0:
        raise M33RunError(
            f"{elf.name} exited with status {proc.returncode} on QEMU"
            f"{_explain_exit(proc.returncode, stdout, elf)}\n"
            f"--- guest output ---\n{_tail(stdout)}{_stderr_block(stderr)}"
        )
    return stdout


def _parse(stdout: str, n_inputs: int, output_size: int) -> _RunReport:
    outputs = np.zeros((n_inputs, output_size), dtype=np.int8)
    seen: set[int] = set()
    values: dict[str, int] = {}
    marks: list[tuple[int, int]] = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "OUT":
            k, row = int(parts[1]), bytes.fromhex(parts[2])
            if not 0 <= k < n_inputs or len(row) != output_size:
                raise ValueError(f"unexpected output line {line!r}")
            outputs[k] = np.frombuffer(row, dtype=np.int8)
            seen.add(k)
        elif len(parts) == 3 and parts[0] == "TICKS":
            values[f"ticks_{parts[1]}"] = int(parts[2])
        elif len(parts) == 2 and parts[0] in ("STACK", "DONE", "MARKCOST", "BEGIN"):
            values[parts[0].lower()] = int(parts[1])
        elif len(parts) == 3 and parts[0] == "MARK":
            marks.append((int(parts[1]), int(parts[2])))
    missing = {"ticks_empty", "ticks_invoke", "stack", "done"} - values.keys()
    if missing or values["done"] != n_inputs or len(seen) != n_inputs:
        raise ValueError(
            f"incomplete report: expected {n_inputs} OUT lines (got {len(seen)}), "
            f"missing {sorted(missing)}"
        )
    return _RunReport(outputs, values["ticks_empty"], values["ticks_invoke"], values["stack"],
                      values.get("begin", 0), tuple(marks), values.get("markcost", 0))


# --- error messages -----------------------------------------------------------

_CFSR_BITS = {
    0: "IACCVIOL: instruction fetch from a protected address",
    1: "DACCVIOL: data access to a protected address",
    4: "MSTKERR: fault while stacking",
    8: "IBUSERR: instruction fetch bus error",
    9: "PRECISERR: data bus error at BFAR",
    10: "IMPRECISERR: imprecise data bus error",
    12: "STKERR: bus error while stacking",
    16: "UNDEFINSTR: undefined instruction (e.g. __builtin_trap)",
    17: "INVSTATE: invalid EPSR state (call through a bad function pointer?)",
    18: "INVPC: invalid exception return",
    19: "NOCP: coprocessor/FPU access",
    20: "STKOF: stack overflow (stack is __stack_size in an505.ld)",
    24: "UNALIGNED: unaligned LDRD/STRD/LDM/STM or exclusive access",
    25: "DIVBYZERO: integer division by zero",
}

_FAULT_RE = re.compile(r"FAULT CFSR=0x([0-9a-f]{8}).* PC=0x([0-9a-f]{8})")


def _explain_exit(status: int, stdout: str, elf: Path) -> str:
    """Turn startup.c's FAULT line into the fault's cause and function."""
    if status != FAULT_EXIT_STATUS:
        return ""
    match = _FAULT_RE.search(stdout)
    if match is None:
        return " (fault)"
    cfsr, pc = int(match.group(1), 16), int(match.group(2), 16)
    causes = [text for bit, text in _CFSR_BITS.items() if cfsr >> bit & 1]
    return f" (fault in {_symbolize(elf, pc)}: " + ("; ".join(causes) or "see FAULT line") + ")"


def _symbolize(elf: Path, address: int) -> str:
    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab is not None else ():
            start = sym["st_value"] & ~1  # Thumb bit
            if sym["st_info"]["type"] == "STT_FUNC" and start <= address < start + sym["st_size"]:
                return f"{sym.name}+0x{address - start:x}"
    return f"0x{address:08x}"


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def _tail(text: str, lines: int = 40) -> str:
    kept = text.splitlines()[-lines:]
    return "\n".join(kept) + "\n" if kept else "(none)\n"


def _stderr_block(stderr: str) -> str:
    return f"--- qemu stderr ---\n{_tail(stderr)}" if stderr.strip() else ""
