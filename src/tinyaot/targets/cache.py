"""tinyaot's build cache on disk: directories of entries, shared safely by concurrent processes.

An entry is a directory, written in a private temporary directory and renamed into place in one step, so a
process sees either no entry or a complete one; it is marked used by its modification time, and eviction (least
recently used first) renames it out of the way before deleting it, never touching one used in the last
`grace_seconds`. The host builds (targets/host.py) and the compiled objects (targets/objects.py) are two such
directories under one root: $TINYAOT_CACHE_DIR, else the user's cache directory.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from tinyaot.errors import TinyAOTError

TMP_PREFIX = ".tmp-"  # entries being written (and entries on their way out); older than an hour means a crash
CRASHED_SECONDS = 3600


def cache_root() -> Path:
    """$TINYAOT_CACHE_DIR, else the user's cache directory ($XDG_CACHE_HOME or ~/.cache)/tinyaot."""
    root = os.environ.get("TINYAOT_CACHE_DIR") or os.environ.get("TINYAOT_CACHE")  # the older name still works
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tinyaot"


def cache_dir(sub: str, what: str) -> Path:
    """cache_root()/sub, created; `what` names it in the error when it cannot be."""
    path = cache_root() / sub
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError as exc:
        if os.environ.get("TINYAOT_CACHE_DIR") or os.environ.get("TINYAOT_CACHE"):
            raise TinyAOTError(f"cannot create the {what} {path} ({exc.strerror}); set TINYAOT_CACHE_DIR to a "
                               "writable directory") from None
    # No writable home (a locked-down CI user): a per-user directory under the system temp directory.
    user = os.getuid() if hasattr(os, "getuid") else "user"
    path = Path(tempfile.gettempdir()) / f"tinyaot-cache-{user}" / sub
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_entry(root: Path) -> Path:
    """A private directory to write an entry in, before `publish` renames it into place."""
    return Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))


def publish(tmp: Path, final: Path) -> bool:
    """Rename a written entry into place; False if another process published the same entry first (then `tmp`
    is left for the caller to delete)."""
    try:
        os.rename(tmp, final)
        return True
    except OSError:
        return False


def touch(entry: Path) -> None:
    """Mark an entry used now: eviction goes by the entries' modification times (least recently used first)."""
    try:
        os.utime(entry)
    except OSError:
        pass  # evicted by another process meanwhile: the caller finds it missing and writes it again


def _entry_bytes(entry: Path) -> int:
    """0 for an entry another process evicted while we looked."""
    total = 0
    try:
        files = list(entry.iterdir())
    except OSError:
        return 0
    for f in files:
        try:
            total += f.stat().st_size
        except OSError:
            pass
    return total


def evict(root: Path, max_entries: int, max_bytes: int, grace_seconds: float) -> list[str]:
    """Remove the least recently used entries until at most `max_entries` and `max_bytes` remain (entries used in
    the last `grace_seconds` stay), and leftovers of crashed writers; return the names removed."""
    now = time.time()
    entries = []
    try:
        found = list(root.iterdir())
    except OSError:
        return []
    for p in found:
        try:
            mtime = p.stat().st_mtime
        except OSError:
            continue  # removed by another process while we looked
        if p.name.startswith(TMP_PREFIX):
            if now - mtime > CRASHED_SECONDS:
                shutil.rmtree(p, ignore_errors=True)
            continue
        if p.is_dir():
            entries.append((mtime, p))
    entries.sort(key=lambda e: e[0], reverse=True)  # most recent first
    sizes = [_entry_bytes(p) for _, p in entries]
    removed = []
    count, total = len(entries), sum(sizes)
    for (mtime, p), size in zip(reversed(entries), reversed(sizes)):
        if count <= max_entries and total <= max_bytes:
            break
        if now - mtime < grace_seconds:
            break  # everything from here on is more recent still
        try:
            if now - p.stat().st_mtime < grace_seconds:
                continue  # used since we looked
        except OSError:
            continue
        if discard(root, p):
            removed.append(p.name)
            count, total = count - 1, total - size
    return removed


def discard(root: Path, entry: Path) -> bool:
    """Rename an entry out of the way (atomic: no process sees it half deleted), then delete it."""
    doomed = root / f"{TMP_PREFIX}evict-{entry.name}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(entry, doomed)
    except OSError:
        return False  # another process evicted (or is evicting) it
    shutil.rmtree(doomed, ignore_errors=True)
    return True
