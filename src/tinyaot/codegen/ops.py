"""Per-op C emitters: constants for flash and one kernel call per node.

Each emitter gets the prepared params the NumPy reference uses, so both backends read the same
compile-time numbers, and calls its kernel the one way (codegen/emit.py): inputs, `&<layer>_params`, outputs.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from tinyaot.codegen import emit_conv, emit_io, emit_misc, emit_residual
from tinyaot.codegen.emit import EmittedOp, plain_op
from tinyaot.ir import Graph, Node
from tinyaot.ref import fully_connected_s8 as fc

__all__ = ["EMITTERS", "EmittedOp", "describe"]


def emit_fully_connected(node: Node, g: Graph, prefix: str, offsets: dict[str, str]) -> EmittedOp:
    """The input offset folded into the bias at compile time, so the kernel's inner loop is a plain dot."""
    p = fc.prepare(node, g)
    p = replace(p, bias=p.folded_bias.astype(np.int32))
    return plain_op(node, prefix, offsets, p, "tinyaot_fully_connected_s8", "fully_connected_s8.c")


def emit_view(node: Node, g: Graph, prefix: str, offsets: dict[str, str]) -> EmittedOp:
    return EmittedOp("", "/* a view: same bytes, nothing to do */", None)


EMITTERS: dict[str, Callable[..., EmittedOp]] = {
    "fully_connected": emit_fully_connected,
    "reshape": emit_view,
    **emit_conv.EMITTERS,
    **emit_misc.EMITTERS,
    **emit_io.EMITTERS,
    "conv2d_add": emit_residual.emit_conv2d_add,
}


def describe(node: Node, g: Graph) -> str:
    """A one-line comment naming the layer, what it computes and where it came from."""
    if node.op == "fully_connected":
        w = g.tensor(node.inputs[1])
        what = f"Linear {w.shape[1]} -> {w.shape[0]}" + clamp_text(node.attrs.get("clamp"))
    else:
        src, dst = g.tensor(node.inputs[0]), g.tensor(node.outputs[0])
        what = f"{_op_title(node, g)}, {_dims(src.shape)} -> {_dims(dst.shape)}" + clamp_text(node.attrs.get("clamp"))
    where = f"  [{_short_source(node.source)}]" if node.source else ""
    return f"{node.name}: {what}{where}"


def _dims(shape) -> str:
    """Per-sample dims ('25x5x64'); the batch dim is left out."""
    if len(shape) == 0:
        return "scalar"
    return "x".join(str(d) for d in shape[1:]) if len(shape) > 1 else str(shape[0])


def _op_title(node: Node, g: Graph) -> str:
    """'Conv2d 3x3 /2' style: kernel size and stride where the op has them."""
    a = node.attrs
    kernel = None
    if node.op in ("conv2d", "depthwise_conv2d"):
        w = g.tensor(node.inputs[1]).shape
        kernel = (w[1], w[2])
    elif node.op in ("max_pool2d", "avg_pool2d"):
        kernel = a.get("kernel")
        kernel = (kernel, kernel) if isinstance(kernel, int) else kernel
    title = {"conv2d": "Conv2d", "depthwise_conv2d": "DepthwiseConv2d", "max_pool2d": "MaxPool",
             "avg_pool2d": "AvgPool"}.get(node.op, node.op)
    if node.op == "lut":
        title = f"lut({a.get('function')})"
    if kernel:
        title += f" {kernel[0]}x{kernel[1]}"
        stride = a.get("stride")
        stride = (stride, stride) if isinstance(stride, int) else stride
        if stride and tuple(stride) != (1, 1):
            title += f" /{stride[0]}" if stride[0] == stride[1] else f" /{stride[0]}x{stride[1]}"
    return title


def clamp_text(clamp) -> str:
    if clamp is None:
        return ""
    lo, hi = clamp
    if lo == 0.0 and hi == float("inf"):
        return " + ReLU"
    if (lo, hi) == (0.0, 6.0):
        return " + ReLU6"
    return f" + clamp({lo:g}, {hi:g})"


def _short_source(source: str) -> str:
    path, _, rest = source.partition(":")
    tail = path.rsplit("/", 1)[-1]
    line = rest.split(":", 1)[0]
    return f"{tail}:{line}" if line else tail
