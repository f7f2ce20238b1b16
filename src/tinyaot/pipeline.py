"""The compiler's pipelines: one table of passes per front end, run by driver.py, and compile_model, which picks
the table for the model it is given. Each pass reads what earlier passes made and nothing later."""
from __future__ import annotations

import os
import warnings
from dataclasses import replace
from typing import Mapping

from tinyaot.backend import BACKEND
from tinyaot.budgets import budget_error, search
from tinyaot.diagnostics import MemoryBudgetWarning, raise_or_warn, warn
from tinyaot.driver import Pass, Unit, result_of, run_passes, say
from tinyaot.errors import CalibrationError, ModelError
from tinyaot.frontend.pt2e import from_pt2e, is_pt2e
from tinyaot.frontend.pytorch import from_torch
from tinyaot.frontend.tflite import from_tflite, from_tflite_float, is_float_tflite
from tinyaot.guard import guarded
from tinyaot.ir import Graph
from tinyaot.ir.layout import torch_to_model_layout
from tinyaot.model import CompiledModel
from tinyaot.options import CompileOptions
from tinyaot.passes.fold_affine import fold_affine_chains
from tinyaot.passes.fold_batch_norm import fold_batch_norm
from tinyaot.passes.fold_flatten import fold_flatten_transpose
from tinyaot.passes.fuse_activations import fuse_activations
from tinyaot.passes.input_layout import accept_nchw_input
from tinyaot.passes.streaming import stream_graph
from tinyaot.passes.uint8_input import accept_uint8_input
from tinyaot.plan.contract import Contract
from tinyaot.quantize.calibrate import as_sample_batch, as_sample_batches, batch_len, collect_ranges
from tinyaot.quantize.checks import check_pt2e_example, check_ranges, check_samples
from tinyaot.quantize.dequantize import dequantized_graph
from tinyaot.quantize.lower import lower_to_int8
from tinyaot.quantize.mixed import auto_int16_layers
from tinyaot.quantize.pt2e_lower import lower_pt2e
from tinyaot.report.budget import check_budget
from tinyaot.result import StreamWindow


def check_batch_one(example_input, what: str = "example_input") -> None:
    """tinyaot compiles batch-1 models (run() loops over a batch); a batch-N example would build a fixed
    batch-N model with N times the arena. Several inputs: a tuple of them, each checked."""
    if isinstance(example_input, (tuple, list)):
        for k, x in enumerate(example_input):
            check_batch_one(x, f"{what}[{k}]")
        return
    shape = tuple(getattr(example_input, "shape", ()))
    if not shape or shape[0] != 1:
        raise ModelError(
            f"{what} has shape {shape}: tinyaot compiles a model for one input at a time (batch size 1), and "
            f"run() takes a batch and loops over it. Pass one input with a leading batch dimension of 1"
            + (f", e.g. example_input[:1] (shape {(1,) + shape[1:]})" if len(shape) > 1 else "")
        )


def import_float_model(model, example_input) -> Graph:
    """Front end: PyTorch nn.Module -> float Graph."""
    model = _as_torch_module(model)
    if example_input is None:
        raise ModelError("a PyTorch model needs example_input (one input tensor, batch size 1; a tuple of them "
                         "when forward() takes several)")
    check_batch_one(example_input)
    return from_torch(model, example_input)


def _as_torch_module(model):
    """The nn.Module to export; what is neither a .tflite, a PT2E graph nor an nn.Module torch.export can trace
    is refused by name."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        raise ModelError("the model is a float torch.export ExportedProgram: pass the nn.Module it came from "
                         "(tinyaot exports it itself, in eval mode, with the example input)")
    if isinstance(model, torch.jit.ScriptModule):
        raise ModelError("the model is TorchScript (torch.jit.script / trace), which torch.export cannot trace: "
                         "pass the original nn.Module")
    if isinstance(model, torch.nn.Module):
        return model
    if isinstance(model, (str, os.PathLike)):
        raise ModelError(f"model {os.fspath(model)!r} is a path, and tinyaot reads .tflite files only: load a "
                         "PyTorch checkpoint into its nn.Module (model.load_state_dict(torch.load(path))) and pass "
                         "the module")
    raise ModelError(f"model must be a PyTorch nn.Module, a PT2E-converted GraphModule or a .tflite model (its "
                     f"path or bytes), got {type(model).__name__}")


def is_tflite(model) -> bool:
    """A .tflite path (str / PathLike) or the bytes of a .tflite file."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return True
    return isinstance(model, (str, os.PathLike)) and os.fspath(model).lower().endswith(".tflite")



# ---- the front ends' imports ----------------------------------------------------------------------------------


def _import_torch(u: Unit) -> dict:
    return {"graph": import_float_model(u.model, u.example)}


