"""Estimated Cortex-M33 cycles from an instruction mix (mix.py InstructionMix), and the Pico 2's milliseconds.

A deliberately simple model: each instruction class costs a fixed number of cycles, summed over the counts the
profiler measured exactly.  Arm publishes no per-instruction cycle table for the Cortex-M33, so every figure is the
Cortex-M4 TRM's (the closest core with published timing), at the conservative end where it gives a range; no
figure is tuned toward a target.  docs/timing.md gives each row's source and what the model ignores.  Everything
here is an estimate and is labelled so wherever it is shown.
"""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.targets.m33.mix import InstructionMix
from tinyaot.targets.pico2.config import (
    FLASH_DATA_BITS_PER_CLOCK,
    FLASH_SPI_CLKDIV,
    SYS_CLOCK_HZ,
    XIP_CACHE_BYTES,
)

M4_TRM = "Cortex-M4 TRM (Arm DDI 0439B), Table 3-1"


@dataclass(frozen=True)
class ClassCost:
    """Cycles per execution counted in one InstructionMix field.  The multi_* and taken fields count a subset of
    loads / stores / branches, so their rows are the extra cycles on top of the base row."""

    field: str
    cycles: int
    what: str
    source: str


CYCLE_TABLE: tuple[ClassCost, ...] = (
    ClassCost("other", 1, "ALU, moves, compares, IT, saturation, shifts", f"{M4_TRM}: 1"),
    ClassCost("macs", 1, "MUL, MLA, SMLAD, SMLAL, SMULL, SMMUL ...", f"{M4_TRM}: 1 (every multiply and MAC)"),
    ClassCost("loads", 2, "LDR* and the base cost of every load", f"{M4_TRM}: LDR 2 (1 when pipelined after "
              "another load: not used, the conservative figure)"),
    ClassCost("multi_loads", 1, "extra for LDRD / LDM / POP", f"{M4_TRM}: 1 + N; N = 2 assumed (LDRD): 3 in all"),
    ClassCost("stores", 2, "STR* and the base cost of every store", f"{M4_TRM}: STR 2 (conservative; the write "
              "buffer may hide one)"),
    ClassCost("multi_stores", 1, "extra for STRD / STM / PUSH", f"{M4_TRM}: 1 + N; N = 2 assumed (STRD): 3 in all"),
    ClassCost("branches", 1, "every branch, taken or not", f"{M4_TRM}: 1 when not taken"),
    ClassCost("taken", 3, "extra for a taken branch (pipeline refill P)", f"{M4_TRM}: 1 + P, P = 1..3: P = 3 "
              "used (the conservative end)"),
)

IGNORED = (
    "flash wait states and the XIP cache for code and for constants (the Pico 2's constants are estimated "
    "apart: xip_estimate)",
    "bus contention (the DMA, the other core, SRAM bank conflicts)",
    "load-use and address-dependency stalls the mix cannot see (the M4 TRM's one-cycle stall of an address "
    "computed by the instruction before)",
    "the pipelining of back-to-back loads (counted at 2 cycles each: this overstates)",
    "register lists longer than 2 (PUSH / POP / LDM of N registers cost N - 2 cycles more than counted)",
    "division (SDIV / UDIV 2-12 cycles on the M4, counted as 1 among `other`)",
    "a POP or LDR that writes the PC (4 + N on the M4, counted as a taken branch: 4)",
    "floating-point instructions' own latencies (the integer kernels have none)",
    "interrupts and exception entry",
)


def estimate_cycles(mix: InstructionMix) -> int:
    """Estimated cycles of the instructions in `mix`: each class's count times its CYCLE_TABLE figure."""
    return sum(getattr(mix, row.field) * row.cycles for row in CYCLE_TABLE)


def cycles_to_ms(cycles: float, clock_hz: int = SYS_CLOCK_HZ) -> float:
    return cycles * 1000.0 / clock_hz


def qspi_bytes_per_second(clock_hz: int = SYS_CLOCK_HZ, clkdiv: int = FLASH_SPI_CLKDIV,
                          bits_per_clock: int = FLASH_DATA_BITS_PER_CLOCK) -> float:
    """The flash's data rate at the SDK's defaults: clk_sys / clkdiv QSPI clocks a second, 4 bits each (quad
    I/O); the command, address, mode and dummy clocks of each burst are left out."""
    return clock_hz / clkdiv * bits_per_clock / 8


@dataclass(frozen=True)
class XipEstimate:
    """The Pico 2's cost of reading constants through the XIP cache, an upper-bound style estimate: when the
    constants exceed the cache, every constant byte is assumed read once per inference from flash and none of it
    kept between inferences; when they fit, none is read from flash."""

    constant_bytes: int
    streamed_bytes: int  # read from flash per inference
    bytes_per_second: float
    clock_hz: int

    @property
    def ms(self) -> float:
        return self.streamed_bytes * 1000.0 / self.bytes_per_second

    @property
    def cycles(self) -> int:
        """The same time in core cycles (4 per byte at the defaults: 2 QSPI clocks of 2 clk_sys each)."""
        return round(self.streamed_bytes * self.clock_hz / self.bytes_per_second)

    def to_dict(self) -> dict:
        return {"constant_bytes": self.constant_bytes, "streamed_bytes": self.streamed_bytes,
                "bytes_per_second": self.bytes_per_second, "estimated_cycles": self.cycles,
                "estimated_ms": self.ms}


def xip_estimate(constant_bytes: int, clock_hz: int = SYS_CLOCK_HZ,
                 cache_bytes: int = XIP_CACHE_BYTES) -> XipEstimate:
    streamed = constant_bytes if constant_bytes > cache_bytes else 0
    return XipEstimate(constant_bytes, streamed, qspi_bytes_per_second(clock_hz), clock_hz)
