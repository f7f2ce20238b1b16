"""C emitter of conv2d_add (a residual add fused into its conv, passes/fuse_residual.py).

Reads the fused node's reference `prepare` (conv params + add params), so the C uses the numbers the NumPy
reference uses; the kernel calls the plain conv and add kernels (KERNEL_DEPS in emit_inplace.py).
"""
from __future__ import annotations

import numpy as np

from tinyaot.codegen.cformat import c_array, c_ident
from tinyaot.codegen.emit_conv import _ADD_FIELDS, _CONV_FIELDS, _emitted, c_struct
from tinyaot.ir import Graph, Node
from tinyaot.ref import conv2d_add_s8


def emit_conv2d_add(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = conv2d_add_s8.prepare(node, g)
    c = p.conv
    base = f"{prefix}_{c_ident(node.name)}"
    arrays = [(f"{base}_weights", c.weights), (f"{base}_bias", c.bias.astype(np.int32)),
              (f"{base}_multiplier", c.multiplier), (f"{base}_shift", c.shift)]
    consts = "".join(c_array(n, a) for n, a in arrays)
    consts += c_struct("tinyaot_conv_params", f"{base}_conv_params", c, _CONV_FIELDS)
    consts += c_struct("tinyaot_add_params", f"{base}_add_params", p.add, _ADD_FIELDS)
    nbytes = sum(a.nbytes for _, a in arrays) + 4 * (len(_CONV_FIELDS) + len(_ADD_FIELDS))
    x, skip = node.inputs[0], node.inputs[3]
    call = (f"/* conv {node.attrs.get('conv', '?')} + residual add, the sum written over the skip's bytes */\n"
            f"tinyaot_conv2d_add_s8((const int8_t *)(arena + {offsets[x]}),\n"
            f"    {base}_weights, {base}_bias, {base}_multiplier, {base}_shift, &{base}_conv_params,\n"
            f"    (const int8_t *)(arena + {offsets[skip]}), &{base}_add_params, {p.skip_input},\n"
            f"    (int8_t *)(arena + {offsets[node.outputs[0]]}));")
    return _emitted(consts, call, nbytes, "conv2d_add_s8.c")
