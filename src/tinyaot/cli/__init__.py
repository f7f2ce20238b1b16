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
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import inspect
import io
import json
import os
import sys
import textwrap
import traceback
import warnings
from pathlib import Path

import numpy as np

from tinyaot import __version__
from tinyaot.errors import ModelError, TinyAOTError

EXPORT_DEFAULT_INPUTS = 4  # test vectors a pico2 project embeds when no --input is given
EVAL_LAYER_SAMPLES = 100  # the per-layer table runs the (slow) reference interpreter on this many samples

EXIT_OK, EXIT_USER, EXIT_TOOL, EXIT_BUG, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 2, 3, 4, 130, 141
EXIT_CODES = """exit codes: 0 success; 1 demo: an engine got a digit wrong; 2 a user error (bad argument, input file
or model; calibration problems under --strict); 3 a tool or target failed (missing cross compiler, emulator or host
compiler; the C build or the emulated run failed); 4 a tinyaot bug; 130 interrupted; 141 stdout closed early"""


def _console(stderr: bool = False):
    from rich.console import Console

    console = Console(stderr=stderr)
    console.on_broken_pipe = _raise_broken_pipe  # main() handles it (rich's own handler exits with 1)
    return console


def _raise_broken_pipe():
    raise BrokenPipeError


def _flash(cm) -> str:
    if cm.flash_bytes is None:
        return f"flash {cm.constant_bytes:,} B of constants + code (not measured: no arm-none-eabi-gcc)"
    return f"flash {cm.flash_bytes:,} B"


# ---- what the user sees while a command works ---------------------------------------------------------------


class _Feedback:
    """A status line on stderr (a terminal only, never with --json) and every warning as one tidy line."""

    def __init__(self, spinner: bool):
        self.spinner = spinner
        self.status = self.spin = self.console = None
        self.seen: set[str] = set()

    @contextlib.contextmanager
    def active(self):
        with warnings.catch_warnings():
            warnings.showwarning = self.warning
            if self.spinner:
                self._start()
            try:
                yield self
            finally:
                self.stop()

    def _start(self) -> None:
        from rich.live import Live
        from rich.spinner import Spinner

        self.console = _console(stderr=True)
        self.spin = Spinner("dots", text="starting", style="status.spinner")
        self.status = Live(self.spin, console=self.console, refresh_per_second=12.5, transient=True)
        self.status.start()

    def stage(self, text: str) -> None:
        """Shown at once: a stage may be over before the next timed refresh."""
        if self.status is not None:
            self.spin.update(text=text)
            self.status.refresh()

    def stop(self) -> None:
        """Before results are printed: a spinner redrawing on the same terminal would garble them."""
        if self.status is not None:
            self.status.stop()
            self.status = None

    def warning(self, message, category=None, filename=None, lineno=None, file=None, line=None) -> None:
        """warnings.showwarning: one line per distinct message, without the file/line noise."""
        text = " ".join(str(message).split())
        if text in self.seen:
            return
        self.seen.add(text)
        if self.status is not None:
            self.console.print(f"tinyaot: warning: {text}", markup=False, highlight=False, soft_wrap=True)
        else:
            print(f"tinyaot: warning: {text}", file=sys.stderr, flush=True)


def _stage(args, text: str) -> None:
    args.feedback.stage(text)


def _stdout(args):
    """The console results go to, once the status line is gone."""
    args.feedback.stop()
    return _console()


def _print_json(args, obj) -> None:
    args.feedback.stop()
    print(json.dumps(obj, indent=2))


# ---- arguments ------------------------------------------------------------------------------------------------


def _add_model_args(p: argparse.ArgumentParser, data: bool = True) -> None:
    p.add_argument("model", help="an int8 .tflite file, or path/to/file.py:name (an nn.Module or a function "
                   "returning one)")
    p.add_argument("--input-shape", action="append", help="model input shape with batch 1, e.g. 1,28,28 "
                   "(default: the calibration samples' shape); once per input for a model with several")
    p.add_argument("--calibration", action="append", help=".npy file of representative samples, shaped (N, ...); "
                   "a model with several inputs takes one file per input, in the order of forward()'s arguments")
    p.add_argument("--name", default="model", help="C identifier prefixing every generated symbol (at most 32 "
                   "characters)")
    p.add_argument("--alignment", type=int, default=4, help="arena alignment in bytes, a power of two (default 4)")
    p.add_argument("--observer", default="auto", choices=["auto", "minmax", "percentile", "mse"],
                   help="how activation ranges are estimated from the calibration samples (default auto: an "
                   "error-minimizing search, outlier samples left out, full range on the outputs)")
    p.add_argument("--strict", action="store_true", help="calibration warnings are errors (exit code 2), for CI")
    p.add_argument("--layout", default="auto", choices=["auto", "torch", "model"],
                   help="layout of --input/--data arrays: torch (channels first, as PyTorch holds them), model "
                   "(the compiled model's, channels last) or auto (default: from the shapes; an error when both "
                   "fit, as when channels, height and width are equal)")
    p.add_argument("--preserve-input", action="store_true", help="keep the input intact across invoke (the "
                   "arena may grow; the summary says by how much)")
    p.add_argument("--separate-output", action="store_true", help="keep the output's bytes apart from the "
                   "input's (the arena may grow; the summary says by how much)")
    p.add_argument("--optimize", default="speed", choices=["speed", "size", "memory"],
                   help="speed (default): convs and fully connected layers run on int16 weights widened at "
                   "compile time (about twice their weight flash; convs use a small work buffer in the arena); "
                   "size: int8 weights, a fast conv kernel that widens them as it reads; memory: the plain int8 "
                   "kernels and the smallest arena")
    p.add_argument("--target-memory", metavar="FLASH,RAM", help="the flash and RAM the target leaves the model "
                   "(its constants; its arena and state), e.g. 2MB,264KB (K = 1024 bytes): a model that does not fit "
                   "is warned about, with what would help (default pico2: the Raspberry Pi Pico 2's 4 MB less 64 KB, "
                   "512 KB less 16 KB)")
    p.add_argument("--int16", action="append", metavar="LAYER", help="give this layer int16 activations (16x8; "
                   "repeat for more layers), or 'auto' for the layers whose int8 kernel loses the most on the "
                   "calibration samples; input and output stay int8")
    if data:
        p.add_argument("--float-model", help="with --data and an int8 .tflite: the float .tflite it was converted "
                       "from, to compare outputs with")
        p.add_argument("--data", help="samples used only to check the int8 model against float, never to "
                       "calibrate: .npy of inputs, or .npz with inputs 'x' (and labels 'y'); PyTorch or model "
                       "layout (see --layout)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON (errors too)")


