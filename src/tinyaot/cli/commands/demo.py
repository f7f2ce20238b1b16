"""tinyaot demo: the Pico 2 MNIST demo done right, with no arguments needed."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from tinyaot.cli.exits import EXIT_OK, EXIT_WRONG
from tinyaot.cli.feedback import Feedback, console
from tinyaot.cli.request import Request
from tinyaot.demo import demo_tables, run_demo, run_seed_mistake

NAME = "demo"
HELP = "the Pico 2 MNIST demo done right (no arguments needed)"
SPINNER = False  # the demo shows its own progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="out/demo", help="where to write the C sources and the report")
    p.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33")
    p.add_argument("--random-calibration", action="store_true", help="first calibrate the way the user report "
                   "did (one random tensor): see the warnings and the layer the check blames, then the fix")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def run(req: Request, feedback: Feedback) -> int:
    if req.json:
        mistake = run_seed_mistake() if req.random_calibration else None
        result = run_demo(Path(req.out), use_m33=not req.no_m33)
        print(json.dumps(result.to_dict() | {"seed_mistake": mistake.to_dict() if mistake else None}, indent=2))
    else:
        out = console()
        if req.random_calibration:
            _show_seed_mistake(out, run_seed_mistake(lambda m: out.print(f"[dim]-[/] {m}")))
        with out.status("starting") as status:
            result = run_demo(Path(req.out), use_m33=not req.no_m33,
                              progress=lambda m: (status.update(m), out.print(f"[dim]-[/] {m}")))
        out.print(demo_tables(result))
        out.print(f"C sources (c/), report.txt, report.json, the memory picture (memory.html) and a Pico 2 "
                  f"project (pico2/) written to {req.out}/")
    right = result.all_correct and not any(n.startswith("MISMATCH") for n in result.notes)
    return EXIT_OK if right else EXIT_WRONG


def _show_seed_mistake(out, m) -> None:
    out.print("[bold]1. The seed's calibration: one random tensor[/]")
    for w in m.warnings:
        out.print(f"[yellow]warning:[/] {w}")
    out.print(m.report)
    wrong = [f"{e} -> {p}" for e, p in zip(m.expected, m.predictions) if e != p]
    out.print(f"predicted {m.predictions} for digits {m.expected}: "
              f"{'wrong: ' + ', '.join(wrong) if wrong else 'right this time (the draw was lucky)'}")
    out.print("[bold]2. The fix: calibrate on representative digits (the default demo)[/]")
