"""CompileResult: everything a compile made, as one frozen value. CompiledModel (model.py) is a read-only view of it;
nothing writes into either after the pipeline built them, so a result can be kept, compared or handed on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tinyaot.ir import Graph
from tinyaot.plan import MemoryPlan

if TYPE_CHECKING:  # names for the annotations only
    from tinyaot.codegen.c_model import CSources
    from tinyaot.options import CompileOptions
    from tinyaot.passes.streaming import StreamInfo
    from tinyaot.quantize.observers import Calibration
    from tinyaot.report.budget import Budget
    from tinyaot.report.quant_error import QuantReport


@dataclass(frozen=True)
class PassTime:
    """How long one pass of the pipeline took (driver.py measures it; `tinyaot compile --timings` prints it)."""

    name: str  # the pass, as its pipeline table names it
    seconds: float


@dataclass(frozen=True)
class StreamWindow:
    """The full-window graphs a streamed model came from: what CompiledModel.window_model() plans on first use."""

    float_graph: Graph | None
    graph: Graph  # the int8 full-window graph (same weights and qparams as the step function)


@dataclass(frozen=True)
class CompileResult:
    """What the pipeline made of one model."""

    name: str  # the C identifier prefixing every generated symbol
    graph: Graph  # the planned int8 graph: op order chosen, residual adds fused where that pays
    plan: MemoryPlan  # its memory plan: arena offsets, kernel choices, state region
    float_plan: MemoryPlan  # the plan the same graph needs with fp32 activations (what the report compares with)
    float_graph: Graph | None = None  # the float model after the float passes (None: it arrived quantized)
    # What int8 is checked against: the float model, or for an imported int8 model the float model its integers
    # stand for (weights dequantized, activations unrounded). None: float_graph.
    reference_graph: Graph | None = None
    sources: CSources | None = None  # None: generated on first use (a result built by hand, in tests)
    options: CompileOptions | None = None  # what it was compiled with (None: built by hand)
    calibration: Calibration | None = None  # the ranges calibration chose (PTQ only)
    unconstrained_arena_bytes: int | None = None  # the arena without preserve_input / separate_output
    findings: tuple = ()  # diagnostics.Finding: what compilation noticed, in order
    check: QuantReport | None = None  # the trust check on the data= samples
    budget: Budget | None = None  # does the model fit its target's flash and RAM?
    int16_layers: tuple[tuple[str, str], ...] = ()  # (layer, why it has int16 activations) (quantize/mixed.py)
    stream_info: StreamInfo | None = None  # what stream=True made: frames, receptive field, layers
    window: StreamWindow | None = None  # the full window a streamed model came from
    timings: tuple[PassTime, ...] = ()  # each pass's time, in the order they ran
    tradeoffs: object | None = None  # budgets.Tradeoffs: the plans a ram= / flash= search weighed