def _is_tflite(args) -> bool:
    return args.model.lower().endswith(".tflite")


def _accepts(fn, param: str) -> bool:
    try:
        return param in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _validate(args) -> None:
    """Every argument value is checked before the (possibly long) compile, so a mistake costs no wait."""
    if not hasattr(args, "model"):
        return
    from tinyaot.loader import check_model
    from tinyaot.pipeline import check_alignment, check_name

    check_name(args.name)
    check_alignment(args.alignment)
    check_model(args.model)
    _several_files(args)
    _validate_options(args)
    _load_inputs(args)
    _validate_outputs(args)


def _several_files(args) -> None:
    """--calibration, --input and --input-shape may repeat (one per model input): args.<flag>s holds them all,
    args.<flag> the first, which is all a one-input model uses."""
    for flag in ("calibration", "input", "input_shape"):
        given = getattr(args, flag, None)
        if isinstance(given, str):
            given = [given]
        setattr(args, f"{flag}s", list(given or []))
        setattr(args, flag, given[0] if given else None)
    counts = {f"--{f.replace('_', '-')}": len(getattr(args, f"{f}s")) for f in ("calibration", "input", "input_shape")}
    several = {flag: n for flag, n in counts.items() if n > 1}
    if several and _is_tflite(args) and "--calibration" in several:
        raise ModelError("a .tflite model is calibrated from one --calibration file per input only when it is float; "
                         "give one file per input of the float .tflite")
    if len(set(several.values())) > 1:
        raise ModelError(f"{' and '.join(several)} are repeated a different number of times "
                         f"({', '.join(f'{k} x{v}' for k, v in several.items())}): give one of each per model input")


def _validate_options(args) -> None:
    from tinyaot.loader import check_readable, parse_shape

    args.shape = None
    if args.input_shape:
        if _is_tflite(args):
            raise ModelError("--input-shape is for PyTorch models; a .tflite file sets its own input shape: "
                             "drop --input-shape")
        args.shapes = [parse_shape(s) for s in args.input_shapes]
        args.shape = args.shapes[0]
    _validate_calibration_given(args)
    if getattr(args, "target_memory", None):
        from tinyaot.report.budget import parse_target_memory

        args.memory = parse_target_memory(args.target_memory)  # checked before the compile
    if _is_tflite(args) and args.layout == "torch":
        raise ModelError("--layout torch: a .tflite model has no PyTorch layout, its inputs are in its own "
                         "(channels last): drop --layout torch")
    if getattr(args, "float_model", None):
        if not args.data:
            raise ModelError("--float-model is compared with the int8 model on the --data samples: add "
                             "--data val.npz (or drop --float-model)")
        check_readable(args.float_model, "float model")
    _validate_export_options(args)
    _validate_supported(args)


def _validate_calibration_given(args) -> None:
    """A float model (PyTorch, or a float .tflite) is quantized on samples: without them there is nothing to do."""
    from tinyaot.errors import CalibrationError
    from tinyaot.frontend.tflite import is_float_tflite

    if args.calibration:
        return
    if not _is_tflite(args):
        raise CalibrationError("a float model needs --calibration samples.npy (representative inputs, (N, ...))")
    if is_float_tflite(args.model):
        raise CalibrationError(f"{args.model} is a float .tflite: it needs --calibration samples.npy "
                               "(representative inputs in the model's own layout, (N, ...))")


def _validate_export_options(args) -> None:
    if args.command != "export" or args.target == "pico2":
        return
    if args.input or args.labels:
        raise ModelError("--input and --labels set the test vectors of --target pico2; "
                         "--target c writes only the model")
    if args.copy_to_ram:
        raise ModelError("--copy-to-ram is an option of --target pico2 (it copies all code and constants to "
                         "SRAM at boot); "
                         "add --target pico2 or drop it")


