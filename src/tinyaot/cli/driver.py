"""tinyaot's command line, from argv to exit code: parse, check the request, run the command, and report a failure
as exits.EXIT_TABLE says."""
from __future__ import annotations

import sys

from tinyaot.cli.checks import build_request
from tinyaot.cli.commands import BY_NAME
from tinyaot.cli.exits import fail
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.parser import parse


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ns, code = parse(argv)
    if ns is None:
        return code
    command = BY_NAME[ns.command]
    json_mode = bool(getattr(ns, "json", False))
    feedback = Feedback(spinner=command.SPINNER and not json_mode and sys.stderr.isatty())
    try:
        with feedback.active():
            code = command.run(build_request(ns), feedback)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- each to its exit code (exits.EXIT_TABLE)
        return fail(exc, json_mode)
