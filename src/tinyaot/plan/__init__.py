"""Static memory planning: op order, lifetimes over the schedule, placement in one arena, verification."""
from dataclasses import replace

from tinyaot.errors import ModelError
from tinyaot.ir.macs import node_macs
from tinyaot.ir.variants import KernelOptions
from tinyaot.plan.choice import KernelChoice, merge
from tinyaot.plan.contract import Contract, with_contract
from tinyaot.plan.cores import core1_work_buffers, split_candidates
from tinyaot.plan.inplace import plan_with_rings
from tinyaot.plan.kernels import kernel_choices, own_overlap, work_buffers
from tinyaot.plan.lifetimes import Buffer, buffers_of, lower_bound
from tinyaot.plan.overlap import Overlap, OverlapRule, buffer_overlaps, overlap_rules
from tinyaot.plan.patch import (
    PatchStage,
    candidates,
    estimate,
    keeps_variant,
    scratch_name,
    splits,
    stage_buffers,
    stage_overlap,
)
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.schedule import schedule
from tinyaot.plan.state import plan_state
from tinyaot.plan.verify import contract_problems, verify_plan

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
               optimize: str = "memory", layer_modes: tuple[tuple[str, str], ...] = (), patch: float | None = None,
               stages: tuple[PatchStage, ...] = (), cores: int = 1, within_bound: bool = False) -> MemoryPlan:
    """Schedule (reorders g.nodes when that lowers the peak), choose kernels, find the allowed overlaps, place,
    verify.

    contract (plan.contract.Contract) keeps the input intact across invoke and/or the output apart from it;
    optimize chooses the kernel variants (plan/kernels.py: "speed" gives the convs that qualify the pairs kernel
    and its work buffer), which the plan records per node (MemoryPlan.kernels); patch: run a chain of the first
    layers band by band (plan/patch.py) where that shrinks the arena, within this fraction of the model's MACs
    recomputed (None: layer by layer); stages: these stages (plan/patch.py stage_of, made for g as scheduled), not
    searched (tests, benchmarks); cores=2 places the layers two cores will share (plan/cores.py) apart from their
    inputs; within_bound: kernel scratch may not lift the arena above the layer-by-layer bound (_within_bound: the
    compile's plans; a one-op test graph keeps the variant it asks for)."""
    contract = contract or Contract()
    chosen = schedule(g) if reorder else None
    graph_buffers = buffers_of(g, alignment)
    kernels = kernel_choices(g, KernelOptions(optimize, alignment, tuple(layer_modes)),
                             {t for b in graph_buffers for t in b.tensors})
    apart = split_candidates(g, kernels) if cores == 2 else frozenset()
    plan = _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, tuple(stages), apart)
    if within_bound and plan.arena_bytes > plan.lower_bound and not stages and not apart:
        kernels, plan = _within_bound(g, graph_buffers, kernels, plan,
                                      lambda ks, ex: _plan_with(g, graph_buffers, ks, contract, alignment, ex,
                                                                optimize, (), apart), exact)
    if patch is not None and not stages:
        plan = _patched(g, graph_buffers, kernels, contract, alignment, exact, optimize, plan, patch)
    plan = replace(plan, state=plan_state(g, alignment), layer_modes=tuple(layer_modes))  # state: apart from the arena
    if chosen is not None:
        plan = replace(plan, schedule=chosen.method, source_lower_bound=chosen.source_peak)
    return plan


def _within_bound(g, graph_buffers, kernels, plan: MemoryPlan, place, exact: bool):
    """A plan whose arena is above the layer-by-layer bound gives up, largest first, the work buffers that raise
    it: each variant with scratch is tried on its plain kernel (the reason recorded) and kept so where the arena
    shrinks, until it is at or below the bound. Speed buys instructions with scratch, never past the bound."""
    bound, given = plan.lower_bound, kernels
    why = "its work buffer raised the arena above the layer-by-layer bound"
    for c in sorted((k for k in kernels if k.work_bytes), key=lambda k: -k.work_bytes):
        trial_kernels = [KernelChoice(k.node, rejected=k.rejected + ((k.variant, why),)) if k is c else k
                         for k in kernels]
        trial = place(trial_kernels, False)
        if trial.arena_bytes < plan.arena_bytes:
            kernels, plan = trial_kernels, trial
            if plan.arena_bytes <= bound:
                break
    if kernels is given:
        return kernels, plan
    return kernels, place(kernels, exact) if exact else plan


PATCH_PLACED = 4  # per round, the stages placed in full: the ones with the smallest live-bytes bound


