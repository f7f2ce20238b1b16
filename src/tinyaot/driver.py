"""The one driver every pipeline runs on.

A pipeline is a table of passes (pipeline.py has one per front end, backend.py the stages they share). A pass reads
a Unit, the frozen state of one compile, and returns the fields it changes; it never edits what it was given. After
each pass the driver checks that contract: the pass produced exactly the fields it declares, left every graph it
was given as it was, and left a graph that keeps the IR's rules (ir/verify.py); and it times the pass, so
`tinyaot compile --timings` can say where a compile spends its time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Callable

from tinyaot.errors import InternalCompilerError
from tinyaot.guard import enter_stage, user_code
from tinyaot.ir import Graph
from tinyaot.ir.verify import verify_graph
from tinyaot.plan import MemoryPlan
from tinyaot.plan.contract import Contract
from tinyaot.result import CompileResult, PassTime, StreamWindow

if TYPE_CHECKING:  # names for the annotations only
    from tinyaot.codegen.c_model import CSources
    from tinyaot.options import CompileOptions


@dataclass(frozen=True)
class Unit:
    """One compile in progress: what the caller gave, and what the passes made of it so far."""

    name: str  # the C identifier the sources are generated under
    options: CompileOptions
    # ---- what the caller gave
    model: object = None  # the nn.Module, PT2E GraphModule, or .tflite path / bytes
    example: object = None  # example input(s), batch 1 (PyTorch and PT2E)
    calibration_input: object = None  # the calibration= samples as given
    data: object = None  # the data= samples, for the trust check
    float_model: object = None  # the float .tflite an int8 .tflite came from (compared on data=)
    # ---- what the passes made
    graph: Graph | None = None  # the graph the next pass works on: float until lowering, int8 after
    float_graph: Graph | None = None  # the float model, kept once lowering starts
    reference_graph: Graph | None = None  # what int8 is checked against when float_graph is not it
    samples: object = None  # the calibration samples, checked (quantize.calibrate.SampleSet, or one per input)
    batch: object = None  # the same samples in the model's layout (a list with one batch per input)
    calibration: object = None  # quantize.observers.Calibration: a range per activation
    pt2e_qparams: tuple | None = None  # (activation, weight) quantize nodes of a PT2E graph, by IR tensor
    lowering_findings: tuple = ()  # what lowering had to clamp (replaced when int16 layers re-lower)
    int16_layers: tuple[tuple[str, str], ...] = ()  # (layer, why) given int16 activations
    findings: tuple = ()  # diagnostics.Finding, in the order found
    warned: int = 0  # how many of the findings were raised as warnings already
    contract: Contract | None = None  # the buffer contract planning honours (None: the options')
    stream_info: object = None  # passes.streaming.StreamInfo
    window: StreamWindow | None = None
    plan: MemoryPlan | None = None
    float_plan: MemoryPlan | None = None
    unconstrained_arena_bytes: int | None = None
    sources: CSources | None = None
    check: object = None  # report.quant_error.QuantReport of the data= samples
    budget: object = None  # report.budget.Budget


FIELDS = frozenset(f.name for f in fields(Unit))


@dataclass(frozen=True)
class Pass:
    """One row of a pipeline table: `run(unit)` returns {field: value} for exactly the fields in `produces`."""

    name: str  # what timings and contract errors call it
    run: Callable[[Unit], dict]
    needs: tuple[str, ...] = ("graph",)  # fields an earlier pass must have set (not None)
    produces: tuple[str, ...] = ("graph",)
    ir: str | None = None  # "float" or "int8": the verifier's rules for the graph it leaves; None: not checked
    stage: str | Callable[[Unit], str] = ""  # the words an internal error names (default: the name)
    announce: bool = False  # the progress callback is told the stage too (the user sees it)
    when: Callable[[Unit], bool] | None = None  # run only when this holds (an option asked for it)

    def __post_init__(self) -> None:
        unknown = set(self.needs + self.produces) - FIELDS
        if unknown:
            raise InternalCompilerError(f"pass {self.name} names fields a Unit does not have: {sorted(unknown)}")


def run_passes(passes, unit: Unit) -> tuple[Unit, tuple[PassTime, ...]]:
    """Run `passes` in order on `unit`; the last Unit and each pass's time (the passes `when` skipped: none)."""
    times = []
    for p in passes:
        if p.when is not None and not p.when(unit):
            continue
        missing = [f for f in p.needs if getattr(unit, f) is None]
        if missing:
            raise InternalCompilerError(f"pass {p.name} needs {', '.join(missing)}, which no pass before it made")
        stage = p.stage(unit) if callable(p.stage) else p.stage or p.name
        if p.announce:
            say(unit.options.progress, stage)
        else:
            enter_stage(stage)
        before = _graphs(unit)
        start = time.perf_counter()
        changes = p.run(unit)
        seconds = time.perf_counter() - start
        if set(changes) != set(p.produces):
            raise InternalCompilerError(f"pass {p.name} made {sorted(changes)}, not what it declares: "
                                        f"{sorted(p.produces)}", stage=stage)
        if _graphs(unit) != before:
            raise InternalCompilerError(f"pass {p.name} edited a graph it was given; a pass makes a new graph "
                                        "(Graph.copy(), Node.with_attrs) and leaves its input as it was", stage=stage)
        unit = replace(unit, **changes)
        if p.ir is not None:
            verify_graph(unit.graph, f"the pass {p.name}", quantized=p.ir == "int8")
        times.append(PassTime(p.name, seconds))
    return unit, tuple(times)


def result_of(unit: Unit, timings: tuple[PassTime, ...]) -> CompileResult:
    """The finished value of a compile whose back end ran (backend.BACKEND)."""
    return CompileResult(unit.name, unit.graph, unit.plan, unit.float_plan, float_graph=unit.float_graph,
                         reference_graph=unit.reference_graph, sources=unit.sources, options=unit.options,
                         calibration=unit.calibration, unconstrained_arena_bytes=unit.unconstrained_arena_bytes,
                         findings=unit.findings, check=unit.check, budget=unit.budget,
                         int16_layers=unit.int16_layers, stream_info=unit.stream_info, window=unit.window,
                         timings=timings)


def say(progress, message: str) -> None:
    """A stage starts: tell the caller's progress callback, and the guard (an internal error names the stage)."""
    enter_stage(message)
    if progress is not None:
        try:
            progress(message)
        except Exception as exc:  # the caller's own code: it leaves as it came, not as tinyaot's bug
            user_code(exc)
            raise


def _graphs(unit: Unit) -> tuple:
    """What a pass must leave as it was: every graph of the unit, node by node and tensor by tensor (by identity:
    a pass that gives a tensor new data or a node new attrs has edited them)."""
    return tuple(None if g is None else _fingerprint(g)
                 for g in (unit.graph, unit.float_graph, unit.reference_graph))


def _fingerprint(g: Graph) -> tuple:
    nodes = tuple((id(n), n.op, n.name, tuple(n.inputs), tuple(n.outputs), id(n.attrs)) for n in g.nodes)
    tensors = tuple((k, id(t), t.name, t.shape, t.dtype, id(t.data), t.qparams) for k, t in g.tensors.items())
    return (nodes, tensors, tuple(g.inputs), tuple(g.outputs), g.layout, g.output_layout, g.torch_input_rank,
            tuple(g.io_layouts.items()))
