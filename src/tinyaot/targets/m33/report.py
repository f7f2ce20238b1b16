"""What the harness's main() prints over semihosting, read back: outputs, timer ticks, stack, profile marks.

The protocol (harness_main.c): one "OUT <k> <hex>" line per input, "TICKS empty|invoke <n>", "STACK <bytes>",
"MARKCOST <ticks>", "BEGIN <timer>", a "MARK <step> <timer>" line per kernel in profiling builds, "DONE <n>".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tinyaot.targets.m33.config import ICOUNT_SHIFT, TIMER_NS_PER_TICK, M33RunError

_REQUIRED = ("ticks_empty", "ticks_invoke", "stack", "done")
_SINGLE = ("STACK", "DONE", "MARKCOST", "BEGIN")


def ticks_to_instructions(ticks: int, shift: int = ICOUNT_SHIFT) -> int:
    """Timer ticks under ``-icount shift=N`` -> instructions, rounded to nearest."""
    scale = 1 << shift
    return (ticks * TIMER_NS_PER_TICK + scale // 2) // scale


@dataclass(frozen=True)
class GuestReport:
    """The parsed text one QEMU run printed."""

    outputs: np.ndarray
    empty_ticks: int
    invoke_ticks: int
    stack_bytes: int
    begin: int = 0  # timer value at bench_begin of the measured inference
    marks: tuple[tuple[int, int], ...] = ()  # (step, timer value) after each kernel
    mark_cost: int = 0  # ticks of one profile mark, measured back to back

    @property
    def instructions(self) -> int:
        """One inference, net of the empty-region calibration."""
        return ticks_to_instructions(self.invoke_ticks) - ticks_to_instructions(self.empty_ticks)

    def step_instructions(self) -> dict[int, int] | None:
        """Step index -> instructions of that op (the marker's own cost removed); None without marks."""
        if not self.marks:
            return None
        out, prev = {}, self.begin
        cost = ticks_to_instructions(self.mark_cost)
        for step, value in self.marks:
            out[step] = max(ticks_to_instructions((prev - value) & 0xFFFFFFFF) - cost, 0)
            prev = value
        return out


def parse_report(stdout: str, n_inputs: int, output_size: int) -> GuestReport:
    """Read a run's lines; a missing or malformed line is M33RunError."""
    outputs = np.zeros((n_inputs, output_size), dtype=np.int8)
    seen: set[int] = set()
    values: dict[str, int] = {}
    marks: list[tuple[int, int]] = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "OUT":
            seen.add(_output_line(line, parts, outputs))
        elif len(parts) == 3 and parts[0] == "TICKS":
            values[f"ticks_{parts[1]}"] = int(parts[2])
        elif len(parts) == 2 and parts[0] in _SINGLE:
            values[parts[0].lower()] = int(parts[1])
        elif len(parts) == 3 and parts[0] == "MARK":
            marks.append((int(parts[1]), int(parts[2])))
    _check_complete(values, seen, n_inputs)
    return GuestReport(outputs, values["ticks_empty"], values["ticks_invoke"], values["stack"],
                       values.get("begin", 0), tuple(marks), values.get("markcost", 0))


def _output_line(line: str, parts: list[str], outputs: np.ndarray) -> int:
    """Store one OUT line's bytes; its index."""
    k, row = int(parts[1]), bytes.fromhex(parts[2])
    if not 0 <= k < len(outputs) or len(row) != outputs.shape[1]:
        raise M33RunError(f"unexpected output line {line!r}")
    outputs[k] = np.frombuffer(row, dtype=np.int8)
    return k


def _check_complete(values: dict[str, int], seen: set[int], n_inputs: int) -> None:
    missing = set(_REQUIRED) - values.keys()
    if missing or values["done"] != n_inputs or len(seen) != n_inputs:
        raise M33RunError(
            f"incomplete report: expected {n_inputs} OUT lines (got {len(seen)}), "
            f"missing {sorted(missing)}"
        )