def _validate_supported(args) -> None:
    """Flags this installation's library does not take yet are refused up front, not after the compile."""
    from tinyaot.pipeline import compile_model

    wanted = [("--preserve-input", "preserve_input", compile_model),
              ("--separate-output", "separate_output", compile_model)]
    if getattr(args, "copy_to_ram", False):
        from tinyaot.targets.pico2 import export_pico2

        wanted.append(("--copy-to-ram", "copy_to_ram", export_pico2))
    for flag, param, fn in wanted:
        if getattr(args, param, False) and not _accepts(fn, param):
            raise ModelError(f"{flag}: this tinyaot {__version__} does not support {param}= yet; update tinyaot "
                             f"or drop {flag}")


def _load_inputs(args) -> None:
    """Load every array the command names (once), check it is usable and fits the model's input size."""
    from tinyaot.loader import check_labels, load_array, load_arrays

    args.arrays = {}
    if args.calibration:
        args.arrays["calibrations"] = [load_array(f, "calibration") for f in args.calibrations]
        args.arrays["calibration"] = args.arrays["calibrations"][0]
        _check_calibration_use(args)
    if getattr(args, "input", None):
        args.arrays["inputs"] = [load_array(f, "input") for f in args.inputs]
        args.arrays["input"] = args.arrays["inputs"][0]
    if getattr(args, "data", None):
        x, y = load_arrays(args.data, "data")
        args.arrays["data"] = (x, None if y is None else check_labels(y, len(x), args.data))
    if getattr(args, "labels", None):
        args.arrays["labels"] = _export_labels(args, check_labels(load_array(args.labels, "labels"), None,
                                                                  f"--labels {args.labels}"))
    if not _is_tflite(args) and len(args.calibrations) <= 1:
        _check_torch_shapes(args)  # several inputs: each shape is checked once the model is imported


def _check_calibration_use(args) -> None:
    """An int8 .tflite is already quantized: the samples would be silently unused."""
    from tinyaot.frontend.tflite import is_float_tflite

    args.float_tflite = _is_tflite(args) and is_float_tflite(args.model)
    if _is_tflite(args) and not args.float_tflite:
        warnings.warn(f"{args.model} is already quantized (int8): --calibration is not used; drop it (only a "
                      "float .tflite is calibrated)", UserWarning, stacklevel=2)


def _export_labels(args, labels: np.ndarray) -> np.ndarray:
    n = _n_test_inputs(args)
    if n is not None and len(labels) != n:
        source = f"--input {args.input}" if args.input else (
            f"the first {n} --calibration samples" if args.calibration else "one input of zeros")
        raise ModelError(f"--labels {args.labels} has {len(labels)} labels for {n} test inputs ({source}); give one "
                         "class index per test input" + ("" if args.input else ", and choose the inputs with --input"))
    return labels


def _n_test_inputs(args) -> int | None:
    """How many test vectors export --target pico2 embeds (None: known only after the compile)."""
    if args.input:
        n = _torch_sample_values(args)  # a .tflite's input size is known only once it is imported
        return None if n is None else 1 if args.arrays["input"].size == n else len(args.arrays["input"])
    if args.calibration:
        return min(EXPORT_DEFAULT_INPUTS, len(args.arrays["calibration"]))
    return 1  # one input of zeros


def _torch_sample_shape(args) -> tuple[int, ...] | None:
    if _is_tflite(args):
        return None
    return tuple(args.shape[1:]) if args.shape else tuple(args.arrays["calibration"].shape[1:])


def _torch_sample_values(args) -> int | None:
    shape = _torch_sample_shape(args)
    return None if shape is None else int(np.prod(shape))


def _check_torch_shapes(args) -> None:
    """For a PyTorch model the sample shape is known before the compile: check the arrays against it."""
    from tinyaot.errors import CalibrationError

    sample = _torch_sample_shape(args)
    cal = args.arrays["calibration"]
    if args.shape and cal.shape[1:] != sample and cal.shape != sample:
        raise CalibrationError(
            f"--calibration {args.calibration}: samples of shape {cal.shape[1:]} do not match --input-shape "
            f"{args.input_shape} (samples of shape {sample}); --input-shape includes the batch dimension 1, e.g. "
            f"{','.join(map(str, (1,) + cal.shape[1:]))}")
    n = int(np.prod(sample))
    for flag, x in (("--input", args.arrays.get("input")), ("--data", args.arrays.get("data", (None,))[0])):
        if x is not None and x.size != n and int(np.prod(x.shape[1:])) != n:
            raise ModelError(f"{flag} {getattr(args, flag[2:])}: samples of shape {x.shape[1:]} hold "
                             f"{int(np.prod(x.shape[1:]))} values, but the model takes samples of shape {sample} "
                             f"({n} values); give inputs shaped (N, {', '.join(map(str, sample))}) or in the "
                             "model's layout")


