"""The state slots' sizes and initial values: what each stateful kernel keeps from one invoke to the next.

A stateful op (the registry's `state` trait) names its family here; the family says how many bytes its kernel's
slot takes and the byte a reset writes into it (the zero point: real 0). The plan places the slots
(plan/state.py), the interpreter and the C reset them.

Families: `window`, the last frames a streamed causal conv reads; `hidden` (a streamed GRU: its int16 hidden state)
and `hidden_and_cell` (a streamed LSTM: its int16 cell state, then its int8 hidden state less its zero point,
widened to int16). A recurrent slot keeps its int8 hidden state that way so that the whole slot is int16 with zero
point 0: a reset writes zero bytes, which is the zero initial state. `svdf`: an SVDF's activation state
([batches][filters][memory] of the weights_time's type, int16 or int8), TFLite's variable tensor, reset as TFLite
Micro's ResetVariableTensors does: zeros, or an int8 state's zero point.
"""
from __future__ import annotations

from collections.abc import Callable

from tinyaot.ir import Graph, Node


def window_state(node: Node, g: Graph) -> tuple[int, int]:
    """(bytes, fill) of a frame window: the window's frames but the newest, at the frame's zero point."""
    frame, window = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
    return window.nbytes - frame.nbytes, int(frame.qparams.zero_point[0]) if frame.qparams else 0


INT16_BYTES = 2


def hidden_state(node: Node, g: Graph) -> tuple[int, int]:
    """(bytes, fill) of a streamed GRU's slot: h16 [hidden] int16, zero (the int8 h follows from it)."""
    return INT16_BYTES * int(node.attrs["hidden"]), 0


def hidden_and_cell_state(node: Node, g: Graph) -> tuple[int, int]:
    """(bytes, fill) of a streamed LSTM's slot: c [hidden] int16, then h - zero point [hidden] int16, zero."""
    return 2 * INT16_BYTES * int(node.attrs["hidden"]), 0


def svdf_state(node: Node, g: Graph) -> tuple[int, int]:
    """(bytes, fill) of an SVDF's slot: batches x filters x memory values of the weights_time's type; an int8 state
    starts at its zero point (TFLM memsets an int8 variable tensor to it), an int16 one at 0."""
    x, w_feature, w_time = (g.tensor(t) for t in node.inputs[:3])
    nbytes = x.shape[0] * w_feature.shape[0] * w_time.shape[1] * w_time.itemsize
    fill = int(node.attrs["state_qparams"].zero_point[0]) if w_time.dtype == "int8" else 0
    return nbytes, fill


# state family (the registry's `state` trait) -> (bytes, fill) of a node's slot
STATE_FAMILIES: dict[str, Callable[[Node, Graph], tuple[int, int]]] = {
    "window": window_state, "hidden": hidden_state, "hidden_and_cell": hidden_and_cell_state, "svdf": svdf_state}