def _import_pt2e(u: Unit) -> dict:
    if u.example is not None:
        check_batch_one(u.example)
    g, act_q, weight_q = from_pt2e(u.model, u.example)
    return {"graph": g, "pt2e_qparams": (act_q, weight_q)}


def _import_tflite(u: Unit) -> dict:
    return {"graph": from_tflite(u.model)}


def _import_float_tflite(u: Unit) -> dict:
    return {"graph": from_tflite_float(u.model)}


# ---- graph rewrites ------------------------------------------------------------------------------------------


def _rewrite(function):
    """A pass that is one graph -> graph function of passes/."""
    return lambda u: {"graph": function(u.graph)}


def _prune(u: Unit) -> dict:
    g = u.graph.replace()
    g.prune()
    return {"graph": g}


def _nchw_input(u: Unit) -> bool:
    return u.options.input_layout.upper() == "NCHW"


REWRITING = "rewriting the float graph (BatchNorm folding, activation fusion)"
FLOAT_PASSES = (
    Pass("fold_batch_norm", _rewrite(fold_batch_norm), ir="float", stage=REWRITING),
    Pass("fold_flatten_transpose", _rewrite(fold_flatten_transpose), ir="float", stage=REWRITING),
    Pass("fold_affine_chains", _rewrite(fold_affine_chains), ir="float", stage=REWRITING),
    Pass("fuse_activations", _rewrite(fuse_activations), ir="float", stage=REWRITING),
)
INPUT_LAYOUT = Pass("nchw_input", _rewrite(accept_nchw_input), ir="float", stage=REWRITING, when=_nchw_input)


def float_passes(g: Graph, input_layout: str = "NHWC") -> Graph:
    """The float rewrites a PyTorch model goes through, on `g` (left as it was)."""
    unit, _ = run_passes((*FLOAT_PASSES, INPUT_LAYOUT), Unit("model", CompileOptions(input_layout=input_layout),
                                                           graph=g))
    return unit.graph


# ---- calibration and quantization ----------------------------------------------------------------------------


def _torch_samples(u: Unit) -> dict:
    """The calibration samples, one set per model input, and each in the model's layout."""
    if u.calibration_input is None:
        raise CalibrationError(
            "a float model needs calibration samples: pass calibration= a few hundred representative "
            "inputs (an array/tensor shaped (N, ...) like the example input, or an iterable of batches)"
        )
    examples = u.example if isinstance(u.example, (tuple, list)) else (u.example,)
    sets = as_sample_batches(u.calibration_input, [tuple(x.shape[1:]) for x in examples])
    batches = [torch_to_model_layout(s.batch, *u.graph.io_layout_of(name)) for s, name in zip(sets, u.graph.inputs)]
    if len(sets) == 1:
        return {"samples": sets[0], "batch": batches[0]}
    return {"samples": sets, "batch": batches}


def _tflite_samples(u: Unit) -> dict:
    """A float .tflite's samples come in its own layout."""
    if u.calibration_input is None:
        raise CalibrationError(
            "a float .tflite model needs calibration samples: pass calibration= a few hundred representative "
            "inputs in the model's own layout (NHWC for images), shaped (N, ...) like its input"
        )
    samples = as_sample_batch(u.calibration_input, tuple(u.graph.tensor(u.graph.inputs[0]).shape[1:]))
    return {"samples": samples, "batch": samples.batch}


def _check_samples(u: Unit) -> dict:
    if isinstance(u.samples, list):
        found = [f for i, s in enumerate(u.samples) for f in check_samples(s, u.graph, f"calibration input {i}")]
    else:
        found = check_samples(u.samples, u.graph)
    return {"findings": (*u.findings, *found)}


def _calibrate(u: Unit) -> dict:
    calib = collect_ranges(u.graph, u.batch, observer=u.options.observer, layer_observers=u.options.layer_observers)
    return {"calibration": calib, "findings": (*u.findings, *check_ranges(u.graph, calib, u.options.observer))}


def _lower(u: Unit) -> dict:
    int8_graph, found = lower_to_int8(u.graph, u.calibration.ranges)
    return {"graph": int8_graph, "float_graph": u.graph, "lowering_findings": tuple(found)}


def _int16(u: Unit) -> dict:
    """Layers given int16 activations (by name, or "auto": those whose int8 kernel loses the most), lowered again."""
    if u.options.int16 == "auto":
        layers = auto_int16_layers(u.float_graph, u.graph, u.batch)
    else:
        layers = dict.fromkeys(u.options.int16, "chosen by name")
    if not layers:
        return {"int16_layers": (), "graph": u.graph, "lowering_findings": u.lowering_findings}
    say(u.options.progress, f"int16 activations for {', '.join(layers)}")
    int8_graph, found = lower_to_int8(u.float_graph, u.calibration.ranges, tuple(layers))
    return {"int16_layers": tuple(layers.items()), "graph": int8_graph, "lowering_findings": tuple(found)}


