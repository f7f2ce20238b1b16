"""C emitter of the ring (in-place) conv kernels the memory plan chose (plan/inplace.py), and the kernel files
every kernel file needs beside it.

The same params struct as the plain conv kernels (the same reference `prepare`, the same kernel choice), plus
the ring: its arena buffer and its size in pixels, both the plan's; the call is direct, chosen at compile time.
"""
from __future__ import annotations

from importlib import import_module

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base
from tinyaot.codegen.emit_conv import conv_kernel
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS

# Kernel files that call kernels of other files, which the generated sources then carry too: every variant's
# (the registry's c_deps: a ring kernel calls its plain twin once per pixel) and the plain kernels built on others.
KERNEL_DEPS = {v.c_file: v.c_deps for s in OPS.values() for v in s.variants if v.c_deps}
KERNEL_DEPS["conv2d_add_s8.c"] = ("conv2d_s8.c", "add_s8.c")  # codegen/emit_residual.py
KERNEL_DEPS["gru_s8.c"] = ("lstm_s8.c",)  # TFLM's int16 sigmoid / tanh (codegen/emit_recurrent.py)
KERNEL_DEPS["lstm_s16.c"] = ("lstm_s8.c", "fully_connected_s16.c")  # the sigmoid / tanh, tinyaot_fc16_rows


def emit_ring(node: Node, g: Graph, prefix: str, offsets: dict[str, str], choice, variant, speed: bool = True):
    """One conv / depthwise conv through its ring: `choice.ring` is the plan's RingVariant for this node."""
    ring = choice.ring
    p = import_module(f"tinyaot.ref.{OPS[node.op].ref}").prepare(node, g)
    fn = variant.c_kernel
    if node.op == "conv2d":  # picks its kernel (pointwise or general) at compile time
        p, fn = conv_kernel(p, ring=True)
    where = "over its input" if ring.distance <= 0 else f"{ring.distance} B below its input"
    return kernel_op(p, layer_base(prefix, node), fn, variant.c_file, [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, ring.scratch), str(ring.ring_pixels), arena_out(offsets, node.outputs[0])],
                     comment=f"in place: output {where}, pixels held back in a {ring.ring_pixels}-pixel ring")
