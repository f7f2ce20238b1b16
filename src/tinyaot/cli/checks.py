"""The parsed arguments -> a Request: every value checked, in a fixed order, and every array loaded, before the
(possibly long) compile starts, so a mistake costs no wait."""
from __future__ import annotations

import argparse
import warnings
from dataclasses import replace

import numpy as np

from tinyaot.cli.arguments import EXPORT_DEFAULT_INPUTS
from tinyaot.cli.request import Arrays, Files, Request
from tinyaot.errors import CalibrationError, ModelError
from tinyaot.frontend.tflite import is_float_tflite
from tinyaot.loader import (
    check_labels,
    check_model,
    check_output_dir,
    check_output_file,
    check_readable,
    load_array,
    load_arrays,
    parse_shape,
)
from tinyaot.options import check_alignment, check_name
from tinyaot.report.budget import parse_bytes, parse_target_memory

_COMMAND_FIELDS = ("engine", "picture", "compare_float", "no_m33", "target", "copy_to_ram", "mix", "no_layers", "out",
                   "random_calibration", "timings", "speed",
                   "tradeoffs")


def build_request(ns: argparse.Namespace) -> Request:
    """The request the parsed arguments make; a ModelError or CalibrationError names the first thing wrong."""
    given = {f: getattr(ns, f) for f in _COMMAND_FIELDS if hasattr(ns, f)}
    if not hasattr(ns, "model"):
        return Request(command=ns.command, json=bool(getattr(ns, "json", False)), **given)
    check_name(ns.name)
    check_alignment(ns.alignment)
    check_model(ns.model)
    is_tflite = ns.model.lower().endswith(".tflite")
    float_tflite = is_tflite and is_float_tflite(ns.model)
    files = _files(ns, is_tflite)
    shapes = _shapes(files, is_tflite)
    _check_calibration_given(ns.model, files.calibrations[:1], is_tflite, float_tflite)
    memory = parse_target_memory(ns.target_memory) if ns.target_memory else None  # checked before the compile
    budgets = {k: parse_bytes(f"--{k}", getattr(ns, k)) for k in ("ram", "flash") if getattr(ns, k, None)}
    req = Request(command=ns.command, json=ns.json, model=ns.model, is_tflite=is_tflite, float_tflite=float_tflite,
                  files=files, shapes=shapes, data=ns.data, labels=getattr(ns, "labels", None),
                  float_model=getattr(ns, "float_model", None), layout=ns.layout, name=ns.name,
                  alignment=ns.alignment, observer=ns.observer, strict=ns.strict, preserve_input=ns.preserve_input,
                  separate_output=ns.separate_output, optimize=ns.optimize, int16=tuple(ns.int16 or ()),
                  sram_constants=tuple(ns.sram_constants or ()), patch=getattr(ns, "patch", False), memory=memory,
                  output=getattr(ns, "output", None), cores=getattr(ns, "cores", 1), **budgets, **given)
    _check_options(req)
    req = replace(req, arrays=_load_arrays(req))
    return replace(req, **_outputs(req))


def _files(ns: argparse.Namespace, is_tflite: bool) -> Files:
    """--calibration, --input and --input-shape may repeat (one per model input); the same number of times."""
    given = {}
    for flag in ("calibration", "input", "input_shape"):
        value = getattr(ns, flag, None)
        given[flag] = (value,) if isinstance(value, str) else tuple(value or ())
    several = {f"--{flag.replace('_', '-')}": len(v) for flag, v in given.items() if len(v) > 1}
    if several and is_tflite and "--calibration" in several:
        raise ModelError("a .tflite model is calibrated from one --calibration file per input only when it is float; "
                         "give one file per input of the float .tflite")
    if len(set(several.values())) > 1:
        raise ModelError(f"{' and '.join(several)} are repeated a different number of times "
                         f"({', '.join(f'{k} x{v}' for k, v in several.items())}): give one of each per model input")
    return Files(given["calibration"], given["input"], given["input_shape"])


def _shapes(files: Files, is_tflite: bool) -> tuple[tuple[int, ...], ...]:
    if not files.input_shapes:
        return ()
    if is_tflite:
        raise ModelError("--input-shape is for PyTorch models; a .tflite file sets its own input shape: "
                         "drop --input-shape")
    return tuple(parse_shape(s) for s in files.input_shapes)


def _check_calibration_given(model: str, first: tuple[str, ...], is_tflite: bool, float_tflite: bool) -> None:
    """A float model (PyTorch, or a float .tflite) is quantized on samples: without them there is nothing to do."""
    if any(first):
        return
    if not is_tflite:
        raise CalibrationError("a float model needs --calibration samples.npy (representative inputs, (N, ...))")
    if float_tflite:
        raise CalibrationError(f"{model} is a float .tflite: it needs --calibration samples.npy "
                               "(representative inputs in the model's own layout, (N, ...))")