def _say_calibration_findings(u: Unit) -> dict:
    """Said before the later passes, which may refuse the model."""
    findings = (*u.findings, *u.lowering_findings)
    raise_or_warn(list(findings[u.warned:]), u.options.strict, u.name)
    return {"findings": findings, "warned": len(findings)}


QUANTIZE = (
    Pass("check_samples", _check_samples, needs=("graph", "samples"), produces=("findings",),
         stage="checking the calibration samples"),
    Pass("calibrate", _calibrate, needs=("graph", "batch"), produces=("calibration", "findings"),
         stage=lambda u: f"calibrating on {batch_len(u.batch)} samples", announce=True),
    Pass("lower_to_int8", _lower, needs=("graph", "calibration"),
         produces=("graph", "float_graph", "lowering_findings"), ir="int8", stage="quantizing to int8", announce=True),
    Pass("int16_layers", _int16, needs=("graph", "float_graph", "calibration"),
         produces=("int16_layers", "graph", "lowering_findings"), ir="int8", stage="choosing int16 layers",
         when=lambda u: bool(u.options.int16)),
    Pass("uint8_input", _rewrite(accept_uint8_input), ir="int8", stage="taking a uint8 input",
         when=lambda u: u.options.input_dtype == "uint8"),
    Pass("say_calibration_findings", _say_calibration_findings, needs=(), produces=("findings", "warned"),
         stage="checking the calibration samples"),
)


def _stream(u: Unit) -> dict:
    """The int8 full-window graph as a step function; the full-window graph stays reachable (cm.window_model())."""
    streamed, info = stream_graph(u.graph)
    return {"graph": streamed, "stream_info": info, "window": StreamWindow(u.float_graph, u.graph),
            "float_graph": None,  # the float model is the window's: the step function has no float twin
            "contract": Contract(True, u.options.contract.separate_output)}  # invoke leaves the caller's frame


def _lower_pt2e(u: Unit) -> dict:
    return {"graph": lower_pt2e(u.graph, *u.pt2e_qparams)}


def _dequantized_reference(u: Unit) -> dict:
    """What an imported int8 model's integers stand for: the reference its outputs are checked against."""
    return {"reference_graph": dequantized_graph(u.graph)}


REFERENCE = Pass("dequantized_reference", _dequantized_reference, produces=("reference_graph",),
                 stage="dequantizing the int8 model (its float reference)")


# ---- the checks on the compiled model ------------------------------------------------------------------------


def _check_pt2e_example(u: Unit) -> dict:
    return {"findings": (*u.findings, *check_pt2e_example(u.example, u))}


def _check_data(u: Unit) -> dict:
    """The trust check on samples that never calibrated anything (its diagnosis reads the findings so far)."""
    check = CompiledModel(result_of(u, ())).check_data(u.data, float_model=u.float_model)
    return {"check": check, "findings": (*u.findings, *check.findings)}


def _say_findings(u: Unit) -> dict:
    raise_or_warn(list(u.findings[u.warned:]), u.options.strict, u.name)
    return {"warned": len(u.findings)}


def _check_budget(u: Unit) -> dict:
    budget = check_budget(CompiledModel(result_of(u, ())), u.options.target_memory)
    warn(list(budget.findings), None, MemoryBudgetWarning)
    return {"budget": budget}


CHECKS = (
    Pass("check_data", _check_data, needs=("sources",), produces=("check", "findings"),
         stage="checking the int8 model on the data= samples", announce=True, when=lambda u: u.data is not None),
    Pass("say_findings", _say_findings, needs=(), produces=("warned",), stage="checking the compiled model"),
    Pass("check_budget", _check_budget, needs=("sources",), produces=("budget",),
         stage="checking the model against its target's memory"),
)

# ---- one table per front end ---------------------------------------------------------------------------------

