"""CompiledModel: what `tinyaot.compile` returns; runs on every engine and reports its numbers."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from tinyaot.backend import plan_and_generate
from tinyaot.codegen import generate_c
from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.ir import Graph, QParams
from tinyaot.ir.layout import torch_sample_shape, torch_to_model_layout
from tinyaot.plan import MemoryPlan
from tinyaot.plan.contract import contract_report
from tinyaot.quantize.calibrate import as_real_array, as_sample_batch, as_sample_batches
from tinyaot.quantize.float_eval import evaluate
from tinyaot.quantize.scheme import quantize_array
from tinyaot.report.budget import check_target_memory
from tinyaot.report.memory import MemoryReport
from tinyaot.report.profile import profile
from tinyaot.report.quant_error import compare_float_tflite, layer_errors
from tinyaot.report.sram_offer import sram_offer
from tinyaot.result import CompileResult, PassTime, StreamWindow
from tinyaot.targets.engines import ENGINES, engine_named, host_build
from tinyaot.targets.pico2 import export_pico2
from tinyaot.targets.sizes import m33_code_bytes
from tinyaot.targets.stream import open_stream


class CompiledModel:
    """A read-only view of a CompileResult (cm.result): its numbers, its C, and runs on every engine. Nothing
    writes into it; what it remembers of its own use (the latest Cortex-M33 run, the window model of a streamed
    one) it keeps privately."""

    def __init__(self, result: CompileResult):
        object.__setattr__(self, "_result", result)
        object.__setattr__(self, "_memo", _Memo())

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"CompiledModel is read-only: cannot set {name!r}. It shows what the compile made "
                             "(cm.result, a frozen CompileResult); compile again with other options, or build a "
                             "CompiledModel from dataclasses.replace(cm.result, ...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CompiledModel is read-only: cannot delete {name!r}")

    # ---- what the compile made (CompileResult's fields) -------------------------------------
    @property
    def result(self) -> CompileResult:
        return self._result

    @property
    def name(self) -> str:
        return self._result.name

    @property
    def graph(self) -> Graph:
        return self._result.graph

    @property
    def plan(self) -> MemoryPlan:
        return self._result.plan

    @property
    def float_plan(self) -> MemoryPlan:
        return self._result.float_plan

    @property
    def float_graph(self) -> Graph | None:
        return self._result.float_graph

    @property
    def reference_graph(self) -> Graph | None:
        """What int8 is checked against: the float model, or for an imported int8 model the float model its
        integers stand for (weights dequantized, activations unrounded)."""
        r = self._result
        return r.reference_graph if r.reference_graph is not None else r.float_graph

    @property
    def calibration(self):
        """quantize.observers.Calibration (PTQ only)."""
        return self._result.calibration

    @property
    def findings(self) -> list:
        """diagnostics.Finding: what compilation noticed (a fresh list: the result keeps a tuple)."""
        return list(self._result.findings)

    @property
    def check(self):
        """report.quant_error.QuantReport of the data= samples (None without data=)."""
        return self._result.check

    @property
    def budget(self):
        """report.budget.Budget: does the model fit its target's flash and RAM?"""
        return self._result.budget

    @property
    def tradeoffs(self):
        """budgets.Tradeoffs: the plans a ram= / flash= compile weighed and the one it chose (None without)."""
        return self._result.tradeoffs

    @property
    def unconstrained_arena_bytes(self) -> int | None:
        """The arena without preserve_input / separate_output."""
        return self._result.unconstrained_arena_bytes

    @property
    def int16_layers(self) -> dict:
        """Layer -> why it has int16 activations (quantize/mixed.py)."""
        return dict(self._result.int16_layers)

    @property
    def stream_info(self):
        """passes.streaming.StreamInfo of a model compiled with stream=True (None otherwise)."""
        return self._result.stream_info

    @property
    def window(self) -> StreamWindow | None:
        """The full window a streamed model came from (None for a model not streamed)."""
        return self._result.window

    @property
    def timings(self) -> tuple[PassTime, ...]:
        """Each pass's time, in the order they ran."""
        return self._result.timings

    @property
    def last_m33(self):
        """M33Result of the latest run on the "m33" engine (None before one)."""
        return self._memo.last_m33

    # ---- numbers -------------------------------------------------------------------------
    @property
    def calibration_size(self) -> int:
        return self.calibration.samples if self.calibration is not None else 0

    @property
    def calibration_ranges(self) -> dict:
        """Tensor -> the real range its int8 covers, as calibration chose it (PTQ only)."""
        return self.calibration.ranges if self.calibration is not None else {}

    @property
    def arena_bytes(self) -> int:
        return self.plan.arena_bytes

    @property
    def state_bytes(self) -> int:
        """The state region: what stateful layers (a streamed conv's past frames, an SVDF's state) keep between
        invokes."""
        return self.plan.state_bytes

    @property
    def ram_bytes(self) -> int:
        """Arena + state + the constants compiled into SRAM (sram_constants): the model's static RAM (the stack
        comes on top: cm.last_m33.stack_bytes)."""
        return self.plan.arena_bytes + self.plan.state_bytes + self.sram_constant_bytes

    def window_model(self) -> CompiledModel:
        """A streamed model's full-window twin: the same int8 graph (same weights and qparams) before the
        streaming conversion, planned and generated on first use."""
        if self.window is None:
            raise ModelError(f"'{self.name}' was not compiled with stream=True: it is its own full-window model")
        if self._memo.window_model is None:
            self._memo.window_model = CompiledModel(plan_and_generate(
                f"{self.name}_window", self._result.options, self.window.graph, self.window.float_graph,
                calibration=self.calibration))
        return self._memo.window_model

    def stream(self, engine: str = "reference"):
        """A stream over this model: step(frame) runs one invoke on the same state, reset() starts again.
        ("reference" or "host"; cm.run(frames, engine=...) runs a whole batch as one stream from a reset.)"""
        return open_stream(self, engine)

    @property
    def contract(self):
        """plan.contract.ContractReport: whether invoke keeps the input, whether the output sits over it, and
        the arena bytes preserve_input / separate_output cost."""
        return contract_report(self.plan, self.graph, self.unconstrained_arena_bytes)

    @property
    def lower_bound_bytes(self) -> int:
        return self.plan.lower_bound

    @property
    def float_arena_bytes(self) -> int:
        """What the same plan needs with fp32 activations (weights excluded, as for int8)."""
        return self.float_plan.arena_bytes

    @property
    def float_weight_bytes(self) -> int:
        """fp32 parameters; for an imported int8 model (no float graph), its constants at 4 bytes each."""
        if self.float_graph is None:
            return sum(t.size * 4 for t in self.graph.constants())
        return sum(t.nbytes for t in self.float_graph.constants())

    def _need_float_graph(self, what: str) -> None:
        if self.reference_graph is None:
            raise ModelError(f"{what} needs a float model to compare with, and '{self.name}' has none")

    @property
    def constant_bytes(self) -> int:
        """Flash the constants take (those compiled into SRAM included: flash holds the copy start-up reads)."""
        return self.c_sources.const_bytes

    @property
    def sram_constant_bytes(self) -> int:
        """Of constant_bytes, the arrays start-up copies to SRAM (compile(sram_constants=...)): RAM as well."""
        return self.c_sources.sram_const_bytes

    def sram_offer(self, target_memory=None):
        """Which layers' constants are worth copying to SRAM on a Pico 2 (report/sram_offer.py), and what it
        costs; None when the constants already fit the XIP cache or no RAM is left."""
        options = self._result.options
        given = target_memory if target_memory is not None else options.target_memory if options is not None else None
        target = check_target_memory(given)
        return sram_offer(self.c_sources, self.ram_bytes, target.ram_bytes)

    @cached_property
    def code_bytes(self) -> int | None:
        """Bytes of machine code (model + kernels) for Cortex-M33, or None without the toolchain."""
        return m33_code_bytes(self.c_sources)

    @property
    def flash_bytes(self) -> int | None:
        """Constants + Cortex-M33 code; None when the code cannot be measured (no arm-none-eabi-gcc), rather
        than a figure that silently leaves the code out (constant_bytes is always known)."""
        code = self.code_bytes
        return None if code is None else self.constant_bytes + code

    # One-input one-output models give plain values; a model with several inputs (outputs) gives lists with one
    # entry per input (output), in the model's order.
    @property
    def n_inputs(self) -> int:
        return len(self.graph.inputs)

    @property
    def n_outputs(self) -> int:
        return len(self.graph.outputs)

    def _per(self, tensors, value):
        got = [value(self.graph.tensor(t)) for t in tensors]
        return got[0] if len(got) == 1 else got

    @property
    def input_qparams(self):
        """(scale, zero_point) of the input; a list of them for a model with several inputs."""
        return self._per(self.graph.inputs, lambda t: _pair(t.qparams))

    @property
    def output_qparams(self):
        return self._per(self.graph.outputs, lambda t: _pair(t.qparams))

    @property
    def input_shape(self):
        return self._per(self.graph.inputs, lambda t: t.shape)

    @property
    def output_shape(self):
        return self._per(self.graph.outputs, lambda t: t.shape)

    @property
    def input_size(self):
        return self._per(self.graph.inputs, lambda t: t.nbytes)

    @property
    def output_size(self):
        return self._per(self.graph.outputs, lambda t: t.nbytes)

    @property
    def input_sizes(self) -> list[int]:
        """Bytes of each input, in order (every model: a list of one for a one-input model)."""
        return [self.graph.tensor(t).nbytes for t in self.graph.inputs]

    @property
    def output_sizes(self) -> list[int]:
        return [self.graph.tensor(t).nbytes for t in self.graph.outputs]

    # ---- code -----------------------------------------------------------------------------
    @cached_property
    def c_sources(self):
        """The generated C (codegen.CSources): the pipeline's, or generated on first use for a result built by
        hand."""
        if self._result.sources is not None:
            return self._result.sources
        options = self._result.options
        return generate_c(self.graph, self.plan, self.name, options.sram_constants if options is not None else ())

    def export(self, directory, target: str = "c", inputs=None, labels=None, **pico2_options) -> list[Path]:
        """Write the generated C (target "c") or a Pico SDK project (target "pico2") into `directory`.

        `inputs`/`labels` are the pico2 project's embedded test vectors and expected classes; other keyword
        arguments are options of targets.pico2.export_pico2. Returns the files written.
        """
        if target == "pico2":
            return export_pico2(self, directory, inputs=inputs, labels=labels, **pico2_options)
        if pico2_options:
            raise ModelError(f"{', '.join(sorted(pico2_options))}: options of target 'pico2' only")
        if target != "c":
            raise ModelError(f"unknown export target {target!r}; available: 'c', 'pico2'")
        if inputs is not None or labels is not None:
            raise ModelError("inputs and labels are test vectors for target 'pico2'; target 'c' writes only the model")
        return self.c_sources.write(Path(directory))

    # ---- running --------------------------------------------------------------------------
    def _as_batch(self, x):
        """(batch, form): the input as a batch in the model's shape, and how it came (one, sample, batch...).
        Several inputs: a list with one batch per input, all in the same form and with the same count."""
        if self.n_inputs == 1:
            return self._as_one_batch(x, self.graph.inputs[0], "the input")
        if not isinstance(x, (list, tuple)) or len(x) != self.n_inputs:
            raise ModelError(f"model '{self.name}' has {self.n_inputs} inputs: pass a list with one array per input "
                             f"(shapes {', '.join(str(s) for s in self.input_shape)}), got {type(x).__name__}"
                             + (f" of {len(x)}" if isinstance(x, (list, tuple)) else ""))
        got = [self._as_one_batch(v, t, f"input {i}") for i, (v, t) in enumerate(zip(x, self.graph.inputs))]
        forms, counts = {f for _, f in got}, {len(b) for b, _ in got}
        if len(counts) != 1:
            raise ModelError(f"the inputs hold {', '.join(str(len(b)) for b, _ in got)} samples: pass the same "
                             "number of samples for every input")
        single = {"one", "sample"}
        return [b for b, _ in got], (got[0][1] if len(forms) == 1 or forms <= single else "batch")

    def _as_one_batch(self, x, tensor: str, what: str) -> tuple[np.ndarray, str]:
        x = np.asarray(x)
        shape = self.graph.tensor(tensor).shape
        sample = shape[1:]
        if x.size == 0:
            raise ModelError(f"{what} of shape {x.shape} is empty; model '{self.name}' takes {shape} (or a batch "
                             f"shaped (N, {', '.join(map(str, sample))}) with N >= 1)")
        if x.shape == shape:
            return x.reshape((1,) + shape), "one"
        if x.shape == sample:
            return x.reshape((1,) + shape), "sample"
        if x.shape[1:] == sample:
            return x.reshape((len(x),) + shape), "batch-of-samples"
        if x.shape[1:] == shape:
            return x.reshape((len(x),) + shape), "batch"
        raise ModelError(
            f"{what} of shape {x.shape} does not fit model '{self.name}', which takes {shape} "
            f"(or a batch shaped (N, {', '.join(map(str, sample))}))"
        )

    def _shape_like(self, out, form: str, tensors=None):
        """Give outputs the batch form the inputs came in (a list of them for several outputs)."""
        tensors = self.graph.outputs if tensors is None else tensors
        if len(tensors) > 1:
            return [self._shape_like(o, form, [t]) for o, t in zip(out, tensors)]
        per = self.graph.tensor(tensors[0]).shape
        sample = per[1:] if per[:1] == (1,) else per  # an output whose dim 0 a reshape filled is one sample whole
        if form == "one":
            return out.reshape(per)
        if form == "sample":
            return out.reshape(sample)
        if form == "batch-of-samples":
            return out.reshape((len(out),) + sample)
        return out.reshape((len(out),) + per)

    def run(self, x, engine: str = "reference", arena_bytes: int | None = None):
        """Integers in and out, each input and output in its own dtype (int8; uint8 at a uint8 boundary, int16 at a
        16x8 one, int32 after a QUANTIZE: input_dtype, output_dtype). `x` is one input or a batch of them (dim 0);
        for a model with several inputs, a list with one such array per input, and a model with several outputs
        returns a list of them. A model with state (stream=True, an imported SVDF or LSTM) runs the batch as one stream:
        every call starts from a reset, then one invoke per sample in order on the same instance (cm.stream() keeps
        a stream going across calls)."""
        runner = engine_named(engine)  # targets/engines.py: the registry of engines
        batch, form = self._as_batch(x)
        batches = batch if isinstance(batch, list) else [batch]
        for i, b in enumerate(batches):
            dtype = np.dtype(self.graph.tensor(self.graph.inputs[i]).dtype)
            if b.dtype != dtype:
                info = np.iinfo(dtype)
                if not np.issubdtype(b.dtype, np.integer) or b.min() < info.min or b.max() > info.max:
                    scale, zp = _pair(self.graph.tensor(self.graph.inputs[i]).qparams)
                    raise ModelError(
                        f"run() takes {dtype} inputs (got {b.dtype}); use run_float() for float inputs "
                        f"or quantize with scale={scale:.6g}, zero_point={zp}"
                    )
                batches[i] = b.astype(dtype)
        result = runner.run(self, batches if isinstance(batch, list) else batches[0], arena_bytes)
        if runner.emulated:
            self._memo.last_m33 = result
        return self._shape_like(result.outputs, form)

    def _host_model(self, arena_bytes: int | None):
        model = host_build(self).model  # the host library, built once and loaded
        model.init(arena_bytes)
        return model

    @property
    def input_dtype(self):
        """"int8"; "uint8" for a model compiled with input_dtype="uint8" or a .tflite with a uint8 input (a
        legacy converter's, QUANTIZE to int8 inside); "int16" for a 16x8 .tflite's int16 input. A list for a
        model with several inputs."""
        return self._per(self.graph.inputs, lambda t: t.dtype)

    @property
    def output_dtype(self):
        """"int8", "uint8" (a .tflite whose output is QUANTIZE to uint8), "int16" (16x8) or "int32" (a QUANTIZE's); a
        list for several outputs."""
        return self._per(self.graph.outputs, lambda t: t.dtype)

    @property
    def input_layout(self):
        """"NHWC" (channels-last feature map), "NCHW" (compiled with input_layout="NCHW") or "plain"; a list for a
        model with several inputs."""
        return self._per(self.graph.inputs, lambda t: self.graph.io_layout_of(t.name)[0])

    def to_model_layout(self, x):
        """A batch in PyTorch's channels-first layout -> the layout this model takes (NCHW -> NHWC); a list with
        one batch per input for a model with several."""
        return self._each_input(x, lambda v, t: torch_to_model_layout(np.asarray(v), *self.graph.io_layout_of(t)))

    def _each_input(self, x, fn):
        if self.n_inputs == 1:
            return fn(x, self.graph.inputs[0])
        if not isinstance(x, (list, tuple)) or len(x) != self.n_inputs:
            raise ModelError(f"model '{self.name}' has {self.n_inputs} inputs: pass a list with one array per input")
        return [fn(v, t) for v, t in zip(x, self.graph.inputs)]

    def quantize_input(self, x):
        """Host-side helper: float input -> int8 with the published scale and zero point (a list in, a list out
        for a model with several inputs)."""
        return self._each_input(x, self._quantize_one)

    def _quantize_one(self, x, tensor: str) -> np.ndarray:
        x = _real(x)
        if x.size == 0:
            raise ModelError(f"the input of shape {x.shape} is empty; pass at least one input")
        if not np.isfinite(x).all():
            raise ModelError("input holds NaN/Inf values; int8 cannot represent them")
        scale, zp = _pair(self.graph.tensor(tensor).qparams)
        dtype = self.graph.tensor(tensor).dtype
        info = np.iinfo(dtype)
        lo, hi = scale * (info.min - zp), scale * (info.max - zp)
        outside = float(np.mean((x < lo - scale / 2) | (x > hi + scale / 2)))
        if outside > 0.01:
            warnings.warn(
                f"{outside:.1%} of input values fall outside the calibrated range [{lo:.4g}, {hi:.4g}] "
                "and saturate; calibrate on data that covers the inputs you run",
                stacklevel=4,
            )
        return quantize_array(x, QParams.per_tensor(scale, zp), dtype)

    def dequantize_output(self, y):
        if self.n_outputs > 1:
            if not isinstance(y, (list, tuple)) or len(y) != self.n_outputs:
                raise ModelError(f"model '{self.name}' has {self.n_outputs} outputs: pass a list with one array "
                                 "per output")
            return [(np.asarray(v, dtype=np.float64) - zp) * scale for v, (scale, zp) in zip(y, self.output_qparams)]
        scale, zp = self.output_qparams
        return (np.asarray(y, dtype=np.float64) - zp) * scale

    def run_float(self, x, engine: str = "reference"):
        """Float in, float out: quantize on the host, run int8, dequantize on the host."""
        return self.dequantize_output(self.run(self.quantize_input(x), engine=engine))

    def float_reference(self, x):
        """The float model (after BN folding/fusion) evaluated in NumPy; for an imported int8 model, the float
        model its integers stand for (quantize/dequantize.py)."""
        self._need_float_graph("float_reference()")
        x = self._each_input(x, lambda v, t: _real(v))
        batch, form = self._as_batch(x)
        g = self.reference_graph
        y = evaluate(g, [b.reshape((-1,) + b.shape[2:]) for b in batch] if isinstance(batch, list)
                     else batch.reshape((-1,) + batch.shape[2:]))
        outs = [y[t] for t in g.outputs]
        return self._shape_like(outs[0] if len(outs) == 1 else outs, form)

    # ---- reports --------------------------------------------------------------------------
    def report(self):
        return MemoryReport.of(self)

    def profile(self, x=None, mix: bool = False):
        """Exact Cortex-M33 instructions per op for one inference (x: one int8 input; zeros by default); mix=True
        also counts each op's loads, stores, multiplies and branches (QEMU plugin; needs a host C compiler)."""
        return profile(self, x, mix=mix)

    def layer_errors(self, samples, labels=None):
        """int8 vs float per layer on float `samples` in the model's input layout (as for run_float)."""
        return layer_errors(self, samples, labels=labels)

    def check_data(self, data, labels=None, float_model=None, model_layout: bool = False):
        """The trust check of compile(data=): `data` in PyTorch's layout like the calibration samples (or in the
        model's with model_layout=True; or (inputs, labels)); a float .tflite `float_model` adds the output
        agreement with it."""
        if isinstance(data, tuple) and len(data) == 2 and labels is None and self.n_inputs == 1:
            data, labels = data
        g = self.graph
        shapes = [tuple(g.tensor(t).shape[1:]) for t in g.inputs]
        if not model_layout:
            shapes = [torch_sample_shape(s, *g.io_layout_of(t)) for s, t in zip(shapes, g.inputs)]
        if self.n_inputs == 1:
            x = as_sample_batch(data, shapes[0], "data").batch
        else:
            x = [s.batch for s in as_sample_batches(data, shapes, "data")]
        if not model_layout:
            x = self.to_model_layout(x)
        if labels is not None:
            labels = _labels(labels, len(x[0]) if isinstance(x, list) else len(x))
        report = self.layer_errors(x, labels=labels)
        if float_model is not None:
            report.extra["float .tflite"] = compare_float_tflite(self, float_model, x)
        return report


@dataclass
class _Memo:
    """What a CompiledModel remembers of its own use (not of the compile)."""

    last_m33: object = None  # M33Result of the latest m33 run
    window_model: CompiledModel | None = None  # a streamed model's full-window twin, planned on first use


def _labels(labels, n: int) -> np.ndarray:
    """One integer class per data sample."""
    y = as_real_array(labels, "labels", ModelError).reshape(-1)
    if len(y) != n or not np.array_equal(y, np.round(y)):
        what = f"{len(y)} labels" if len(y) != n else "labels that are not whole numbers"
        raise ModelError(f"data has {n} inputs but {what}: give one class index per input")
    return y.astype(np.int64)


def _real(x) -> np.ndarray:
    """Float64 from real numbers only (text, complex, object arrays are a ModelError, not a NumPy crash)."""
    return as_real_array(x, "input", ModelError)


def _pair(qp: QParams) -> tuple[float, int]:
    return float(qp.scale[0]), int(qp.zero_point[0])


__all__ = ["CompiledModel", "ENGINES", "TinyAOTError"]
