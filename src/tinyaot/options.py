"""CompileOptions: every option of tinyaot.compile, documented here once. tinyaot.compile takes them as keywords
of the same names and defaults (a test holds the two in step); the pipeline reads the checked record."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from tinyaot.errors import ModelError
from tinyaot.plan.contract import Contract
from tinyaot.plan.kernels import check_optimize
from tinyaot.plan.patch import EXTRA_MACS
from tinyaot.report.budget import TargetMemory, check_target_memory

# C99 guarantees 31 significant characters in external identifiers; the longest generated symbol adds 18
# ("_instance_invoke", "_ERROR_ARENA_MISALIGNED" is a macro), so names stay short enough for any linker.
MAX_NAME_LENGTH = 32
MAX_ALIGNMENT = 4096


@dataclass(frozen=True)
class CompileOptions:
    """How to compile a model. Checked when made: a wrong value is a ModelError that says what to pass."""

    # The C identifier prefixing every generated symbol and file (lowercased; at most 32 characters for any linker).
    name: str = "model"
    # The arena's alignment in bytes, a power of two: the kernels need 4 for word access on the Cortex-M33.
    alignment: int = 4
    # "NCHW" adds one transpose at the start so the caller can feed channels-first data ("NHWC": no run-time permute).
    input_layout: str = "NHWC"
    # "uint8" takes camera pixels or ADC codes as they come (zero point + 128, one cheap in-place step at the start).
    input_dtype: str = "int8"
    # How each activation range is estimated from the calibration samples: "auto", "minmax", "percentile", "mse".
    observer: str = "auto"
    # Layer or tensor name -> observer, where one range needs another estimate than the rest.
    layer_observers: dict | None = None
    # Calibration warnings become a CalibrationError: a CI run fails instead of shipping a badly calibrated model.
    strict: bool = False
    # Invoke leaves the input's bytes intact (the arena may grow; cm.contract says by how much).
    preserve_input: bool = False
    # The output never overlaps the input, for double buffering (the arena may grow).
    separate_output: bool = False
    # "speed": int16 weights widened at compile time (fastest); "size": int8 weights; "memory": the smallest arena.
    optimize: str = "speed"
    # Layer -> optimize mode, for the layers whose kernels are chosen for another mode than `optimize` (the budget
    # search writes these; cm.plan.mode_of(layer) reads them back).
    layer_optimize: dict | None = None
    # A causal Conv1d / TCN or recurrent model becomes a one-frame step function keeping its state between invokes.
    stream: bool = False
    # Layers given int16 activations (TFLite's 16x8) where int8 loses too much: names, or "auto" to choose them.
    int16: tuple[str, ...] | str | None = ()
    # What the target leaves the model, (flash_bytes, ram_bytes) or a TargetMemory: a model that does not fit is
    # warned about with what would help (None: the Raspberry Pi Pico 2).
    target_memory: TargetMemory | tuple[int, int] | None = None
    # Layers whose constants (weights, biases, multipliers) the start-up code copies from flash to SRAM, or "all":
    # read at SRAM speed instead of through a Pico 2's 16 KB XIP cache, for the RAM they take (cm.sram_offer says
    # which pay and what they cost). () keeps every constant in flash.
    sram_constants: tuple[str, ...] | str = ()
    # RAM and flash budgets in bytes (model arena + state + constants in SRAM; constants): the compiler searches the
    # kernel modes per layer and the constants' place for the fastest plan, by estimated cycles, that fits both
    # (tinyaot/budgets.py; it measures each mode's layers on the emulated Cortex-M33). None: no budget.
    ram: int | None = None
    flash: int | None = None
    # Run the first stages' largest feature maps band by band (MCUNetV2's patch-based inference) where that shrinks
    # the arena: True within 15 % more MACs (recomputed halos), or the largest fraction to spend (plan/patch.py).
    # False: layer by layer, the C as without it.
    patch: bool | float = False
    # 2: the heavy layers split between two cores (RP2350; plan/cores.py), the same bytes; 1: today's one-core C.
    cores: int = 1
    # Called with each stage's name as it starts (a status line); the caller's exceptions pass through unchanged.
    progress: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        """Check every value, in the order the messages are most useful; store the normalized ones."""
        if self.progress is not None and not callable(self.progress):
            raise ModelError(f"progress must be a function taking the stage's name (e.g. print), got "
                             f"{type(self.progress).__name__}")
        if not isinstance(self.input_layout, str) or self.input_layout.upper() not in ("NHWC", "NCHW"):
            raise ModelError(f"input_layout must be 'NHWC' (default) or 'NCHW', got {self.input_layout!r}")
        checked = dict(name=check_name(self.name), alignment=check_alignment(self.alignment),
                       preserve_input=bool(self.preserve_input), separate_output=bool(self.separate_output),
                       optimize=check_optimize(self.optimize), stream=bool(self.stream),
                       int16=_check_int16(self.int16), target_memory=check_target_memory(self.target_memory),
                       sram_constants=_check_sram_constants(self.sram_constants), patch=_check_patch(self.patch),
                       ram=_check_budget("ram", self.ram), flash=_check_budget("flash", self.flash))
        if isinstance(self.cores, bool) or self.cores not in (1, 2):
            raise ModelError(f"cores must be 1 (default) or 2 (the RP2350's two Cortex-M33s), got {self.cores!r}")
        if self.cores == 2 and self.patch:
            raise ModelError("patch and cores=2 are not combined yet: a patch stage's layers run band by band on one "
                             "core; compile with one of them")
        if self.input_dtype not in ("int8", "uint8"):
            raise ModelError(f"input_dtype must be 'int8' (default) or 'uint8', got {self.input_dtype!r}")
        for field, value in checked.items():
            object.__setattr__(self, field, value)

    @property
    def layer_modes(self) -> tuple[tuple[str, str], ...]:
        """layer_optimize as the plan takes it, each mode checked."""
        return tuple(sorted((layer, check_optimize(mode)) for layer, mode in (self.layer_optimize or {}).items()))

    @property
    def contract(self) -> Contract:
        """What invoke promises about its input and output buffers (plan/contract.py)."""
        return Contract(self.preserve_input, self.separate_output)


def check_name(name) -> str:
    """The model name prefixes every generated C symbol and file: a short C identifier."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ModelError(f"model name {name!r} must be a C identifier (letters, digits, '_'), e.g. 'mnist'")
    if len(name) > MAX_NAME_LENGTH:
        raise ModelError(f"model name {name[:40]!r}... is {len(name)} characters; it prefixes every generated C "
                         f"symbol, so keep it to {MAX_NAME_LENGTH} or fewer, e.g. {name[:12]!r}")
    return name.lower()


