"""Running an image on ``qemu-system-arm -M mps2-an505 -icount``, and saying why a run failed.

Semihosting output goes to stdout, QEMU's own messages to stderr.  A fault exits with startup.c's status 99
after a FAULT line, which is decoded here into its cause and the function it happened in.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile

from tinyaot.targets.m33.config import FAULT_EXIT_STATUS, ICOUNT_SHIFT, M33RunError


def qemu_command(qemu: Path, elf: Path, extra: tuple[str, ...] | list[str] = (),
                 machine: str = "mps2-an505") -> list[str]:
    """The emulator's command line: virtual time advances 2^ICOUNT_SHIFT ns per instruction; `extra` options
    (such as a -plugin) come before the image; `machine` mps2-an521 has two cores (an521.py)."""
    return [
        str(qemu),
        "-M", machine,
        "-display", "none",
        "-monitor", "none",
        "-serial", "null",
        # semihosting output to stdout; QEMU's own messages stay on stderr
        "-chardev", "stdio,id=semi",
        "-semihosting-config", "enable=on,target=native,chardev=semi",
        "-icount", f"shift={ICOUNT_SHIFT},sleep=off",
        *extra,
        "-kernel", str(elf),
    ]  # fmt: skip


def run_elf(qemu: Path, elf: Path, timeout: float, extra: tuple[str, ...] | list[str] = (),
            machine: str = "mps2-an505") -> str:
    """Run `elf` to its exit and return what the guest printed; a hang, fault or non-zero exit is M33RunError."""
    try:
        proc = subprocess.run(qemu_command(qemu, elf, extra, machine), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise M33RunError(
            f"{elf.name} did not finish within {timeout:g} s on QEMU (hang or endless loop?)\n"
            f"{guest_output(_text(exc.stdout), _text(exc.stderr))}"
        ) from None
    stdout, stderr = _text(proc.stdout), _text(proc.stderr)
    if proc.returncode != 0:
        raise M33RunError(
            f"{elf.name} exited with status {proc.returncode} on QEMU"
            f"{explain_exit(proc.returncode, stdout, elf)}\n{guest_output(stdout, stderr)}"
        )
    return stdout


def guest_output(stdout: str, stderr: str = "") -> str:
    """The tail of what the guest printed, and of QEMU's stderr if it said anything."""
    block = f"--- guest output ---\n{_tail(stdout)}"
    return block + (f"--- qemu stderr ---\n{_tail(stderr)}" if stderr.strip() else "")


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


def explain_exit(status: int, stdout: str, elf: Path) -> str:
    """Turn startup.c's FAULT line into the fault's cause and function."""
    if status != FAULT_EXIT_STATUS:
        return ""
    match = _FAULT_RE.search(stdout)
    if match is None:
        return " (fault)"
    cfsr, pc = int(match.group(1), 16), int(match.group(2), 16)
    causes = [text for bit, text in _CFSR_BITS.items() if cfsr >> bit & 1]
    return f" (fault in {symbolize(elf, pc)}: " + ("; ".join(causes) or "see FAULT line") + ")"


def symbolize(elf: Path, address: int) -> str:
    """function+offset of a code address, from the ELF's symbol table."""
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
