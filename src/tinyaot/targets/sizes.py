"""Every size tinyaot reports about a model, measured on Cortex-M33 object files (never estimated).

One place: the model's code bytes and its static state (RAM besides the arena) come from one compile of its
sources with the M33_SIZE profile (`measure_objects`, cached by content, so a report and `code_bytes` do not
compile twice); a linked image's Berkeley-style sizes come from `elf.elf_sizes`.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tinyaot.targets.callgraph import CallGraph
from tinyaot.targets.elf import section_bytes
from tinyaot.targets.m33.build import compile_sources
from tinyaot.targets.profiles import M33_SIZE
from tinyaot.targets.toolchain import ToolchainMissing, find_m33_toolchain

CODE_SECTIONS = (".text",)
STATE_SECTIONS = (".data", ".bss")


@dataclass(frozen=True)
class ObjectSizes:
    """The sections of each of a model's object files (c file -> section prefix -> bytes)."""

    sections: dict[str, dict[str, int]]
    linked_code_bytes: int | None = None  # what --gc-sections keeps: the functions the model's API reaches

    @property
    def code_bytes(self) -> int:
        """Machine code of model + kernels that a firmware links: every function reachable from the model's own
        global functions (init, invoke, ...; gcc's call graph), so kernel variants the model never calls (the
        other optimize mode's, a plain kernel no layer uses) are not counted. All of .text when the call graph
        is missing."""
        if self.linked_code_bytes is not None:
            return self.linked_code_bytes
        return sum(s[p] for s in self.sections.values() for p in CODE_SECTIONS)

    def state_bytes(self, c_file: str) -> int:
        """.data + .bss of one object file."""
        return sum(self.sections[c_file][p] for p in STATE_SECTIONS)


def measure_objects(sources) -> ObjectSizes | None:
    """Compile `sources` (name + files, as codegen makes them) for Cortex-M33 with the M33_SIZE profile and read
    their sections; None when the toolchain is missing."""
    try:
        gcc = find_m33_toolchain().gcc
    except ToolchainMissing:
        return None
    return _measure(gcc, tuple(sorted(sources.files.items())), (f"{sources.name}.c",))


def m33_code_bytes(sources) -> int | None:
    """Sum of .text over the model's object files, or None when arm-none-eabi-gcc is missing."""
    sizes = measure_objects(sources)
    return None if sizes is None else sizes.code_bytes


def m33_static_state_bytes(sources, arena_bytes: int) -> int | None:
    """.data + .bss of the model's own object file minus its static arena, or None without the toolchain."""
    sizes = measure_objects(sources)
    return None if sizes is None else max(sizes.state_bytes(f"{sources.name}.c") - arena_bytes, 0)


@lru_cache(maxsize=32)
def _measure(gcc: Path, files: tuple[tuple[str, str], ...], models: tuple[str, ...] = ()) -> ObjectSizes:
    """One compile per compiler and content: the cache key is the arguments. `models`: the model .c files,
    whose global functions are the roots of what a firmware links."""
    with tempfile.TemporaryDirectory(prefix="tinyaot-size-") as tmp:
        d = Path(tmp)
        for fname, text in files:
            (d / fname).write_text(text)
        c_files = [d / f for f, _ in files if f.endswith(".c")]
        objects = compile_sources(gcc, c_files, d / "obj", M33_SIZE.compile_flags("-I", str(d)))
        prefixes = (*CODE_SECTIONS, *STATE_SECTIONS)
        sections = {c.name: {p: section_bytes(o, p) for p in prefixes} for c, o in zip(c_files, objects)}
        return ObjectSizes(sections, _linked_code(objects, [o for c, o in zip(c_files, objects) if c.name in models]))


def _linked_code(objects: list[Path], model_objects: list[Path]) -> int | None:
    """.text of the functions reachable from the global functions of the model files (what the link keeps)."""
    cis = [o.with_suffix(".ci") for o in objects]
    if not all(ci.is_file() for ci in cis):
        return None
    graph = CallGraph.read(cis)
    roots = [f for o in model_objects for f in graph.defined_in(o.with_suffix(".ci")) if ":" not in f]
    return graph.code_bytes(graph.reachable(roots))
