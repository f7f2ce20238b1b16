"""The compiler's stages, in order. Each reads the previous stage's output and nothing later."""
from __future__ import annotations

import dataclasses
import os
import re
import warnings

from tinyaot.errors import CalibrationError, ModelError
from tinyaot.ir import Graph
from tinyaot.ir.layout import torch_to_model_layout
from tinyaot.model import CompiledModel
from tinyaot.passes.fold_affine import fold_affine_chains
from tinyaot.passes.fold_batch_norm import fold_batch_norm
from tinyaot.passes.fold_flatten import fold_flatten_transpose
from tinyaot.passes.fuse_activations import fuse_activations
from tinyaot.passes.fuse_residual import fuse_residual_adds
from tinyaot.passes.input_layout import accept_nchw_input
from tinyaot.passes.uint8_input import accept_uint8_input
from tinyaot.plan import plan_graph
from tinyaot.quantize.calibrate import as_sample_batch, collect_ranges
from tinyaot.diagnostics import raise_or_warn
from tinyaot.quantize.checks import check_pt2e_example, check_ranges, check_samples
from tinyaot.quantize.dequantize import dequantized_graph
from tinyaot.quantize.lower import lower_to_int8


def _check_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise ModelError(f"model name {name!r} must be a C identifier (letters, digits, '_'), e.g. 'mnist'")
    return name.lower()


def import_float_model(model, example_input) -> Graph:
    """Front end: PyTorch nn.Module -> float Graph."""
    if example_input is None:
        raise ModelError("a PyTorch model needs example_input (one input tensor, batch size 1)")
    from tinyaot.frontend.pytorch import from_torch

    return from_torch(model, example_input)


def plan(g: Graph, alignment: int = 4):
    """Residual adds fused into their convs where that shrinks the arena (rewrites g), memory-aware op order
    (reorders g.nodes), overlaps, placement; every plan verified."""
    fused = fuse_residual_adds(g)
    if fused is None:
        return plan_graph(g, alignment=alignment)
    fused_plan, plain_plan = plan_graph(fused, alignment=alignment), plan_graph(g, alignment=alignment)
    if fused_plan.arena_bytes >= plain_plan.arena_bytes:
        return plain_plan
    g.nodes[:], g.tensors = fused.nodes, fused.tensors
    return fused_plan


def is_tflite(model) -> bool:
    """A .tflite path (str / PathLike) or the bytes of a .tflite file."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return True
    return isinstance(model, (str, os.PathLike)) and os.fspath(model).lower().endswith(".tflite")


def float_plan(g: Graph, alignment: int = 4):
    """The plan the same graph needs with fp32 activations: for models that arrive already quantized."""
    tensors = {k: t if t.is_const else dataclasses.replace(t, dtype="float32")
               for k, t in g.tensors.items()}
    return plan(Graph(tensors, list(g.nodes), list(g.inputs), list(g.outputs), g.layout), alignment)


def compile_tflite(model, *, name: str = "model", alignment: int = 4) -> CompiledModel:
    """An int8 .tflite model is already quantized: import it and go straight to planning."""
    from tinyaot.frontend.tflite import from_tflite

    int8_graph = from_tflite(model)
    reference = dequantized_graph(int8_graph)
    memory = plan(int8_graph, alignment)
    return CompiledModel(_check_name(name), None, int8_graph, memory, float_plan(int8_graph, alignment),
                         reference_graph=reference)


def compile_pt2e(model, example_input=None, *, name: str = "model", alignment: int = 4,
                 input_layout: str = "NHWC") -> CompiledModel:
    """A PT2E-converted GraphModule is already quantized: lower its q/dq patterns to int8 and go to planning."""
    from tinyaot.frontend.pt2e import from_pt2e

    int8_graph = from_pt2e(model, example_input, input_layout=input_layout)
    reference = dequantized_graph(int8_graph)
    memory = plan(int8_graph, alignment)
    return CompiledModel(_check_name(name), None, int8_graph, memory, float_plan(int8_graph, alignment),
                         reference_graph=reference)


def float_passes(g: Graph, input_layout: str = "NHWC") -> Graph:
    """Rewrites on the float graph, in order; each reads the previous one's output."""
    g = fold_batch_norm(g)
    g = fold_flatten_transpose(g)
    g = fold_affine_chains(g)
    g = fuse_activations(g)
    if input_layout.upper() == "NCHW":
        g = accept_nchw_input(g)
    elif input_layout.upper() != "NHWC":
        raise ModelError(f"input_layout must be 'NHWC' (default) or 'NCHW', got {input_layout!r}")
    return g


