"""What the user sees while a command works: a status line naming the stage at work (on a terminal, never with
--json), every warning as one tidy line, and the console the results are printed on once the status line is gone."""
from __future__ import annotations

import contextlib
import json
import sys
import warnings

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner


def console(stderr: bool = False) -> Console:
    out = Console(stderr=stderr)
    out.on_broken_pipe = _raise_broken_pipe  # main() handles it (rich's own handler exits with 1)
    return out


def _raise_broken_pipe():
    raise BrokenPipeError


class Feedback:
    """A status line on stderr (a terminal only, never with --json) and every warning as one tidy line."""

    def __init__(self, spinner: bool):
        self.spinner = spinner
        self.status = self.spin = self.console = None
        self.seen: set[str] = set()

    @contextlib.contextmanager
    def active(self):
        with warnings.catch_warnings():
            warnings.showwarning = self.warning
            if self.spinner:
                self._start()
            try:
                yield self
            finally:
                self.stop()

    def _start(self) -> None:
        self.console = console(stderr=True)
        self.spin = Spinner("dots", text="starting", style="status.spinner")
        self.status = Live(self.spin, console=self.console, refresh_per_second=12.5, transient=True)
        self.status.start()

    def stage(self, text: str) -> None:
        """Shown at once: a stage may be over before the next timed refresh."""
        if self.status is not None:
            self.spin.update(text=text)
            self.status.refresh()

    def stop(self) -> None:
        """Before results are printed: a spinner redrawing on the same terminal would garble them."""
        if self.status is not None:
            self.status.stop()
            self.status = None

    def results(self) -> Console:
        """The console results go to, once the status line is gone."""
        self.stop()
        return console()

    def print_json(self, obj) -> None:
        self.stop()
        print(json.dumps(obj, indent=2))

    def warning(self, message, category=None, filename=None, lineno=None, file=None, line=None) -> None:
        """warnings.showwarning: one line per distinct message, without the file/line noise."""
        text = " ".join(str(message).split())
        if text in self.seen:
            return
        self.seen.add(text)
        if self.status is not None:
            self.console.print(f"tinyaot: warning: {text}", markup=False, highlight=False, soft_wrap=True)
        else:
            print(f"tinyaot: warning: {text}", file=sys.stderr, flush=True)
