"""What the Pico 2 app printed on the emulated Cortex-M33, read back: app.c's line per test input, its summary,
and the QEMU board layer's checksum and stack lines."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tinyaot.targets.base import RunResult
from tinyaot.targets.pico2.config import Pico2ExportError


@dataclass(frozen=True)
class AppRun(RunResult):
    """What app.c printed for each test input on the emulated Cortex-M33.

    `instructions` is the first inference (app.c's timer calls included), `stack_bytes` the high-water mark of
    app_run() (the stack painted before it), `sizes` the whole QEMU image (harness + app + model + test vectors;
    bss includes the model's arena).
    """

    predictions: list[int] = field(default_factory=list)
    labels: list[int | None] = field(default_factory=list)
    inference_instructions: list[int] = field(default_factory=list)  # every inference, as app.c timed it
    checksum: int | None = None  # app_checksum as the board layer printed it
    elf_path: Path | None = None
    stack_bound: int | None = None  # worst call path of app_run() in the same image (gcc -fcallgraph-info)


_LINE_RE = re.compile(
    r"#(\d+) predicted (\d+)(?: expected (\d+) (?:ok|WRONG))?, (\d+) \S+, output ([0-9a-f]+)\Z"
)


def parse_app(stdout: str, elf: Path, sizes, stack_bound: int | None = None) -> AppRun:
    """app.c's lines "#k predicted p [expected e ok|WRONG], n <unit>, output <hex>", its summary, the board
    layer's checksum and stack lines."""
    rows: dict[int, tuple[int, int | None, int, bytes]] = {}
    for line in stdout.splitlines():
        m = _LINE_RE.match(line.strip())
        if m:
            label = None if m.group(3) is None else int(m.group(3))
            rows[int(m.group(1))] = (int(m.group(2)), label, int(m.group(4)), bytes.fromhex(m.group(5)))
    if not rows or sorted(rows) != list(range(len(rows))) or "summary:" not in stdout:
        raise Pico2ExportError(f"app.c printed an incomplete report on QEMU:\n{stdout}")
    ordered = [rows[k] for k in range(len(rows))]
    m = re.search(r"^checksum ([0-9a-f]{8})$", stdout, re.MULTILINE)
    stack = re.search(r"^stack (\d+)$", stdout, re.MULTILINE)
    return AppRun(
        outputs=np.stack([np.frombuffer(r[3], dtype=np.int8) for r in ordered]),
        instructions=ordered[0][2],
        stack_bytes=None if stack is None else int(stack.group(1)),
        sizes=sizes,
        predictions=[r[0] for r in ordered],
        labels=[r[1] for r in ordered],
        inference_instructions=[r[2] for r in ordered],
        checksum=None if m is None else int(m.group(1), 16),
        elf_path=elf,
        stack_bound=stack_bound,
    )
