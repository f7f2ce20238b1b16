"""The passes after quantization, the same for every front end (and for a streamed model's window, planned on
first use): plan the int8 graph, plan its fp32 twin, generate C (BACKEND, run by driver.py). The result is a
CompileResult; nothing here knows CompiledModel, so model.py can call it without importing the pipeline that
imports model.py."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tinyaot.codegen import generate_c
from tinyaot.driver import Pass, Unit, result_of, run_passes
from tinyaot.ir import Graph
from tinyaot.ir.verify import verify_graph
from tinyaot.options import patch_fraction
from tinyaot.passes.fuse_residual import fuse_residual_adds
from tinyaot.plan import plan_graph
from tinyaot.plan.contract import Contract
from tinyaot.result import CompileResult

if TYPE_CHECKING:
    from tinyaot.options import CompileOptions


def plan(g: Graph, alignment: int = 4, contract: Contract | None = None, optimize: str = "memory",
         layer_modes: tuple[tuple[str, str], ...] = (), patch: float | None = None, cores: int = 1,
         within_bound: bool = False):
    """Residual adds fused into their convs where that shrinks the arena (rewrites g), memory-aware op order
    (reorders g.nodes), kernel choices, overlaps, placement; every plan verified. contract: keep the input /
    output apart; optimize: "speed", "size" or "memory" (plan/kernels.py), and layer_modes the layers given
    another; patch: a patch stage's bound on extra MACs (plan/patch.py), None for layer by layer; cores: 2 splits
    the heavy layers between two cores (plan/cores.py); within_bound: no kernel scratch above the layer-by-layer
    bound (plan_graph)."""
    kw = dict(alignment=alignment, contract=contract, optimize=optimize, layer_modes=layer_modes, patch=patch,
              cores=cores, within_bound=within_bound)
    fused = fuse_residual_adds(g)
    if fused is None:
        return plan_graph(g, **kw)
    fused_plan = plan_graph(fused, **kw)
    plain_plan = plan_graph(g, **kw)
    if fused_plan.arena_bytes >= plain_plan.arena_bytes:
        return plain_plan
    g.nodes[:], g.tensors = fused.nodes, fused.tensors
    return fused_plan


def float_plan(g: Graph, alignment: int = 4, contract: Contract | None = None):
    """The plan the same graph needs with fp32 activations: for models that arrive already quantized."""
    tensors = {k: t if t.is_const else dataclasses.replace(t, dtype="float32")
               for k, t in g.tensors.items()}
    return plan(g.replace(tensors=tensors), alignment, contract)


def plan_stage(g: Graph, alignment: int, contract: Contract, optimize: str = "memory",
               layer_modes: tuple[tuple[str, str], ...] = (), patch: float | None = None, cores: int = 1):
    """The planning stage: a planned copy of `g` (op order chosen, residual adds fused where that pays), its
    plan under the caller's buffer contract, and the arena the graph needs without the contract (the report
    says what the contract costs). `g` itself is left as it was. Kernel scratch never lifts a compiled model's arena
    above its layer-by-layer bound (plan_graph within_bound)."""
    verify_graph(g, "quantization", quantized=True)
    planned = g.replace()
    free = None
    if contract.any:
        free = plan(planned, alignment, optimize=optimize, layer_modes=layer_modes, patch=patch,
                    cores=cores, within_bound=True).arena_bytes
    # last: planning reorders `planned` to this plan's order
    memory = plan(planned, alignment, contract, optimize, layer_modes, patch, cores, within_bound=True)
    verify_graph(planned, "planning", quantized=True)
    return planned, memory, free


def _plan(u: Unit) -> dict:
    contract = u.contract if u.contract is not None else u.options.contract
    planned, memory, free = plan_stage(u.graph, u.options.alignment, contract, u.options.optimize,
                                       u.options.layer_modes, patch_fraction(u.options.patch), u.options.cores)
    return {"graph": planned, "plan": memory, "unconstrained_arena_bytes": free}


def _float_plan(u: Unit) -> dict:
    contract = u.contract if u.contract is not None else u.options.contract
    return {"float_plan": float_plan(u.float_graph if u.float_graph is not None else u.graph, u.options.alignment,
                                     contract)}


def _generate_c(u: Unit) -> dict:
    """Every kernel's Prepare runs here, so its qparam rules fail at compile time, not on the device."""
    return {"sources": generate_c(u.graph, u.plan, u.name, u.options.sram_constants, u.options.cores)}


BACKEND = (
    Pass("plan", _plan, produces=("graph", "plan", "unconstrained_arena_bytes"), ir="int8", stage="planning memory",
         announce=True),
    Pass("float_plan", _float_plan, needs=("graph", "plan"), produces=("float_plan",),
         stage="planning the fp32 twin"),
    Pass("generate_c", _generate_c, needs=("graph", "plan"), produces=("sources",), stage="generating C",
         announce=True),
)


def plan_and_generate(name: str, options: CompileOptions, graph: Graph, float_graph: Graph | None = None,
                      **given) -> CompileResult:
    """The back end alone, on an int8 graph made earlier (a streamed model's full window, planned on first use:
    the compile is over, so its progress callback is not called again)."""
    options = dataclasses.replace(options, progress=None)
    unit, timings = run_passes(BACKEND, Unit(name, options, graph=graph, float_graph=float_graph, **given))
    return result_of(unit, timings)
