"""C emitters of the recurrent layers: the generic call plus the layer's int16 working memory.

A recurrent kernel keeps its state (cell state, gates, hidden state) in the node's second output, a buffer the
plan places in the arena live at the layer's step only, so the C needs no stack array or static buffer:
`tinyaot_<ref>(input, &params, work, output)`. A streamed layer (the node's `stateful`, passes/streaming.py)
calls `tinyaot_<ref>_stateful(input, &params, work, output, slot)`: the same kernel starting from, and leaving its
final state in, its slot of the state region (the slot last, as every stateful kernel takes it).
"""
from __future__ import annotations

from importlib import import_module

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base
from tinyaot.codegen.emit_stream import state_offset
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, state_family


def _emit_recurrent(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    ref = OPS[node.op].ref
    p = import_module(f"tinyaot.ref.{ref}").prepare(node, g)
    work = f"(int16_t *)(void *)(arena + {offsets[node.outputs[1]]})"
    outputs = [work, arena_out(offsets, node.outputs[0])]
    fn = f"tinyaot_{ref}"
    if state_family(node) is not None:
        fn += "_stateful"
        outputs.append(f"(int16_t *)(void *)(state + {state_offset(prefix, node.name)})")
    return kernel_op(p, layer_base(prefix, node), fn, f"{ref}.c", [arena_in(offsets, node.inputs[0])], outputs)


def emit_lstm(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _emit_recurrent(node, g, prefix, offsets)


def emit_gru(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _emit_recurrent(node, g, prefix, offsets)
