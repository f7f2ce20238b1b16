"""The last line of defence of tinyaot.compile: an exception that is not one of tinyaot's own errors becomes an
InternalCompilerError that names the stage it escaped from and, when its traceback shows one, the layer being
worked on, with the original exception chained (its traceback is what a maintainer needs).

It is no place to hide a crash: every crash found is fixed where it happens; this only makes sure the next one
tells the user it is tinyaot's bug and what to send, instead of a NumPy error from deep inside.
"""
from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from dataclasses import dataclass

from tinyaot.errors import InternalCompilerError, TinyAOTError
from tinyaot.frontend.fx_util import layer_name, source_location
from tinyaot.ir.graph import Node
from tinyaot.version import __version__

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# Not tinyaot's bugs: the machine's (out of memory, a file or disk problem: the CLI says what to do about
# those) and warnings a caller turned into errors (-W error, strict pytest settings).
PASS_THROUGH = (TinyAOTError, MemoryError, OSError, Warning)


@dataclass
class _Where:
    stage: str


_CURRENT: contextvars.ContextVar[_Where | None] = contextvars.ContextVar("tinyaot_stage", default=None)


def enter_stage(stage: str) -> None:
    """The compile is now in `stage` (the words the progress callback gets: "calibrating on 300 samples")."""
    where = _CURRENT.get()
    if where is not None:
        where.stage = stage


def user_code(exc: BaseException) -> BaseException:
    """Mark an exception raised by the caller's own code (a progress callback) to pass the guard untouched."""
    exc.__tinyaot_user_code__ = True
    return exc


@contextmanager
def guarded(stage: str):
    """Run a compile; an exception other than PASS_THROUGH leaves as an InternalCompilerError. Also a decorator
    (ContextDecorator: the function keeps its signature)."""
    where = _Where(stage)
    token = _CURRENT.set(where)
    try:
        yield where
    except PASS_THROUGH:
        raise
    except Exception as exc:
        if getattr(exc, "__tinyaot_user_code__", False):
            raise
        raise internal_error(exc, where.stage) from exc
    finally:
        _CURRENT.reset(token)


def internal_error(exc: BaseException, stage: str) -> InternalCompilerError:
    layer = _layer_in(exc.__traceback__)
    text = str(exc).splitlines()[0] if str(exc) else ""
    where = f" at layer {layer}" if layer else ""
    return InternalCompilerError(
        f"internal compiler error while {stage}{where}: {type(exc).__name__}{': ' + text[:300] if text else ''}. "
        f"This is a bug in tinyaot {__version__}, not a problem with your model: please report it to the tinyaot "
        "maintainers with this message, the traceback of the original exception (chained as this error's "
        "__cause__) and, if you can, the model or a smaller one that fails the same way",
        stage=stage, layer=layer)


def _layer_in(tb) -> str | None:
    """The layer the innermost tinyaot frame was working on: a local IR node, or the exported FX node the front
    end was converting."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            continue
        for value in frame.f_locals.values():
            found = _describe(value)
            if found:
                return found
    return None


def _describe(value) -> str | None:
    if isinstance(value, Node):
        return f"'{value.name}' ({value.op}{', ' + value.source if value.source else ''})"
    kind = type(value)
    if kind.__name__ == "Node" and kind.__module__ == "torch.fx.node" and value.op == "call_function":
        where = source_location(value)
        return f"'{layer_name(value)}' ({value.target}{', ' + where if where else ''})"
    return None
