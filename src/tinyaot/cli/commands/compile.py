"""tinyaot compile: the model's C, and what it takes."""
from __future__ import annotations

import argparse
from pathlib import Path

from tinyaot.cli.arguments import add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.request import Request
from tinyaot.cli.summary import (
    contract,
    flash,
    print_budget,
    print_contract,
    print_timings,
    print_trust,
    summary,
    timings,
    trust,
)

NAME = "compile"
HELP = "compile a model to C"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("-o", "--output", help="output directory (default out/NAME)")
    p.add_argument("--timings", action="store_true", help="print how long each pass of the compile took")


def run(req: Request, feedback: Feedback) -> int:
    compiled = compile_request(req, feedback)
    cm = compiled.cm
    out = Path(req.output)
    feedback.stage(f"writing the C to {out}/")
    files = cm.export(out)
    info = summary(cm) | contract(cm, req) | {"files": [str(f) for f in files]} | trust(compiled) | timings(cm, req)
    if req.json:
        feedback.print_json(info)
        return 0
    c = feedback.results()
    c.print(f"compiled [bold]{cm.name}[/]: arena {cm.arena_bytes:,} B (lower bound "
            f"{cm.lower_bound_bytes:,} B), {flash(cm)}")
    print_contract(c, info)
    for stage in cm.plan.patches:
        c.print(f"patch stage: {stage.text()}")
    for layer, why in info.get("int16_layers", {}).items():
        c.print(f"int16 activations: {layer} ({why})")
    print_budget(c, cm)
    c.print(f"wrote {len(files)} files to {out}/")
    print_trust(c, compiled)
    print_timings(c, info)
    return 0
