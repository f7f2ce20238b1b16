"""An independent check of a memory plan; it shares no code with the planners on purpose."""
from __future__ import annotations

from tinyaot.errors import PlanError


def verify_plan(plan) -> None:
    """Raise PlanError if two buffers live at the same step share a byte without a rule that allows it
    (and whose distance the placement keeps), or if anything is misplaced or misaligned."""
    problems = []
    if plan.arena_bytes % plan.alignment:
        problems.append(f"arena of {plan.arena_bytes} B is not a multiple of the alignment {plan.alignment}")
    for b in plan.buffers:
        off = plan.offsets.get(b.name)
        if off is None:
            problems.append(f"buffer {b.name} has no offset")
            continue
        if off % plan.alignment:
            problems.append(f"buffer {b.name} at offset {off} is not {plan.alignment}-byte aligned")
        if off < 0 or off + b.nbytes > plan.arena_bytes:
            problems.append(f"buffer {b.name} [{off}, {off + b.nbytes}) is outside the arena of {plan.arena_bytes} B")
    if problems:
        raise PlanError(f"memory plan by '{plan.planner}' is invalid:\n  " + "\n  ".join(problems))
    rules = {}
    for ov in getattr(plan, "overlaps", ()):
        rules[(ov.input, ov.output)] = ov
    bufs = list(plan.buffers)
    for i, a in enumerate(bufs):
        for b in bufs[i + 1 :]:
            if not (a.first <= b.last and b.first <= a.last) or not a.nbytes or not b.nbytes:
                continue
            oa, ob = plan.offsets[a.name], plan.offsets[b.name]
            if not (oa < ob + b.nbytes and ob < oa + a.nbytes):
                continue
            ov = rules.get((a.name, b.name))
            src, dst = (a, b) if ov is not None else (b, a)
            ov = ov or rules.get((b.name, a.name))
            if ov is not None:
                why = _rule_broken(ov, src, dst, plan.offsets[src.name], plan.offsets[dst.name])
                if why is None:
                    continue
                problems.append(why)
                continue
            problems.append(
                f"{a.name} [{oa}, {oa + a.nbytes}) steps {a.first}-{a.last} overlaps "
                f"{b.name} [{ob}, {ob + b.nbytes}) steps {b.first}-{b.last}"
            )
    for v in getattr(plan, "rings", ()):
        problems += _ring_broken(plan, v, rules)
    problems += _work_broken(plan)
    for stage in getattr(plan, "patches", ()):
        problems += _patch_broken(plan, stage)
    problems += contract_problems(plan)
    if problems:
        raise PlanError(f"memory plan by '{plan.planner}' is invalid:\n  " + "\n  ".join(problems))


def contract_problems(plan) -> list[str]:
    """keep_input: no other buffer touches the input's bytes; separate_output: input and output are apart."""
    if not (getattr(plan, "keep_input", False) or getattr(plan, "separate_output", False)):
        return []
    by_name = {b.name: b for b in plan.buffers}
    inp, out = by_name.get(plan.input_buffer), by_name.get(plan.output_buffer)
    if inp is None or out is None:
        return [f"the plan names input {plan.input_buffer!r} and output {plan.output_buffer!r}, not its buffers"]

    def share(a, b) -> bool:
        oa, ob = plan.offsets[a.name], plan.offsets[b.name]
        return a.nbytes > 0 and b.nbytes > 0 and oa < ob + b.nbytes and ob < oa + a.nbytes

    problems = []
    if plan.keep_input:
        problems += [f"{b.name} shares bytes with the input {inp.name}, which must survive invoke"
                     for b in plan.buffers if b.name != inp.name and share(inp, b)]
    if plan.separate_output and inp.name != out.name and share(inp, out):
        problems.append(f"the output {out.name} shares bytes with the input {inp.name}, which was asked apart")
    return problems


def _work_broken(plan) -> list[str]:
    """A kernel's work buffer exists, has the bytes the kernel uses and lives only at its node's step; one record
    per node (a ring's buffer is checked by _ring_broken)."""
    by_name = {b.name: b for b in plan.buffers}
    out = []
    seen = set()
    for k in getattr(plan, "kernels", ()):
        if k.node in seen:
            out.append(f"{k.node} has two kernel records (one kernel runs a node)")
        seen.add(k.node)
        if not k.work or k.ring is not None:
            continue
        work = by_name.get(k.work)
        if work is None:
            out.append(f"{k.variant} kernel of {k.node} has no work buffer {k.work} in the plan")
        elif work.nbytes < k.work_bytes or work.first != work.last or work.producer != k.node or not work.scratch:
            out.append(f"work buffer {k.work} of {k.node}: {work.nbytes} B at steps {work.first}-{work.last} by "
                       f"{work.producer}, expected {k.work_bytes} B scratch at {k.node}'s step only")
    return out


