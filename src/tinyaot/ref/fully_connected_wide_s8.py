"""The wide fully connected kernels (tinyaot_fully_connected_wide_s8 / _wide_w8_s8 in c/kernels/fully_connected_s8.c),
the `wide` and `wide_w8` variants.

They compute fully_connected_s8's numbers eight outputs at a time over weights laid out at compile time
(codegen/emit_conv.py: int16 pairs for speed, int8 in the kernel's order for size), the input offset folded into
the bias and the fast requantization (ref/per_channel.py) after. The reference is the plain kernel's; this module
holds what the plan needs to know of them: when a layer qualifies (they need no work buffer).
"""
from __future__ import annotations

from tinyaot.ir import Graph, Node
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref.per_channel import FAST_ALIGNMENT, fast_requantization

IN_GROUP = 8  # the kernel reads the input in whole groups of 8 features
X_BOUND = 256  # the input offset is folded into the bias: |bias| + 256 * sum |w| bounds the accumulator


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """An int8 layer with constant weights, a multiple of 8 input features, whose requantization takes the fast
    exact path, in an arena at least word aligned."""
    if options.alignment < FAST_ALIGNMENT:
        return False, f"the arena is {options.alignment}-byte aligned; the kernel loads words (LDRD)"
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(w.shape) != 2 or w.shape[1] % IN_GROUP:
        return False, f"{w.shape[-1]} input features; the wide kernels read whole groups of {IN_GROUP}"
    if x.dtype != "int8" or w.data is None or None in (w.qparams, x.qparams, y.qparams):
        return False, f"its input is {x.dtype}, or its weights are not constant int8"
    return fast_requantization(x.qparams.scale[0], w, b, y.qparams.scale[0], X_BOUND)


def work_bytes(node: Node, g: Graph) -> int:
    """No work buffer: the kernel keeps its eight accumulators in registers."""
    return 0
