"""Host target: compile the generated C with the system gcc into a shared library, call it via ctypes.

Fast enough to evaluate accuracy over whole datasets, and the same C that goes to the board. Builds are cached by
content in a bounded directory (TINYAOT_CACHE_DIR), shared safely by concurrent processes. For the sanitizers,
`build_executable` makes a standalone runner instead (ASan cannot be loaded into a running Python via ctypes
without preloading its runtime; a process of its own needs nothing). HostTarget and SanitizedHostTarget put the
two behind the common target interface (targets/base.py).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Callable

import numpy as np

from tinyaot.errors import ArenaTooSmallError, TinyAOTError
from tinyaot.targets import cache as build_cache
from tinyaot.targets.base import ModelSources, RunResult, io_copies
from tinyaot.targets.cache import cache_dir, cache_root  # noqa: F401  (cache_root: the public name it always had)
from tinyaot.targets.objects import compile_objects
from tinyaot.targets.profiles import HOST, HOST_SHARED, SANITIZE_FLAGS, ToolchainProfile

SANITIZE_CFLAGS = list(SANITIZE_FLAGS)  # the name it always had here
SANITIZE_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:halt_on_error=1",  # LSan needs ptrace
                "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}

# The cache keeps at most this many builds and this many bytes, evicting the least recently used first. A build
# is its sources plus the library, 0.1-2 MB (the test suite averages 0.4 MB over about 150 distinct models), so
# 200 entries keep a whole suite run and a few of your own models warm (a re-run builds nothing), and the byte
# bound caps a cache of large models at what a laptop's disk does not notice.
CACHE_MAX_ENTRIES = 200
CACHE_MAX_BYTES = 256 * 2**20
CACHE_GRACE_SECONDS = 120  # an entry used this recently is never evicted: another process may be loading it


class HostCompilerMissing(TinyAOTError):
    """No C compiler for the host engine: it needs gcc (or $CC)."""


def _cc() -> list[str]:
    cc = shlex.split(os.environ.get(HOST.compiler_env, HOST.compiler)) or [HOST.compiler]
    if shutil.which(cc[0]) is None:
        raise HostCompilerMissing(
            f"no host C compiler '{cc[0]}' found: install gcc (Debian: apt-get install gcc) or set CC"
        )
    return cc


def _cache_dir() -> Path:
    return cache_dir("host", "host build cache")


def _digest(files: dict[str, str], flags: list[str]) -> str:
    digest = hashlib.sha256()
    for fname in sorted(files):
        digest.update(fname.encode() + b"\0" + files[fname].encode() + b"\0")
    digest.update(" ".join(flags).encode())
    return digest.hexdigest()[:16]


def _cached_build(files: dict[str, str], name: str, profile: ToolchainProfile, extra_flags, artifact: str) -> Path:
    """Compile `files` with `profile` and `extra_flags` (after the profile's: they win) into `artifact`, once per
    content. The entry is built in a private temporary directory and renamed into place in one step, so another
    process sees either no entry or a complete one; if two build the same entry at once, the second rename fails
    and that process uses the first one's build. Each .c is compiled once per content and flags
    (targets/objects.py): the kernel files every model shares are compiled once, not once per model."""
    root = _cache_dir()
    flags = [*profile.flags, *profile.link, *extra_flags]  # the link's: they name the entry
    final = root / f"{name}-{_digest(files, flags)}"
    out = final / artifact
    if out.exists():
        build_cache.touch(final)  # first: from now on no other process evicts it (CACHE_GRACE_SECONDS)
        if out.exists():
            return out
    tmp = build_cache.new_entry(root)
    try:
        for fname, text in files.items():
            (tmp / fname).write_text(text)
        c_files = sorted(tmp / f for f in files if f.endswith(".c"))
        objects = compile_objects(_cc(), profile.compile_flags(*extra_flags, "-I", str(tmp)), c_files, tmp / "obj",
                                  lambda argv, cwd: _run_cc(argv, cwd, name))
        _run_cc([*_cc(), *flags, *(str(o) for o in objects), "-o", str(tmp / artifact)], tmp, name)
        shutil.rmtree(tmp / "obj", ignore_errors=True)
        if not build_cache.publish(tmp, final) and not out.exists():
            # the entry is there but broken (an older tinyaot built in place): replace it
            build_cache.discard(root, final)
            os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    build_cache.touch(final)
    evict(root)
    return out


def _run_cc(argv: list[str], cwd: Path, name: str) -> None:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyAOTError(f"host C build of '{name}' failed (a tinyaot bug; please report):\n{proc.stderr[-4000:]}")


def evict(root: Path | None = None, max_entries: int | None = None, max_bytes: int | None = None,
          grace_seconds: float | None = None) -> list[str]:
    """Remove the least recently used host builds beyond the bounds (targets/cache.py), and leftovers of crashed
    builds; return the names removed. The limits default to CACHE_MAX_ENTRIES, CACHE_MAX_BYTES and
    CACHE_GRACE_SECONDS."""
    return build_cache.evict(_cache_dir() if root is None else root,
                             CACHE_MAX_ENTRIES if max_entries is None else max_entries,
                             CACHE_MAX_BYTES if max_bytes is None else max_bytes,
                             CACHE_GRACE_SECONDS if grace_seconds is None else grace_seconds)


def build_shared_library(files: dict[str, str], name: str, extra_flags: list[str] | tuple = ()) -> Path:
    """Compile generated sources into a shared library; cached by content so repeated runs cost nothing."""
    return _cached_build(files, name, HOST_SHARED, extra_flags, f"lib{name}.so")


# ---- a standalone runner: the sanitizers' way in ------------------------------------------------------------

_RUNNER_C = """\
/* tinyaot host runner: reads whole inputs from argv[1], writes one output per input to argv[2]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{name}.h"

int main(int argc, char **argv) {{
    static unsigned char in[{input_bytes}];  /* every input, back to back */
    static unsigned char out[{output_bytes}];
    uint8_t *arena = NULL;
    FILE *fin, *fout;
    int status;
    if (argc != 3) return 64;
    /* A heap arena of exactly the planned size: AddressSanitizer catches a byte read or written past it. */
    if ({NAME}_ARENA_ALIGNMENT <= 16) arena = (uint8_t *)malloc({NAME}_ARENA_SIZE);
    status = arena ? {name}_init(arena, {NAME}_ARENA_SIZE) : {name}_init(NULL, 0);
    if (status != {NAME}_OK) return 65;
    fin = fopen(argv[1], "rb");
    fout = fopen(argv[2], "wb");
    if (!fin || !fout) return 66;
    for (;;) {{
        size_t got = fread(in, 1, sizeof in, fin);
        if (got == 0) break;
        if (got != sizeof in) return 67;
        {copy_in}
        if ({name}_invoke() != {NAME}_OK) return 68;
        {copy_out}
        if (fwrite(out, 1, sizeof out, fout) != sizeof out) return 69;
    }}
    fclose(fin);
    fclose(fout);
    free(arena);
    return 0;
}}
"""


def build_executable(files: dict[str, str], name: str, extra_flags: list[str] | tuple = (),
                     input_sizes: tuple[int, ...] = (), output_sizes: tuple[int, ...] = ()) -> Path:
    """The generated sources plus a small main() into one executable (see run_executable), cached like the
    shared library; `extra_flags` such as SANITIZE_CFLAGS come after the defaults and win."""
    input_sizes = input_sizes or (_header_size(files, name, "INPUT"),)
    output_sizes = output_sizes or (_header_size(files, name, "OUTPUT"),)
    copy_in = io_copies(name, tuple(input_sizes), "input", "in")
    copy_out = io_copies(name, tuple(output_sizes), "output", "out")
    main = _RUNNER_C.format(name=name, NAME=name.upper(), input_bytes=sum(input_sizes), output_bytes=sum(output_sizes),
                            copy_in="\n        ".join(copy_in), copy_out="\n        ".join(copy_out))
    runner = {**files, f"{name}_runner_main.c": main}
    return _cached_build(runner, name, HOST, extra_flags, f"{name}_runner")


def _header_size(files: dict[str, str], name: str, kind: str) -> int:
    """<NAME>_INPUT_SIZE / _OUTPUT_SIZE of a one-input one-output model, read from its header."""
    found = re.search(rf"#define {name.upper()}_{kind}_SIZE (\d+)", files.get(f"{name}.h", ""))
    if found is None:
        raise TinyAOTError(f"{name}.h declares no {name.upper()}_{kind}_SIZE: pass the sizes of every {kind.lower()}")
    return int(found.group(1))


def run_executable(exe: Path, xs: np.ndarray, output_size: int, env: dict | None = None,
                   timeout: float = 120) -> np.ndarray:
    """Run a runner on a batch of raw inputs (one row per input); the outputs as int8 rows. A sanitizer report
    or a crash is a TinyAOTError carrying the runner's report."""
    xs = np.ascontiguousarray(xs)
    with tempfile.TemporaryDirectory(prefix="tinyaot-run-") as tmp:
        src, dst = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
        src.write_bytes(xs.tobytes())
        try:
            proc = subprocess.run([str(exe), str(src), str(dst)], capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, **(env or {})})
        except subprocess.TimeoutExpired:
            raise TinyAOTError(f"{exe.name} did not finish {len(xs)} inference(s) in {timeout:g} s") from None
        if proc.returncode != 0:
            raise TinyAOTError(f"{exe.name} failed with exit status {proc.returncode} (a tinyaot bug; please "
                               f"report):\n{proc.stderr[-6000:]}")
        out = np.frombuffer(dst.read_bytes(), dtype=np.int8)
    if out.size != len(xs) * output_size:
        raise TinyAOTError(f"{exe.name} wrote {out.size} output bytes for {len(xs)} input(s) of "
                           f"{output_size} bytes each")
    return out.reshape(len(xs), output_size)


