"""The stages after quantization, the same for every front end (and for a streamed model's window, planned on
first use): plan the int8 graph, plan its fp32 twin, generate C. The result is a CompileResult; nothing here knows
CompiledModel, so model.py can call it without importing the pipeline that imports model.py."""
from __future__ import annotations

import dataclasses

from tinyaot.codegen import generate_c
from tinyaot.guard import enter_stage, user_code
from tinyaot.ir import Graph
from tinyaot.ir.verify import verify_graph
from tinyaot.passes.fuse_residual import fuse_residual_adds
from tinyaot.plan import plan_graph
from tinyaot.plan.contract import Contract
from tinyaot.result import CompileResult


def plan(g: Graph, alignment: int = 4, contract: Contract | None = None, optimize: str = "memory"):
    """Residual adds fused into their convs where that shrinks the arena (rewrites g), memory-aware op order
    (reorders g.nodes), kernel choices, overlaps, placement; every plan verified. contract: keep the input /
    output apart; optimize: "speed", "size" or "memory" (plan/kernels.py)."""
    fused = fuse_residual_adds(g)
    if fused is None:
        return plan_graph(g, alignment=alignment, contract=contract, optimize=optimize)
    fused_plan = plan_graph(fused, alignment=alignment, contract=contract, optimize=optimize)
    plain_plan = plan_graph(g, alignment=alignment, contract=contract, optimize=optimize)
    if fused_plan.arena_bytes >= plain_plan.arena_bytes:
        return plain_plan
    g.nodes[:], g.tensors = fused.nodes, fused.tensors
    return fused_plan


def float_plan(g: Graph, alignment: int = 4, contract: Contract | None = None):
    """The plan the same graph needs with fp32 activations: for models that arrive already quantized."""
    tensors = {k: t if t.is_const else dataclasses.replace(t, dtype="float32")
               for k, t in g.tensors.items()}
    return plan(g.replace(tensors=tensors), alignment, contract)


def plan_stage(g: Graph, alignment: int, contract: Contract, progress=None, optimize: str = "memory"):
    """The planning stage: a planned copy of `g` (op order chosen, residual adds fused where that pays), its
    plan under the caller's buffer contract, and the arena the graph needs without the contract (the report
    says what the contract costs). `g` itself is left as it was."""
    say(progress, "planning memory")
    verify_graph(g, "quantization", quantized=True)
    planned = g.replace()
    free = None
    if contract.any:
        free = plan(planned, alignment, optimize=optimize).arena_bytes
    memory = plan(planned, alignment, contract, optimize)  # last: planning reorders `planned` to this plan's order
    verify_graph(planned, "planning", quantized=True)
    return planned, memory, free


def codegen_stage(g: Graph, memory, name: str, progress=None):
    """C sources for the planned graph; every kernel's Prepare runs here, so its qparam rules fail at compile."""
    say(progress, "generating C")
    return generate_c(g, memory, name)


def say(progress, message: str) -> None:
    """A stage starts: tell the caller's progress callback, and the guard (an internal error names the stage)."""
    enter_stage(message)
    if progress is not None:
        try:
            progress(message)
        except Exception as exc:  # the caller's own code: it leaves as it came, not as tinyaot's bug
            user_code(exc)
            raise


def plan_and_generate(name: str, float_graph, int8_graph: Graph, alignment: int, contract: Contract, progress,
                      optimize: str, **extra) -> CompileResult:
    """The stages after quantization, the same for every front end: plan, plan the fp32 twin, generate C."""
    planned, memory, free = plan_stage(int8_graph, alignment, contract, progress, optimize)
    twin = float_plan(float_graph if float_graph is not None else planned, alignment, contract)
    return CompileResult(name, planned, memory, twin, float_graph=float_graph, unconstrained_arena_bytes=free,
                         sources=codegen_stage(planned, memory, name, progress), **extra)
