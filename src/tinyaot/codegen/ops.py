"""Per-op C emitters, derived from the op registry: constants for flash and one kernel call per node.

An op's emitter is the generic one (its reference `prepare`, C kernel `tinyaot_<ref>` in `<ref>.c`, called with
the node's arena inputs, `&<layer>_params` and its output) unless its spec names a module with its own
`emit_<op>` (a kernel chosen at compile time, a pointer array). A Params that knows its C function better (a
binary op's broadcast kernel) says so in its `c_kernel`, and one whose tables deserve a comment in its `c_notes`;
the generic call reads both. A node the plan runs by a kernel variant gets that variant's emitter
(`variant_emitter`). Either way the C reads the compile-time numbers the NumPy reference uses.
"""
from __future__ import annotations

from functools import partial
from importlib import import_module
from typing import Callable

from tinyaot.codegen.cformat import c_array
from tinyaot.codegen.emit import EmittedOp, arena_in, arena_out, kernel_op, layer_base, without_speed_tables
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, OpSpec, kernel_ref
from tinyaot.ir.variants import KernelVariant

__all__ = ["EMITTERS", "EmittedOp", "describe", "emitter", "emitter_for", "variant_emitter"]

C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t"}


def emit_kernel(spec: OpSpec, node: Node, g: Graph, prefix: str, offsets: dict[str, str],
                speed: bool = True, ref: str | None = None) -> EmittedOp:
    """`tinyaot_<ref>(inputs..., &params, output)`: the call every op gets unless its spec says otherwise.
    speed=False (size and memory modes): tables that only buy speed are left out (see without_speed_tables).
    `ref`: another of the op's kernels (its 16x8 variant)."""
    ref = ref or spec.ref
    p = import_module(f"tinyaot.ref.{ref}").prepare(node, g)
    if not speed:
        p = without_speed_tables(p)
    base = layer_base(prefix, node)
    consts, inputs = _operands(node, g, p, base, offsets)
    out = g.tensor(node.outputs[0])
    return kernel_op(p, base, getattr(p, "c_kernel", f"tinyaot_{ref}"), f"{ref}.c", inputs,
                     [arena_out(offsets, out.name, C_TYPES.get(out.dtype, "int8_t"))], constants=consts,
                     notes=getattr(p, "c_notes", None))


def _operands(node: Node, g: Graph, p, base: str, offsets: dict[str, str]) -> tuple[str, list[str]]:
    """The arena inputs; constants live in the params, except a binary element-wise op's constant operand
    (Params.constants, ref/broadcast.py's convention), an array in flash passed where its arena operand would be."""
    constants = getattr(p, "constants", None) or (None,) * len(node.inputs)
    consts, inputs = "", []
    for k, (t, data) in enumerate(zip(node.inputs, constants)):
        if data is not None:
            consts += f"/* {node.name}: constant operand {k + 1} '{t}', {list(data.shape)} */\n"
            consts += c_array(f"{base}_operand{k + 1}", data.reshape(-1))
            inputs.append(f"{base}_operand{k + 1}")
        elif not g.tensor(t).is_const:
            inputs.append(arena_in(offsets, t, C_TYPES[g.tensor(t).dtype]))
    return consts, inputs


def emit_view(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True) -> EmittedOp:
    return EmittedOp("", "/* a view: same bytes, nothing to do */", None)


def emitter(spec: OpSpec) -> Callable[..., EmittedOp]:
    """The op's C emitter, read from its spec."""
    if spec.view:
        return emit_view
    if spec.emit:
        return getattr(import_module(f"tinyaot.codegen.{spec.emit}"), f"emit_{spec.name}")
    return partial(emit_kernel, spec)


EMITTERS: dict[str, Callable[..., EmittedOp]] = {s.name: emitter(s) for s in OPS.values() if s.view or s.ref}


def variant_emitter(variant: KernelVariant) -> Callable[..., EmittedOp]:
    """The emitter of a kernel variant, read from the registry: codegen/<emit>.py emit_<name>(node, g, prefix,
    offsets, choice, variant, speed)."""
    return getattr(import_module(f"tinyaot.codegen.{variant.emit}"), f"emit_{variant.name}")


def emitter_for(node: Node, g: Graph) -> Callable[..., EmittedOp]:
    """The node's emitter: its op's, or for int16 activations the 16x8 kernel's: `emit_<s16>` in the op's emit
    module when it has one (a pointer array), else the generic call."""
    spec = OPS[node.op]
    ref = kernel_ref(node, g)
    if ref is not None and ref == spec.s16:
        own = getattr(import_module(f"tinyaot.codegen.{spec.emit}"), f"emit_{ref}", None) if spec.emit else None
        return own or partial(emit_kernel, spec, ref=ref)
    return EMITTERS[node.op]


def describe(node: Node, g: Graph) -> str:
    """A one-line comment naming the layer, what it computes and where it came from."""
    if node.op == "fully_connected":
        w = g.tensor(node.inputs[1])
        what = f"{OPS[node.op].title} {w.shape[1]} -> {w.shape[0]}" + clamp_text(node.attrs.get("clamp"))
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
    kernel = a.get("kernel")  # pooling
    if OPS[node.op].weight_axis is not None and len(g.tensor(node.inputs[1]).shape) == 4:  # convs
        kernel = g.tensor(node.inputs[1]).shape[1:3]
    kernel = (kernel, kernel) if isinstance(kernel, int) else kernel
    title = OPS[node.op].title or node.op
    if node.op == "lut":
        title = f"lut({a.get('function')})"
    src, dst = g.tensor(node.inputs[0]).dtype, g.tensor(node.outputs[0]).dtype
    if node.op == "quantize" and src != dst:  # a precision change (mixed int8 / int16)
        title += f" {src} -> {dst}"
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