def _check_options(req: Request) -> None:
    if req.is_tflite and req.layout == "torch":
        raise ModelError("--layout torch: a .tflite model has no PyTorch layout, its inputs are in its own "
                         "(channels last): drop --layout torch")
    if req.float_model:
        if not req.data:
            raise ModelError("--float-model is compared with the int8 model on the --data samples: add "
                             "--data val.npz (or drop --float-model)")
        check_readable(req.float_model, "float model")
    if req.command != "export" or req.target == "pico2":
        return
    if req.input or req.labels:
        raise ModelError("--input and --labels set the test vectors of --target pico2; "
                         "--target c writes only the model")
    if req.copy_to_ram:
        raise ModelError("--copy-to-ram is an option of --target pico2 (it copies all code and constants to "
                         "SRAM at boot); "
                         "add --target pico2 or drop it")


def _load_arrays(req: Request) -> Arrays:
    """Load every array the command names (once), check it is usable and fits the model's input size."""
    arrays = Arrays()
    if req.calibration:
        arrays = replace(arrays, calibrations=tuple(load_array(f, "calibration") for f in req.files.calibrations))
        _check_calibration_use(req)
    if req.input:
        arrays = replace(arrays, inputs=tuple(load_array(f, "input") for f in req.files.inputs))
    if req.data:
        x, y = load_arrays(req.data, "data")
        arrays = replace(arrays, data=(x, None if y is None else check_labels(y, len(x), req.data)))
    if req.labels:
        labels = check_labels(load_array(req.labels, "labels"), None, f"--labels {req.labels}")
        arrays = replace(arrays, labels=_export_labels(replace(req, arrays=arrays), labels))
    if not req.is_tflite and len(req.files.calibrations) <= 1:
        _check_torch_shapes(replace(req, arrays=arrays))  # several inputs: each shape is checked once imported
    return arrays


def _check_calibration_use(req: Request) -> None:
    """An int8 .tflite is already quantized: the samples would be silently unused."""
    if req.is_tflite and not req.float_tflite:
        warnings.warn(f"{req.model} is already quantized (int8): --calibration is not used; drop it (only a "
                      "float .tflite is calibrated)", UserWarning, stacklevel=2)


def _export_labels(req: Request, labels: np.ndarray) -> np.ndarray:
    n = _n_test_inputs(req)
    if n is not None and len(labels) != n:
        source = f"--input {req.input}" if req.input else (
            f"the first {n} --calibration samples" if req.calibration else "one input of zeros")
        raise ModelError(f"--labels {req.labels} has {len(labels)} labels for {n} test inputs ({source}); give one "
                         "class index per test input" + ("" if req.input else ", and choose the inputs with --input"))
    return labels


def _n_test_inputs(req: Request) -> int | None:
    """How many test vectors export --target pico2 embeds (None: known only after the compile)."""
    if req.input:
        shape = req.torch_sample_shape()  # a .tflite's input size is known only once it is imported
        if shape is None:
            return None
        return 1 if req.arrays.input.size == int(np.prod(shape)) else len(req.arrays.input)
    if req.calibration:
        return min(EXPORT_DEFAULT_INPUTS, len(req.arrays.calibration))
    return 1  # one input of zeros


def _check_torch_shapes(req: Request) -> None:
    """For a PyTorch model the sample shape is known before the compile: check the arrays against it."""
    sample = req.torch_sample_shape()
    cal = req.arrays.calibration
    if req.shape and cal.shape[1:] != sample and cal.shape != sample:
        raise CalibrationError(
            f"--calibration {req.calibration}: samples of shape {cal.shape[1:]} do not match --input-shape "
            f"{req.input_shape} (samples of shape {sample}); --input-shape includes the batch dimension 1, e.g. "
            f"{','.join(map(str, (1,) + cal.shape[1:]))}")
    n = int(np.prod(sample))
    data = req.arrays.data[0] if req.arrays.data is not None else None
    for flag, given, x in (("--input", req.input, req.arrays.input), ("--data", req.data, data)):
        if x is not None and x.size != n and int(np.prod(x.shape[1:])) != n:
            raise ModelError(f"{flag} {given}: samples of shape {x.shape[1:]} hold "
                             f"{int(np.prod(x.shape[1:]))} values, but the model takes samples of shape {sample} "
                             f"({n} values); give inputs shaped (N, {', '.join(map(str, sample))}) or in the "
                             "model's layout")


def _outputs(req: Request) -> dict:
    """The paths the command writes, defaulted and checked to be writable."""
    name = check_name(req.name)  # lower case, as the generated files are named
    if req.command in ("compile", "export"):
        output = req.output or (f"out/{name}_pico2" if req.pico2 else f"out/{name}")
        check_output_dir(output, "-o")
        return {"output": output}
    if req.command == "run" and req.output:
        check_output_file(req.output, "-o", "y.npy")
        if req.output.endswith(".npy"):
            return {}
        check_output_file(req.output + ".npy", "-o", "y.npy")  # what numpy.save would write
        return {"output": req.output + ".npy"}
    if req.command == "report":
        picture = req.picture or f"out/{name}/memory.html"
        check_output_file(picture, "--picture", "memory.html")
        return {"picture": picture}
    return {}
