"""tinyaot report: the memory plan, RAM and flash of a compiled model, and its picture."""
from __future__ import annotations

import argparse
from pathlib import Path

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.request import Request
from tinyaot.cli.summary import print_trust, trust
from tinyaot.report.memory import MemoryReport

NAME = "report"
HELP = "memory plan, RAM and flash of a compiled model, and its picture"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--picture", help="where to write the HTML picture of the plan; an SVG is written beside "
                   "it (default out/NAME/memory.html)")
    p.add_argument("--compare-float", action="store_true", help="show the fp32 plan beside the int8 one, "
                   "and why they differ")
    p.add_argument("--no-m33", action="store_true", help="skip measuring the stack on the emulated Cortex-M33")


def run(req: Request, feedback: Feedback) -> int:
    compiled = compile_request(req, feedback)
    if not req.no_m33:
        feedback.stage("measuring the stack on the emulated Cortex-M33")
    rep = MemoryReport.of(compiled.cm, measure_stack=not req.no_m33)
    feedback.stage(f"drawing {req.picture}")
    files = rep.write_picture(Path(req.picture), compare_float=req.compare_float)
    if req.json:
        feedback.print_json(rep.to_dict() | {"picture": [str(f) for f in files]} | trust(compiled))
        return 0
    c = feedback.results()
    c.print(rep)
    print_trust(c, compiled)
    if req.compare_float:
        c.print(rep.comparison_table())
        for reason in rep.float_reasons:
            c.print(f"- {reason}")
    c.print(f"picture: {files[0]} (SVG: {', '.join(str(f) for f in files[1:])})")
    return 0
