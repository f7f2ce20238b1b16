"""tinyaot ops: the operations each front end compiles."""
from __future__ import annotations

import argparse
import json
import textwrap

from tinyaot.cli.exits import EXIT_OK
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.request import Request
from tinyaot.frontend.pytorch import supported_ops
from tinyaot.frontend.refusals import by_family
from tinyaot.frontend.tflite import CONVERTERS as TFLITE

NAME = "ops"
HELP = "the operations each front end compiles (PyTorch ops by family, TFLite operators)"
SPINNER = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def supported_op_lists() -> dict:
    """What each front end compiles: PyTorch ATen ops by family, TFLite builtin operators."""
    return {"pytorch": by_family(supported_ops()), "tflite": sorted(TFLITE),
            "pt2e": "the PyTorch ops (BatchNorm folded by convert_pt2e), between quantize / dequantize pairs"}


def run(req: Request, feedback: Feedback) -> int:
    ops = supported_op_lists()
    if req.json:
        print(json.dumps(ops, indent=2))
        return EXIT_OK
    print(f"PyTorch (torch.export ATen ops, {sum(map(len, ops['pytorch'].values()))}):")
    for family, names in ops["pytorch"].items():
        print(f"  {family}:")
        print(textwrap.fill(", ".join(names), width=116, initial_indent="    ", subsequent_indent="    "))
    print(f"PT2E: {ops['pt2e']}")
    print(f"TFLite (builtin operators, {len(ops['tflite'])}):")
    print(textwrap.fill(", ".join(ops["tflite"]), width=116, initial_indent="    ", subsequent_indent="    "))
    return EXIT_OK
