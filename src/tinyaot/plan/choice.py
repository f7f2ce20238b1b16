"""The plan's record of which kernel runs a node: one of its op's variants (ir/variants.py) or its plain kernel.

plan/kernels.py makes one record per node whose op lists variants, before placement; plan/inplace.py replaces a
record by its ring where placement keeps one. The reference interpreter, the code generator and the reports read
the record (MemoryPlan.kernel_of) and nothing else to know how a node runs.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tinyaot.ir.variants import PLAIN, RING


@dataclass(frozen=True)
class RingVariant:
    """One node run by its ring kernel: reads buffer `input`, writes buffer `output` through buffer `scratch`."""

    node: str
    step: int
    input: str
    output: str
    scratch: str  # the ring's buffer, live only at `step`
    ring_pixels: int  # R = delay + 1 output pixels
    pixel_bytes: int  # one output pixel: out_c bytes
    pixels: int  # output pixels, in the order the kernel computes them
    distance: int  # the safe distance with the ring, as in plan/overlap.py (0: exactly over the input)

    @property
    def delay(self) -> int:
        return self.ring_pixels - 1

    @property
    def ring_bytes(self) -> int:
        return self.ring_pixels * self.pixel_bytes


@dataclass(frozen=True)
class KernelChoice:
    """The kernel the plan chose for one node, the scratch it writes, and why the op's other variants were not
    chosen (for the reports)."""

    node: str
    variant: str = PLAIN  # a KernelVariant name of the node's op (OpSpec.variant), or PLAIN
    work: str = ""  # its scratch buffer in the arena, live at its step only ("" for none): pairs' work, a ring
    work_bytes: int = 0
    rejected: tuple[tuple[str, str], ...] = ()  # (variant, why not), in the op's order
    ring: RingVariant | None = None  # the ring's geometry, for the ring variant
    note: str = ""  # what the chosen variant's home notes of the layer (its constant channels, zero shifts)

    @property
    def plain(self) -> bool:
        return self.variant == PLAIN


def ring_choice(v: RingVariant, rejected: tuple[tuple[str, str], ...] = ()) -> KernelChoice:
    """The record of a node the placement runs through its ring."""
    return KernelChoice(v.node, RING, v.scratch, v.ring_bytes, rejected, v)


def merge(before, during) -> tuple[KernelChoice, ...]:
    """One record per node of `before` (the choice made before placement): the placement's ring where `during`
    has one, with the reasons of both."""
    placed = {k.node: k for k in during}
    out = []
    for k in before:
        p = placed.get(k.node)
        if p is None:
            out.append(k)
        elif p.ring is not None:
            out.append(replace(p, rejected=k.rejected + p.rejected))
        else:
            out.append(replace(k, rejected=k.rejected + p.rejected))
    return tuple(out)
