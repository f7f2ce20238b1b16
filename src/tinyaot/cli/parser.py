"""The argument parser: one subparser per command module, and argparse's complaints raised, not printed, so main()
reports them like any other error."""
from __future__ import annotations

import argparse
import sys

from tinyaot.cli.commands import COMMANDS
from tinyaot.cli.exits import EXIT_CODES, EXIT_OK, EXIT_USER, report
from tinyaot.version import __version__


class UsageError(Exception):
    """argparse's complaint, raised instead of exiting so main() reports it like any other error."""

    def __init__(self, message: str, usage: str, prog: str):
        super().__init__(message)
        self.usage, self.prog = usage, prog


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message, self.format_usage(), self.prog)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tinyaot", description="Compile neural networks to integer-only C for microcontrollers.",
               epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP, epilog=EXIT_CODES))
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace | None, int]:
    """The parsed arguments, or None and the exit code of the complaint (reported already)."""
    try:
        return build_parser().parse_args(argv), EXIT_OK
    except UsageError as exc:
        if "--json" in argv:
            command = exc.prog.partition(" ")[2]  # the subcommand, if the complaint is about its arguments
            return None, report(True, "UsageError", f"{command}: {exc}" if command else str(exc), EXIT_USER)
        sys.stderr.write(exc.usage)
        print(f"{exc.prog}: error: {exc}", file=sys.stderr)
        return None, EXIT_USER