TORCH_TO_INT8 = (  # a PyTorch model to its int8 graph: what PYTORCH and STREAM share
    Pass("import_torch", _import_torch, needs=(), ir="float", stage="importing the PyTorch model (torch.export)",
         announce=True),
    *FLOAT_PASSES,
    INPUT_LAYOUT,
    Pass("calibration_samples", _torch_samples, produces=("samples", "batch"),
         stage="reading the calibration samples"),
    *QUANTIZE,
)
PYTORCH = (*TORCH_TO_INT8, *BACKEND, *CHECKS)
STREAM = (
    *TORCH_TO_INT8,
    Pass("stream", _stream, needs=("graph", "float_graph"),
         produces=("graph", "stream_info", "window", "float_graph", "contract"), ir="int8",
         stage="converting to a one-frame step function (streaming)", announce=True),
    *BACKEND,
    *CHECKS,
)
FLOAT_TFLITE = (
    Pass("import_float_tflite", _import_float_tflite, needs=(), ir="float", stage="importing the float .tflite model",
         announce=True),
    *FLOAT_PASSES,
    Pass("calibration_samples", _tflite_samples, produces=("samples", "batch"),
         stage="reading the calibration samples"),
    *QUANTIZE,
    *BACKEND,
    *CHECKS,
)
INT8_TFLITE = (
    Pass("import_tflite", _import_tflite, needs=(), ir="int8", stage="importing the .tflite model", announce=True),
    REFERENCE,
    *BACKEND,
    *CHECKS,
)
PT2E = (
    Pass("import_pt2e", _import_pt2e, needs=(), produces=("graph", "pt2e_qparams"), ir="float",
         stage="importing the PT2E graph", announce=True),
    # permutes fully-connected columns only: per-row weight scales stay
    Pass("fold_flatten_transpose", _rewrite(fold_flatten_transpose), ir="float", stage="importing the PT2E graph"),
    Pass("nchw_input", _rewrite(accept_nchw_input), ir="float", stage="importing the PT2E graph", when=_nchw_input),
    Pass("prune", _prune, ir="float", stage="importing the PT2E graph"),
    Pass("lower_pt2e", _lower_pt2e, needs=("graph", "pt2e_qparams"), ir="int8",
         stage="lowering to int8 with the PT2E graph's own qparams", announce=True),
    REFERENCE,
    *BACKEND,
    Pass("check_pt2e_example", _check_pt2e_example, produces=("findings",), stage="checking the example input"),
    *CHECKS,
)


@guarded("checking the arguments")
def compile_model(model, example=None, *, calibration=None, data=None, float_model=None,
                  options: CompileOptions | Mapping[str, object] | None = None) -> CompiledModel:
    """tinyaot.compile's work (tinyaot.compile says what each argument is): its options checked (a CompileOptions,
    or its fields as keywords), then the table of the model's front end, run by the driver."""
    opts = options if isinstance(options, CompileOptions) else CompileOptions(**(options or {}))
    tflite = is_tflite(model)
    pt2e = not tflite and is_pt2e(model)
    if opts.stream and (tflite or pt2e):
        raise ModelError("stream=True converts a PyTorch nn.Module (a causal Conv1d / TCN or recurrent model) "
                         "calibrated by tinyaot; .tflite and PT2E models are not streamed yet: compile the "
                         "nn.Module")
    if opts.stream and opts.int16:
        raise ModelError("int16= with stream=True is not supported yet: the streamed convs keep int8 frames; "
                         "compile the streamed model all int8")
    if opts.stream and data is not None:
        raise ModelError("data= checks a model against its float twin window by window; with stream=True compile "
                         "the full-window model for that report (the streamed outputs equal its outputs)")
    if tflite and is_float_tflite(model):
        table = FLOAT_TFLITE
    elif tflite or pt2e:
        if opts.int16:
            raise ModelError("int16= chooses precision while tinyaot quantizes; " + (
                "this .tflite model is already quantized (its int16 tensors, if any, are imported as they are)"
                if tflite else "a PT2E graph is already quantized"))
        if calibration is not None:
            warnings.warn("calibration is ignored: " + ("this .tflite model is already int8" if tflite else
                                                        "a PT2E-converted graph is already quantized"), stacklevel=4)
        table = INT8_TFLITE if tflite else PT2E
    else:
        table = STREAM if opts.stream else PYTORCH
    start = Unit(opts.name, opts, model=model, example=example, calibration_input=calibration, data=data,
                 float_model=float_model)
    if opts.ram is not None or opts.flash is not None:
        return _fit_budgets(table, start, opts)
    unit, timings = run_passes(table, start)
    return CompiledModel(result_of(unit, timings))


def _fit_budgets(table, start: Unit, opts: CompileOptions) -> CompiledModel:
    """compile(ram=, flash=): the passes before the back end once, the budget search over back-end plans
    (budgets.py), then the back end and the checks with the chosen plan's options."""
    cut = table.index(BACKEND[0])
    unit, front = run_passes(table[:cut], start)
    say(opts.progress, "searching for the fastest plan within the budgets (each mode profiled on the emulated "
        "Cortex-M33)")
    tradeoffs, chosen = search(unit, BACKEND, opts)
    if chosen is None:
        raise budget_error(tradeoffs)
    final, back = run_passes(table[cut:], replace(unit, options=chosen))
    return CompiledModel(replace(result_of(final, front + back), tradeoffs=tradeoffs))
