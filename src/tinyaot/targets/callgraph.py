"""Stack bounds and reachable code from gcc's call graphs (-fcallgraph-info=su), without linking or running.

gcc writes one .ci file per object: every function's stack frame (and whether it is static) and its calls.
The worst call path from an entry point is its stack bound; what it reaches is what --gc-sections keeps.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tinyaot.errors import TinyAOTError
from tinyaot.targets.elf import matching_section_bytes, text_closure


class CallGraphError(TinyAOTError):
    """A call graph has no static stack bound (recursion, a dynamic frame) or lacks a function."""


@dataclass(frozen=True)
class StackPath:
    bytes: int
    path: tuple[str, ...]  # function ids, the root first


INDIRECT_CALL = "__indirect_call"  # gcc's node for every call through a function pointer
_CI_NODE = re.compile(r'^node: \{ title: "([^"]+)" label: "([^"]*)"')
_CI_EDGE = re.compile(r'^edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
_CI_FRAME = re.compile(r"(\d+) bytes \(([a-z,]+)\)")


class CallGraph:
    """Functions, their stack frames and their calls, from the .ci files gcc writes with -fcallgraph-info=su.

    A function is named as gcc titles it: its name if global, `source:name` if static (clones keep gcc's
    suffix, e.g. `name.isra.0`).  A call is resolved to the SDK's `--wrap` replacement `__wrap_<name>` when
    one is in the graph (printf -> __wrap_printf), as the SDK's link does.
    """

    def __init__(self) -> None:
        self.frames: dict[str, tuple[int, str]] = {}  # function -> (bytes, "static" | "dynamic" | ...)
        self.calls: dict[str, set[str]] = {}
        self.source: dict[str, Path] = {}  # function -> the .ci file that defines it

    @classmethod
    def read(cls, ci_files) -> CallGraph:
        graph = cls()
        for ci in ci_files:
            ci = Path(ci)
            for line in ci.read_text(errors="replace").splitlines():
                m = _CI_NODE.match(line)
                if m:
                    frame = _CI_FRAME.search(m.group(2))
                    if frame:
                        graph.frames[m.group(1)] = (int(frame.group(1)), frame.group(2))
                        graph.source[m.group(1)] = ci
                    continue
                m = _CI_EDGE.match(line)
                if m:
                    graph.calls.setdefault(m.group(1), set()).add(m.group(2))
        return graph

    def find(self, name: str) -> list[str]:
        """Every function called `name` (a global one, or static ones in any file)."""
        return [f for f in self.frames if f == name or f.endswith(":" + name)]

    def resolve(self, callee: str) -> str:
        wrapped = "__wrap_" + callee
        return wrapped if wrapped in self.frames else callee

    def defined_in(self, ci: Path) -> list[str]:
        return [f for f, src in self.source.items() if src == Path(ci)]

    def reachable(self, roots) -> set[str]:
        seen, todo = set(), list(roots)
        while todo:
            f = todo.pop()
            if f in seen or f not in self.frames:
                continue
            seen.add(f)
            todo.extend(self.resolve(c) for c in self.calls.get(f, ()))
        return seen

    def code_bytes(self, functions) -> int:
        """Bytes of .text of `functions` (compiled with -ffunction-sections: one section each) and of the functions
        whose addresses they take (elf.text_closure), as the link keeps them."""
        by_object: dict[Path, set[str]] = {}
        for f in functions:
            by_object.setdefault(self.source[f].with_suffix(".o"), set()).add(".text." + f.rsplit(":", 1)[-1])
        return sum(matching_section_bytes(obj, text_closure(obj, sections).__contains__)
                   for obj, sections in by_object.items())

    def worst_path(self, root: str, *, indirect=(), leaf_bytes: int = 0, stop=(), cut_cycles: bool = False
                   ) -> StackPath:
        """The call path from `root` with the most stack.

        A call through a function pointer may go to any function named in `indirect` (none: it costs
        nothing); a call to a function the graph does not define (a library routine) costs `leaf_bytes`;
        calls to functions named in `stop` (error paths that never return) are not followed.  Recursion has
        no static bound and raises CallGraphError, unless `cut_cycles` (for graphs whose cycles exist only
        through over-approximated function-pointer calls).
        """
        roots = [root] if root in self.frames else self.find(root)
        if not roots:
            raise CallGraphError(f"no function {root!r} in the call graph")
        targets = [f for name in indirect for f in (self.find(name) or [name])]
        memo: dict[str, tuple[int, tuple[str, ...]]] = {}
        on_path: set[str] = set()

        def visit(f: str) -> tuple[int, tuple[str, ...]]:
            if f in memo:
                return memo[f]
            if f in on_path:
                if cut_cycles:
                    return 0, ()
                raise CallGraphError(f"{f.rsplit(':', 1)[-1]} is recursive: its stack has no static bound")
            if f == INDIRECT_CALL:
                own, callees = 0, targets
            elif f not in self.frames:
                own, callees = leaf_bytes, []
            else:
                own, kind = self.frames[f]
                if kind != "static":
                    raise CallGraphError(f"{f.rsplit(':', 1)[-1]} has a {kind} stack frame (e.g. alloca or a VLA)")
                callees = [self.resolve(c) for c in sorted(self.calls.get(f, ()))]
            if f != INDIRECT_CALL:
                on_path.add(f)
            best: tuple[int, tuple[str, ...]] = (0, ())
            for c in callees:
                if c.rsplit(":", 1)[-1] in stop:
                    continue
                sub = visit(c)
                if sub[0] > best[0]:
                    best = sub
            on_path.discard(f)
            memo[f] = (own + best[0], ((f,) if f != INDIRECT_CALL else ()) + best[1])
            return memo[f]

        results = [visit(r) for r in roots]
        worst = max(results, key=lambda r: r[0])
        return StackPath(worst[0], worst[1])
