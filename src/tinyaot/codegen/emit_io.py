"""Emitters for the model's boundary: uint8 input converted to int8 in place."""
from __future__ import annotations

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base
from tinyaot.ir import Graph, Node
from tinyaot.ref import uint8_to_int8 as u8


def emit_uint8_to_int8(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    return kernel_op(u8.prepare(node, g), layer_base(prefix, node), "tinyaot_uint8_to_int8", "uint8_to_int8.c",
                     [arena_in(offsets, node.inputs[0], "uint8_t")], [arena_out(offsets, node.outputs[0])])


EMITTERS = {"uint8_to_int8": emit_uint8_to_int8}