def _patched(g, graph_buffers, kernels, contract, alignment, exact, optimize, plain: MemoryPlan,
             fraction: float) -> MemoryPlan:
    """The smallest plan found with patch stages whose recomputed MACs stay within `fraction` of the model's, or
    `plain` (layer by layer) where no stage makes the arena smaller. Greedy: each round tries one more stage, or
    one chosen stage cut in two, ranked by plan/patch.py's optimistic estimate; the best few are placed and the
    smallest arena kept, until no move shrinks it (the peak moves on from stage to stage)."""
    budget = int(fraction * sum(node_macs(n, g) for n in g.nodes))
    n = len(g.nodes)
    params = {}
    best = plain
    while True:
        chosen = best.patches
        spent = sum(st.extra_macs for st in chosen)
        moves = [chosen + (st,) for st in candidates(g, budget - spent, alignment, params, chosen)]
        for k, st in enumerate(chosen):
            rest = chosen[:k] + chosen[k + 1 :]
            left = budget - spent + st.extra_macs
            moves += [rest + pair for pair in splits(g, st, left, alignment, params)]
        bound = [estimate(_stage_buffers(graph_buffers, m, g), n) for m in moves]
        ranked = sorted(range(len(moves)), key=lambda i: (bound[i], sum(st.extra_macs for st in moves[i])))
        round_best = best
        for i in ranked[:PATCH_PLACED]:
            trial = _plan_with(g, graph_buffers, kernels, contract, alignment, False, optimize, moves[i])
            if (trial.arena_bytes, _extra(trial)) < (round_best.arena_bytes, _extra(round_best)):
                round_best = trial  # the smaller arena, or the same for fewer recomputed MACs
        if round_best is best:  # (arena, MACs) fell every round: this ends
            break
        best = round_best
    if best is plain:
        return plain
    return _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, best.patches)


def _extra(plan: MemoryPlan) -> int:
    return sum(st.extra_macs for st in plan.patches)


def _named(stages, g) -> tuple[PatchStage, ...]:
    """The stages in step order, the k-th's scratch named scratch_name(g, k)."""
    return tuple(replace(st, scratch=scratch_name(g, k)) for k, st in enumerate(sorted(stages, key=lambda s: s.start)))


def _stage_buffers(buffers, stages, g):
    for st in _named(stages, g):
        buffers = stage_buffers(buffers, st, g)
    return buffers


def _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, stages=(),
               apart=frozenset()) -> MemoryPlan:
    if stages:  # their layers run their plain kernels on windows, their inner tensors have no buffer
        stages = _named(stages, g)
        graph_buffers = _stage_buffers(graph_buffers, stages, g)
        nodes = {n.name: n for n in g.nodes}
        inside = {name: st.start for st in stages for name in st.nodes}
        kernels = [KernelChoice(k.node, note="in a patch stage") if k.node in inside and not
                   keeps_variant(k, nodes[k.node], g) else k for k in kernels]
    work = [replace(b, first=inside[b.producer], last=inside[b.producer]) if stages and b.producer in inside else b
            for b in work_buffers(g, kernels)]  # a stage's layers run at its step, their work buffers too
    buffers = graph_buffers + work + core1_work_buffers(g, kernels, apart)
    owner = {t: b.name for b in buffers for t in b.tensors}
    input_buf, output_buf = owner[g.inputs[0]], owner[g.outputs[0]]
    if contract.any and (len(g.inputs) > 1 or len(g.outputs) > 1):
        raise ModelError(f"preserve_input and separate_output are for models with one input and one output; this "
                         f"one has {len(g.inputs)} inputs and {len(g.outputs)} outputs. Compile without them "
                         "(the header's buffer contract says what invoke does to every input)")
    hows = ("output-early", "input-late") if contract.separate_output and not contract.keep_input else ("",)
    plans = [_place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact, stages, apart)
             for how in hows]
    if contract.any:  # the plain plan may meet the contract by itself, and then costs nothing
        plain = _place(g, buffers, kernels, Contract(), "", input_buf, output_buf, alignment, exact, stages, apart)
        plain = replace(plain, keep_input=contract.keep_input, separate_output=contract.separate_output)
        if not contract_problems(plain):
            plans.insert(0, plain)
    plan = min(plans, key=lambda p: p.arena_bytes)  # the first wins ties
    plan = replace(plan, kernels=merge(kernels, plan.kernels), optimize=optimize)  # rings replace plain records
    verify_plan(plan)
    return plan


def _place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact, stages=(),
           apart=frozenset()) -> MemoryPlan:
    """apart: layers whose output may not overlap their inputs (two cores share them), and get no ring."""
    buffers, pinned = with_contract(buffers, len(g.nodes), input_buf, output_buf, contract, how or "output-early")
    pairs = own_overlap(g, kernels, "pairs")  # the nodes whose variant reads a pixel pair before writing it
    overlaps = buffer_overlaps(g, buffers, pinned, pairs)
    if apart:
        overlaps = tuple(ov for ov in overlaps if g.nodes[ov.step].name not in apart)
    keep = frozenset(k.node for k in kernels if not k.plain) | apart  # a variant runs them (or two cores): no ring
    for stage in stages:
        own = stage_overlap(buffers, stage, pinned, g.outputs)
        overlaps += (own,) if own is not None else ()
        keep |= frozenset(stage.nodes)  # run on windows by their plain kernels
    plan = plan_memory(buffers, len(g.nodes), alignment=alignment, overlaps=overlaps, exact=exact)
    plan = plan_with_rings(g, buffers, plan, exact=exact, keep=keep)  # ring kernels where they shrink the arena
    plan = replace(plan, input_buffer=input_buf, output_buffer=output_buf, keep_input=contract.keep_input,
                   separate_output=contract.separate_output, patches=tuple(stages))
    verify_plan(plan)
    return plan
