"""The compiler's stages, in order. Each reads the previous stage's output and nothing later."""
from __future__ import annotations

import os
import warnings
from dataclasses import replace

from tinyaot.backend import plan_and_generate, say
from tinyaot.diagnostics import MemoryBudgetWarning, raise_or_warn, warn
from tinyaot.errors import CalibrationError, ModelError
from tinyaot.guard import enter_stage, guarded
from tinyaot.ir import Graph
from tinyaot.ir.layout import torch_to_model_layout
from tinyaot.ir.verify import verify_graph
from tinyaot.model import CompiledModel
from tinyaot.options import CompileOptions, check_alignment, check_name
from tinyaot.passes.fold_affine import fold_affine_chains
from tinyaot.passes.fold_batch_norm import fold_batch_norm
from tinyaot.passes.fold_flatten import fold_flatten_transpose
from tinyaot.passes.fuse_activations import fuse_activations
from tinyaot.passes.input_layout import accept_nchw_input
from tinyaot.passes.uint8_input import accept_uint8_input
from tinyaot.plan.contract import Contract
from tinyaot.plan.kernels import check_optimize
from tinyaot.quantize.calibrate import as_sample_batch, as_sample_batches, batch_len, collect_ranges
from tinyaot.quantize.checks import check_pt2e_example, check_ranges, check_samples
from tinyaot.quantize.dequantize import dequantized_graph
from tinyaot.quantize.lower import lower_to_int8
from tinyaot.quantize.mixed import auto_int16_layers
from tinyaot.report.budget import check_budget
from tinyaot.result import CompileResult, StreamWindow


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
    from tinyaot.frontend.pytorch import from_torch

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


def compile_tflite(model, *, name: str = "model", alignment: int = 4, contract: Contract | None = None,
                   progress=None, optimize: str = "speed") -> CompileResult:
    """An int8 .tflite model is already quantized: import it and go straight to planning."""
    from tinyaot.frontend.tflite import from_tflite

    contract = contract or Contract()
    say(progress, "importing the .tflite model")
    int8_graph = from_tflite(model)
    return plan_and_generate(check_name(name), None, int8_graph, check_alignment(alignment), contract, progress,
                              check_optimize(optimize), reference_graph=dequantized_graph(int8_graph))


def compile_pt2e(model, example_input=None, *, name: str = "model", alignment: int = 4,
                 input_layout: str = "NHWC", contract: Contract | None = None, progress=None,
                 optimize: str = "speed") -> CompileResult:
    """A PT2E-converted GraphModule is already quantized: lower its q/dq patterns to int8 and go to planning."""
    from tinyaot.frontend.pt2e import from_pt2e
    from tinyaot.quantize.pt2e_lower import lower_pt2e

    contract = contract or Contract()
    if example_input is not None:
        check_batch_one(example_input)
    say(progress, "importing the PT2E graph")
    g, act_q, weight_q = from_pt2e(model, example_input)
    g = fold_flatten_transpose(g)  # permutes fully-connected columns only: per-row weight scales stay
    g = input_layout_pass(g, input_layout)
    g.prune()
    verify_graph(g, "the PT2E import", quantized=False)
    say(progress, "lowering to int8 with the PT2E graph's own qparams")
    int8_graph = lower_pt2e(g, act_q, weight_q)
    return plan_and_generate(check_name(name), None, int8_graph, check_alignment(alignment), contract, progress,
                              check_optimize(optimize), reference_graph=dequantized_graph(int8_graph))


def float_passes(g: Graph, input_layout: str = "NHWC") -> Graph:
    """Rewrites on the float graph, in order; each reads the previous one's output."""
    enter_stage("rewriting the float graph (BatchNorm folding, activation fusion)")
    g = fold_batch_norm(g)
    g = fold_flatten_transpose(g)
    g = fold_affine_chains(g)
    g = fuse_activations(g)
    g = input_layout_pass(g, input_layout)
    verify_graph(g, "the float passes", quantized=False)
    return g


