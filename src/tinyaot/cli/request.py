"""What the user asked for, typed: built once from the parsed arguments (checks.build_request), every value checked
and every array the command names loaded, before the (possibly long) compile; the commands read it, nobody writes
into it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tinyaot.report.budget import TargetMemory


@dataclass(frozen=True)
class Files:
    """The files (and shapes) of the flags given once per model input, in order: a one-input model uses the first."""

    calibrations: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    input_shapes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Arrays:
    """The arrays those files hold, loaded once and checked to be usable."""

    calibrations: tuple[np.ndarray, ...] = ()
    inputs: tuple[np.ndarray, ...] = ()
    data: tuple[np.ndarray, np.ndarray | None] | None = None  # --data: inputs and labels (if the file has them)
    labels: np.ndarray | None = None  # export --labels

    @property
    def calibration(self) -> np.ndarray | None:
        return self.calibrations[0] if self.calibrations else None

    @property
    def input(self) -> np.ndarray | None:
        return self.inputs[0] if self.inputs else None


@dataclass(frozen=True)
class Request:
    """One command and everything it was given; the model fields are empty for the commands without a model
    (ops, demo)."""

    command: str
    json: bool = False
    # ---- the model, and the samples given with it
    model: str | None = None  # a .tflite file, or path/to/file.py:name
    is_tflite: bool = False
    float_tflite: bool = False  # a float .tflite: calibrated on samples, like a PyTorch model
    files: Files = field(default_factory=Files)
    shapes: tuple[tuple[int, ...], ...] = ()  # --input-shape, parsed
    arrays: Arrays = field(default_factory=Arrays)
    data: str | None = None  # --data
    labels: str | None = None  # export --labels
    float_model: str | None = None  # --float-model
    layout: str = "auto"  # of the --input / --data arrays: auto, torch or model
    # ---- how to compile it
    name: str = "model"
    alignment: int = 4
    observer: str = "auto"
    strict: bool = False
    preserve_input: bool = False
    separate_output: bool = False
    optimize: str = "speed"
    cores: int = 1  # --cores
    int16: tuple[str, ...] = ()  # layers, or ("auto",)
    sram_constants: tuple[str, ...] = ()  # layers, or ("all",)
    ram: int | None = None  # --ram budget, bytes
    flash: int | None = None  # --flash budget, bytes
    patch: bool = False  # --patch
    memory: TargetMemory | None = None  # --target-memory, parsed
    # ---- what the command does with it
    output: str | None = None  # compile, export: the directory; run: the .npy file
    engine: str = "reference"  # run, eval
    picture: str | None = None  # report
    compare_float: bool = False  # report
    no_m33: bool = False  # report, demo
    target: str = "c"  # export
    copy_to_ram: bool = False  # export
    mix: bool = False  # profile
    speed: bool = False  # report: profile one inference too
    tradeoffs: bool = False  # report: the plans a budget search weighs
    no_layers: bool = False  # eval
    out: str = "out/demo"  # demo
    random_calibration: bool = False  # demo
    timings: bool = False  # compile: print each pass's time

    @property
    def calibration(self) -> str | None:
        """The first --calibration file (a one-input model's only one)."""
        return self.files.calibrations[0] if self.files.calibrations else None

    @property
    def input(self) -> str | None:
        return self.files.inputs[0] if self.files.inputs else None

    @property
    def input_shape(self) -> str | None:
        return self.files.input_shapes[0] if self.files.input_shapes else None

    @property
    def shape(self) -> tuple[int, ...] | None:
        return self.shapes[0] if self.shapes else None

    @property
    def pico2(self) -> bool:
        return self.command == "export" and self.target == "pico2"

    def torch_sample_shape(self) -> tuple[int, ...] | None:
        """A PyTorch model's sample shape, known before the compile (None for a .tflite: known once imported)."""
        if self.is_tflite:
            return None
        return tuple(self.shape[1:]) if self.shape else tuple(self.arrays.calibration.shape[1:])

    def compile_options(self, progress: Callable[[str], None]) -> dict:
        """tinyaot.compile's options: the ones given, and `progress` for the status line."""
        options = dict(name=self.name, alignment=self.alignment, observer=self.observer, strict=self.strict,
                       progress=progress)
        if self.preserve_input:
            options["preserve_input"] = True
        if self.separate_output:
            options["separate_output"] = True
        if self.optimize != "speed":
            options["optimize"] = self.optimize
        if self.cores != 1:
            options["cores"] = self.cores
        if self.int16:
            options["int16"] = "auto" if self.int16 == ("auto",) else list(self.int16)
        if self.sram_constants:
            options["sram_constants"] = "all" if self.sram_constants == ("all",) else list(self.sram_constants)
        if self.patch:
            options["patch"] = True
        if self.memory is not None:
            options["target_memory"] = self.memory
        for budget in ("ram", "flash"):
            if getattr(self, budget) is not None:
                options[budget] = getattr(self, budget)
        return options
