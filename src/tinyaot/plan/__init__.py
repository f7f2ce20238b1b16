"""Static memory planning: lifetimes over the schedule, placement in one arena, verification."""
from tinyaot.plan.lifetimes import Buffer, buffers_of, lower_bound
from tinyaot.plan.planner import MemoryPlan, plan_memory
from tinyaot.plan.verify import verify_plan

__all__ = ["Buffer", "MemoryPlan", "buffers_of", "lower_bound", "plan_memory", "verify_plan"]
