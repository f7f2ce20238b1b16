"""The state region: bytes a stateful op keeps from one invoke to the next, apart from the arena.

The arena is scratch: the planner shares its bytes between tensors whose lifetimes do not meet, and invoke
may overwrite any of them. State must survive every invoke, so it is never an arena buffer: each stateful node
(the registry's `state` trait) gets its own slot in one more static region, placed once, back to back, each
slot aligned like the arena. Reset writes every slot's initial value; each family's size and initial value is
its kernel's (ref/state.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.ir import Graph
from tinyaot.ir.ops import state_family
from tinyaot.ref.state import STATE_FAMILIES as STATE_FAMILIES  # the families' import path from before ref/state.py


@dataclass(frozen=True)
class StateSlot:
    node: str  # the stateful node
    offset: int  # in the state region
    nbytes: int
    fill: int  # the byte value reset writes (an int8 zero point)


def plan_state(g: Graph, alignment: int = 4) -> tuple[StateSlot, ...]:
    """One slot per stateful node, in graph order."""
    slots, at = [], 0
    for node in g.nodes:
        family = state_family(node)
        if family is None:
            continue
        nbytes, fill = STATE_FAMILIES[family](node, g)
        slots.append(StateSlot(node.name, at, nbytes, fill))
        at += -(-nbytes // alignment) * alignment
    return tuple(slots)


def state_size(slots, alignment: int = 4) -> int:
    """The region's bytes: the last slot's end, aligned."""
    end = max((s.offset + s.nbytes for s in slots), default=0)
    return -(-end // alignment) * alignment
