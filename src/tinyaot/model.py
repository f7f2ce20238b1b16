"""CompiledModel: what `tinyaot.compile` returns; runs on every engine and reports its numbers."""
from __future__ import annotations

import warnings
from functools import cached_property
from pathlib import Path

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError
from tinyaot.ir import Graph, QParams
from tinyaot.plan import MemoryPlan
from tinyaot.quantize.float_eval import evaluate
from tinyaot.quantize.scheme import quantize_array
from tinyaot.targets.engines import ENGINES


class CompiledModel:
    def __init__(self, name: str, float_graph: Graph | None, graph: Graph, plan: MemoryPlan,
                 float_plan: MemoryPlan, calibration=None, reference_graph: Graph | None = None,
                 unconstrained_arena_bytes: int | None = None, c_sources=None):
        self.name = name
        if c_sources is not None:  # the pipeline's code generation stage; generated on first use otherwise
            self.__dict__["c_sources"] = c_sources
        self.float_graph = float_graph
        # What int8 is checked against: the float model, or for an imported int8 model the float model its
        # integers stand for (weights dequantized, activations unrounded).
        self.reference_graph = reference_graph if reference_graph is not None else float_graph
        self.calibration = calibration  # quantize.observers.Calibration (PTQ only)
        self.findings: list = []  # diagnostics.Finding: what compilation noticed
        self.check = None  # report.quant_error.QuantReport of the data= samples
        self.graph = graph
        self.plan = plan
        self.float_plan = float_plan
        self.unconstrained_arena_bytes = unconstrained_arena_bytes  # the arena without preserve/separate
        self._host = None
        self.last_m33 = None  # M33Result of the latest m33 run

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
    def contract(self):
        """plan.contract.ContractReport: whether invoke keeps the input, whether the output sits over it, and
        the arena bytes preserve_input / separate_output cost."""
        from tinyaot.plan.contract import contract_report

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
        return self.c_sources.const_bytes

    @cached_property
    def code_bytes(self) -> int | None:
        """Bytes of machine code (model + kernels) for Cortex-M33, or None without the toolchain."""
        from tinyaot.targets.sizes import m33_code_bytes

        return m33_code_bytes(self.c_sources)

    @property
    def flash_bytes(self) -> int | None:
        """Constants + Cortex-M33 code; None when the code cannot be measured (no arm-none-eabi-gcc), rather
        than a figure that silently leaves the code out (constant_bytes is always known)."""
        code = self.code_bytes
        return None if code is None else self.constant_bytes + code

    @property
    def input_qparams(self) -> tuple[float, int]:
        return _pair(self.graph.tensor(self.graph.inputs[0]).qparams)

    @property
    def output_qparams(self) -> tuple[float, int]:
        return _pair(self.graph.tensor(self.graph.outputs[0]).qparams)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.graph.tensor(self.graph.inputs[0]).shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.graph.tensor(self.graph.outputs[0]).shape

    @property
    def input_size(self) -> int:
        return self.graph.tensor(self.graph.inputs[0]).nbytes

    @property
    def output_size(self) -> int:
        return self.graph.tensor(self.graph.outputs[0]).nbytes

    # ---- code -----------------------------------------------------------------------------
    @cached_property
    def c_sources(self):
        from tinyaot.codegen import generate_c

        return generate_c(self.graph, self.plan, self.name)

    def export(self, directory, target: str = "c", inputs=None, labels=None, **pico2_options) -> list[Path]:
        """Write the generated C (target "c") or a Pico SDK project (target "pico2") into `directory`.

        `inputs`/`labels` are the pico2 project's embedded test vectors and expected classes; other keyword
        arguments are options of targets.pico2.export_pico2. Returns the files written.
        """
        if target == "pico2":
            from tinyaot.targets.pico2 import export_pico2

            return export_pico2(self, directory, inputs=inputs, labels=labels, **pico2_options)
        if pico2_options:
            raise ModelError(f"{', '.join(sorted(pico2_options))}: options of target 'pico2' only")
        if target != "c":
            raise ModelError(f"unknown export target {target!r}; available: 'c', 'pico2'")
        if inputs is not None or labels is not None:
            raise ModelError("inputs and labels are test vectors for target 'pico2'; target 'c' writes only the model")
        return self.c_sources.write(Path(directory))

    # ---- running --------------------------------------------------------------------------
    def _as_batch(self, x: np.ndarray) -> tuple[np.ndarray, bool]:
        x = np.asarray(x)
        shape, sample = self.input_shape, self.input_shape[1:]
        if x.size == 0:
            raise ModelError(f"the input of shape {x.shape} is empty; model '{self.name}' takes {shape} (or a batch "
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
            f"input of shape {x.shape} does not fit model '{self.name}', which takes {shape} "
            f"(or a batch shaped (N, {', '.join(map(str, sample))}))"
        )

    def _shape_like(self, out: np.ndarray, form: str) -> np.ndarray:
        """Give outputs the batch form the inputs came in."""
        per = self.output_shape
        if form == "one":
            return out.reshape(per)
        if form == "sample":
            return out.reshape(per[1:])
        if form == "batch-of-samples":
            return out.reshape((len(out),) + per[1:])
        return out.reshape((len(out),) + per)

    def run(self, x, engine: str = "reference", arena_bytes: int | None = None) -> np.ndarray:
        """int8 in, int8 out. `x` is one input or a batch of them (dim 0)."""
        from tinyaot.targets.engines import engine_named

        runner = engine_named(engine)  # targets/engines.py: the registry of engines
        batch, form = self._as_batch(x)
        dtype = np.dtype(self.input_dtype)
        if batch.dtype != dtype:
            info = np.iinfo(dtype)
            if not np.issubdtype(batch.dtype, np.integer) or batch.min() < info.min or batch.max() > info.max:
                raise ModelError(
                    f"run() takes {dtype} inputs (got {batch.dtype}); use run_float() for float inputs "
                    f"or quantize with scale={self.input_qparams[0]:.6g}, zero_point={self.input_qparams[1]}"
                )
            batch = batch.astype(dtype)
        result = runner.run(self, batch, arena_bytes)
        if runner.emulated:
            self.last_m33 = result
        return self._shape_like(result.outputs, form)

    def _host_model(self, arena_bytes: int | None):
        from tinyaot.targets.engines import host_build

        model = host_build(self).model  # the host library, built once and loaded
        model.init(arena_bytes)
        return model

    @property
    def input_dtype(self) -> str:
        """"int8", or "uint8" for a model compiled with input_dtype="uint8"."""
        return self.graph.tensor(self.graph.inputs[0]).dtype

    @property
    def input_layout(self) -> str:
        """"NHWC" (channels-last feature map), "NCHW" (compiled with input_layout="NCHW") or "plain"."""
        return self.graph.layout

    def to_model_layout(self, x) -> np.ndarray:
        """A batch in PyTorch's channels-first layout -> the layout this model takes (NCHW -> NHWC)."""
        from tinyaot.ir.layout import torch_to_model_layout

        return torch_to_model_layout(np.asarray(x), self.graph.layout, self.graph.torch_input_rank)

    def quantize_input(self, x) -> np.ndarray:
        """Host-side helper: float input -> int8 with the published scale and zero point."""
        x = _real(x)
        if x.size == 0:
            raise ModelError(f"the input of shape {x.shape} is empty; pass at least one input")
        if not np.isfinite(x).all():
            raise ModelError("input holds NaN/Inf values; int8 cannot represent them")
        scale, zp = self.input_qparams
        info = np.iinfo(self.input_dtype)
        lo, hi = scale * (info.min - zp), scale * (info.max - zp)
        outside = float(np.mean((x < lo - scale / 2) | (x > hi + scale / 2)))
        if outside > 0.01:
            warnings.warn(
                f"{outside:.1%} of input values fall outside the calibrated range [{lo:.4g}, {hi:.4g}] "
                "and saturate; calibrate on data that covers the inputs you run",
                stacklevel=3,
            )
        return quantize_array(x, QParams.per_tensor(scale, zp), self.input_dtype)

    def dequantize_output(self, y) -> np.ndarray:
        scale, zp = self.output_qparams
        return (np.asarray(y, dtype=np.float64) - zp) * scale

    def run_float(self, x, engine: str = "reference") -> np.ndarray:
        """Float in, float out: quantize on the host, run int8, dequantize on the host."""
        return self.dequantize_output(self.run(self.quantize_input(x), engine=engine))

    def float_reference(self, x) -> np.ndarray:
        """The float model (after BN folding/fusion) evaluated in NumPy; for an imported int8 model, the float
        model its integers stand for (quantize/dequantize.py)."""
        self._need_float_graph("float_reference()")
        batch, form = self._as_batch(_real(x))
        g = self.reference_graph
        y = evaluate(g, batch.reshape((-1,) + self.input_shape[1:]))
        return self._shape_like(y[g.outputs[0]], form)

    # ---- reports --------------------------------------------------------------------------
    def report(self):
        from tinyaot.report.memory import MemoryReport

        return MemoryReport.of(self)

    def profile(self, x=None, mix: bool = False):
        """Exact Cortex-M33 instructions per op for one inference (x: one int8 input; zeros by default); mix=True
        also counts each op's loads, stores, multiplies and branches (QEMU plugin; needs a host C compiler)."""
        from tinyaot.report.profile import profile

        return profile(self, x, mix=mix)

    def layer_errors(self, samples, labels=None):
        """int8 vs float per layer on float `samples` in the model's input layout (as for run_float)."""
        from tinyaot.report.quant_error import layer_errors

        return layer_errors(self, samples, labels=labels)

    def check_data(self, data, labels=None, float_model=None, model_layout: bool = False):
        """The trust check of compile(data=): `data` in PyTorch's layout like the calibration samples (or in the
        model's with model_layout=True; or (inputs, labels)); a float .tflite `float_model` adds the output
        agreement with it."""
        from tinyaot.ir.layout import torch_sample_shape
        from tinyaot.quantize.calibrate import as_sample_batch
        from tinyaot.report.quant_error import compare_float_tflite

        if isinstance(data, tuple) and len(data) == 2 and labels is None:
            data, labels = data
        g = self.graph
        if model_layout:
            x = as_sample_batch(data, tuple(self.input_shape[1:]), "data").batch
        else:
            shape = torch_sample_shape(tuple(self.input_shape[1:]), g.layout, g.torch_input_rank)
            x = self.to_model_layout(as_sample_batch(data, shape, "data").batch)
        report = self.layer_errors(x, labels=labels)
        if float_model is not None:
            report.extra["float .tflite"] = compare_float_tflite(self, float_model, x)
        return report


def _real(x) -> np.ndarray:
    """Float64 from real numbers only (text, complex, object arrays are a ModelError, not a NumPy crash)."""
    from tinyaot.quantize.calibrate import as_real_array

    return as_real_array(x, "input", ModelError)


def _pair(qp: QParams) -> tuple[float, int]:
    return float(qp.scale[0]), int(qp.zero_point[0])


__all__ = ["CompiledModel", "ENGINES", "TinyAOTError"]
