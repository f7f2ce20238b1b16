"""C emitter of the ring (in-place) conv kernels the memory plan chose (plan/inplace.py).

Same constants as the plain conv emitters (they read the same reference `prepare`), plus the ring's arena
offset and size; the call is direct, chosen at compile time.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinyaot.codegen.cformat import c_array, c_ident
from tinyaot.codegen.emit_conv import _CONV_FIELDS, _emitted, _pointwise_bias, c_struct
from tinyaot.ir import Graph, Node
from tinyaot.ref import conv2d_s8, depthwise_conv2d_s8

RING_KERNELS = {
    "conv2d": (conv2d_s8.prepare, "tinyaot_conv2d_inplace_s8", "conv2d_inplace_s8.c"),
    "depthwise_conv2d": (depthwise_conv2d_s8.prepare, "tinyaot_depthwise_conv2d_inplace_s8",
                         "depthwise_conv2d_inplace_s8.c"),
}

# A ring kernel calls its plain twin once per pixel, so the generated sources carry both.
KERNEL_DEPS = {kernel_file: (kernel_file.replace("_inplace", ""),) for _, _, kernel_file in RING_KERNELS.values()}
KERNEL_DEPS["conv2d_add_s8.c"] = ("conv2d_s8.c", "add_s8.c")  # codegen/emit_residual.py


def emit_ring(node: Node, g: Graph, prefix: str, offsets: dict[str, str], ring):
    """One conv / depthwise conv through its ring: `ring` is the plan's RingVariant for this node."""
    prepare, fn, kernel_file = RING_KERNELS[node.op]
    p = prepare(node, g)
    folded = _pointwise_bias(p) if node.op == "conv2d" else None
    if folded is not None:  # the pointwise kernel, as the plain emitter would choose
        p, fn = replace(p, bias=folded), "tinyaot_conv2d_1x1_inplace_s8"
    base = f"{prefix}_{c_ident(node.name)}"
    arrays = [(f"{base}_weights", p.weights), (f"{base}_bias", p.bias.astype(np.int32)),
              (f"{base}_multiplier", p.multiplier), (f"{base}_shift", p.shift)]
    consts = "".join(c_array(n, a) for n, a in arrays)
    consts += c_struct("tinyaot_conv_params", f"{base}_params", p, _CONV_FIELDS)
    nbytes = sum(a.nbytes for _, a in arrays) + 4 * len(_CONV_FIELDS)
    where = "over its input" if ring.distance <= 0 else f"{ring.distance} B below its input"
    call = (f"/* in place: output {where}, pixels held back in a {ring.ring_pixels}-pixel ring */\n"
            f"{fn}((const int8_t *)(arena + {offsets[node.inputs[0]]}),\n"
            f"    {base}_weights, {base}_bias, {base}_multiplier, {base}_shift, &{base}_params,\n"
            f"    (int8_t *)(arena + {offsets[ring.scratch]}), {ring.ring_pixels},\n"
            f"    (int8_t *)(arena + {offsets[node.outputs[0]]}));")
    return _emitted(consts, call, nbytes, kernel_file)