@cache
def sanitizer_problem() -> str | None:
    """Why this machine cannot build and run sanitized C (None if it can): checked once on a tiny program."""
    try:
        cc = _cc()
    except HostCompilerMissing as exc:
        return str(exc)
    with tempfile.TemporaryDirectory(prefix="tinyaot-san-") as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text("#include <stdlib.h>\nint main(void) { char *p = malloc(4); p[0] = 1; free(p); return 0; }\n")
        proc = subprocess.run([*cc, *SANITIZE_FLAGS, str(src), "-o", str(exe)], capture_output=True, text=True)
        if proc.returncode != 0:
            return f"{cc[0]} cannot build with -fsanitize=address,undefined: {proc.stderr.strip()[-300:]}"
        run = subprocess.run([str(exe)], capture_output=True, text=True, env={**os.environ, **SANITIZE_ENV})
        if run.returncode != 0:
            return f"sanitized programs do not run here: {run.stderr.strip()[-300:]}"
    return None


class HostModel:
    """A compiled model loaded into this process."""

    def __init__(self, lib_path: Path, name: str, input_size: int, output_size: int, arena_bytes: int,
                 input_sizes: tuple[int, ...] = (), output_sizes: tuple[int, ...] = ()):
        try:
            self._lib = ctypes.CDLL(str(lib_path))
        except OSError as exc:
            raise TinyAOTError(f"cannot load the host build of '{name}' ({exc}); delete {lib_path.parent} and "
                               "run again") from None
        self.name, self.input_size, self.output_size = name, input_size, output_size
        self.arena_bytes = arena_bytes
        self._init = getattr(self._lib, f"{name}_init")
        self._init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._init.restype = ctypes.c_int
        self.input_sizes, self.output_sizes = input_sizes or (input_size,), output_sizes or (output_size,)
        self._input = getattr(self._lib, f"{name}_input")
        self._input.restype = ctypes.c_void_p
        self._output = getattr(self._lib, f"{name}_output")
        self._output.restype = ctypes.c_void_p
        for fn, sizes in ((self._input, self.input_sizes), (self._output, self.output_sizes)):
            fn.argtypes = [ctypes.c_size_t] if len(sizes) > 1 else []
        self._invoke = getattr(self._lib, f"{name}_invoke")
        self._invoke.restype = ctypes.c_int
        self._arena_buf = None

    def init(self, arena_bytes: int | None = None) -> None:
        """Bind the static arena, or a caller-provided one of `arena_bytes` (checked by the C)."""
        if arena_bytes is None:
            status = self._init(None, 0)
        else:
            self._arena_buf = (ctypes.c_uint8 * (arena_bytes + 64))()
            base = ctypes.addressof(self._arena_buf)
            status = self._init(base + (-base) % 64, arena_bytes)  # 64-aligned: any plan alignment fits
        if status == -1:
            raise ArenaTooSmallError(
                f"arena of {arena_bytes} bytes is too small for model '{self.name}': it needs "
                f"{self.arena_bytes} bytes ({self.name.upper()}_ARENA_SIZE in {self.name}.h)"
            )
        if status == -2:
            raise TinyAOTError(f"{self.name}_init: the arena's address is not aligned to "
                               f"{self.name.upper()}_ARENA_ALIGNMENT ({self.name}.h); align the buffer")
        if status != 0:
            raise TinyAOTError(f"{self.name}_init failed with status {status}")

    def reset(self) -> None:
        """<name>_reset(): the state region back to its initial value (models with state only)."""
        reset = getattr(self._lib, f"{self.name}_reset", None)
        if reset is None:
            raise TinyAOTError(f"model '{self.name}' keeps no state between invokes: there is nothing to reset")
        reset.restype = ctypes.c_int
        status = reset()
        if status != 0:
            raise TinyAOTError(f"{self.name}_reset failed with status {status}")

    def run(self, xs: np.ndarray) -> np.ndarray:
        """Raw inputs, one row of input_size bytes per inference (int8, or uint8 viewed as int8)."""
        xs = np.ascontiguousarray(xs, dtype=np.int8)
        if xs.ndim < 1 or xs.size != len(xs) * self.input_size:
            raise TinyAOTError(f"{self.name}: the host runner takes rows of {self.input_size} bytes, one per "
                               f"inference; got an array of shape {xs.shape}")
        xs = xs.reshape(len(xs), self.input_size)
        out = np.empty((len(xs), self.output_size), dtype=np.int8)
        for i, x in enumerate(xs):
            for k, (at, size) in enumerate(_packed(self.input_sizes)):
                ctypes.memmove(self._at(self._input, self.input_sizes, k), x.ctypes.data + at, size)
            status = self._invoke()
            if status != 0:
                raise TinyAOTError(f"{self.name}_invoke failed with status {status}")
            for k, (at, size) in enumerate(_packed(self.output_sizes)):
                ctypes.memmove(out[i].ctypes.data + at, self._at(self._output, self.output_sizes, k), size)
        return out

    @staticmethod
    def _at(accessor, sizes: tuple[int, ...], k: int) -> int:
        """The address of tensor k: accessors of a model with several inputs (outputs) take the index."""
        return accessor(k) if len(sizes) > 1 else accessor()