def _validate_outputs(args) -> None:
    from tinyaot.loader import check_output_dir, check_output_file
    from tinyaot.pipeline import check_name

    name = check_name(args.name)
    if args.command in ("compile", "export"):
        pico2 = args.command == "export" and args.target == "pico2"
        args.output = args.output or (f"out/{name}_pico2" if pico2 else f"out/{name}")
        check_output_dir(args.output, "-o")
    elif args.command == "run" and args.output:
        check_output_file(args.output, "-o", "y.npy")
        if not args.output.endswith(".npy"):
            args.output += ".npy"  # what numpy.save would write
            check_output_file(args.output, "-o", "y.npy")
    elif args.command == "report":
        args.picture = args.picture or f"out/{name}/memory.html"
        check_output_file(args.picture, "--picture", "memory.html")


# ---- compiling ------------------------------------------------------------------------------------------------


def _compile_options(args) -> dict:
    from tinyaot.pipeline import compile_model

    options = dict(name=args.name, alignment=args.alignment, observer=args.observer, strict=args.strict)
    for flag in ("preserve_input", "separate_output"):
        if getattr(args, flag, False):
            options[flag] = True
    if getattr(args, "optimize", "speed") != "speed":
        options["optimize"] = args.optimize
    if getattr(args, "int16", None):
        options["int16"] = "auto" if args.int16 == ["auto"] else list(args.int16)
    if getattr(args, "memory", None) is not None:
        options["target_memory"] = args.memory
    if _accepts(compile_model, "progress"):
        options["progress"] = lambda stage: _stage(args, f"compiling {args.model}: {stage}")
    return options


def _compile_from_args(args):
    import tinyaot

    options = _compile_options(args)
    if _is_tflite(args):  # no torch
        cal = args.arrays.get("calibration") if getattr(args, "float_tflite", False) else None
        _stage(args, f"compiling {args.model}")
        return _checked(tinyaot.compile(args.model, calibration=cal, **options), args)
    _stage(args, f"loading {args.model}")
    import torch

    from tinyaot.loader import load_model

    model = load_model(args.model)
    cals = args.arrays["calibrations"]
    shapes = getattr(args, "shapes", None) or [(1,) + tuple(c.shape[1:]) for c in cals]
    _stage(args, f"compiling {args.model}")
    if len(cals) > 1:  # one example and one calibration batch per input
        example = tuple(torch.zeros(shape) for shape in shapes)
        return _checked(tinyaot.compile(model, example, calibration=list(cals), **options), args)
    return _checked(tinyaot.compile(model, torch.zeros(shapes[0]), calibration=cals[0], **options), args)


def _checked(cm, args):
    """--data: the trust check on samples that never calibrated anything (strict: its findings are errors)."""
    _check_input_count(cm, args)
    if "data" in args.arrays and args.command != "eval":
        from tinyaot.diagnostics import raise_or_warn

        _one_input_only(cm, "--data")
        _stage(args, f"checking the int8 model on {args.data}")
        x, y = args.arrays["data"]
        cm.check = cm.check_data(_model_input(cm, x.astype(np.float64), args.layout, "--data"), labels=y,
                                 float_model=getattr(args, "float_model", None), model_layout=True)
        raise_or_warn(cm.check.findings, args.strict, cm.name)
    return cm


def _check_input_count(cm, args) -> None:
    """A model with several inputs takes one --calibration (PyTorch) and one --input file per input."""
    for flag in ("calibration", "input"):
        files = getattr(args, f"{flag}s", [])
        if flag == "calibration" and (_is_tflite(args) or not files):
            continue
        if files and len(files) != cm.n_inputs:
            raise ModelError(f"model '{cm.name}' has {cm.n_inputs} input(s) but --{flag} was given {len(files)} "
                             f"time(s); give one --{flag} file per input, in the model's input order")


def _one_input_only(cm, flag: str) -> None:
    if cm.n_inputs > 1:
        raise ModelError(f"{flag} takes the samples of a one-input model; '{cm.name}' has {cm.n_inputs} inputs: "
                         "check it from Python with cm.check_data([x0, x1, ...], labels)")


def _model_inputs(cm, arrays: list[np.ndarray], layout: str = "auto", what: str = "--input"):
    """One array per model input (a list for a model with several), each in the model's layout."""
    if cm.n_inputs == 1:
        return _model_input(cm, arrays[0], layout, what)
    return [_model_input(cm, x, layout, f"{what} {k}", k) for k, x in enumerate(arrays)]


def _model_input(cm, x: np.ndarray, layout: str = "auto", what: str = "--input", k: int = 0) -> np.ndarray:
    """Inputs come in PyTorch's channels-first layout or the model's own; convert the former. When both read as
    the same shape (channels == height == width) only the user knows which it is: --layout says. k: which input
    of a model with several."""
    from tinyaot.ir.layout import torch_sample_shape, torch_to_model_layout

    g = cm.graph
    name = g.inputs[k]
    io_layout, rank = g.io_layout_of(name)
    if io_layout != "NHWC" or rank == 0:  # the same layout either way
        return x
    model = tuple(g.tensor(name).shape[1:])
    fits_model = x.shape[1:] == model or x.shape == model
    torch = torch_sample_shape(model, io_layout, rank)
    fits_torch = x.shape[1:] == torch or x.shape == torch
    if layout == "auto" and fits_model and fits_torch:
        raise ModelError(f"{what} of shape {x.shape} reads both as PyTorch's layout (N, {_dims(torch)}) and as the "
                         f"model's (N, {_dims(model)}); say which with --layout torch (channels first, as PyTorch "
                         "holds tensors) or --layout model (channels last, as the compiled C takes them)")
    if layout in ("auto", "model") and fits_model:
        return x
    if layout in ("auto", "torch") and fits_torch:
        return torch_to_model_layout(x if x.shape[1:] == torch else x[None], io_layout, rank)
    which = {"auto": "", "torch": " in PyTorch's layout (--layout torch)", "model": " in the model's layout "
             "(--layout model)"}[layout]
    raise ModelError(f"{what} of shape {x.shape} does not fit{which}: model '{cm.name}' takes (N, {_dims(model)}) "
                     f"in its own layout or (N, {_dims(torch)}) in PyTorch's")


