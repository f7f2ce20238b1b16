"""Object files compiled once per source and compiler profile, shared by every build that needs them.

Every model links the same kernel files: compiled per model, they would be compiled again for each one (and for
each Cortex-M33 run, with the harness's startup, console and bench code too). An object here is keyed by what
decides its bytes: the compiler (its path and version), the flags (include directories aside), the source's text
and the text of every header it includes with quotes, followed transitively. Entries live in the host build
cache's directory, with its bounds, eviction and atomic writes (targets/host.py): a process sees either no entry
or a complete one, and one that finds its entry evicted compiles it again.

Only C sources are cached: an assembler file may .incbin data its text does not show. Flags that make gcc write
files besides the object (call graphs, stack usage, dependency files) bypass the cache: those files would be
missing on a hit.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from tinyaot.targets import cache

OBJECTS_SUBDIR = "objects"
# The kernels x compiler profiles (host, host sanitized, M33 with and without DSP, profiled) and the harness: a few
# hundred objects of 1-40 KB.
MAX_OBJECTS = 1000
MAX_BYTES = 64 * 2**20
GRACE_SECONDS = 120
_SIDE_OUTPUTS = ("-fcallgraph-info", "-fstack-usage", "-save-temps", "-M", "-fdump-")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)

Runner = Callable[[list[str], Path], None]  # run(argv, cwd): raises the target's own error on failure


def compile_objects(compiler: Sequence[str], flags: Sequence[str], sources: Sequence[Path], out_dir: Path,
                    run: Runner) -> list[Path]:
    """`sources` compiled with `flags` into out_dir/<stem>.o (the order of `sources`), each taken from the cache
    when it holds it; the others compiled in one call of the compiler and added to the cache."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = [Path(s) for s in sources]
    objects = [out_dir / f"{s.stem}.o" for s in sources]
    root = _root() if _cacheable(flags) else None
    keys = [_key(compiler, flags, s) if root is not None and s.suffix == ".c" else None for s in sources]
    missing = [(s, o, k) for s, o, k in zip(sources, objects, keys) if k is None or not _take(root, k, o)]
    if missing:
        run([*compiler, *flags, "-c", *(str(s) for s, _, _ in missing)], out_dir)
        stored = [_store(root, key, obj) for _, obj, key in missing if key is not None]
        if stored:
            cache.evict(root, MAX_OBJECTS, MAX_BYTES, GRACE_SECONDS)  # once per call, not once per object
    return objects


def _cacheable(flags: Sequence[str]) -> bool:
    return not any(f.startswith(_SIDE_OUTPUTS) for f in flags)


def _root() -> Path:
    return cache.cache_dir(OBJECTS_SUBDIR, "object cache")


@lru_cache(maxsize=None)
def _compiler_identity(program: str) -> str:
    """The compiler's resolved path and the first line of its --version: a new compiler gets new objects."""
    path = shutil.which(program) or program
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, check=False).stdout
    except OSError:
        version = ""
    return f"{os.path.realpath(path)}\0{version.splitlines()[0] if version else ''}"


def _key(compiler: Sequence[str], flags: Sequence[str], source: Path) -> str:
    digest = hashlib.sha256()
    digest.update(_compiler_identity(compiler[0]).encode() + b"\0" + " ".join(compiler[1:]).encode() + b"\0")
    include_dirs: list[Path] = []
    forced: list[Path] = []
    it = iter(flags)
    for flag in it:
        if flag == "-I":
            include_dirs.append(Path(next(it, "")))
        elif flag.startswith("-I"):
            include_dirs.append(Path(flag[2:]))
        elif flag == "-include":
            forced.append(Path(next(it, "")))
        else:
            digest.update(flag.encode() + b"\0")
    digest.update(source.name.encode() + b"\0")
    for path in [*forced, source]:
        for text in _texts(path, include_dirs):
            digest.update(text + b"\0")
    return f"{source.stem}-{digest.hexdigest()[:20]}"


def _texts(path: Path, include_dirs: list[Path]) -> list[bytes]:
    """The bytes of `path` and of every quoted include it reaches (by name, in the order first met)."""
    seen: dict[str, bytes] = {}
    todo = [(path.name, path)]
    while todo:
        name, current = todo.pop(0)
        seen[name] = text = current.read_bytes()
        for included in _INCLUDE.findall(text.decode("utf-8", "replace")):
            if included in seen or any(included == n for n, _ in todo):
                continue
            found = next((d / included for d in (current.parent, *include_dirs) if (d / included).is_file()), None)
            if found is not None:
                todo.append((included, found))
    return [name.encode() + b"\0" + text for name, text in seen.items()]


def _take(root: Path, key: str, obj: Path) -> bool:
    """Copy the cached object to `obj`; False if the cache does not hold it (or it was evicted meanwhile)."""
    entry = root / key
    cached = entry / "object.o"
    if not cached.is_file():
        return False
    cache.touch(entry)  # first: from now on no other process evicts it
    try:
        shutil.copyfile(cached, obj)
    except OSError:
        return False
    return True


def _store(root: Path, key: str, obj: Path) -> str:
    """Add a fresh object: written into a private directory, renamed into place in one step."""
    tmp = cache.new_entry(root)
    try:
        shutil.copyfile(obj, tmp / "object.o")
        cache.publish(tmp, root / key)  # False: another process stored the same object first
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return key
