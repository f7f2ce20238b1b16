"""C emitter of the ring (in-place) conv kernels the memory plan chose (plan/inplace.py).

The same params struct as the plain conv kernels (the same reference `prepare`, the same kernel choice), plus
the ring: its arena buffer and its size in pixels, both the plan's; the call is direct, chosen at compile time.
"""
from __future__ import annotations

from importlib import import_module

from tinyaot.codegen.emit import arena_in, arena_out, kernel_op, layer_base
from tinyaot.codegen.emit_conv import conv_kernel
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, OpSpec


def ring_kernel(spec: OpSpec) -> str:
    """The ring twin of an op's kernel: ref conv2d_s8 -> tinyaot_conv2d_inplace_s8 in conv2d_inplace_s8.c."""
    return f"{spec.ref.removesuffix('_s8')}_inplace_s8"


# A ring kernel calls its plain twin once per pixel, so the generated sources carry both.
KERNEL_DEPS = {f"{ring_kernel(s)}.c": (f"{s.ref}.c",) for s in OPS.values() if s.ring}
KERNEL_DEPS["conv2d_add_s8.c"] = ("conv2d_s8.c", "add_s8.c")  # codegen/emit_residual.py
KERNEL_DEPS["conv2d_pairs_s8.c"] = ("add_s8.c",)  # its conv2d_add kernel ends in tinyaot_add_s8
KERNEL_DEPS["gru_s8.c"] = ("lstm_s8.c",)  # TFLM's int16 sigmoid / tanh (codegen/emit_recurrent.py)
KERNEL_DEPS["lstm_s16.c"] = ("lstm_s8.c", "fully_connected_s16.c")  # the sigmoid / tanh, tinyaot_fc16_rows


def emit_ring(node: Node, g: Graph, prefix: str, offsets: dict[str, str], ring):
    """One conv / depthwise conv through its ring: `ring` is the plan's RingVariant for this node."""
    spec = OPS[node.op]
    p = import_module(f"tinyaot.ref.{spec.ref}").prepare(node, g)
    kernel_file, fn = f"{ring_kernel(spec)}.c", f"tinyaot_{ring_kernel(spec)}"
    if node.op == "conv2d":  # picks its kernel (pointwise or general) at compile time
        p, fn = conv_kernel(p, ring=True)
    where = "over its input" if ring.distance <= 0 else f"{ring.distance} B below its input"
    return kernel_op(p, layer_base(prefix, node), fn, kernel_file, [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, ring.scratch), str(ring.ring_pixels), arena_out(offsets, node.outputs[0])],
                     comment=f"in place: output {where}, pixels held back in a {ring.ring_pixels}-pixel ring")