def _dims(shape) -> str:
    return ", ".join(map(str, shape))


# ---- commands -------------------------------------------------------------------------------------------------


def _summary(cm) -> dict:
    if cm.n_inputs > 1 or cm.n_outputs > 1:
        return _summary_one(cm) | {"inputs": _ios(cm, cm.graph.inputs), "outputs": _ios(cm, cm.graph.outputs)}
    return _summary_one(cm)


def _ios(cm, tensors) -> list[dict]:
    from tinyaot.report.memory import io_dicts

    return io_dicts(cm.graph, tensors, layout=False)


def _summary_one(cm) -> dict:
    """The first input and output (the only ones of most models)."""
    first_in, first_out = _ios(cm, cm.graph.inputs[:1])[0], _ios(cm, cm.graph.outputs[:1])[0]
    return {
        "name": cm.name,
        "arena_bytes": cm.arena_bytes,
        "lower_bound_bytes": cm.lower_bound_bytes,
        "float_arena_bytes": cm.float_arena_bytes,
        "constant_bytes": cm.constant_bytes,
        "code_bytes": cm.code_bytes,
        "flash_bytes": cm.flash_bytes,
        "input": first_in,
        "output": first_out,
        **({"int16_layers": dict(cm.int16_layers)} if getattr(cm, "int16_layers", None) else {}),
        **({"budget": cm.budget.to_dict()} if getattr(cm, "budget", None) is not None else {}),
    }


def _contract(cm, args) -> dict:
    """What --preserve-input / --separate-output cost in arena bytes."""
    if not (args.preserve_input or args.separate_output):
        return {}
    return {"contract": cm.contract.to_dict()}


def _print_contract(c, info: dict) -> None:
    if "contract" not in info:
        return
    d = info["contract"]
    wanted = " and ".join(f for f, on in (("--preserve-input", d["preserve_input"]),
                                          ("--separate-output", d["separate_output"])) if on)
    c.print(f"input {'preserved' if d['input_preserved'] else 'overwritten'} across invoke, output "
            f"{'overlapping' if d['output_overlaps_input'] else 'apart from'} the input: arena "
            f"{d['arena_bytes']:,} B, {d['cost_bytes']:,} B more than without {wanted} "
            f"({d['unconstrained_arena_bytes']:,} B)")


def cmd_compile(args) -> int:
    cm = _compile_from_args(args)
    out = Path(args.output)
    _stage(args, f"writing the C to {out}/")
    files = cm.export(out)
    info = _summary(cm) | _contract(cm, args) | {"files": [str(f) for f in files]} | _trust(cm)
    if args.json:
        _print_json(args, info)
        return 0
    c = _stdout(args)
    c.print(f"compiled [bold]{cm.name}[/]: arena {cm.arena_bytes:,} B (lower bound "
            f"{cm.lower_bound_bytes:,} B), {_flash(cm)}")
    _print_contract(c, info)
    for layer, why in info.get("int16_layers", {}).items():
        c.print(f"int16 activations: {layer} ({why})")
    _print_budget(c, cm)
    c.print(f"wrote {len(files)} files to {out}/")
    _print_trust(c, cm)
    return 0


def _print_budget(c, cm) -> None:
    """The verdict in one line (what does not fit was a warning on stderr already, with what would help)."""
    if getattr(cm, "budget", None) is not None:
        c.print(cm.budget.summary(), markup=False, highlight=False)


def _trust(cm) -> dict:
    """Calibration findings and the --data check, for --json."""
    out: dict = {"findings": [f.to_dict() for f in cm.findings]}
    if cm.calibration is not None:
        out["calibration"] = {"samples": cm.calibration.samples, "observer": cm.calibration.observer}
    if cm.check is not None:
        out["check"] = cm.check.to_dict()
    return out


def _print_trust(c, cm) -> None:
    """The --data check (its findings, like the calibration's, were warnings on stderr already)."""
    if cm.check is not None:
        c.print(cm.check)


_ENGINES = {"reference": "the reference interpreter", "host": "host C", "m33": "the emulated Cortex-M33"}


