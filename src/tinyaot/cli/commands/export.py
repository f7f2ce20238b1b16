"""tinyaot export: the model's C (--target c), or a Pico SDK project for the Raspberry Pi Pico 2 that runs test
inputs (--target pico2)."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from tinyaot.cli.arguments import EXPORT_DEFAULT_INPUTS, add_model_args
from tinyaot.cli.compiling import compile_request
from tinyaot.cli.feedback import Feedback
from tinyaot.cli.inputs import model_input
from tinyaot.cli.request import Request
from tinyaot.cli.summary import contract, flash, print_budget, print_contract, summary

NAME = "export"
HELP = "write the model's C (--target c) or a Pico SDK project (--target pico2)"
SPINNER = True  # a status line names the stage at work (on a terminal, without --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_args(p)
    p.add_argument("--target", default="c", choices=["c", "pico2"], help="c: the model's .c/.h and kernels; "
                   "pico2: a Pico SDK project for the Raspberry Pi Pico 2 that runs test inputs (default c)")
    p.add_argument("-o", "--output", help="output directory (default out/NAME, or out/NAME_pico2)")
    p.add_argument("--input", help="pico2: .npy of test inputs to embed (int8 as is, float is quantized; "
                   f"default: the first {EXPORT_DEFAULT_INPUTS} calibration samples)")
    p.add_argument("--labels", help="pico2: .npy of the expected class of each test input")
    p.add_argument("--copy-to-ram", action="store_true", help="pico2: copy all code and constants from flash to "
                   "SRAM at boot (pico_set_binary_type copy_to_ram: no XIP cache misses; the project README gives the "
                   "SRAM it costs)")


def run(req: Request, feedback: Feedback) -> int:
    cm = compile_request(req, feedback).cm
    out = Path(req.output)
    note = ""
    options = {"copy_to_ram": True} if req.copy_to_ram else {}
    if req.pico2:
        inputs, note = _test_inputs(cm, req)
        options |= dict(inputs=inputs, labels=req.arrays.labels)
    feedback.stage(f"writing the {req.target} project to {out}/")
    files = cm.export(out, target=req.target, **options)
    info = summary(cm) | contract(cm, req) | {"target": req.target, "files": [str(f) for f in files]}
    if req.json:
        feedback.print_json(info)
        return 0
    c = feedback.results()
    c.print(f"exported [bold]{cm.name}[/] for target {req.target}: arena {cm.arena_bytes:,} B, "
            f"{flash(cm)}; wrote {len(files)} files to {out}/")
    print_contract(c, info)
    print_budget(c, cm)
    if note:
        c.print(note)
    if req.pico2:
        c.print(f"build it: cmake -S {out} -B {out}/build -DPICO_SDK_PATH=<Pico SDK> && make -C {out}/build "
                "(see README.md there for flashing and serial output)")
    return 0


def _test_inputs(cm, req: Request) -> tuple[np.ndarray | None, str]:
    """The pico2 project's test vectors, in the model's layout, and a note on where they came from."""
    if req.input:
        return model_input(cm, req.arrays.input, req.layout), ""
    if not req.calibration:
        return None, ""
    # The calibration samples are in PyTorch's layout for a PyTorch model, in the model's own for a .tflite.
    cal = req.arrays.calibration[:EXPORT_DEFAULT_INPUTS]
    inputs = model_input(cm, cal, "model" if req.is_tflite else "torch", "--calibration")
    return inputs, f"test inputs: the first {len(inputs)} calibration samples (choose others with --input)"
