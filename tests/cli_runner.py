"""The command line run as a test runs it: in this process (the `main` that `python -m tinyaot` and the console
script call), so torch and tinyaot are imported once per test process, not once per command."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import pytest

TINYAOT = [sys.executable, "-m", "tinyaot"]


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_cli(args, cwd, check: bool = True, subprocess_: bool = False) -> Ran:
    """`tinyaot ARGS` in `cwd` with 120 columns; `subprocess_=True` runs the real `python -m tinyaot` (a test or
    two do, and tests/test_cli_errors.py runs the console script)."""
    if subprocess_:
        env = dict(os.environ, COLUMNS="120")
        proc = subprocess.run(TINYAOT + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env,
                              timeout=600)
        ran = Ran(proc.returncode, proc.stdout, proc.stderr)
    else:
        ran = _in_process(args, cwd)
    if check:
        assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran


def _in_process(args, cwd) -> Ran:
    from tinyaot.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
        mp.chdir(cwd)
        mp.setenv("COLUMNS", "120")
        code = main([str(a) for a in args])
    return Ran(code, out.getvalue(), err.getvalue())
