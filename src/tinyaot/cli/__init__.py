"""Command line: tinyaot compile | run | report | profile | eval | export | ops | demo.

Every argument is checked before the compile starts. Every error the user can fix is one line on stderr
(`tinyaot: error: ...`; with --json also {"error": {"type", "message", "exit_code"}} on stdout) and an exit code;
warnings are one line each (`tinyaot: warning: ...`); on a terminal a status line names the stage at work.

  0    success
  1    demo: an engine got a digit wrong
  2    a user error: a bad argument, input file or model; calibration problems under --strict
  3    a tool or target failed: the cross compiler, emulator or host compiler is missing, or the C build or
       the emulated run failed
  4    an internal error: a bug in tinyaot (the traceback is printed, to report)
  130  interrupted (Ctrl-C)
  141  stdout was closed early (e.g. piped into head)

The modules: driver (main: argv -> exit code), parser, commands/ (one module per command: its arguments and
what it does), arguments (the model arguments they share), request (the typed Request a command reads) and checks
(the parsed arguments -> a checked Request, its arrays loaded), compiling, inputs (arrays in the model's layout),
summary (what the commands print about a model), feedback (status line, warnings) and exits (the exit codes, and
the one table that maps each failure to its code).
"""
from tinyaot.cli.commands.eval import confusion_matrix
from tinyaot.cli.commands.ops import supported_op_lists
from tinyaot.cli.driver import main
from tinyaot.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_CODES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TOOL,
    EXIT_USER,
    EXIT_WRONG,
)
from tinyaot.cli.parser import build_parser

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_BUG", "EXIT_CODES", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TOOL", "EXIT_USER",
           "EXIT_WRONG", "build_parser", "confusion_matrix", "main", "supported_op_lists"]
