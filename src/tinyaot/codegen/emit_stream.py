"""Emitters of the stateful streaming ops: their kernels take the node's slot of the state region last."""
from __future__ import annotations

from tinyaot.codegen.cformat import c_ident
from tinyaot.codegen.emit import EmittedOp, arena_in, arena_out, kernel_op, layer_base
from tinyaot.ir import Graph, Node
from tinyaot.ref import svdf_s8
from tinyaot.ref.frame_shift_s8 import prepare


def state_offset(prefix: str, node_name: str) -> str:
    """The macro of a node's offset in the state region (defined in <name>.c beside the arena's)."""
    return f"{prefix.upper()}_STATE_OFFSET_{c_ident(node_name).upper()}"


def state_ptr(prefix: str, node: Node) -> str:
    return f"(int8_t *)(state + {state_offset(prefix, node.name)})"


def emit_frame_shift(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True) -> EmittedOp:
    """`tinyaot_frame_shift_s8(frame, &params, window, state slot)`."""
    return kernel_op(prepare(node, g), layer_base(prefix, node), "tinyaot_frame_shift_s8", "frame_shift_s8.c",
                     [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, node.outputs[0]), state_ptr(prefix, node)])


def emit_svdf(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True) -> EmittedOp:
    """`tinyaot_svdf_s8(input, &params, output, state slot)`: the activation state TFLite keeps in a variable
    tensor lives in the node's slot of the state region."""
    return kernel_op(svdf_s8.prepare(node, g), layer_base(prefix, node), "tinyaot_svdf_s8", "svdf_s8.c",
                     [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, node.outputs[0]), f"(void *)(state + {state_offset(prefix, node.name)})"])