def compile_model(model, example_input=None, *, calibration=None, data=None, name: str = "model",
                  alignment: int = 4, input_layout: str = "NHWC", input_dtype: str = "int8",
                  observer: str = "auto", layer_observers: dict | None = None, strict: bool = False,
                  float_model=None) -> CompiledModel:
    """Compile a model to int8 C.

    example_input and calibration are in PyTorch's layout (e.g. NCHW); for a float .tflite, in its own (NHWC).
    The compiled model takes NHWC input (no run-time permute); input_layout="NCHW" adds one transpose at the
    start instead. input_dtype="uint8" makes the input uint8 (zero point + 128), converted in place by one
    cheap first step.

    observer chooses how each activation range is estimated from the calibration samples ("auto", "minmax",
    "percentile", "mse"); layer_observers overrides it per layer or tensor name. data= are samples used only to
    check the compiled model (never to calibrate): the check report is cm.check. strict=True turns calibration
    warnings into a CalibrationError (for CI). float_model= is the float .tflite an int8 .tflite came from.
    """
    name = _check_name(name)
    if is_tflite(model):
        from tinyaot.frontend.tflite import is_float_tflite

        if is_float_tflite(model):
            return _compile_float_tflite(model, calibration=calibration, data=data, name=name,
                                         alignment=alignment, input_dtype=input_dtype, observer=observer,
                                         layer_observers=layer_observers, strict=strict)
        cm = compile_tflite(model, name=name, alignment=alignment)
        if calibration is not None:
            warnings.warn("calibration is ignored: this .tflite model is already int8", stacklevel=3)
        return _finish(cm, [], data, strict, float_model=float_model)
    from tinyaot.frontend.pt2e import is_pt2e

    if is_pt2e(model):
        if calibration is not None:
            warnings.warn("calibration is ignored: a PT2E-converted graph is already quantized", stacklevel=3)
        cm = compile_pt2e(model, example_input, name=name, alignment=alignment, input_layout=input_layout)
        return _finish(cm, check_pt2e_example(example_input, cm), data, strict)
    float_graph = float_passes(import_float_model(model, example_input), input_layout)
    if calibration is None:
        raise CalibrationError(
            "a float model needs calibration samples: pass calibration= a few hundred representative "
            "inputs (an array/tensor shaped (N, ...) like the example input, or an iterable of batches)"
        )
    samples = as_sample_batch(calibration, tuple(example_input.shape[1:]))
    batch = torch_to_model_layout(samples.batch, float_graph.layout, float_graph.torch_input_rank)
    return _quantize_and_plan(name, float_graph, samples, batch, data=data, alignment=alignment,
                              input_dtype=input_dtype, observer=observer, layer_observers=layer_observers,
                              strict=strict)


def _compile_float_tflite(model, *, calibration, data, name, alignment, input_dtype, observer, layer_observers,
                          strict) -> CompiledModel:
    """A float .tflite: import it as a float graph and quantize it with tinyaot's own calibration."""
    from tinyaot.frontend.tflite import from_tflite_float

    float_graph = float_passes(from_tflite_float(model))
    if calibration is None:
        raise CalibrationError(
            "a float .tflite model needs calibration samples: pass calibration= a few hundred representative "
            "inputs in the model's own layout (NHWC for images), shaped (N, ...) like its input"
        )
    shape = tuple(float_graph.tensor(float_graph.inputs[0]).shape[1:])
    samples = as_sample_batch(calibration, shape)
    return _quantize_and_plan(name, float_graph, samples, samples.batch, data=data, alignment=alignment,
                              input_dtype=input_dtype, observer=observer, layer_observers=layer_observers,
                              strict=strict)


def _quantize_and_plan(name, float_graph, samples, batch, *, data, alignment, input_dtype, observer,
                       layer_observers, strict) -> CompiledModel:
    findings = check_samples(samples, float_graph)
    calib = collect_ranges(float_graph, batch, observer=observer, layer_observers=layer_observers)
    findings += check_ranges(float_graph, calib, observer)
    int8_graph, lowering_findings = lower_to_int8(float_graph, calib.ranges)
    findings += lowering_findings
    if input_dtype == "uint8":
        int8_graph = accept_uint8_input(int8_graph)
    elif input_dtype != "int8":
        raise ModelError(f"input_dtype must be 'int8' (default) or 'uint8', got {input_dtype!r}")
    memory = plan(int8_graph, alignment)
    float_memory = plan(float_graph, alignment)
    cm = CompiledModel(name, float_graph, int8_graph, memory, float_memory, calibration=calib)
    return _finish(cm, findings, data, strict)


def _finish(cm: CompiledModel, findings: list, data, strict: bool, float_model=None) -> CompiledModel:
    """Calibration findings become warnings (errors when strict); data= runs the trust check."""
    cm.findings = list(findings)
    if data is not None:
        cm.check = cm.check_data(data, float_model=float_model)
        cm.findings += cm.check.findings
    raise_or_warn(cm.findings, strict, cm.name)
    return cm
