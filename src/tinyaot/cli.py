"""Command line: tinyaot compile | run | report | profile | eval | export | demo."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tinyaot import __version__
from tinyaot.errors import TinyAOTError

EXPORT_DEFAULT_INPUTS = 4  # test vectors a pico2 project embeds when no --input is given


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr)


def _add_model_args(p: argparse.ArgumentParser, data: bool = True) -> None:
    p.add_argument("model", help="an int8 .tflite file, or path/to/file.py:name (an nn.Module or a function "
                   "returning one)")
    p.add_argument("--input-shape", help="model input shape with batch 1, e.g. 1,28,28 "
                   "(default: the calibration samples' shape)")
    p.add_argument("--calibration", help=".npy file of representative samples, shaped (N, ...)")
    p.add_argument("--name", default="model", help="C identifier prefixing every generated symbol")
    p.add_argument("--alignment", type=int, default=4, help="arena alignment in bytes (default 4)")
    p.add_argument("--observer", default="auto", choices=["auto", "minmax", "percentile", "mse"],
                   help="how activation ranges are estimated from the calibration samples (default auto: an "
                   "error-minimizing search, outlier samples left out, full range on the outputs)")
    p.add_argument("--strict", action="store_true", help="calibration warnings are errors (exit code 2), for CI")
    if data:
        p.add_argument("--float-model", help="with --data and an int8 .tflite: the float .tflite it was converted "
                       "from, to compare outputs with")
        p.add_argument("--data", help="samples used only to check the int8 model against float, never to "
                       "calibrate: .npy of inputs, or .npz with inputs 'x' (and labels 'y'); PyTorch or model "
                       "layout")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _compile_from_args(args):
    from tinyaot import compile as compile_model

    from tinyaot.loader import load_array

    options = dict(name=args.name, alignment=args.alignment, observer=args.observer, strict=args.strict)
    if args.model.lower().endswith(".tflite"):  # no torch
        cal = load_array(args.calibration, "calibration") if args.calibration else None
        from tinyaot.frontend.tflite import is_float_tflite

        if cal is not None and not is_float_tflite(args.model):
            cal = None  # already quantized: nothing to calibrate
        return _checked(compile_model(args.model, calibration=cal, **options), args)
    import torch

    from tinyaot.errors import CalibrationError
    from tinyaot.loader import load_model, parse_shape

    model = load_model(args.model)
    if not args.calibration:
        raise CalibrationError("a float model needs --calibration samples.npy (representative inputs, (N, ...))")
    cal = load_array(args.calibration, "calibration")
    shape = parse_shape(args.input_shape) if args.input_shape else (1,) + tuple(cal.shape[1:])
    example = torch.zeros(shape)
    return _checked(compile_model(model, example, calibration=cal, **options), args)


def _checked(cm, args):
    """--data: the trust check on samples that never calibrated anything (strict: its findings are errors)."""
    path = getattr(args, "data", None)
    if path and getattr(args, "command", "") != "eval":
        from tinyaot.diagnostics import raise_or_warn

        x, y = _load_eval_data(path)
        cm.check = cm.check_data(_model_input(cm, x.astype(np.float64)), labels=y,
                                 float_model=getattr(args, "float_model", None), model_layout=True)
        raise_or_warn(cm.check.findings, args.strict, cm.name)
    return cm


def _summary(cm) -> dict:
    return {
        "name": cm.name,
        "arena_bytes": cm.arena_bytes,
        "lower_bound_bytes": cm.lower_bound_bytes,
        "float_arena_bytes": cm.float_arena_bytes,
        "constant_bytes": cm.constant_bytes,
        "code_bytes": cm.code_bytes,
        "flash_bytes": cm.flash_bytes,
        "input": {"shape": list(cm.input_shape), "dtype": "int8", "scale": cm.input_qparams[0],
                  "zero_point": cm.input_qparams[1]},
        "output": {"shape": list(cm.output_shape), "dtype": "int8", "scale": cm.output_qparams[0],
                   "zero_point": cm.output_qparams[1]},
    }


def cmd_compile(args) -> int:
    cm = _compile_from_args(args)
    out = Path(args.output or f"out/{cm.name}")
    files = cm.export(out)
    info = _summary(cm) | {"files": [str(f) for f in files]} | _trust(cm)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        c = _console()
        c.print(f"compiled [bold]{cm.name}[/]: arena {cm.arena_bytes:,} B (lower bound "
                f"{cm.lower_bound_bytes:,} B), flash {cm.flash_bytes:,} B")
        c.print(f"wrote {len(files)} files to {out}/")
        _print_trust(c, cm)
    return 0


def _trust(cm) -> dict:
    """Calibration findings and the --data check, for --json."""
    out: dict = {"findings": [f.to_dict() for f in cm.findings]}
    if cm.calibration is not None:
        out["calibration"] = {"samples": cm.calibration.samples, "observer": cm.calibration.observer}
    if cm.check is not None:
        out["check"] = cm.check.to_dict()
    return out


def _print_trust(c, cm) -> None:
    for f in cm.findings:
        c.print(f"[yellow]warning:[/] {f}")
    if cm.check is not None:
        c.print(cm.check)
        for f in cm.check.findings:
            c.print(f"[yellow]warning:[/] {f}")


def cmd_run(args) -> int:
    from tinyaot.loader import load_array

    cm = _compile_from_args(args)
    x = _model_input(cm, load_array(args.input, "input"))
    if np.issubdtype(x.dtype, np.floating):
        y = cm.run_float(x, engine=args.engine)
    else:
        y = cm.run(x, engine=args.engine)
    if args.output:
        np.save(args.output, y)
    if args.json:
        print(json.dumps({"engine": args.engine, "output": y.tolist(), "argmax": np.argmax(y, -1).tolist()}))
    else:
        np.set_printoptions(linewidth=120)
        print(y)
    return 0


def cmd_report(args) -> int:
    from tinyaot.report.memory import MemoryReport

    cm = _compile_from_args(args)
    rep = MemoryReport.of(cm, measure_stack=not args.no_m33)
    picture = Path(args.picture or f"out/{cm.name}/memory.html")
    files = rep.write_picture(picture, compare_float=args.compare_float)
    if args.json:
        print(json.dumps(rep.to_dict() | {"picture": [str(f) for f in files]} | _trust(cm), indent=2))
    else:
        c = _console()
        c.print(rep)
        _print_trust(c, cm)
        if args.compare_float:
            c.print(rep.comparison_table())
            for reason in rep.float_reasons:
                c.print(f"- {reason}")
        c.print(f"picture: {files[0]} (SVG: {', '.join(str(f) for f in files[1:])})")
    return 0


def cmd_export(args) -> int:
    from tinyaot.errors import ModelError
    from tinyaot.loader import load_array

    cm = _compile_from_args(args)
    out = Path(args.output or (f"out/{cm.name}_pico2" if args.target == "pico2" else f"out/{cm.name}"))
    inputs = labels = None
    note = ""
    if args.target == "pico2":
        if args.input:
            inputs = load_array(args.input, "input")
        elif args.calibration:
            inputs = load_array(args.calibration, "calibration")[:EXPORT_DEFAULT_INPUTS]
            note = f"test inputs: the first {len(inputs)} calibration samples (choose others with --input)"
        labels = load_array(args.labels, "labels") if args.labels else None
    elif args.input or args.labels:
        raise ModelError("--input and --labels set the test vectors of --target pico2; "
                         "--target c writes only the model")
    files = cm.export(out, target=args.target, inputs=inputs, labels=labels)
    if args.json:
        print(json.dumps(_summary(cm) | {"target": args.target, "files": [str(f) for f in files]}, indent=2))
        return 0
    c = _console()
    c.print(f"exported [bold]{cm.name}[/] for target {args.target}: arena {cm.arena_bytes:,} B, "
            f"flash {cm.flash_bytes:,} B; wrote {len(files)} files to {out}/")
    if note:
        c.print(note)
    if args.target == "pico2":
        c.print(f"build it: cmake -S {out} -B {out}/build -DPICO_SDK_PATH=<Pico SDK> && make -C {out}/build "
                "(see README.md there for flashing and serial output)")
    return 0


def _model_input(cm, x: np.ndarray) -> np.ndarray:
    """Inputs may come in PyTorch's channels-first layout or the compiled model's; convert the former."""
    sample = tuple(cm.input_shape[1:])
    if x.shape[1:] == sample or x.shape == tuple(cm.input_shape) or x.shape == sample:
        return x
    return cm.to_model_layout(x)


def _load_eval_data(path: str) -> tuple[np.ndarray, np.ndarray | None]:
    from tinyaot.errors import ModelError
    from tinyaot.loader import load_array

    if not path.endswith(".npz"):
        return load_array(path, "data"), None
    try:
        d = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ModelError(f"data file {path!r} does not exist") from None
    xs = [k for k in ("x", "inputs", "images", "data") if k in d.files]
    ys = [k for k in ("y", "labels", "targets") if k in d.files]
    if not xs:
        raise ModelError(f"{path} has arrays {d.files}; name the inputs 'x' (and the labels 'y')")
    return d[xs[0]], (d[ys[0]] if ys else None)


def cmd_profile(args) -> int:
    from tinyaot.loader import load_array

    cm = _compile_from_args(args)
    x = None
    if args.input:
        x = _model_input(cm, load_array(args.input, "input"))[:1]
        if not np.issubdtype(x.dtype, np.integer):
            x = cm.quantize_input(x)
    rep = cm.profile(x)
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        _console().print(rep)
    return 0


EVAL_LAYER_SAMPLES = 100  # the per-layer table runs the (slow) reference interpreter on this many samples


def cmd_eval(args) -> int:
    x, y = _load_eval_data(args.data)
    if y is not None and len(y.reshape(-1)) != len(x):
        from tinyaot.errors import ModelError

        raise ModelError(f"{args.data} has {len(x)} inputs but {len(y.reshape(-1))} labels; give one label per input")
    cm = _compile_from_args(args)
    x = _model_input(cm, x.astype(np.float32) if x.dtype != np.int8 else x)
    quantized = x.dtype == np.int8
    result: dict = {"samples": int(len(x)), "engine": args.engine}
    out = cm.run(x, engine=args.engine) if quantized else cm.run_float(x, engine=args.engine)
    pred = np.asarray(out).reshape(len(x), -1).argmax(-1)
    fpred = None
    if cm.reference_graph is not None and not quantized:
        fpred = np.asarray(cm.float_reference(x)).reshape(len(x), -1).argmax(-1)
        result["float_int8_agreement"] = float((fpred == pred).mean())
        if y is not None:
            result["float_accuracy"] = float((fpred == y.reshape(-1)).mean())
    if y is not None:
        y = y.reshape(-1)
        result["int8_accuracy"] = float((pred == y).mean())
        result["confusion"] = confusion_matrix(y, pred).tolist()  # rows: true class, columns: int8 prediction
    errors = None
    if cm.reference_graph is not None and not quantized and not args.no_layers:
        errors = cm.layer_errors(x[:EVAL_LAYER_SAMPLES], labels=None if y is None else y[:EVAL_LAYER_SAMPLES])
    if args.json:
        print(json.dumps(result | ({"layers": errors.to_dict()} if errors else {}), indent=2))
        return 0
    c = _console()
    for k, v in result.items():
        if k != "confusion":
            c.print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    if "confusion" in result:
        c.print(_confusion_table(np.asarray(result["confusion"])))
    if errors:
        c.print(errors)
    return 0


def confusion_matrix(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    n = int(max(y.max(initial=0), pred.max(initial=0))) + 1
    m = np.zeros((n, n), dtype=np.int64)
    np.add.at(m, (y.astype(np.int64), pred.astype(np.int64)), 1)
    return m


def _confusion_table(m: np.ndarray):
    from rich.table import Table

    t = Table(title="confusion matrix of the int8 model (rows: true class, columns: predicted)")
    t.add_column("true", justify="right")
    for j in range(len(m)):
        t.add_column(str(j), justify="right")
    t.add_column("recall", justify="right")
    for i, row in enumerate(m):
        cells = [f"[bold]{v}[/]" if i == j else (f"[red]{v}[/]" if v else "·") for j, v in enumerate(row)]
        recall = f"{row[i] / row.sum():.1%}" if row.sum() else "-"
        t.add_row(str(i), *cells, recall)
    return t


def cmd_demo(args) -> int:
    from tinyaot.demo import demo_tables, run_demo, run_seed_mistake

    if args.json:
        mistake = run_seed_mistake() if args.random_calibration else None
        result = run_demo(Path(args.out), use_m33=not args.no_m33)
        result.seed_mistake = mistake.to_dict() if mistake else None
        print(json.dumps(result.to_dict(), indent=2))
    else:
        console = _console()
        if args.random_calibration:
            _show_seed_mistake(console, run_seed_mistake(lambda m: console.print(f"[dim]-[/] {m}")))
        with console.status("starting") as status:
            result = run_demo(Path(args.out), use_m33=not args.no_m33,
                              progress=lambda m: (status.update(m), console.print(f"[dim]-[/] {m}")))
        console.print(demo_tables(result))
        console.print(f"C sources (c/), report.txt, report.json, the memory picture (memory.html) and a Pico 2 "
                      f"project (pico2/) written to {args.out}/")
    return 0 if result.all_correct and not any(n.startswith("MISMATCH") for n in result.notes) else 1


def _show_seed_mistake(console, m) -> None:
    console.print("[bold]1. The seed's calibration: one random tensor[/]")
    for w in m.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    console.print(m.report)
    wrong = [f"{e} -> {p}" for e, p in zip(m.expected, m.predictions) if e != p]
    console.print(f"predicted {m.predictions} for digits {m.expected}: "
                  f"{'wrong: ' + ', '.join(wrong) if wrong else 'right this time (the draw was lucky)'}")
    console.print("[bold]2. The fix: calibrate on representative digits (the default demo)[/]")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tinyaot", description="Compile neural networks to integer-only C "
                                "for microcontrollers.")
    p.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a model to C")
    _add_model_args(c)
    c.add_argument("-o", "--output", help="output directory (default out/NAME)")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("run", help="run a model on inputs from a .npy file")
    _add_model_args(r)
    r.add_argument("--input", required=True, help=".npy input (int8 is used as is; float is quantized)")
    r.add_argument("--engine", default="reference", choices=["reference", "host", "m33"])
    r.add_argument("-o", "--output", help="save the outputs to this .npy file")
    r.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="memory plan, RAM and flash of a compiled model, and its picture")
    _add_model_args(rep)
    rep.add_argument("--picture", help="where to write the HTML picture of the plan; an SVG is written beside "
                     "it (default out/NAME/memory.html)")
    rep.add_argument("--compare-float", action="store_true", help="show the fp32 plan beside the int8 one, "
                     "and why they differ")
    rep.add_argument("--no-m33", action="store_true", help="skip measuring the stack on the emulated Cortex-M33")
    rep.set_defaults(func=cmd_report)

    e = sub.add_parser("export", help="write the model's C (--target c) or a Pico SDK project (--target pico2)")
    _add_model_args(e)
    e.add_argument("--target", default="c", choices=["c", "pico2"], help="c: the model's .c/.h and kernels; "
                   "pico2: a Pico SDK project for the Raspberry Pi Pico 2 that runs test inputs (default c)")
    e.add_argument("-o", "--output", help="output directory (default out/NAME, or out/NAME_pico2)")
    e.add_argument("--input", help="pico2: .npy of test inputs to embed (int8 as is, float is quantized; "
                   f"default: the first {EXPORT_DEFAULT_INPUTS} calibration samples)")
    e.add_argument("--labels", help="pico2: .npy of the expected class of each test input")
    e.set_defaults(func=cmd_export)

    pr = sub.add_parser("profile", help="exact Cortex-M33 instructions per op for one inference (QEMU)")
    _add_model_args(pr)
    pr.add_argument("--input", help=".npy whose first sample is profiled (default: zeros)")
    pr.set_defaults(func=cmd_profile)

    ev = sub.add_parser("eval", help="int8 vs float accuracy on a data set, its confusion matrix, and the error "
                        "per layer")
    _add_model_args(ev, data=False)
    ev.add_argument("--data", required=True, help=".npz with inputs 'x' and labels 'y' (or a .npy of inputs)")
    ev.add_argument("--engine", default="host", choices=["reference", "host", "m33"])
    ev.add_argument("--no-layers", action="store_true", help=f"skip the per-layer table (it runs the reference "
                    f"interpreter on the first {EVAL_LAYER_SAMPLES} samples)")
    ev.set_defaults(func=cmd_eval)

    d = sub.add_parser("demo", help="the Pico 2 MNIST demo done right (no arguments needed)")
    d.add_argument("--out", default="out/demo", help="where to write the C sources and the report")
    d.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33")
    d.add_argument("--random-calibration", action="store_true", help="first calibrate the way the user report "
                   "did (one random tensor): see the warnings and the layer the check blames, then the fix")
    d.add_argument("--json", action="store_true", help="print machine-readable JSON")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TinyAOTError as exc:
        print(f"tinyaot: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # toolchain errors and the like: say it plainly, no traceback
        from tinyaot.targets.toolchain import ToolchainMissing

        if isinstance(exc, ToolchainMissing):
            print(f"tinyaot: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
