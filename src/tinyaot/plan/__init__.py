"""Static memory planning: op order, lifetimes over the schedule, placement in one arena, verification."""
from tinyaot.plan.lifetimes import Buffer, buffers_of, lower_bound
from tinyaot.plan.overlap import Overlap, OverlapRule, buffer_overlaps, overlap_rules
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.verify import verify_plan

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


def plan_graph(g, alignment: int = 4, reorder: bool = True, exact: bool = True) -> MemoryPlan:
    """Schedule (reorders g.nodes when that lowers the peak), find the allowed overlaps, place, verify."""
    from dataclasses import replace

    from tinyaot.plan.inplace import plan_with_rings
    from tinyaot.plan.schedule import schedule

    chosen = schedule(g) if reorder else None
    buffers = buffers_of(g)
    plan = plan_memory(buffers, len(g.nodes), alignment=alignment, overlaps=buffer_overlaps(g, buffers),
                       exact=exact)
    plan = plan_with_rings(g, buffers, plan, exact=exact)  # in-place conv kernels where they shrink the arena
    if chosen is None:
        return plan
    return replace(plan, schedule=chosen.method, source_lower_bound=chosen.source_peak)
