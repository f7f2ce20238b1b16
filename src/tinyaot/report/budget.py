"""Does it fit? The compiled model's flash and RAM against what the target offers it, said at compile time.

A model that cannot fit is still compiled (its numbers are what the user needs to shrink it), but a
MemoryBudgetWarning says so with the figures and what would help. The default target is the Raspberry Pi
Pico 2; `target_memory=(flash_bytes, ram_bytes)` (or `--target-memory` on the command line) gives another.

What is counted: flash = the model's constants (weights, biases, multipliers, tables; the figure
cm.constant_bytes and the report give), RAM = the arena (every activation, the input and output included, as
the buffer contract placed them) + the state region (cm.ram_bytes). The model's code, its stack and the rest of
the firmware are the target's allowance: for the Pico 2 that allowance is stated below from measured figures;
for a target given by the user, the figures are what the user leaves the model.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace

from tinyaot.codegen import generate_c
from tinyaot.diagnostics import Finding
from tinyaot.errors import ModelError
from tinyaot.plan.kernels import for_mode
from tinyaot.plan.lifetimes import busiest_step_text
from tinyaot.targets.pico2 import PICO2_FLASH_BYTES, RP2350_MAIN_SRAM_BYTES

KIB, MIB = 1024, 1024 * 1024
# Flash the firmware takes besides the model's constants: the Pico SDK runtime with USB and UART stdio
# (SDK_FLASH_BYTES, 30,904 B measured with Pico SDK 2.2.0), the model's own code (at most 15,568 B on the MLPerf
# Tiny models, speed mode) and the application's, rounded up to 64 KB.
PICO2_FIRMWARE_FLASH_BYTES = 64 * KIB
# Main SRAM the firmware takes besides the arena and state: the SDK runtime's vector table, .data, .bss and heap
# reservation (SDK_RAM_BYTES, 9,776 B measured), the model's instance and the application's own variables, rounded
# up to 16 KB. The stacks live in the RP2350's two 4 KB scratch banks, outside the 512 KB of main SRAM.
PICO2_FIRMWARE_RAM_BYTES = 16 * KIB


@dataclass(frozen=True)
class TargetMemory:
    """What a target leaves the model: flash for its constants, RAM for its arena and state region."""

    flash_bytes: int
    ram_bytes: int
    name: str = "the target"
    note: str = ""  # where the figures come from

    def to_dict(self) -> dict:
        return asdict(self)


PICO2 = TargetMemory(
    PICO2_FLASH_BYTES - PICO2_FIRMWARE_FLASH_BYTES, RP2350_MAIN_SRAM_BYTES - PICO2_FIRMWARE_RAM_BYTES,
    "the Pico 2 (RP2350)",
    "4 MB of flash less 64 KB for the Pico SDK runtime and the code; 512 KB of main SRAM less 16 KB for the SDK "
    "runtime and the application (the stacks have their own 8 KB)")


def check_target_memory(target) -> TargetMemory:
    """None or "pico2": the Pico 2; (flash_bytes, ram_bytes) or a TargetMemory: that."""
    if target is None or (isinstance(target, str) and target.lower() in ("pico2", "pico 2", "rp2350")):
        return PICO2
    if isinstance(target, TargetMemory):
        sizes = (target.flash_bytes, target.ram_bytes)
    elif isinstance(target, (tuple, list)) and len(target) == 2:
        sizes = tuple(target)
    else:
        sizes = None
    if sizes is None or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        raise ModelError(f"target_memory must be (flash_bytes, ram_bytes), two positive integers: the flash and "
                         f"RAM the target leaves the model (e.g. (2 * 1024 * 1024, 256 * 1024)), or 'pico2' (the "
                         f"default); got {target!r}")
    return target if isinstance(target, TargetMemory) else TargetMemory(sizes[0], sizes[1])


_UNITS = {"": 1, "b": 1, "k": KIB, "kb": KIB, "kib": KIB, "m": MIB, "mb": MIB, "mib": MIB}


def parse_target_memory(text: str) -> TargetMemory:
    """The command line's --target-memory: 'pico2', or FLASH,RAM with optional units (K/KB/KiB = 1024 bytes,
    M/MB/MiB = 1024 KB), e.g. '2MB,264KB'."""
    if text.strip().lower() in ("pico2", "rp2350"):
        return PICO2
    parts = text.split(",")
    sizes = [_bytes(p) for p in parts] if len(parts) == 2 else None
    if sizes is None or None in sizes:
        raise ModelError(f"--target-memory {text!r}: give FLASH,RAM, the bytes the target leaves the model, with "
                         "optional units (K/KB = 1024 bytes, M/MB = 1024 KB), e.g. 2MB,264KB; or pico2 (the default)")
    return check_target_memory(tuple(sizes))


def parse_bytes(flag: str, text: str) -> int:
    """A byte count on the command line, with optional units (K/KB = 1024 bytes, M/MB = 1024 KB): 48K, 1M."""
    value = _bytes(text)
    if value is None:
        raise ModelError(f"{flag} {text!r}: give a number of bytes with optional units (K/KB = 1024 bytes, "
                         "M/MB = 1024 KB), e.g. 48K or 1M")
    return value


def _bytes(text: str) -> int | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _UNITS:
        return None
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    return int(value) if value >= 1 else None


@dataclass(frozen=True)
class Budget:
    """The model's flash and RAM against its target's; findings say what does not fit and what would help."""

    target: TargetMemory
    flash_bytes: int  # the model's constants
    ram_bytes: int  # arena + state region
    findings: tuple[Finding, ...] = ()

    @property
    def fits(self) -> bool:
        return self.flash_bytes <= self.target.flash_bytes and self.ram_bytes <= self.target.ram_bytes

    def to_dict(self) -> dict:
        return {"target": self.target.to_dict(), "flash_bytes": self.flash_bytes, "ram_bytes": self.ram_bytes,
                "fits": self.fits, "findings": [f.to_dict() for f in self.findings]}

    def summary(self) -> str:
        """One line: the verdict and both figures against the target's."""
        verdict = "fits" if self.fits else "does not fit"
        return (f"{verdict} {self.target.name}: constants {self.flash_bytes:,} of {self.target.flash_bytes:,} B of "
                f"flash, arena and state {self.ram_bytes:,} of {self.target.ram_bytes:,} B of RAM")

    def rows(self) -> list[tuple[str, str, str]]:
        """(what, bytes available, note) lines for the report's RAM and flash table."""
        return [_row("flash budget", self.flash_bytes, self.target.flash_bytes, self.target.name),
                _row("RAM budget", self.ram_bytes, self.target.ram_bytes, self.target.name)]