def input_layout_pass(g: Graph, input_layout: str) -> Graph:
    """NHWC inside; input_layout="NCHW" adds one transpose at the start so callers feed channels-first."""
    if input_layout.upper() == "NCHW":
        return accept_nchw_input(g)
    if input_layout.upper() != "NHWC":
        raise ModelError(f"input_layout must be 'NHWC' (default) or 'NCHW', got {input_layout!r}")
    return g


@guarded("checking the arguments")
def compile_model(model, example=None, *, calibration=None, data=None, float_model=None,
                  options: CompileOptions | None = None) -> CompiledModel:
    """tinyaot.compile's work, with its options checked (tinyaot.compile says what each argument is)."""
    opts = options if options is not None else CompileOptions()
    stream, progress, example_input = opts.stream, opts.progress, example
    if stream and (is_tflite(model) or _is_pt2e(model)):
        raise ModelError("stream=True converts a PyTorch nn.Module (a causal Conv1d / TCN or recurrent model) "
                         "calibrated by tinyaot; .tflite and PT2E models are not streamed yet: compile the "
                         "nn.Module")
    if stream and opts.int16:
        raise ModelError("int16= with stream=True is not supported yet: the streamed convs keep int8 frames; "
                         "compile the streamed model all int8")
    if stream and data is not None:
        raise ModelError("data= checks a model against its float twin window by window; with stream=True compile "
                         "the full-window model for that report (the streamed outputs equal its outputs)")
    if is_tflite(model):
        from tinyaot.frontend.tflite import is_float_tflite

        if is_float_tflite(model):
            return _compile_float_tflite(model, calibration, data, opts)
        if opts.int16:
            raise ModelError("int16= chooses precision while tinyaot quantizes; this .tflite model is already "
                             "quantized (its int16 tensors, if any, are imported as they are)")
        result = compile_tflite(model, name=opts.name, alignment=opts.alignment, contract=opts.contract,
                                progress=progress, optimize=opts.optimize)
        if calibration is not None:
            warnings.warn("calibration is ignored: this .tflite model is already int8", stacklevel=3)
        return _finish(replace(result, options=opts), [], data, opts, float_model=float_model)
    from tinyaot.frontend.pt2e import is_pt2e

    if is_pt2e(model):
        if opts.int16:
            raise ModelError("int16= chooses precision while tinyaot quantizes; a PT2E graph is already quantized")
        if calibration is not None:
            warnings.warn("calibration is ignored: a PT2E-converted graph is already quantized", stacklevel=3)
        result = compile_pt2e(model, example_input, name=opts.name, alignment=opts.alignment,
                              input_layout=opts.input_layout, contract=opts.contract, progress=progress,
                              optimize=opts.optimize)
        return _finish(replace(result, options=opts), check_pt2e_example(example_input, result), data, opts)
    say(progress, "importing the PyTorch model (torch.export)")
    float_graph = float_passes(import_float_model(model, example_input), opts.input_layout)
    if calibration is None:
        raise CalibrationError(
            "a float model needs calibration samples: pass calibration= a few hundred representative "
            "inputs (an array/tensor shaped (N, ...) like the example input, or an iterable of batches)"
        )
    examples = example_input if isinstance(example_input, (tuple, list)) else (example_input,)
    sets = as_sample_batches(calibration, [tuple(x.shape[1:]) for x in examples])
    batches = [torch_to_model_layout(s.batch, *float_graph.io_layout_of(name))
               for s, name in zip(sets, float_graph.inputs)]
    if len(sets) == 1:
        return _quantize_and_plan(float_graph, sets[0], batches[0], data, opts)
    return _quantize_and_plan(float_graph, sets, batches, data, opts)


def _compile_float_tflite(model, calibration, data, opts: CompileOptions) -> CompiledModel:
    """A float .tflite: import it as a float graph and quantize it with tinyaot's own calibration."""
    from tinyaot.frontend.tflite import from_tflite_float

    say(opts.progress, "importing the float .tflite model")
    float_graph = float_passes(from_tflite_float(model))
    if calibration is None:
        raise CalibrationError(
            "a float .tflite model needs calibration samples: pass calibration= a few hundred representative "
            "inputs in the model's own layout (NHWC for images), shaped (N, ...) like its input"
        )
    shape = tuple(float_graph.tensor(float_graph.inputs[0]).shape[1:])
    samples = as_sample_batch(calibration, shape)
    return _quantize_and_plan(float_graph, samples, samples.batch, data, opts)


