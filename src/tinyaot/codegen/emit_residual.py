"""C emitter of conv2d_add (a residual add fused into its conv, passes/fuse_residual.py).

Reads the fused node's reference `prepare` (conv params + add params, nested in tinyaot_conv_add_params), so
the C uses the numbers the NumPy reference uses; the kernel calls the plain conv and add kernels (KERNEL_DEPS
in emit_inplace.py).
"""
from __future__ import annotations

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base, without_speed_tables
from tinyaot.ir import Graph, Node
from tinyaot.ref import conv2d_add_s8


def emit_conv2d_add(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    x, skip = node.inputs[0], node.inputs[3]
    comment = f"conv {node.attrs.get('conv', '?')} + residual add, the sum written over the skip's bytes"
    p = conv2d_add_s8.prepare(node, g)
    return kernel_op(p if speed else without_speed_tables(p), layer_base(prefix, node), "tinyaot_conv2d_add_s8",
                     "conv2d_add_s8.c", [arena_in(offsets, x), arena_in(offsets, skip)],
                     [arena_out(offsets, node.outputs[0])], comment=comment)
