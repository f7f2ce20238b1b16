"""The caller's contract on the input and output bytes, expressed as lifetimes so every planner honours it.

By default the planner treats the input like any activation: it dies at its last reader, so later buffers
(the output too) may reuse its bytes, which is how the smallest arenas are reached. Firmware sometimes needs
more, and asks for it when compiling:

- keep the input: the input's bytes survive `invoke` (a sliding window kept in place, a retry with the same
  frame). The input then lives to the last step and is never the source of an in-place overlap.
- separate the output: the output never shares a byte with the input, so the next input can be written while
  the last output is still being read (double buffering). Either the output lives from step 0 or the input
  lives until the output is produced; the cheaper of the two is kept.

Whatever was asked, `io_facts` reads what the chosen plan actually does, for the header and the report.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tinyaot.plan.lifetimes import Buffer


@dataclass(frozen=True)
class Contract:
    """What was asked of the plan; `pinned` buffers may not be overwritten in place by any op."""

    keep_input: bool = False
    separate_output: bool = False

    @property
    def any(self) -> bool:
        return self.keep_input or self.separate_output


def with_contract(buffers: list[Buffer], n_steps: int, input_buf: str, output_buf: str, contract: Contract,
                  how: str = "output-early") -> tuple[list[Buffer], frozenset[str]]:
    """Lifetimes that enforce `contract`, and the buffers no in-place rule may consume.

    how: "output-early" (the output lives from step 0) or "input-late" (the input lives until the output is
    produced), the two ways to keep the output apart from the input.
    """
    last = max(n_steps - 1, 0)
    by_name = {b.name: b for b in buffers}
    pinned: set[str] = set()
    if input_buf == output_buf:  # the output is a view of the input: nothing to separate
        return list(buffers), frozenset()
    if contract.keep_input:
        by_name[input_buf] = replace(by_name[input_buf], last=last)
        pinned.add(input_buf)
    elif contract.separate_output:
        out = by_name[output_buf]
        if how == "output-early":
            by_name[output_buf] = replace(out, first=0)
        else:
            src = by_name[input_buf]
            by_name[input_buf] = replace(src, last=max(src.last, out.first))
            pinned.add(input_buf)  # the output's producer must not write over the input in place
    return [by_name[b.name] for b in buffers], frozenset(pinned)


@dataclass(frozen=True)
class IOFacts:
    """What a plan does to the caller's input and output bytes (true of the plan, whatever was asked)."""

    input_overwritten: bool  # some other buffer shares a byte with the input: invoke may change it
    output_overlaps_input: bool  # writing the next input changes the last output


def io_facts(plan, input_tensor, output_tensor) -> IOFacts:
    """Several inputs or outputs (lists of tensors): an input is overwritten if any is, and the output overlaps
    the input if any output shares a byte with any input."""
    ins = [input_tensor] if isinstance(input_tensor, str) else list(input_tensor)
    outs = [output_tensor] if isinstance(output_tensor, str) else list(output_tensor)
    inputs = [plan.buffer_of(t) for t in ins]
    outputs = [plan.buffer_of(t) for t in outs]
    overwritten = any(_share(plan, inp, b) for inp in inputs for b in plan.buffers if b.name != inp.name)
    overlaps = any(inp.name == out.name or _share(plan, inp, out) for inp in inputs for out in outputs)
    return IOFacts(input_overwritten=overwritten, output_overlaps_input=overlaps)


def _share(plan, a: Buffer, b: Buffer) -> bool:
    """a and b share at least one arena byte (at any time)."""
    if not a.nbytes or not b.nbytes:
        return False
    oa, ob = plan.offsets[a.name], plan.offsets[b.name]
    return oa < ob + b.nbytes and ob < oa + a.nbytes


@dataclass(frozen=True)
class ContractReport:
    """The buffer contract of a compiled model: what was asked, what holds, and what it cost in arena bytes."""

    preserve_input: bool  # asked
    separate_output: bool  # asked
    input_preserved: bool  # holds: invoke leaves the input's bytes as they were
    output_overlaps_input: bool  # holds: writing the next input changes the last output
    arena_bytes: int
    unconstrained_arena_bytes: int  # the arena without the options asked for

    @property
    def cost_bytes(self) -> int:
        return self.arena_bytes - self.unconstrained_arena_bytes

    def to_dict(self) -> dict:
        return {
            "preserve_input": self.preserve_input,
            "separate_output": self.separate_output,
            "input_preserved": self.input_preserved,
            "output_overlaps_input": self.output_overlaps_input,
            "arena_bytes": self.arena_bytes,
            "unconstrained_arena_bytes": self.unconstrained_arena_bytes,
            "cost_bytes": self.cost_bytes,
        }

    def __str__(self) -> str:
        inp = "survives invoke" if self.input_preserved else "is overwritten by invoke (preserve_input keeps it)"
        out = ("shares bytes with the input: copy it before writing the next input (separate_output keeps them "
               "apart)" if self.output_overlaps_input else "does not share bytes with the input")
        asked = [n for n, on in (("preserve_input", self.preserve_input),
                                 ("separate_output", self.separate_output)) if on]
        cost = (f"; {' + '.join(asked)} costs {self.cost_bytes:,} B (arena {self.unconstrained_arena_bytes:,} B "
                "without it)") if asked else ""
        return f"buffer contract: the input {inp}; the output {out}{cost}"


def contract_report(plan, g, unconstrained_arena_bytes: int | None = None) -> ContractReport:
    facts = io_facts(plan, g.inputs, g.outputs)
    return ContractReport(plan.keep_input, plan.separate_output, not facts.input_overwritten,
                          facts.output_overlaps_input, plan.arena_bytes,
                          plan.arena_bytes if unconstrained_arena_bytes is None else unconstrained_arena_bytes)
