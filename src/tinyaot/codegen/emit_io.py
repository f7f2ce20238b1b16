"""Emitters for the model's boundary: uint8 input converted to int8 in place."""
from __future__ import annotations

from tinyaot.ir import Graph, Node
from tinyaot.ref import uint8_to_int8 as u8


def emit_uint8_to_int8(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    from tinyaot.codegen.ops import EmittedOp  # here, not at the top: codegen.ops imports this module

    p = u8.prepare(node, g)
    x, y = node.inputs[0], node.outputs[0]
    call = (f"tinyaot_uint8_to_int8((const uint8_t *)(arena + {offsets[x]}), {p.size}, "
            f"(int8_t *)(arena + {offsets[y]}));")
    return EmittedOp("", call, 0, "uint8_to_int8.c")


EMITTERS = {"uint8_to_int8": emit_uint8_to_int8}
