"""The state region: bytes a stateful op keeps from one invoke to the next, apart from the arena.

The arena is scratch: the planner shares its bytes between tensors whose lifetimes do not meet, and invoke
may overwrite any of them. State must survive every invoke, so it is never an arena buffer: each stateful node
(the registry's `state` trait) gets its own slot in one more static region, placed once, back to back, each
slot aligned like the arena. Reset writes every slot's initial value (the zero point: real 0).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS


@dataclass(frozen=True)
class StateSlot:
    node: str  # the stateful node
    offset: int  # in the state region
    nbytes: int
    fill: int  # the byte value reset writes (an int8 zero point)


def window_state(node: Node, g: Graph) -> tuple[int, int]:
    """(bytes, fill) of a frame window: the window's frames but the newest, at the frame's zero point."""
    frame, window = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    return window.nbytes - frame.nbytes, int(frame.qparams.zero_point[0]) if frame.qparams else 0


# state family (the registry's `state` trait) -> (bytes, fill) of a node's slot
STATE_FAMILIES: dict[str, Callable[[Node, Graph], tuple[int, int]]] = {"window": window_state}


def plan_state(g: Graph, alignment: int = 4) -> tuple[StateSlot, ...]:
    """One slot per stateful node, in graph order."""
    slots, at = [], 0
    for node in g.nodes:
        family = OPS[node.op].state
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
