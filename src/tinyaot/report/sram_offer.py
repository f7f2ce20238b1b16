"""The Pico 2 offer: which layers' constants to copy into SRAM beside the arena, and what that is estimated to save.

On a Pico 2 the constants stay in QSPI flash and are read through the 16 KB XIP cache; targets/m33/timing.py
estimates that cost (every constant byte read once per inference once they exceed the cache). Where the RAM the
target leaves the model has room beside the arena and state, copying a layer's arrays to SRAM at start-up
(compile(sram_constants=...), codegen/placement.py) removes their share of that cost. The offer takes the largest
layers first while they fit; it is an estimate, labelled so wherever it is shown."""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.targets.m33.timing import SYS_CLOCK_HZ, XipEstimate, xip_estimate


@dataclass(frozen=True)
class SramOffer:
    layers: tuple[tuple[str, int], ...]  # (layer, SRAM bytes its arrays take), largest first
    free_ram_bytes: int  # what the target leaves beside the model's RAM today
    before: XipEstimate  # the XIP estimate as compiled
    after: XipEstimate  # with the offered layers in SRAM
    everything: bool  # the offer is every layer still in flash

    @property
    def sram_bytes(self) -> int:
        return sum(b for _, b in self.layers)

    @property
    def saved_cycles(self) -> int:
        return self.before.cycles - self.after.cycles

    @property
    def saved_ms(self) -> float:
        return self.before.ms - self.after.ms

    @property
    def option(self):
        """What to pass as compile(sram_constants=...) (on top of what is in SRAM already)."""
        return "all" if self.everything else [name for name, _ in self.layers]

    def to_dict(self) -> dict:
        return {"note": "an estimate: the Pico 2's XIP cost (docs/timing.md) of the constants left in flash",
                "sram_constants": self.option, "layers": [{"layer": n, "sram_bytes": b} for n, b in self.layers],
                "sram_bytes": self.sram_bytes, "free_ram_bytes": self.free_ram_bytes,
                "estimated_cycles_saved": self.saved_cycles, "estimated_ms_saved": self.saved_ms}

    def text(self) -> str:
        what = ("all the constants" if self.everything else
                f"the constants of {len(self.layers)} layer{'s' * (len(self.layers) > 1)} "
                f"({', '.join(n for n, _ in self.layers[:4])}{', ...' * (len(self.layers) > 4)})")
        option = "'all'" if self.everything else "[...]"
        return (f"estimated Pico 2 offer: copying {what} to SRAM (sram_constants={option}) takes "
                f"{self.sram_bytes:,} B of the {self.free_ram_bytes:,} B of RAM left and saves about "
                f"{self.saved_ms:.2f} ms ({self.saved_cycles:,} cycles) of XIP reads per inference")


def sram_offer(sources, ram_bytes: int, target_ram_bytes: int, clock_hz: int = SYS_CLOCK_HZ) -> SramOffer | None:
    """sources: the generated C (codegen.CSources); ram_bytes: the model's RAM as compiled (arena, state and the
    constants in SRAM already); target_ram_bytes: what the target leaves the model. None when nothing would be
    saved or nothing fits."""
    in_flash = sources.const_bytes - sources.sram_const_bytes
    before = xip_estimate(in_flash, clock_hz)
    free = target_ram_bytes - ram_bytes
    candidates = sorted(((n, b) for n, b in sources.layer_array_bytes.items() if n not in sources.sram_layers),
                        key=lambda nb: (-nb[1], nb[0]))
    if not before.streamed_bytes or free <= 0 or not candidates:
        return None
    chosen, room = [], free
    for name, nbytes in candidates:
        if nbytes <= room:
            chosen.append((name, nbytes))
            room -= nbytes
    if not chosen:
        return None
    after = xip_estimate(in_flash - sum(b for _, b in chosen), clock_hz)
    return SramOffer(tuple(chosen), free, before, after, len(chosen) == len(candidates))