def _packed(sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """(offset, size) of each tensor in a row that holds them back to back."""
    starts = np.cumsum([0, *sizes[:-1]])
    return [(int(a), int(n)) for a, n in zip(starts, sizes)]


# ---- the common target interface ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HostLibrary:
    """A model's shared library, loaded into this process."""

    path: Path
    model: HostModel


@dataclass(frozen=True)
class HostExecutable:
    """A model's standalone runner (see build_executable). Built long before a run, it may have been evicted from
    the cache by another process meanwhile: `current_path` builds it again then."""

    path: Path
    output_size: int
    rebuild: Callable[[], Path] | None = field(default=None, compare=False, repr=False)

    def current_path(self) -> Path:
        build_cache.touch(self.path.parent)  # used now: no other process evicts it while it runs
        if self.path.exists() or self.rebuild is None:
            return self.path
        return self.rebuild()


class HostTarget:
    """gcc shared library + ctypes: outputs only (the host's instructions and sizes say nothing about a board)."""

    name = "host"

    def build(self, sources: ModelSources) -> HostLibrary:
        """Build (or find in the cache) and load; an entry another process evicted between the two is rebuilt."""
        texts = sources.texts()
        lib = build_shared_library(texts, sources.name)
        try:
            return HostLibrary(lib, self._load(lib, sources))
        except TinyAOTError:
            if lib.exists():
                raise
        lib = build_shared_library(texts, sources.name)
        return HostLibrary(lib, self._load(lib, sources))

    @staticmethod
    def _load(lib: Path, sources: ModelSources) -> HostModel:
        return HostModel(lib, sources.name, sources.input_size, sources.output_size, sources.arena_bytes,
                         sources.inputs, sources.outputs)

    def run(self, artifact: HostLibrary, inputs: np.ndarray, *, arena_bytes: int | None = None) -> RunResult:
        """Bind the static arena (or one of `arena_bytes`) and run the rows of `inputs`."""
        artifact.model.init(arena_bytes)
        return RunResult(artifact.model.run(inputs))


class SanitizedHostTarget:
    """The standalone runner built with AddressSanitizer and UndefinedBehaviorSanitizer: a report fails the run."""

    name = "host-sanitized"

    def __init__(self, extra_flags: tuple[str, ...] = SANITIZE_FLAGS, env: dict | None = None,
                 timeout: float = 120):
        self.extra_flags, self.timeout = tuple(extra_flags), timeout
        self.env = dict(SANITIZE_ENV) if env is None else env

    def build(self, sources: ModelSources) -> HostExecutable:
        texts, flags = sources.texts(), list(self.extra_flags)

        def build() -> Path:
            return build_executable(texts, sources.name, flags, sources.inputs, sources.outputs)

        return HostExecutable(build(), sources.output_size, build)

    def run(self, artifact: HostExecutable, inputs: np.ndarray) -> RunResult:
        rows = np.asarray(inputs)
        rows = rows.reshape(len(rows), -1)
        return RunResult(run_executable(artifact.current_path(), rows, artifact.output_size, env=self.env,
                                        timeout=self.timeout))
