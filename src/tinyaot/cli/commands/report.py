"""tinyaot report: the memory plan, RAM and flash of a compiled model, and its picture."""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.request import Request
from tinyaot.cli.summary import print_trust, trust
from tinyaot.report.budget import PICO2
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
    p.add_argument("--tradeoffs", action="store_true", help="search the plans (kernel modes per layer, constants "
                   "in SRAM) within --ram / --flash, or the target's memory without them, and print each with its "
                   "RAM, flash and estimated cycles (profiles each mode on the emulated Cortex-M33)")
    p.add_argument("--speed", action="store_true", help="also profile one inference on the emulated Cortex-M33: "
                   "exact instructions beside estimated cycles and ms at the Pico 2's clock (docs/timing.md)")


def run(req: Request, feedback: Feedback) -> int:
    if req.tradeoffs and req.ram is None and req.flash is None:  # the search weighs plans within the target's
        target = req.memory or PICO2
        req = replace(req, ram=target.ram_bytes, flash=target.flash_bytes)
    compiled = compile_request(req, feedback)
    if not req.no_m33:
        feedback.stage("measuring the stack on the emulated Cortex-M33")
    rep = MemoryReport.of(compiled.cm, measure_stack=not req.no_m33)
    speed = None
    if req.speed:
        feedback.stage("profiling one inference on the emulated Cortex-M33 (with the instruction mix)")
        speed = compiled.cm.profile(mix=True)
    feedback.stage(f"drawing {req.picture}")
    files = rep.write_picture(Path(req.picture), compare_float=req.compare_float)
    if req.json:
        extra = {} if speed is None else {"speed": _speed_dict(speed)}
        if compiled.cm.tradeoffs is not None:
            extra["tradeoffs"] = compiled.cm.tradeoffs.to_dict()
        feedback.print_json(rep.to_dict() | extra | {"picture": [str(f) for f in files]} | trust(compiled))
        return 0
    c = feedback.results()
    c.print(rep)
    for line in speed.speed_lines() if speed is not None else ():
        c.print(line)
    if compiled.cm.tradeoffs is not None:
        c.print(compiled.cm.tradeoffs)
    print_trust(c, compiled)
    if req.compare_float:
        c.print(rep.comparison_table())
        for reason in rep.float_reasons:
            c.print(f"- {reason}")
    c.print(f"picture: {files[0]} (SVG: {', '.join(str(f) for f in files[1:])})")
    return 0


def _speed_dict(speed) -> dict:
    """The profile's totals beside the memory report (per-op figures: tinyaot profile)."""
    d = speed.to_dict()
    return {k: d[k] for k in ("total_instructions", "total_macs", "stack_bytes", "estimated", "coverage") if k in d}
