"""The one interface every target implements: build(sources) -> artifact, run(artifact, inputs) -> RunResult.

A target turns sources into something runnable once (a shared library, a sanitized executable, Cortex-M33
objects, a Pico 2 app image) and runs inputs through it as often as asked; every run answers in the same
shape, so callers compare engines without knowing how each one works.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

from tinyaot.targets.elf import ImageSizes


@dataclass(frozen=True)
class ModelSources:
    """A generated model as targets build it: its C files, and its input and output sizes in bytes.

    `files` (name -> text) are what codegen made; `directory` says where they already are on disk, for targets
    that compile in place (files read from there when `files` is empty).
    """

    name: str
    input_size: int  # all inputs' bytes (a runner's input row holds them back to back, in order)
    output_size: int  # all outputs' bytes
    files: Mapping[str, str] = field(default_factory=dict)
    directory: Path | None = None
    arena_bytes: int | None = None  # the planned arena, for error messages
    input_sizes: tuple[int, ...] = ()  # each input's bytes, for a model with several (empty: one input)
    output_sizes: tuple[int, ...] = ()

    @classmethod
    def of(cls, cm) -> ModelSources:
        """The sources of a CompiledModel."""
        return cls(cm.name, sum(cm.input_sizes), sum(cm.output_sizes), cm.c_sources.files, arena_bytes=cm.arena_bytes,
                   input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes))

    @property
    def inputs(self) -> tuple[int, ...]:
        return self.input_sizes or (self.input_size,)

    @property
    def outputs(self) -> tuple[int, ...]:
        return self.output_sizes or (self.output_size,)

    @classmethod
    def in_directory(cls, directory, name: str, input_size: int, output_size: int) -> ModelSources:
        """A model already written to `directory` (<name>.h and .c files)."""
        return cls(name, input_size, output_size, directory=Path(directory).resolve())

    def texts(self) -> dict[str, str]:
        """name -> text of every source, read from `directory` when not held in memory."""
        if self.files or self.directory is None:
            return dict(self.files)
        return {p.name: p.read_text() for p in sorted(self.directory.iterdir()) if p.suffix in (".c", ".h")}


def io_copies(name: str, sizes: tuple[int, ...], kind: str, row: str, instance: str = "") -> list[str]:
    """C statements a runner uses to move one row of packed inputs into the model (kind "input") or the
    model's outputs into one row (kind "output"): each tensor at its accessor, back to back in the row.
    `instance`: call the instance accessors with this instance pointer. Models with several inputs (outputs)
    take the index; one-input models keep the (void) accessor."""
    lines, offset = [], 0
    for i, size in enumerate(sizes):
        args = [instance] if instance else []
        if len(sizes) > 1:
            args.append(f"{i}u")
        call = f"{name}_{'instance_' if instance else ''}{kind}({', '.join(args)})"
        if kind == "input":
            lines.append(f"memcpy((void *){call}, {row} + {offset}u, {size}u);")
        else:
            lines.append(f"memcpy({row} + {offset}u, (const void *){call}, {size}u);")
        offset += size
    return lines


@dataclass(frozen=True)
class RunResult:
    """What one run measured; a figure a target cannot measure is None."""

    outputs: np.ndarray  # int8, (n_inputs, output_size)
    instructions: int | None = None  # one inference (the first input)
    stack_bytes: int | None = None  # stack high-water mark of that inference
    sizes: ImageSizes | None = None  # the image that ran

    @property
    def text_bytes(self) -> int | None:
        return None if self.sizes is None else self.sizes.text

    @property
    def data_bytes(self) -> int | None:
        return None if self.sizes is None else self.sizes.data

    @property
    def bss_bytes(self) -> int | None:
        return None if self.sizes is None else self.sizes.bss


@runtime_checkable
class Artifact(Protocol):
    """What a build produced: `path` is the file that runs (library, executable, ELF)."""

    path: Path


@runtime_checkable
class Target(Protocol):
    """Builds sources once, runs inputs through the build."""

    name: str

    def build(self, sources: Any) -> Artifact: ...

    def run(self, artifact: Any, inputs: np.ndarray | None) -> RunResult: ...