def _quantize_and_plan(float_graph, samples, batch, data, opts: CompileOptions) -> CompiledModel:
    """samples/batch: one input's SampleSet and model-layout batch, or lists of them (several inputs)."""
    enter_stage("checking the calibration samples")
    if isinstance(samples, list):
        findings = [f for i, s in enumerate(samples) for f in check_samples(s, float_graph, f"calibration input {i}")]
    else:
        findings = check_samples(samples, float_graph)
    say(opts.progress, f"calibrating on {batch_len(batch)} samples")
    calib = collect_ranges(float_graph, batch, observer=opts.observer, layer_observers=opts.layer_observers)
    findings += check_ranges(float_graph, calib, opts.observer)
    say(opts.progress, "quantizing to int8")
    int8_graph, lowering_findings = lower_to_int8(float_graph, calib.ranges)
    int16_layers = _int16_layers(float_graph, int8_graph, batch, opts)
    if int16_layers:
        say(opts.progress, f"int16 activations for {', '.join(int16_layers)}")
        int8_graph, lowering_findings = lower_to_int8(float_graph, calib.ranges, tuple(int16_layers))
    findings += lowering_findings
    if opts.input_dtype == "uint8":
        int8_graph = accept_uint8_input(int8_graph)
    raise_or_warn(findings, opts.strict, opts.name)  # said before the later stages, which may refuse the model
    if opts.stream:
        return _finish(_stream(float_graph, int8_graph, calib, opts), [], None, opts, said=findings)
    result = plan_and_generate(opts.name, float_graph, int8_graph, opts.alignment, opts.contract, opts.progress,
                                opts.optimize, calibration=calib, options=opts,
                                int16_layers=tuple(int16_layers.items()))
    return _finish(result, [], data, opts, said=findings)


def _int16_layers(float_graph: Graph, int8_graph: Graph, batch, opts: CompileOptions) -> dict[str, str]:
    """Layer -> why it has int16 activations (int16="auto": its int8 error; or asked for by name)."""
    if opts.int16 != "auto":
        return dict.fromkeys(opts.int16, "chosen by name")
    return auto_int16_layers(float_graph, int8_graph, batch)


def _stream(float_graph: Graph, int8_graph: Graph, calib, opts: CompileOptions) -> CompileResult:
    """The int8 full-window graph as a step function; the full-window graph stays reachable (cm.window_model())."""
    from tinyaot.passes.streaming import stream_graph

    say(opts.progress, "converting to a one-frame step function (streaming)")
    streamed, info = stream_graph(int8_graph)
    verify_graph(streamed, "the streaming conversion", quantized=True)
    kept = Contract(True, opts.contract.separate_output)  # invoke leaves the caller's frame as it was written
    return plan_and_generate(opts.name, None, streamed, opts.alignment, kept, opts.progress, opts.optimize,
                              calibration=calib, options=opts, stream_info=info,
                              window=StreamWindow(float_graph, int8_graph))  # what window_model() plans


def _is_pt2e(model) -> bool:
    from tinyaot.frontend.pt2e import is_pt2e

    return is_pt2e(model)


def _finish(result: CompileResult, findings: list, data, opts: CompileOptions, float_model=None,
            said=()) -> CompiledModel:
    """Findings become warnings (errors when strict); data= runs the trust check; the budget check says whether
    the model fits its target. `said`: findings already raised as warnings by an earlier stage, kept in
    cm.findings."""
    new = list(findings)
    result = replace(result, findings=(*said, *new))  # before the check: its diagnosis reads them (noise, ...)
    if data is not None:
        say(opts.progress, "checking the int8 model on the data= samples")
        check = CompiledModel(result).check_data(data, float_model=float_model)
        new += check.findings
        result = replace(result, findings=(*result.findings, *check.findings), check=check)
    raise_or_warn(new, opts.strict, result.name)
    budget = check_budget(CompiledModel(result), opts.target_memory)
    warn(list(budget.findings), None, MemoryBudgetWarning)
    return CompiledModel(replace(result, budget=budget))