def _row(what: str, used: int, available: int, target: str) -> tuple[str, str, str]:
    verdict = "fits" if used <= available else f"DOES NOT FIT: {used / available:.2f}x"
    return what, f"{available:,}", f"available on {target}; uses {used:,} ({verdict})"


def check_budget(cm, target: TargetMemory) -> Budget:
    """cm's constants and RAM against `target`; a Finding per resource that does not fit."""
    flash, ram = cm.constant_bytes, cm.ram_bytes
    findings = []
    if flash > target.flash_bytes:
        findings.append(_flash_finding(cm, target, flash))
    if ram > target.ram_bytes:
        findings.append(_ram_finding(cm, target, ram))
    return Budget(target, flash, ram, tuple(findings))


def _flash_finding(cm, target: TargetMemory, flash: int) -> Finding:
    help_ = []
    size = size_mode_constant_bytes(cm)
    if size is not None and size < flash:
        verdict = "which fits" if size <= target.flash_bytes else "still too many"
        help_.append(f"compile with optimize='size', which keeps the weights int8 and drops the speed-only tables "
                     f"({size:,} B of constants, {verdict})")
    largest = ", ".join(f"'{n}' {b:,} B" for n, b in largest_weights(cm.graph, 3))
    help_.append("fewer channels or a narrower width multiplier shrink the weights"
                 + (f" (the largest int8 weights: {largest})" if largest else ""))
    help_.append("or pass target_memory=(flash_bytes, ram_bytes) if the target has more")
    return Finding("flash_budget", "model",
                   f"model '{cm.name}' does not fit {target.name}: its constants take {flash:,} B of flash, "
                   f"{_over(flash, target.flash_bytes)}", "; ".join(help_))


def _ram_finding(cm, target: TargetMemory, ram: int) -> Finding:
    what = (f"its arena and state ({cm.arena_bytes:,} + {cm.state_bytes:,} B) take" if cm.state_bytes
            else "its arena takes")
    help_ = []
    shape = cm.graph.tensor(cm.graph.inputs[0]).shape
    if len(shape) == 4 and shape[1] > 1 and shape[2] > 1:
        help_.append(f"a smaller input resolution than {shape[1]}x{shape[2]} shrinks every activation")
    help_.append(f"fewer channels in the layers at the peak ({busiest_step_text(cm.plan)}) shrink it")
    if cm.plan.optimize != "memory":
        help_.append("optimize='memory' gives the plain int8 kernels and the smallest arena")
    cost = cm.contract.cost_bytes
    if cost > 0:
        help_.append(f"preserve_input / separate_output cost {cost:,} B of it")
    if getattr(cm, "int16_layers", None):
        help_.append("the int16 layers take two bytes per activation")
    help_.append("or pass target_memory=(flash_bytes, ram_bytes) if the target has more")
    return Finding("ram_budget", "model", f"model '{cm.name}' does not fit {target.name}: {what} {ram:,} B of RAM, "
                   f"{_over(ram, target.ram_bytes)}", "; ".join(help_))


def _over(used: int, available: int) -> str:
    return f"{used / available:.2f}x the {available:,} B available"


def size_mode_constant_bytes(cm) -> int | None:
    """The constants the same plan takes with optimize='size' (int8 weights in the pairs and wide kernels, no
    speed-only tables), generated for the count; None when size mode would change nothing. Paid only by a model
    whose constants do not fit."""
    if cm.plan.optimize != "speed":
        return None
    kernels = for_mode(cm.graph, cm.plan.kernels, "size")  # each variant's twin with int8 weights
    return generate_c(cm.graph, replace(cm.plan, kernels=kernels, optimize="size"), cm.name).const_bytes


def largest_weights(g, n: int) -> list[tuple[str, int]]:
    """The n layers with the most constant bytes (as the int8 graph holds them)."""
    per = {}
    for node in g.nodes:
        b = sum(g.tensor(t).nbytes for t in node.inputs if t in g.tensors and g.tensor(t).is_const)
        if b:
            per[node.name] = b
    return sorted(per.items(), key=lambda kv: -kv[1])[:n]
