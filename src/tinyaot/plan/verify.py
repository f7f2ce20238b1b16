"""An independent check of a memory plan; it shares no code with the planners on purpose."""
from __future__ import annotations

from tinyaot.errors import PlanError


def verify_plan(plan) -> None:
    """Raise PlanError if two buffers live at the same step share a byte, or anything is misplaced."""
    problems = []
    for b in plan.buffers:
        off = plan.offsets.get(b.name)
        if off is None:
            problems.append(f"buffer {b.name} has no offset")
            continue
        if off % plan.alignment:
            problems.append(f"buffer {b.name} at offset {off} is not {plan.alignment}-byte aligned")
        if off < 0 or off + b.nbytes > plan.arena_bytes:
            problems.append(f"buffer {b.name} [{off}, {off + b.nbytes}) is outside the arena of {plan.arena_bytes} B")
    bufs = list(plan.buffers)
    for i, a in enumerate(bufs):
        for b in bufs[i + 1 :]:
            if not (a.first <= b.last and b.first <= a.last):
                continue
            oa, ob = plan.offsets[a.name], plan.offsets[b.name]
            if oa < ob + b.nbytes and ob < oa + a.nbytes and a.nbytes and b.nbytes:
                problems.append(
                    f"{a.name} [{oa}, {oa + a.nbytes}) steps {a.first}-{a.last} overlaps "
                    f"{b.name} [{ob}, {ob + b.nbytes}) steps {b.first}-{b.last}"
                )
    if problems:
        raise PlanError(f"memory plan by '{plan.planner}' is invalid:\n  " + "\n  ".join(problems))