def cmd_run(args) -> int:
    cm = _compile_from_args(args)
    x = _model_inputs(cm, args.arrays["inputs"], args.layout)
    _stage(args, f"running {', '.join(args.inputs)} on {_ENGINES[args.engine]}")
    first = x[0] if isinstance(x, list) else x
    if np.issubdtype(first.dtype, np.floating):
        y = cm.run_float(x, engine=args.engine)
    else:
        y = cm.run(x, engine=args.engine)
    ys = y if cm.n_outputs > 1 else [y]
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        if cm.n_outputs > 1:  # output k -> <name>.<k>.npy beside the name given
            for k, v in enumerate(ys):
                np.save(Path(args.output).with_suffix(f".{k}.npy"), v)
        else:
            np.save(args.output, y)
    args.feedback.stop()
    if args.json:
        if cm.n_outputs > 1:
            print(json.dumps({"engine": args.engine, "outputs": [v.tolist() for v in ys],
                              "argmax": [np.argmax(v, -1).tolist() for v in ys]}))
        else:
            print(json.dumps({"engine": args.engine, "output": y.tolist(), "argmax": np.argmax(y, -1).tolist()}))
    else:
        np.set_printoptions(linewidth=120)
        for k, v in enumerate(ys):
            if cm.n_outputs > 1:
                print(f"output {k}:")
            print(v)
    return 0


def cmd_report(args) -> int:
    from tinyaot.report.memory import MemoryReport

    cm = _compile_from_args(args)
    if not args.no_m33:
        _stage(args, "measuring the stack on the emulated Cortex-M33")
    rep = MemoryReport.of(cm, measure_stack=not args.no_m33)
    _stage(args, f"drawing {args.picture}")
    files = rep.write_picture(Path(args.picture), compare_float=args.compare_float)
    if args.json:
        _print_json(args, rep.to_dict() | {"picture": [str(f) for f in files]} | _trust(cm))
        return 0
    c = _stdout(args)
    c.print(rep)
    _print_trust(c, cm)
    if args.compare_float:
        c.print(rep.comparison_table())
        for reason in rep.float_reasons:
            c.print(f"- {reason}")
    c.print(f"picture: {files[0]} (SVG: {', '.join(str(f) for f in files[1:])})")
    return 0


def _export_inputs(cm, args) -> tuple[np.ndarray | None, str]:
    """The pico2 project's test vectors, in the model's layout, and a note on where they came from."""
    if args.input:
        return _model_input(cm, args.arrays["input"], args.layout), ""
    if not args.calibration:
        return None, ""
    # The calibration samples are in PyTorch's layout for a PyTorch model, in the model's own for a .tflite.
    cal = args.arrays["calibration"][:EXPORT_DEFAULT_INPUTS]
    inputs = _model_input(cm, cal, "model" if _is_tflite(args) else "torch", "--calibration")
    return inputs, f"test inputs: the first {len(inputs)} calibration samples (choose others with --input)"


def cmd_export(args) -> int:
    cm = _compile_from_args(args)
    out = Path(args.output)
    inputs = labels = None
    note = ""
    options = {"copy_to_ram": True} if args.copy_to_ram else {}
    if args.target == "pico2":
        inputs, note = _export_inputs(cm, args)
        labels = args.arrays.get("labels")
        options |= dict(inputs=inputs, labels=labels)
    _stage(args, f"writing the {args.target} project to {out}/")
    files = cm.export(out, target=args.target, **options)
    info = _summary(cm) | _contract(cm, args) | {"target": args.target, "files": [str(f) for f in files]}
    if args.json:
        _print_json(args, info)
        return 0
    c = _stdout(args)
    c.print(f"exported [bold]{cm.name}[/] for target {args.target}: arena {cm.arena_bytes:,} B, "
            f"{_flash(cm)}; wrote {len(files)} files to {out}/")
    _print_contract(c, info)
    _print_budget(c, cm)
    if note:
        c.print(note)
    if args.target == "pico2":
        c.print(f"build it: cmake -S {out} -B {out}/build -DPICO_SDK_PATH=<Pico SDK> && make -C {out}/build "
                "(see README.md there for flashing and serial output)")
    return 0


def cmd_profile(args) -> int:
    cm = _compile_from_args(args)
    x = None
    if args.input:
        xs = _model_inputs(cm, args.arrays["inputs"], args.layout)
        xs = xs if isinstance(xs, list) else [xs]
        shapes = [cm.graph.tensor(t).shape for t in cm.graph.inputs]
        xs = [v.reshape((-1,) + tuple(shape[1:]))[:1] for v, shape in zip(xs, shapes)]
        if not np.issubdtype(xs[0].dtype, np.integer):
            xs = cm.quantize_input(xs if len(xs) > 1 else xs[0])
            xs = xs if isinstance(xs, list) else [xs]
        x = xs if len(xs) > 1 else xs[0]
    _stage(args, "profiling on the emulated Cortex-M33" + (" (with the instruction mix)" if args.mix else ""))
    rep = cm.profile(x, mix=args.mix)
    if args.json:
        _print_json(args, rep.to_dict())
    else:
        _stdout(args).print(rep)
    return 0


