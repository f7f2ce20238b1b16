"""Host target: compile the generated C with the system gcc into a shared library, call it via ctypes.

Fast enough to evaluate accuracy over whole datasets, and the same C that goes to the board.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tinyaot.errors import ArenaTooSmallError, TinyAOTError

HOST_CFLAGS = ["-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"]


class HostCompilerMissing(TinyAOTError):
    pass


def _cc() -> str:
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise HostCompilerMissing(
            f"no host C compiler '{cc}' found: install gcc (Debian: apt-get install gcc) or set CC"
        )
    return cc


def _cache_dir() -> Path:
    root = os.environ.get("TINYAOT_CACHE") or os.path.join(tempfile.gettempdir(), "tinyaot-cache")
    path = Path(root) / "host"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_shared_library(files: dict[str, str], name: str) -> Path:
    """Compile generated sources; cached by content so repeated runs in tests cost nothing."""
    digest = hashlib.sha256()
    for fname in sorted(files):
        digest.update(fname.encode() + b"\0" + files[fname].encode() + b"\0")
    digest.update(" ".join(HOST_CFLAGS).encode())
    out_dir = _cache_dir() / f"{name}-{digest.hexdigest()[:16]}"
    lib = out_dir / f"lib{name}.so"
    if lib.exists():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        (out_dir / fname).write_text(text)
    c_files = sorted(str(out_dir / f) for f in files if f.endswith(".c"))
    tmp = out_dir / f"lib{name}.so.tmp{os.getpid()}"
    proc = subprocess.run([_cc(), *HOST_CFLAGS, "-I", str(out_dir), *c_files, "-o", str(tmp)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyAOTError(f"host C build of '{name}' failed (a tinyaot bug; please report):\n{proc.stderr}")
    os.replace(tmp, lib)
    return lib


class HostModel:
    """A compiled model loaded into this process."""

    def __init__(self, lib_path: Path, name: str, input_size: int, output_size: int, arena_bytes: int):
        self._lib = ctypes.CDLL(str(lib_path))
        self.name, self.input_size, self.output_size = name, input_size, output_size
        self.arena_bytes = arena_bytes
        self._init = getattr(self._lib, f"{name}_init")
        self._init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._init.restype = ctypes.c_int
        self._input = getattr(self._lib, f"{name}_input")
        self._input.restype = ctypes.c_void_p
        self._output = getattr(self._lib, f"{name}_output")
        self._output.restype = ctypes.c_void_p
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

    def run(self, xs: np.ndarray) -> np.ndarray:
        xs = np.ascontiguousarray(xs, dtype=np.int8).reshape(len(xs), -1)
        out = np.empty((len(xs), self.output_size), dtype=np.int8)
        for i, x in enumerate(xs):
            ctypes.memmove(self._input(), x.ctypes.data, self.input_size)
            status = self._invoke()
            if status != 0:
                raise TinyAOTError(f"{self.name}_invoke failed with status {status}")
            ctypes.memmove(out[i].ctypes.data, self._output(), self.output_size)
        return out
