"""C emitters of the recurrent layers: the generic call plus the layer's int16 working memory.

A recurrent kernel keeps its state (cell state, gates, hidden state) in the node's second output, a buffer the
plan places in the arena live at the layer's step only, so the C needs no stack array or static buffer:
`tinyaot_<ref>(input, &params, work, output)`. A stateful layer (the node's `stateful`: streamed by
passes/streaming.py, or an imported .tflite LSTM) calls `tinyaot_<ref>_stateful(input, &params, work, output,
slot)`: the same kernel starting from, and leaving its final state in, its slot of the state region (the slot last,
as every stateful kernel takes it).
"""
from __future__ import annotations

from importlib import import_module

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base, without_speed_tables
from tinyaot.codegen.emit_stream import state_offset
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, state_family


def _emit_recurrent(node: Node, g: Graph, prefix: str, offsets: dict[str, str], ref: str | None = None,
                    speed: bool = True):
    """`ref`: the op's 16x8 kernel (int16 input and output) instead of its int8 one; speed=False drops the tables
    that only buy speed (the 16x8 LSTM's widened weights)."""
    ref = ref or OPS[node.op].ref
    p = import_module(f"tinyaot.ref.{ref}").prepare(node, g)
    if not speed:
        p = without_speed_tables(p)
    ctype = "int16_t" if ref == OPS[node.op].s16 else "int8_t"
    work = f"(int16_t *)(void *)(arena + {offsets[node.outputs[1]]})"
    outputs = [work, arena_out(offsets, node.outputs[0], ctype)]
    fn = f"tinyaot_{ref}"
    if state_family(node) is not None:
        fn += "_stateful"
        outputs.append(f"(int16_t *)(void *)(state + {state_offset(prefix, node.name)})")
    return kernel_op(p, layer_base(prefix, node), fn, f"{ref}.c", [arena_in(offsets, node.inputs[0], ctype)], outputs)


def emit_lstm(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _emit_recurrent(node, g, prefix, offsets)


def emit_lstm_s16(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _emit_recurrent(node, g, prefix, offsets, ref="lstm_s16", speed=speed)


def emit_gru(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _emit_recurrent(node, g, prefix, offsets)