def cmd_eval(args) -> int:
    x, y = args.arrays["data"]
    cm = _compile_from_args(args)
    _one_input_only(cm, "eval --data")
    x = _model_input(cm, x.astype(np.float32) if x.dtype != np.int8 else x, args.layout, "--data")
    quantized = x.dtype == np.int8
    result: dict = {"samples": int(len(x)), "engine": args.engine}
    _stage(args, f"running {len(x)} samples on {_ENGINES[args.engine]}")
    out = cm.run(x, engine=args.engine) if quantized else cm.run_float(x, engine=args.engine)
    pred = np.asarray(out).reshape(len(x), -1).argmax(-1)
    if cm.reference_graph is not None and not quantized:
        _stage(args, "running the float model")
        fpred = np.asarray(cm.float_reference(x)).reshape(len(x), -1).argmax(-1)
        result["float_int8_agreement"] = float((fpred == pred).mean())
        if y is not None:
            result["float_accuracy"] = float((fpred == y).mean())
    if y is not None:
        result["int8_accuracy"] = float((pred == y).mean())
        result["confusion"] = confusion_matrix(y, pred).tolist()  # rows: true class, columns: int8 prediction
    errors = None
    if cm.reference_graph is not None and not quantized and not args.no_layers:
        _stage(args, "measuring the error per layer")
        errors = cm.layer_errors(x[:EVAL_LAYER_SAMPLES], labels=None if y is None else y[:EVAL_LAYER_SAMPLES])
    if args.json:
        _print_json(args, result | ({"layers": errors.to_dict()} if errors else {}))
        return 0
    c = _stdout(args)
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


def supported_op_lists() -> dict:
    """What each front end compiles: PyTorch ATen ops by family, TFLite builtin operators."""
    from tinyaot.frontend.pytorch import supported_ops
    from tinyaot.frontend.refusals import by_family
    from tinyaot.frontend.tflite import CONVERTERS as TFLITE

    return {"pytorch": by_family(supported_ops()), "tflite": sorted(TFLITE),
            "pt2e": "the PyTorch ops (BatchNorm folded by convert_pt2e), between quantize / dequantize pairs"}


def cmd_ops(args) -> int:
    ops = supported_op_lists()
    if args.json:
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



# ---- the parser ------------------------------------------------------------------------------------------------


class _UsageError(Exception):
    """argparse's complaint, raised instead of exiting so main() reports it like any other error."""

    def __init__(self, message: str, usage: str, prog: str):
        super().__init__(message)
        self.usage, self.prog = usage, prog


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message, self.format_usage(), self.prog)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tinyaot", description="Compile neural networks to integer-only C for microcontrollers.",
                epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a model to C", epilog=EXIT_CODES)
    _add_model_args(c)
    c.add_argument("-o", "--output", help="output directory (default out/NAME)")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("run", help="run a model on inputs from a .npy file", epilog=EXIT_CODES)
    _add_model_args(r)
    r.add_argument("--input", required=True, action="append", help=".npy input (int8 is used as is; float is "
                   "quantized); once per input, in order, for a model with several")
    r.add_argument("--engine", default="reference", choices=["reference", "host", "m33"])
    r.add_argument("-o", "--output", help="save the outputs to this .npy file")
    r.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="memory plan, RAM and flash of a compiled model, and its picture",
                         epilog=EXIT_CODES)
    _add_model_args(rep)
    rep.add_argument("--picture", help="where to write the HTML picture of the plan; an SVG is written beside "
                     "it (default out/NAME/memory.html)")
    rep.add_argument("--compare-float", action="store_true", help="show the fp32 plan beside the int8 one, "
                     "and why they differ")
    rep.add_argument("--no-m33", action="store_true", help="skip measuring the stack on the emulated Cortex-M33")
    rep.set_defaults(func=cmd_report)

    e = sub.add_parser("export", help="write the model's C (--target c) or a Pico SDK project (--target pico2)",
                       epilog=EXIT_CODES)
    _add_model_args(e)
    e.add_argument("--target", default="c", choices=["c", "pico2"], help="c: the model's .c/.h and kernels; "
                   "pico2: a Pico SDK project for the Raspberry Pi Pico 2 that runs test inputs (default c)")
    e.add_argument("-o", "--output", help="output directory (default out/NAME, or out/NAME_pico2)")
    e.add_argument("--input", help="pico2: .npy of test inputs to embed (int8 as is, float is quantized; "
                   f"default: the first {EXPORT_DEFAULT_INPUTS} calibration samples)")
    e.add_argument("--labels", help="pico2: .npy of the expected class of each test input")
    e.add_argument("--copy-to-ram", action="store_true", help="pico2: copy all code and constants from flash to "
                   "SRAM at boot (pico_set_binary_type copy_to_ram: no XIP cache misses; the project README gives the "
                   "SRAM it costs)")
    e.set_defaults(func=cmd_export)

    pr = sub.add_parser("profile", help="exact Cortex-M33 instructions per op for one inference (QEMU)",
                        epilog=EXIT_CODES)
    _add_model_args(pr)
    pr.add_argument("--input", action="append", help=".npy whose first sample is profiled (default: zeros); once "
                    "per input for a model with several")
    pr.add_argument("--mix", action="store_true", help="also count each op's loads, stores, multiplies/MACs and "
                    "branches (taken or not): the profiling run goes through a QEMU plugin (built with the host C "
                    "compiler)")
    pr.set_defaults(func=cmd_profile)

    ev = sub.add_parser("eval", help="int8 vs float accuracy on a data set, its confusion matrix, and the error "
                        "per layer", epilog=EXIT_CODES)
    _add_model_args(ev, data=False)
    ev.add_argument("--data", required=True, help=".npz with inputs 'x' and labels 'y' (or a .npy of inputs)")
    ev.add_argument("--engine", default="host", choices=["reference", "host", "m33"])
    ev.add_argument("--no-layers", action="store_true", help=f"skip the per-layer table (it runs the reference "
                    f"interpreter on the first {EVAL_LAYER_SAMPLES} samples)")
    ev.set_defaults(func=cmd_eval)

    o = sub.add_parser("ops", help="the operations each front end compiles (PyTorch ops by family, TFLite "
                       "operators)", epilog=EXIT_CODES)
    o.add_argument("--json", action="store_true", help="print machine-readable JSON")
    o.set_defaults(func=cmd_ops, spinner=False)

    d = sub.add_parser("demo", help="the Pico 2 MNIST demo done right (no arguments needed)", epilog=EXIT_CODES)
    d.add_argument("--out", default="out/demo", help="where to write the C sources and the report")
    d.add_argument("--no-m33", action="store_true", help="skip the emulated Cortex-M33")
    d.add_argument("--random-calibration", action="store_true", help="first calibrate the way the user report "
                   "did (one random tensor): see the warnings and the layer the check blames, then the fix")
    d.add_argument("--json", action="store_true", help="print machine-readable JSON")
    d.set_defaults(func=cmd_demo, spinner=False)  # the demo shows its own progress
    return p


