"""Why is the int8 model wrong? Per-layer error against float on real samples, and the layer at fault.

The float side is the model's reference graph: the float model itself for PyTorch and float .tflite models, and
for an imported int8 model (PT2E, int8 .tflite) the float model its integers stand for (weights dequantized,
activations unrounded), which shows what its fixed scales do to real data. Per layer:

- cumulative SQNR: the int8 pipeline's value against float, everything before included;
- local SQNR: this layer's int8 kernel alone, given the float inputs rounded to its input's int8 (so a layer is
  not blamed for what came before);
- clipped: float values outside the int8 range (the range is too narrow for the data);
- steps used: how many of the 256 int8 steps the data spans (a few: the range is too wide, the data crushed).

The first layer where something goes wrong is named, with its likely cause and what to try.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from types import SimpleNamespace

import numpy as np
from rich.table import Table

from tinyaot.diagnostics import Finding
from tinyaot.errors import ModelError
from tinyaot.frontend.tflite import from_tflite_float
from tinyaot.ir import ops
from tinyaot.ir.ops import OPS, ops_where
from tinyaot.quantize.calibrate import as_real_array
from tinyaot.quantize.float_eval import evaluate
from tinyaot.quantize.mixed import twin_of
from tinyaot.quantize.scheme import quantize_array
from tinyaot.quantize.sensitivity import local_sqnr, sqnr_db
from tinyaot.ref.interpreter import prepare_all, run_unplanned
from tinyaot.report.render import render_text

SATURATION_WARN = 0.01  # warn when more than 1% of a layer's values clip
# output qparams set by the scheme, whatever the data (a softmax's, an l2_normalize's)
FIXED_RANGE = ops_where(qparams=ops.SOFTMAX) | ops_where(qparams=ops.FIXED)
CRUSHED_STEPS = 16  # data spanning fewer of the 256 steps is crushed
JUMP_DB = 10.0  # a cumulative SQNR drop this large at one layer is where it went wrong
LOW_SQNR_DB = 15.0  # a layer whose own kernel is this noisy is at fault
AGREEMENT_WARN = 0.95  # int8 vs float top-1 agreement below this fails the check
MAX_CLASSES = 100  # a 2-D output this narrow (or a softmax) is read as class scores


@dataclass(frozen=True)
class LayerError:
    layer: str
    op: str
    tensor: str
    scale: float
    sqnr_db: float  # cumulative: int8 pipeline vs float, higher is better
    local_sqnr_db: float  # this layer's kernel alone on exactly rounded inputs (nan where not measured)
    mean_abs_steps: float  # mean |int8 - float| in output quantization steps
    max_abs_steps: float
    saturated: float  # fraction of float values outside the int8 range: clipped
    steps_used: float  # steps the float values span (of 256 for int8, 65,536 for int16)
    float_lo: float
    float_hi: float
    int8_lo: float  # the real range the int8 tensor covers
    int8_hi: float
    state: bool = False  # a recurrent layer's int16 state: local = rounding the float state onto its grid


@dataclass(frozen=True)
class OutputCheck:
    sqnr_db: float
    argmax_agreement: float | None  # None for outputs that are not class scores
    disagreements: tuple[tuple[int, int, int], ...]  # (sample, float class, int8 class), the first few
    float_accuracy: float | None = None
    int8_accuracy: float | None = None


@dataclass(frozen=True)
class Diagnosis:
    layer: str
    cause: str  # "range too narrow" | "range too wide" | "outlier set the range" | "saturating activation" | ...
    message: str
    advice: str


@dataclass(frozen=True)
class QuantReport:
    model: str
    samples: int
    reference: str  # what the float side is
    layers: tuple[LayerError, ...]
    output: OutputCheck | None = None
    diagnosis: Diagnosis | None = None
    extra: dict = field(default_factory=dict)  # e.g. agreement with a float .tflite

    @property
    def findings(self) -> list[Finding]:
        out = []
        for e in self.layers:
            if e.saturated > SATURATION_WARN:
                out.append(Finding("clipping", e.layer,
                                   f"layer '{e.layer}': {e.saturated:.1%} of values fall outside the calibrated range "
                                   f"and saturate (float reaches {_span(e.float_lo, e.float_hi)}, int8 covers "
                                   f"{_span(e.int8_lo, e.int8_hi)})",
                                   "calibrate on data that covers these inputs"))
        o = self.output
        if o is not None and o.argmax_agreement is not None and o.argmax_agreement < AGREEMENT_WARN:
            d = self.diagnosis
            blame = f"; first fault: layer '{d.layer}' ({d.cause})" if d else ""
            first = ", ".join(f"sample {i}: float {f}, int8 {q}" for i, f, q in o.disagreements[:4])
            out.append(Finding("check_failed", d.layer if d else "output",
                               f"int8 and float agree on the top class for only {o.argmax_agreement:.0%} of the "
                               f"{self.samples} check samples ({first}){blame}",
                               d.advice if d else "see cm.layer_errors(samples) for the layer at fault"))
        return out

    @property
    def warnings(self) -> list[str]:
        return [str(f) for f in self.findings]

    def to_dict(self) -> dict:
        return {"model": self.model, "samples": self.samples, "reference": self.reference,
                "layers": [_finite(asdict(e)) for e in self.layers],
                "output": _finite(asdict(self.output)) if self.output else None,
                "diagnosis": asdict(self.diagnosis) if self.diagnosis else None,
                "warnings": self.warnings, **self.extra}

    def __rich_console__(self, console, options):
        t = Table(title=f"int8 vs {self.reference} per layer of '{self.model}' ({self.samples} samples)",
                  caption="local: the layer's kernel alone on exactly rounded inputs; cumul.: everything before it "
                  "included; steps: the quantized steps the data spans (of 256 for int8, 65,536 for int16)")
        for col in ("layer", "op", "local dB", "cumul. dB", "err steps", "clipped", "steps", "float range",
                    "quantized range"):
            t.add_column(col, justify="left" if col in ("layer", "op") else "right")
        blame = self.diagnosis.layer if self.diagnosis else None
        for e in self.layers:
            sat = f"{e.saturated:.2%}"
            steps = f"{e.steps_used:.0f}"
            name = f"[bold red]{e.layer}[/]" if e.layer == blame else e.layer
            t.add_row(name, e.op, _db(e.local_sqnr_db), _db(e.sqnr_db), f"{e.mean_abs_steps:.2f}",
                      f"[red]{sat}[/]" if e.saturated > SATURATION_WARN else sat,
                      f"[red]{steps}[/]" if e.steps_used < CRUSHED_STEPS else steps,
                      _span(e.float_lo, e.float_hi), _span(e.int8_lo, e.int8_hi))
        yield t
        o = self.output
        if o is not None:
            line = f"output: SQNR {_db(o.sqnr_db)} dB"
            if o.argmax_agreement is not None:
                line += f", top-1 agreement with float {o.argmax_agreement:.1%}"
            if o.int8_accuracy is not None:
                line += f", accuracy float {o.float_accuracy:.2%} / int8 {o.int8_accuracy:.2%}"
            yield line
            for i, f, q in o.disagreements[:8]:
                yield f"  sample {i}: float says {f}, int8 says {q}"
        for k, v in self.extra.items():
            yield f"{k}: {v}"
        if self.diagnosis:
            d = self.diagnosis
            yield f"[bold]first fault: layer '{d.layer}'[/] ({d.cause}): {d.message}"
            yield f"  what to try: {d.advice}"

    def __str__(self) -> str:
        return render_text(self, width=150)


def _db(v: float) -> str:
    return "-" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.1f}")


def _span(lo: float, hi: float) -> str:
    return f"[{lo:.3g}, {hi:.3g}]"


def _finite(d: dict) -> dict:
    """JSON-ready: no inf/nan (null instead), lists instead of tuples."""
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, (tuple, list)):
            return [clean(x) for x in v]
        return v

    return {k: clean(v) for k, v in d.items()}


def layer_errors(cm, samples, max_samples: int = 200, labels=None) -> QuantReport:
    """`samples`: float inputs in the compiled model's input layout (as for run_float)."""
    batch, _ = cm._as_batch(cm._each_input(samples, lambda v, t: as_real_array(v, "layer_errors samples",
                                                                                  ModelError)))
    several = isinstance(batch, list)
    batch = [b[:max_samples] for b in batch] if several else batch[:max_samples]
    g = cm.graph
    flat = [b.reshape((-1,) + b.shape[2:]) for b in batch] if several else batch.reshape((-1,) + batch.shape[2:])
    ref_values = evaluate(cm.reference_graph, flat)
    for name in g.tensors:  # a mixed-precision model's int16 / int8 twin of a tensor holds the same reals
        base = twin_of(name)
        if base in ref_values:
            ref_values[name] = ref_values[base]
    params = prepare_all(g)
    traced = trace_int8(g, params, cm.quantize_input(batch))
    n_samples = len(batch[0]) if several else len(batch)
    rows = []
    for node in g.nodes:
        out = g.tensor(node.outputs[0])
        if node.op == "reshape" or node.name not in traced or out.name not in ref_values or out.qparams is None:
            continue
        q = np.stack(traced[node.name]).astype(np.float64)
        deq = (q - out.qparams.zero_point[0]) * out.qparams.scale[0]
        ref = ref_values[out.name].reshape(deq.shape)
        local = local_sqnr(params, node, g, ref_values)
        rows.append(_row(node, out, deq, ref, local))
        if OPS[node.op].work_rows and node.outputs[1] in ref_values:
            rows.append(_state_row(node, g.tensor(node.outputs[1]), ref_values[node.outputs[1]]))
    output = _output_check(cm, ref_values, traced, labels)
    rows = tuple(rows)
    return QuantReport(cm.name, n_samples, _reference_kind(cm), rows, output, diagnose(cm, rows, output))


