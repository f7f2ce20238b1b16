"""Static memory planning: op order, lifetimes over the schedule, placement in one arena, verification."""
from dataclasses import replace

from tinyaot.errors import ModelError
from tinyaot.ir.variants import KernelOptions
from tinyaot.plan.choice import merge
from tinyaot.plan.contract import Contract, with_contract
from tinyaot.plan.cores import core1_work_buffers, split_candidates
from tinyaot.plan.inplace import plan_with_rings
from tinyaot.plan.kernels import kernel_choices, own_overlap, work_buffers
from tinyaot.plan.lifetimes import Buffer, buffers_of, lower_bound
from tinyaot.plan.overlap import Overlap, OverlapRule, buffer_overlaps, overlap_rules
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.schedule import schedule
from tinyaot.plan.state import plan_state
from tinyaot.plan.verify import contract_problems, verify_plan

__all__ = [
    "Buffer",
    "MemoryPlan",
    "Overlap",
    "OverlapRule",
    "buffer_overlaps",
    "buffers_of",
    "lower_bound",
    "overlap_rules",
    "plan_graph",
    "plan_memory",
    "verify_plan",
]


def plan_graph(g, alignment: int = 4, reorder: bool = True, exact: bool = True, contract=None,
               optimize: str = "memory", layer_modes: tuple[tuple[str, str], ...] = (), cores: int = 1) -> MemoryPlan:
    """Schedule (reorders g.nodes when that lowers the peak), choose kernels, find the allowed overlaps, place,
    verify.

    contract (plan.contract.Contract) keeps the input intact across invoke and/or the output apart from it;
    optimize chooses the kernel variants (plan/kernels.py: "speed" gives the convs that qualify the pairs kernel
    and its work buffer), which the plan records per node (MemoryPlan.kernels); cores=2 places the layers two
    cores will share (plan/cores.py) apart from their inputs."""
    contract = contract or Contract()
    chosen = schedule(g) if reorder else None
    graph_buffers = buffers_of(g, alignment)
    kernels = kernel_choices(g, KernelOptions(optimize, alignment, tuple(layer_modes)),
                             {t for b in graph_buffers for t in b.tensors})
    apart = split_candidates(g, kernels) if cores == 2 else frozenset()
    plan = _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, apart)
    plan = replace(plan, state=plan_state(g, alignment), layer_modes=tuple(layer_modes))  # state: apart from the arena
    if chosen is not None:
        plan = replace(plan, schedule=chosen.method, source_lower_bound=chosen.source_peak)
    return plan


def _plan_with(g, graph_buffers, kernels, contract, alignment, exact, optimize, apart=frozenset()) -> MemoryPlan:
    buffers = graph_buffers + work_buffers(g, kernels) + core1_work_buffers(g, kernels, apart)
    owner = {t: b.name for b in buffers for t in b.tensors}
    input_buf, output_buf = owner[g.inputs[0]], owner[g.outputs[0]]
    if contract.any and (len(g.inputs) > 1 or len(g.outputs) > 1):
        raise ModelError(f"preserve_input and separate_output are for models with one input and one output; this "
                         f"one has {len(g.inputs)} inputs and {len(g.outputs)} outputs. Compile without them "
                         "(the header's buffer contract says what invoke does to every input)")
    hows = ("output-early", "input-late") if contract.separate_output and not contract.keep_input else ("",)
    plans = [_place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact, apart)
             for how in hows]
    if contract.any:  # the plain plan may meet the contract by itself, and then costs nothing
        plain = _place(g, buffers, kernels, Contract(), "", input_buf, output_buf, alignment, exact, apart)
        plain = replace(plain, keep_input=contract.keep_input, separate_output=contract.separate_output)
        if not contract_problems(plain):
            plans.insert(0, plain)
    plan = min(plans, key=lambda p: p.arena_bytes)  # the first wins ties
    plan = replace(plan, kernels=merge(kernels, plan.kernels), optimize=optimize)  # rings replace plain records
    verify_plan(plan)
    return plan


def _place(g, buffers, kernels, contract, how, input_buf, output_buf, alignment, exact,
           apart=frozenset()) -> MemoryPlan:
    """apart: layers whose output may not overlap their inputs (two cores share them), and get no ring."""
    buffers, pinned = with_contract(buffers, len(g.nodes), input_buf, output_buf, contract, how or "output-early")
    pairs = own_overlap(g, kernels, "pairs")  # the nodes whose variant reads a pixel pair before writing it
    overlaps = buffer_overlaps(g, buffers, pinned, pairs)
    if apart:
        overlaps = tuple(ov for ov in overlaps if g.nodes[ov.step].name not in apart)
    plan = plan_memory(buffers, len(g.nodes), alignment=alignment, overlaps=overlaps, exact=exact)
    keep = frozenset(k.node for k in kernels if not k.plain) | apart  # a variant runs them (or two cores): no ring
    plan = plan_with_rings(g, buffers, plan, exact=exact, keep=keep)  # ring kernels where they shrink the arena
    plan = replace(plan, input_buffer=input_buf, output_buffer=output_buf, keep_input=contract.keep_input,
                   separate_output=contract.separate_output)
    verify_plan(plan)
    return plan