# ---- errors ----------------------------------------------------------------------------------------------------

_OS_ADVICE = {
    errno.ENOSPC: "free some disk space or write somewhere else",
    errno.EDQUOT: "free some disk space or write somewhere else",
    errno.EACCES: "check the permissions or choose another path",
    errno.EPERM: "check the permissions or choose another path",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ENOENT: "check the path",
    errno.EISDIR: "give a file, not a directory",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
}


def _os_message(exc: OSError) -> str:
    name = str(exc.filename) if exc.filename is not None else ""
    shown = f" {name[:80]!r}{'...' if len(name) > 80 else ''}" if name else ""
    advice = _OS_ADVICE.get(exc.errno, "check the path and the disk")
    return f"cannot use{shown}: {exc.strerror or exc}; {advice}"


def _classify(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, message) for what the user or their machine can fix; None for a bug in tinyaot."""
    from tinyaot.errors import InternalCompilerError
    from tinyaot.targets.host import HostCompilerMissing
    from tinyaot.targets.m33 import M33Error
    from tinyaot.targets.toolchain import ToolchainMissing

    if isinstance(exc, (ToolchainMissing, HostCompilerMissing, M33Error)):
        return EXIT_TOOL, str(exc)
    if isinstance(exc, InternalCompilerError):  # a stage broke its own rules, or crashed: never the user's fault
        return None
    if isinstance(exc, TinyAOTError):
        return EXIT_USER, str(exc)
    if isinstance(exc, MemoryError):
        return EXIT_USER, "out of memory; use fewer samples (--calibration, --data, --input) or a smaller model"
    if isinstance(exc, OSError):
        return EXIT_USER, _os_message(exc)
    return None


def _report(json_mode: bool, kind: str, message: str, code: int) -> int:
    """One line on stderr; with --json also {"error": {...}} on stdout."""
    try:
        if json_mode:
            print(json.dumps({"error": {"type": kind, "message": message, "exit_code": code}}), flush=True)
    except BrokenPipeError:
        _silence_stdout()
    print(f"tinyaot: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def _report_bug(json_mode: bool, exc: BaseException) -> int:
    """Keep the traceback (it is what a maintainer needs) and say plainly that this is tinyaot's fault."""
    from tinyaot.errors import InternalCompilerError

    traceback.print_exception(type(exc), exc, exc.__traceback__)  # the chain too: the original crash first
    if isinstance(exc, InternalCompilerError) and str(exc).startswith("internal compiler error"):
        message = f"{exc}; the traceback is printed above"  # guard.py's words: the stage, the layer, what to send
    else:
        message = (f"internal error ({type(exc).__name__}: {exc}). This is a bug in tinyaot {__version__}, not a "
                   "problem with your input: please report it to the tinyaot maintainers with the command you ran "
                   "and the traceback above")
    return _report(json_mode, "InternalError", message, EXIT_BUG)


def _silence_stdout() -> None:
    """The reader of stdout is gone (`| head`): send what is left to devnull, as the Python docs advise."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _parse(argv: list[str]):
    try:
        return build_parser().parse_args(argv), None
    except _UsageError as exc:
        if "--json" in argv:
            command = exc.prog.partition(" ")[2]  # the subcommand, if the complaint is about its arguments
            return None, _report(True, "UsageError", f"{command}: {exc}" if command else str(exc), EXIT_USER)
        sys.stderr.write(exc.usage)
        print(f"{exc.prog}: error: {exc}", file=sys.stderr)
        return None, EXIT_USER


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args, code = _parse(argv)
    if args is None:
        return code
    json_mode = bool(getattr(args, "json", False))
    args.feedback = _Feedback(spinner=getattr(args, "spinner", True) and not json_mode and sys.stderr.isatty())
    try:
        with args.feedback.active():
            _validate(args)
            code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return _report(json_mode, "KeyboardInterrupt", "interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 -- sorted into the user's errors and tinyaot's bugs
        known = _classify(exc)
        if known is None:
            return _report_bug(json_mode, exc)
        return _report(json_mode, type(exc).__name__, known[1], known[0])


if __name__ == "__main__":
    sys.exit(main())