def _ring_broken(plan, v, rules) -> list[str]:
    """A ring kernel needs its ring to itself at its step, at least ring_pixels x pixel_bytes, and the plan's
    rule for its input/output pair must be the ring's distance (the plain kernel's is larger)."""
    ring = next((b for b in plan.buffers if b.name == v.scratch), None)
    if ring is None:
        return [f"ring kernel of {v.node} has no scratch buffer {v.scratch} in the plan"]
    out = []
    if not (ring.first == ring.last == v.step) or ring.producer != v.node:
        out.append(f"ring {v.scratch} lives at steps {ring.first}-{ring.last} (by {ring.producer}), but only "
                   f"{v.node}'s step {v.step} uses it")
    if ring.nbytes < v.ring_pixels * v.pixel_bytes:
        out.append(f"ring {v.scratch} has {ring.nbytes} B, {v.node} writes {v.ring_pixels} x {v.pixel_bytes} B")
    rule = rules.get((v.input, v.output))
    if rule is not None and (rule.distance != v.distance or rule.step != v.step):
        out.append(f"{v.output} over {v.input} is planned with distance {rule.distance} at step {rule.step}; "
                   f"the ring kernel of {v.node} guarantees {v.distance} at step {v.step}")
    return out


def _rule_broken(ov, src, dst, o_src: int, o_dst: int) -> str | None:
    """Why an overlap of output `dst` over input `src` is not allowed, or None if it is."""
    if not (src.last == ov.step == dst.first):
        return (f"{dst.name} (steps {dst.first}-{dst.last}) shares bytes with {src.name} (steps {src.first}-"
                f"{src.last}) but an overlap is only allowed when the input dies where the output is born "
                f"(rule at step {ov.step})")
    if o_dst > o_src - ov.distance:
        return (f"{dst.name} at offset {o_dst} sits over {src.name} at {o_src}: the rule at step {ov.step} "
                f"needs offset({dst.name}) <= {o_src - ov.distance} (safe distance {ov.distance} B)")
    return None


def _patch_broken(plan, stage) -> list[str]:
    """What is wrong with a plan's patch stage (plan/patch.py): its scratch, the chain of its windows, and its
    output's rule over its input, recomputed from the bands' rows."""
    out = []
    scratch = next((b for b in plan.buffers if b.name == stage.scratch), None)
    if scratch is None:
        return [f"patch stage {stage.nodes[0]}: no scratch buffer {stage.scratch}"]
    if scratch.nbytes < stage.scratch_bytes or scratch.first != scratch.last or scratch.first != stage.start:
        out.append(f"patch scratch {scratch.name}: {scratch.nbytes} B at steps {scratch.first}-{scratch.last}, "
                   f"expected {stage.scratch_bytes} B at step {stage.start} only")
    for k, w in enumerate(stage.windows):
        for i in range(1, len(w)):
            if (w[i].in_lo, w[i].in_hi) != (w[i - 1].out_lo, w[i - 1].out_hi):
                out.append(f"patch band {k}: layer {i} reads rows {w[i].in_lo}-{w[i].in_hi}, the layer before "
                           f"writes {w[i - 1].out_lo}-{w[i - 1].out_hi}")
        spans = [(stage.offsets[i], stage.offsets[i] + (w[i].out_hi - w[i].out_lo) * stage.row_bytes[i])
                 for i in range(len(w) - 1)]
        for i, (lo, hi) in enumerate(spans):
            if hi > stage.scratch_bytes:
                out.append(f"patch band {k}: layer {i}'s window ends at {hi}, past the scratch")
            if i and lo < spans[i - 1][1] and spans[i - 1][0] < hi and lo < hi:  # layer i reads window i - 1
                out.append(f"patch band {k}: layer {i} writes its window over the window it reads")
    need = max(w[-1].out_hi * stage.row_bytes[-1] - stage.windows[k + 1][0].in_lo * stage.in_row_bytes
               for k, w in enumerate(stage.windows[:-1]))
    for ov in plan.overlaps:
        if ov.step == stage.start and ov.distance < need - _offset_in(plan, ov.input, stage.input):
            out.append(f"patch stage output over its input at distance {ov.distance}; the bands need {need}")
    return out


def _offset_in(plan, buffer: str, tensor: str) -> int:
    b = next(b for b in plan.buffers if b.name == buffer)
    return b.offset_in(tensor) if tensor in b.tensors else 0