def check_alignment(alignment) -> int:
    """Arena alignment: a power of two bytes (the kernels need at least 4 for word access on the M33)."""
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1 \
            or alignment & (alignment - 1) or alignment > MAX_ALIGNMENT:
        raise ModelError(f"alignment must be a power of two from 1 to {MAX_ALIGNMENT} bytes (e.g. 4, 8, 16), "
                         f"got {alignment!r}")
    return alignment


def _check_int16(int16):
    """A tuple of layer names, or "auto"."""
    if int16 is None or int16 == "auto":
        return int16 or ()
    if isinstance(int16, str) or not isinstance(int16, (list, tuple, set, frozenset)) \
            or not all(isinstance(n, str) for n in int16):
        raise ModelError(f"int16 must be a list of layer names or 'auto', got {int16!r}")
    return tuple(int16)


def _check_patch(patch):
    """False, True (the default bound on extra MACs) or that bound, a fraction of the model's MACs."""
    if patch is None or isinstance(patch, bool):
        return bool(patch)
    if isinstance(patch, (int, float)) and 0 <= patch <= 10:
        return float(patch)
    raise ModelError(f"patch must be True, False or the extra MACs allowed as a fraction of the model's (e.g. 0.15), "
                     f"got {patch!r}")


def patch_fraction(patch) -> float | None:
    """The bound plan_graph takes: None for layer by layer."""
    if patch is False:
        return None
    return EXTRA_MACS if patch is True else float(patch)


def _check_sram_constants(layers):
    """A tuple of layer names, or "all" (the names are checked against the graph when the C is generated)."""
    if layers is None or layers == "all":
        return layers or ()
    if isinstance(layers, str) or not isinstance(layers, (list, tuple, set, frozenset)) \
            or not all(isinstance(n, str) for n in layers):
        raise ModelError(f"sram_constants must be a list of layer names or 'all', got {layers!r}")
    return tuple(layers)


def _check_budget(what: str, value):
    """A budget in bytes: a positive integer, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelError(f"{what} must be a budget in bytes, a positive integer (e.g. {what}=48 * 1024), or None; "
                         f"got {value!r}")
    return value
