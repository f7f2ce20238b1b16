"""Kernel variants: the kernels an op may run as instead of its plain one, listed in its OpSpec (ir/ops.py).

A variant computes the plain kernel's numbers (the reference stays the definition) but in another way: two
output pixels at a time with weights widened at compile time (pairs), eight outputs at a time (wide), or written
over its own input through a ring of held-back pixels (ring). It is data here; each of its parts lives in the home
of its stage, found from these fields:

- `home`, ref/<home>.py, the kernel knowledge: `qualifies(node, g, options) -> (bool, reason)` (may this layer
  take it: its requantization, its shapes, the arena's alignment) and `work_bytes(node, g)` (the scratch it needs
  in the arena; a `placed` variant's is sized by the placement instead); a variant that `runs_in_arena` (its own
  write order) also has `run(arena, offset_of, node, choice, kernel, params)`, which the reference interpreter calls;
- `emit`, codegen/<emit>.py `emit_<name>(node, g, prefix, offsets, choice, variant, speed)`, which lays the weights
  out as `layout` says (tinyaot_kernels.h names the functions there);
- `c_kernel` in c/kernels/<c_file>, which calls the kernels of the files in `c_deps`.

The plan (plan/kernels.py) gives each node the first variant, in its spec's order, that serves the optimize mode
and qualifies; a `placed` variant (a ring) is chosen while placing, only where it shrinks the arena
(plan/inplace.py). Its record (plan/choice.py KernelChoice) names the variant and says why the op's other variants
were not chosen; the interpreter, the code generator and the reports read that record. The 16x8 kernels are no
variant: the tensors' types choose them (ir/ops.py kernel_ref), not the plan.
"""
from __future__ import annotations

from dataclasses import dataclass

OPTIMIZE_MODES = ("speed", "size", "memory")  # compile(optimize=...): what the plan's kernel choices favour
PLAIN = "plain"  # the record's variant for a node run by its op's plain kernel (OpSpec.ref)
RING = "ring"  # the windowed ops' in-place variant, which the placement chooses (plan/inplace.py)
WEIGHT_BYTES = {"int8": 1, "int16": 2}  # flash per weight of each type a variant's kernel may read


@dataclass(frozen=True)
class KernelOptions:
    """What a variant's `qualifies` may read besides the layer: the optimize mode and the arena's alignment."""

    optimize: str = "memory"
    alignment: int = 4
    layer_modes: tuple[tuple[str, str], ...] = ()  # (layer, mode) where a layer's mode is not `optimize`

    def mode(self, layer: str) -> str:
        """The optimize mode this layer's kernels are chosen for."""
        return dict(self.layer_modes).get(layer, self.optimize)


@dataclass(frozen=True)
class KernelVariant:
    name: str  # unique within its op: the plan's records and the reports name the kernel by it
    home: str  # ref/<home>.py: qualifies, work_bytes (and run, when it runs_in_arena)
    c_kernel: str  # the C function (its emitter may take a specialisation the Params call for: conv2d's 1x1 ring)
    c_file: str  # c/kernels/<c_file>, copied beside the model when a layer runs this variant
    emit: str  # codegen/<emit>.py: emit_<name>
    modes: tuple[str, ...] = OPTIMIZE_MODES  # the optimize modes that choose it
    weights: str = "int8"  # the weights' type in flash (WEIGHT_BYTES: int16 is widened at compile time)
    layout: str = "as the plain kernel"  # how its weights are laid out (tinyaot_kernels.h; made by its emitter)
    c_deps: tuple[str, ...] = ()  # kernel files its C file calls into, linked with it
    placed: bool = False  # chosen while placing the arena (where it shrinks it), not before
    runs_in_arena: bool = False  # writes in its own order: the interpreter runs its home's `run` in the arena
    overlap: str | None = None  # its own in-place rule where its loop order differs (plan/overlap.py): "pairs"

    @property
    def weight_bytes(self) -> int:
        """Flash per weight: what choosing this variant costs beside its int8 weights."""
        return WEIGHT_BYTES[self.weights]

    def serves(self, optimize: str) -> bool:
        return optimize in self.modes


def _pairs(c_stem: str) -> tuple[KernelVariant, KernelVariant]:
    """conv2d / conv2d_add through c/kernels/conv2d_pairs_s8.c: speed's int16 weights, size's int8 ones."""
    shared = dict(home="conv2d_pairs_s8", c_file="conv2d_pairs_s8.c", emit="emit_conv", overlap="pairs",
                  c_deps=("add_s8.c",))  # the file's conv2d_add kernel ends in tinyaot_add_s8
    return (KernelVariant("pairs", c_kernel=f"tinyaot_{c_stem}_pairs_s8", modes=("speed",), weights="int16",
                          layout="doubled, int16 pairs in [out_c / 4][taps_padded / 2][4] words",
                          **shared),
            KernelVariant("pairs_w8", c_kernel=f"tinyaot_{c_stem}_pairs_w8_s8", modes=("size",),
                          layout="int8 [out_c / 2][taps_padded / 4][2][4]", **shared))


def _ring(plain: str) -> KernelVariant:
    """A windowed op's in-place ring kernel (c/kernels/<plain>_inplace_s8.c), which calls its plain twin."""
    return KernelVariant(RING, "inplace", f"tinyaot_{plain}_inplace_s8", f"{plain}_inplace_s8.c", "emit_inplace",
                         c_deps=(f"{plain}_s8.c",), placed=True, runs_in_arena=True)


CONV2D_VARIANTS = (*_pairs("conv2d"), _ring("conv2d"))
CONV2D_ADD_VARIANTS = _pairs("conv2d_add")
DEPTHWISE_VARIANTS = (_ring("depthwise_conv2d"),)
FULLY_CONNECTED_VARIANTS = tuple(
    KernelVariant(name, "fully_connected_wide_s8", f"tinyaot_fully_connected_{name}_s8", "fully_connected_s8.c",
                  "emit_conv", modes=(mode,), weights=weights, layout=layout)
    for name, mode, weights, layout in (
        ("wide", "speed", "int16", "int16 pairs [ceil(out / 8)][in / 4][2][8] words"),
        ("wide_w8", "size", "int8", "int8 [ceil(out / 8)][in / 4][8][4]")))
