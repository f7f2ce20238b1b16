"""Per-layer quantization error: where int8 drifts from float, and where calibration fell short.

Runs the float graph and the int8 reference interpreter side by side on the same samples and compares
every op's output (dequantized) with its float value. Saturation (float values outside the int8
range chosen at calibration) is the tell-tale of calibration data that does not cover the inputs.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from tinyaot.quantize.float_eval import evaluate

SATURATION_WARN = 0.01  # warn when more than 1% of a layer's values clip


@dataclass(frozen=True)
class LayerError:
    layer: str
    op: str
    tensor: str
    scale: float
    sqnr_db: float  # signal-to-quantization-noise ratio, higher is better
    mean_abs_steps: float  # mean |int8 - float| in output quantization steps
    max_abs_steps: float
    saturated: float  # fraction of float values outside the calibrated int8 range


@dataclass(frozen=True)
class LayerErrorReport:
    model: str
    samples: int
    layers: tuple[LayerError, ...]

    @property
    def warnings(self) -> list[str]:
        out = []
        for e in self.layers:
            if e.saturated > SATURATION_WARN:
                out.append(f"layer '{e.layer}': {e.saturated:.1%} of values fall outside the calibrated range and "
                           "saturate; calibrate on data that covers these inputs")
        return out

    def to_dict(self) -> dict:
        return {"model": self.model, "samples": self.samples, "layers": [asdict(e) for e in self.layers],
                "warnings": self.warnings}

    def __rich_console__(self, console, options):
        from rich.table import Table

        t = Table(title=f"int8 vs float per layer of '{self.model}' ({self.samples} samples)")
        for col in ("layer", "op", "SQNR dB", "mean |err| steps", "max |err| steps", "saturated"):
            t.add_column(col, justify="left" if col in ("layer", "op") else "right")
        for e in self.layers:
            sat = f"{e.saturated:.2%}"
            t.add_row(e.layer, e.op, f"{e.sqnr_db:.1f}", f"{e.mean_abs_steps:.2f}", f"{e.max_abs_steps:.1f}",
                      f"[red]{sat}[/]" if e.saturated > SATURATION_WARN else sat)
        yield t
        for w in self.warnings:
            yield f"[yellow]warning:[/] {w}"

    def __str__(self) -> str:
        from tinyaot.report.render import render_text

        return render_text(self)


def layer_errors(cm, samples, max_samples: int = 200) -> LayerErrorReport:
    """`samples`: float inputs in the compiled model's input layout (as for run_float)."""
    from tinyaot.ref.interpreter import Interpreter

    x = np.asarray(samples, dtype=np.float64)
    batch, _ = cm._as_batch(x)
    batch = batch[:max_samples]
    float_values = evaluate(cm.float_graph, batch.reshape((-1,) + cm.input_shape[1:]))
    interp = Interpreter(cm.graph, cm.plan)
    traced: dict[str, list[np.ndarray]] = {}
    xq = cm.quantize_input(batch)
    for sample in xq:
        interp.invoke(sample, trace=lambda node, y: traced.setdefault(node.name, []).append(y))
    rows = []
    for node in cm.graph.nodes:
        if node.op in ("reshape",) or node.name not in traced:
            continue
        out = cm.graph.tensor(node.outputs[0])
        if out.name not in float_values:
            continue
        q = np.stack(traced[node.name]).astype(np.float64)
        scale, zp = out.qparams.scale[0], out.qparams.zero_point[0]
        deq = (q - zp) * scale
        ref = float_values[out.name].reshape(deq.shape)
        rows.append(_row(node, out.name, scale, zp, deq, ref))
    return LayerErrorReport(cm.name, len(batch), tuple(rows))


def _row(node, tensor: str, scale: float, zp: int, deq: np.ndarray, ref: np.ndarray) -> LayerError:
    err = deq - ref
    noise = float(np.sum(err**2))
    signal = float(np.sum(ref**2))
    sqnr = math.inf if noise == 0 else 10 * math.log10(max(signal, 1e-30) / noise)
    lo, hi = scale * (-128 - zp), scale * (127 - zp)
    saturated = float(np.mean((ref < lo - scale / 2) | (ref > hi + scale / 2)))
    steps = np.abs(err) / scale
    return LayerError(node.name, node.op, tensor, scale, sqnr, float(steps.mean()), float(steps.max()), saturated)
