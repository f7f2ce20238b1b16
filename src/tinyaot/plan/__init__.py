"""Static memory planning: op order, lifetimes over the schedule, placement in one arena, verification."""
from dataclasses import replace

from tinyaot.errors import ModelError
from tinyaot.ir.variants import KernelOptions
from tinyaot.plan.choice import KernelChoice, merge
from tinyaot.plan.contract import Contract, with_contract
from tinyaot.plan.inplace import plan_with_rings
from tinyaot.plan.kernels import kernel_choices, own_overlap, work_buffers
from tinyaot.plan.lifetimes import Buffer, buffers_of, lower_bound
from tinyaot.plan.overlap import Overlap, OverlapRule, buffer_overlaps, overlap_rules
from tinyaot.plan.patch import PatchStage, candidates, estimate, stage_buffers, stage_overlap
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.schedule import schedule
from tinyaot.plan.state import plan_state
from tinyaot.plan.verify import contract_problems, verify_plan
from tinyaot.report.macs import node_macs

__all__ = [
    "Buffer",
    "MemoryPlan",
    "Overlap",
    "OverlapRule",
    "PatchStage",
    "buffer_overlaps",
    "buffers_of",
    "lower_bound",
    "overlap_rules",
    "plan_graph",
    "plan_memory",
    "verify_plan",
]


def plan_graph(g, alignment: int = 4, reorder: bool = True, exact: bool = True, contract=None,
               optimize: str = "memory", patch: float | None = None, stage: PatchStage | None = None) -> MemoryPlan:
    """Schedule (reorders g.nodes when that lowers the peak), choose kernels, find the allowed overlaps, place,
    verify.

    contract (plan.contract.Contract) keeps the input intact across invoke and/or the output apart from it;
    optimize chooses the kernel variants (plan/kernels.py: "speed" gives the convs that qualify the pairs kernel
    and its work buffer), which the plan records per node (MemoryPlan.kernels); patch: run a chain of the first
    layers band by band (plan/patch.py) where that shrinks the arena, within this fraction of the model's MACs
    recomputed (None: layer by layer); stage: this stage (plan/patch.py stage_of, made for g as scheduled), not
    searched (tests, benchmarks)."""
    contract = contract or Contract()
    chosen = schedule(g) if reorder else None
    graph_buffers = buffers_of(g, alignment)
    kernels = kernel_choices(g, KernelOptions(optimize, alignment), {t for b in graph_buffers for t in b.tensors})
    plan = _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, stage)
    if patch is not None and stage is None:
        plan = _patched(g, graph_buffers, kernels, contract, alignment, exact, optimize, plan, patch)
    plan = replace(plan, state=plan_state(g, alignment))  # the state region, apart from the arena
    if chosen is not None:
        plan = replace(plan, schedule=chosen.method, source_lower_bound=chosen.source_peak)
    return plan


PATCH_PLACED = 6  # the stages placed in full, the ones with the smallest live-bytes bound


def _patched(g, graph_buffers, kernels, contract, alignment, exact, optimize, plain: MemoryPlan,
             fraction: float) -> MemoryPlan:
    """The smallest plan with a patch stage whose recomputed MACs stay within `fraction` of the model's, or
    `plain` (layer by layer) where no stage makes the arena smaller."""
    total = sum(node_macs(n, g) for n in g.nodes)
    stages = candidates(g, int(fraction * total), alignment)
    if not stages:
        return plain
    n = len(g.nodes)
    ranked = sorted(stages, key=lambda st: (estimate(stage_buffers(graph_buffers, st, g), n), st.extra_macs))
    best = plain
    for st in ranked[:PATCH_PLACED]:
        trial = _plan_with(g, graph_buffers, kernels, contract, alignment, False, optimize, st)
        if trial.arena_bytes < best.arena_bytes:
            best = trial
    if best is plain:
        return plain
    return _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, best.patch)


def _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize,
               stage: PatchStage | None = None) -> MemoryPlan:
    if stage is not None:  # its layers run their plain kernels on windows, their inner tensors have no buffer
        graph_buffers = stage_buffers(graph_buffers, stage, g)
        kernels = [KernelChoice(k.node, note="in the patch stage") if k.node in stage.nodes else k for k in kernels]
    buffers = graph_buffers + work_buffers(g, kernels)
    owner = {t: b.name for b in buffers for t in b.tensors}
    input_buf, output_buf = owner[g.inputs[0]], owner[g.outputs[0]]
    if contract.any and (len(g.inputs) > 1 or len(g.outputs) > 1):
        raise ModelError(f"preserve_input and separate_output are for models with one input and one output; this "
                         f"one has {len(g.inputs)} inputs and {len(g.outputs)} outputs. Compile without them "
                         "(the header's buffer contract says what invoke does to every input)")
    hows = ("output-early", "input-late") if contract.separate_output and not contract.keep_input else ("",)
    plans = [_place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact, stage)
             for how in hows]
    if contract.any:  # the plain plan may meet the contract by itself, and then costs nothing
        plain = _place(g, buffers, kernels, Contract(), "", input_buf, output_buf, alignment, exact, stage)
        plain = replace(plain, keep_input=contract.keep_input, separate_output=contract.separate_output)
        if not contract_problems(plain):
            plans.insert(0, plain)
    plan = min(plans, key=lambda p: p.arena_bytes)  # the first wins ties
    plan = replace(plan, kernels=merge(kernels, plan.kernels), optimize=optimize)  # rings replace plain records
    verify_plan(plan)
    return plan


def _place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact, stage=None) -> MemoryPlan:
    buffers, pinned = with_contract(buffers, len(g.nodes), input_buf, output_buf, contract, how or "output-early")
    pairs = own_overlap(g, kernels, "pairs")  # the nodes whose variant reads a pixel pair before writing it
    overlaps = buffer_overlaps(g, buffers, pinned, pairs)
    keep = frozenset(k.node for k in kernels if not k.plain)  # a variant runs them: no ring
    if stage is not None:
        own = stage_overlap(buffers, stage, pinned, g.outputs)
        overlaps += (own,) if own is not None else ()
        keep |= frozenset(stage.nodes)  # run on windows by their plain kernels
    plan = plan_memory(buffers, len(g.nodes), alignment=alignment, overlaps=overlaps, exact=exact)
    plan = plan_with_rings(g, buffers, plan, exact=exact, keep=keep)  # ring kernels where they shrink the arena
    plan = replace(plan, input_buffer=input_buf, output_buffer=output_buf, keep_input=contract.keep_input,
                   separate_output=contract.separate_output, patch=stage)
    verify_plan(plan)
    return plan