def trace_int8(g, params: dict, xq: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Every node's int8 output per sample (ref.interpreter.run_unplanned: the planned run's bits, faster)."""
    traced: dict[str, list[np.ndarray]] = {n.name: [] for n in g.nodes}
    samples = [list(s) for s in zip(*xq)] if isinstance(xq, list) else xq  # several inputs: one list per sample
    for sample in samples:
        values = run_unplanned(g, params, sample)
        for node in g.nodes:
            traced[node.name].append(values[node.outputs[0]])
    return traced


def _reference_kind(cm) -> str:
    return "float" if cm.float_graph is not None else "dequantized float"


def _row(node, out, deq: np.ndarray, ref: np.ndarray, local: float) -> LayerError:
    scale, zp = out.qparams.scale[0], out.qparams.zero_point[0]
    info = np.iinfo(out.dtype)
    lo, hi = scale * (info.min - zp), scale * (info.max - zp)
    # A softmax's range is fixed by the scheme, not calibrated: it stops one step short of 1 (255 / 256 in int8),
    # so a probability of 1 is the scheme's rounding, not clipping (as 1.0 out of an l2_normalize, 127 / 128).
    edge = scale if getattr(node, "op", "") in FIXED_RANGE else scale / 2
    saturated = float(np.mean((ref < lo - edge) | (ref > hi + edge)))
    steps = np.abs(deq - ref) / scale
    f_lo, f_hi = float(ref.min()), float(ref.max())
    used = min(float(info.max - info.min + 1), (max(min(f_hi, hi), 0.0) - min(max(f_lo, lo), 0.0)) / scale + 1)
    return LayerError(node.name, node.op, out.name, scale, sqnr_db(ref, deq), local, float(steps.mean()),
                      float(steps.max()), saturated, used, f_lo, f_hi, lo, hi)


def _state_row(node, state, ref: np.ndarray) -> LayerError:
    """A recurrent layer's int16 state (an LSTM's cell, a GRU's hidden state) over every step of the float run:
    how much of it its power-of-two scale clips, and what rounding onto that grid costs."""
    deq = quantize_array(ref, state.qparams, "int16").astype(np.float64) * state.qparams.scale[0]
    what = SimpleNamespace(name=f"{node.name} state", op=f"{node.op} {'cell' if node.op == 'lstm' else 'hidden'}")
    row = _row(what, state, deq, np.asarray(ref, np.float64), math.nan)
    return replace(row, local_sqnr_db=row.sqnr_db, sqnr_db=math.nan, state=True)


def _output_check(cm, ref_values: dict, traced: dict, labels) -> OutputCheck | None:
    g = cm.graph
    producer = g.producer(g.outputs[0])
    if producer is None or producer.name not in traced:
        return None
    out = g.tensor(g.outputs[0])
    q = np.stack(traced[producer.name]).astype(np.float64)
    deq = ((q - out.qparams.zero_point[0]) * out.qparams.scale[0]).reshape(len(q), -1)
    ref = ref_values[cm.reference_graph.outputs[0]].reshape(len(q), -1)
    agreement, disagree, f_acc, q_acc = None, (), None, None
    if len(out.shape) == 2 and (producer.op == "softmax" or 2 <= ref.shape[1] <= MAX_CLASSES):
        fc, qc = ref.argmax(1), deq.argmax(1)
        agreement = float((fc == qc).mean())
        disagree = tuple((int(i), int(fc[i]), int(qc[i])) for i in np.flatnonzero(fc != qc)[:10])
        if labels is not None:
            y = np.asarray(labels).reshape(-1)[: len(q)]
            f_acc, q_acc = float((fc == y).mean()), float((qc == y).mean())
    return OutputCheck(sqnr_db(ref, deq), agreement, disagree, f_acc, q_acc)


# ---- diagnosis --------------------------------------------------------------------------------------------


def diagnose(cm, rows: tuple[LayerError, ...], output: OutputCheck | None) -> Diagnosis | None:
    """The first layer that clips, is crushed, or where the error jumps; None when nothing stands out."""
    previous = math.inf
    for e in rows:
        if e.state:  # a recurrent state: only its clipping can be at fault (its rounding is in the next row)
            if e.saturated > SATURATION_WARN:
                return _clipping(cm, e)
            continue
        jump = previous - e.sqnr_db if math.isfinite(previous) else 0.0
        if e.saturated > SATURATION_WARN:
            return _clipping(cm, e)
        if e.steps_used < CRUSHED_STEPS and e.float_hi - e.float_lo > 0:
            return _crushed(cm, e)
        if jump > JUMP_DB and e.sqnr_db < 25 or (not math.isnan(e.local_sqnr_db) and e.local_sqnr_db < LOW_SQNR_DB):
            return _noisy(cm, e)
        previous = e.sqnr_db
    return None


def _calibration_hint(cm) -> str:
    codes = {f.code for f in getattr(cm, "findings", [])}
    if cm.calibration is None:
        noise = "its example input looked like noise; " if "noise_like" in codes else ""
        return (f"{noise}this model's scales come from its own quantizer: recalibrate it on data like this (for "
                "PT2E, run a few hundred real samples through the prepared model before convert_pt2e; for .tflite, "
                "give the converter a representative dataset)")
    if "noise_like" in codes or "too_few_samples" in codes:
        return "the calibration samples were noise or too few: calibrate on a few hundred real inputs"
    return "calibrate on data that covers these inputs (these values were beyond every calibration sample)"


def _clipping(cm, e: LayerError) -> Diagnosis:
    return Diagnosis(e.layer, "range too narrow",
                     f"{e.saturated:.1%} of its values clip: float reaches {_span(e.float_lo, e.float_hi)}, the int8 "
                     f"range stops at {_span(e.int8_lo, e.int8_hi)}", _calibration_hint(cm))


def _crushed(cm, e: LayerError) -> Diagnosis:
    stats = cm.calibration.stats.get(e.tensor) if cm.calibration is not None else None
    if stats is not None and stats.outliers and stats.chosen == "minmax":
        return Diagnosis(e.layer, "outlier set the range",
                         f"the data spans only {e.steps_used:.0f} of 256 steps: calibration samples "
                         f"{list(stats.outliers)[:5]} reach {stats.outlier_factor:.1f}x the others and set the range",
                         "remove those samples, or use observer='auto' (the default), which leaves outliers out")
    return Diagnosis(e.layer, "range too wide",
                     f"the data spans only {e.steps_used:.0f} of 256 steps of the int8 range "
                     f"{_span(e.int8_lo, e.int8_hi)} (float values {_span(e.float_lo, e.float_hi)})",
                     "calibrate on data like this (the calibration saw far larger values), or try "
                     "layer_observers={'%s': 'mse'}" % e.layer)


def _noisy(cm, e: LayerError) -> Diagnosis:
    if e.op == "lut" or e.op == "softmax":
        return Diagnosis(e.layer, "saturating activation",
                         f"its int8 output is noisy (SQNR {_db(e.sqnr_db)} dB): its input's int8 range is too coarse "
                         "for the steep part of the function",
                         "calibrate on representative data; if the layer before it clips or is crushed, fix that first")
    return Diagnosis(e.layer, "error jump",
                     f"the error grows here (cumulative SQNR {_db(e.sqnr_db)} dB, this layer alone "
                     f"{_db(e.local_sqnr_db)} dB) with no clipping: rounding to {e.steps_used:.0f} steps loses "
                     "too much",
                     f"try layer_observers={{'{e.layer}': 'minmax'}} or 'mse' for this layer, or keep the layer "
                     "wider (more channels) so its values spread over more steps")


def compare_float_tflite(cm, float_model, x: np.ndarray) -> dict:
    """Output agreement of an int8 model with the float .tflite it was converted from, on the same inputs."""
    fg = from_tflite_float(float_model)
    want = evaluate(fg, x.reshape((-1,) + cm.input_shape[1:]))[fg.outputs[0]].reshape(len(x), -1)
    traced = trace_int8(cm.graph, prepare_all(cm.graph), cm.quantize_input(x))
    got = cm.dequantize_output(np.stack(traced[cm.graph.producer(cm.graph.outputs[0]).name])).reshape(len(x), -1)
    out = {"sqnr_db": round(sqnr_db(want, got), 2)}
    if 2 <= want.shape[1] <= MAX_CLASSES:
        out["argmax_agreement"] = float((want.argmax(1) == got.argmax(1)).mean())
    return out
