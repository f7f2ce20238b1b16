"""How a command ends: its exit code, and for a failure one line on stderr (and a JSON error object with --json).

One table says which failure gets which code; what is not in it is a bug in tinyaot, reported with its traceback
and a request to report it.
"""
from __future__ import annotations

import errno
import io
import json
import os
import sys
import traceback

from tinyaot.errors import InternalCompilerError, InternalError, TinyAOTError
from tinyaot.targets.host import HostCompilerMissing
from tinyaot.targets.m33 import M33Error
from tinyaot.targets.toolchain import ToolchainMissing
from tinyaot.version import __version__

EXIT_OK = 0
EXIT_WRONG = 1  # demo: an engine got a digit wrong
EXIT_USER = 2
EXIT_TOOL = 3
EXIT_BUG = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_CODES = """exit codes: 0 success; 1 demo: an engine got a digit wrong; 2 a user error (bad argument, input file
or model; calibration problems under --strict); 3 a tool or target failed (missing cross compiler, emulator or host
compiler; the C build or the emulated run failed); 4 a tinyaot bug; 130 interrupted; 141 stdout closed early"""

# The exit code of each failure: the first row whose class the exception is an instance of. A failure no row names
# is a bug in tinyaot (EXIT_BUG): its traceback is printed and the user is asked to report it.
EXIT_TABLE: tuple[tuple[type[BaseException], int], ...] = (
    (KeyboardInterrupt, EXIT_INTERRUPTED),
    (BrokenPipeError, EXIT_BROKEN_PIPE),  # the reader of stdout is gone (`| head`): quietly
    (ToolchainMissing, EXIT_TOOL),  # a tool or target failed: the cross compiler or emulator ...
    (HostCompilerMissing, EXIT_TOOL),  # ... the host compiler ...
    (M33Error, EXIT_TOOL),  # ... the C build or the emulated run
    (InternalError, EXIT_BUG),  # tinyaot's own bug (a stage broke its rules, or crashed): never the user's fault
    (TinyAOTError, EXIT_USER),  # what the user can fix: a bad argument, input file or model
    (MemoryError, EXIT_USER),
    (OSError, EXIT_USER),  # a path or a disk: the user's to fix
)

_OS_ADVICE = {
    errno.ENOSPC: "free some disk space or write somewhere else",
    errno.EDQUOT: "free some disk space or write somewhere else",
    errno.EACCES: "check the permissions or choose another path",
    errno.EPERM: "check the permissions or choose another path",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ENOENT: "check the path",
    errno.EISDIR: "give a file, not a directory",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
}


def exit_code(exc: BaseException) -> int:
    return next((code for kind, code in EXIT_TABLE if isinstance(exc, kind)), EXIT_BUG)


def fail(exc: BaseException, json_mode: bool) -> int:
    """Report `exc` as its row of EXIT_TABLE says, and return its exit code."""
    code = exit_code(exc)
    if code == EXIT_BROKEN_PIPE:
        silence_stdout()
        return code
    if code == EXIT_INTERRUPTED:
        return report(json_mode, "KeyboardInterrupt", "interrupted", code)
    if code == EXIT_BUG:
        return report_bug(json_mode, exc)
    return report(json_mode, type(exc).__name__, _message(exc), code)


def _message(exc: BaseException) -> str:
    if isinstance(exc, TinyAOTError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory; use fewer samples (--calibration, --data, --input) or a smaller model"
    if isinstance(exc, OSError):
        return _os_message(exc)
    return str(exc)


def _os_message(exc: OSError) -> str:
    name = str(exc.filename) if exc.filename is not None else ""
    shown = f" {name[:80]!r}{'...' if len(name) > 80 else ''}" if name else ""
    advice = _OS_ADVICE.get(exc.errno, "check the path and the disk")
    return f"cannot use{shown}: {exc.strerror or exc}; {advice}"


def report(json_mode: bool, kind: str, message: str, code: int) -> int:
    """One line on stderr; with --json also {"error": {...}} on stdout."""
    try:
        if json_mode:
            print(json.dumps({"error": {"type": kind, "message": message, "exit_code": code}}), flush=True)
    except BrokenPipeError:
        silence_stdout()
    print(f"tinyaot: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def report_bug(json_mode: bool, exc: BaseException) -> int:
    """Keep the traceback (it is what a maintainer needs) and say plainly that this is tinyaot's fault."""
    traceback.print_exception(type(exc), exc, exc.__traceback__)  # the chain too: the original crash first
    if isinstance(exc, InternalCompilerError) and str(exc).startswith("internal compiler error"):
        message = f"{exc}; the traceback is printed above"  # guard.py's words: the stage, the layer, what to send
    else:
        message = (f"internal error ({type(exc).__name__}: {exc}). This is a bug in tinyaot {__version__}, not a "
                   "problem with your input: please report it to the tinyaot maintainers with the command you ran, "
                   "the model and the traceback above")
    return report(json_mode, "InternalError", message, EXIT_BUG)


def silence_stdout() -> None:
    """The reader of stdout is gone (`| head`): send what is left to devnull, as the Python docs advise."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
