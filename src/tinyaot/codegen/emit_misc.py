"""C emitters of the int8 ops that need more than the generic call (codegen/ops.py): concat (a pointer array),
the binary element-wise ops (constant operands in flash, a broadcast kernel), lut (its table annotated). Each
calls the op's reference `prepare`, so C and NumPy read the same numbers, and passes the Params to the one
calling convention (emit.kernel_op)."""
from __future__ import annotations

from tinyaot.codegen.cformat import c_array
from tinyaot.codegen.emit import (
    LINE,
    EmittedOp,
    arena_in,
    arena_out,
    c_call,
    kernel_op,
    layer_base,
    without_speed_tables,
)
from tinyaot.codegen.params import emit_params
from tinyaot.ir import Graph, Node
from tinyaot.ref import add_s8, concat_s8, concat_s16, lut_s8, minmax_s8, mul_s8


def emit_concat(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    """The input pointers are arena addresses, known at run time: a local array beside the call."""
    return _concat(node, prefix, offsets, concat_s8.prepare(node, g), "int8_t", "concat_s8")


def emit_concat_s16(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    """The 16x8 concat (int16 activations): as emit_concat, int16 pointers."""
    return _concat(node, prefix, offsets, concat_s16.prepare(node, g), "int16_t", "concat_s16")


def _concat(node: Node, prefix: str, offsets: dict[str, str], p, ctype: str, kernel: str) -> EmittedOp:
    """A local array of input pointers beside the call: arena addresses, or a constant input's flash array."""
    base = layer_base(prefix, node)
    consts, pointers = "", []
    for k, (tensor, data) in enumerate(zip(node.inputs, p.constants)):
        if data is None:
            pointers.append(arena_in(offsets, tensor, ctype))
        else:
            consts += f"/* {node.name}: constant input {k + 1} '{tensor}', {list(data.shape)} */\n"
            consts += c_array(f"{base}_input{k + 1}", data.reshape(-1))
            pointers.append(f"{base}_input{k + 1}")
    kernel_call = c_call(f"tinyaot_{kernel}", "inputs", f"&{base}_params", arena_out(offsets, node.outputs[0], ctype),
                         width=LINE - 4).replace("\n", "\n    ")
    listed = ",\n        ".join(pointers)
    call = f"{{\n    const {ctype} *const inputs[{p.num_inputs}] = {{\n        {listed}\n    }};\n    {kernel_call}\n}}"
    return EmittedOp(consts + emit_params(p, base), call, f"{kernel}.c")


def _binary(node: Node, g: Graph, prefix: str, offsets: dict[str, str], p, kernel: str, speed: bool = True):
    """A binary element-wise op (add, sub, mul, minimum, maximum): constant operands are arrays in flash, passed
    where an arena operand would be; tinyaot_<kernel> when both operands have the output's shape, else
    tinyaot_<kernel>_broadcast (which reads each operand at its strides)."""
    if not speed:
        p = without_speed_tables(p)
    base = layer_base(prefix, node)
    consts, operands = "", []
    for k, (tensor, data) in enumerate(zip(node.inputs, p.constants)):
        if data is None:
            operands.append(arena_in(offsets, tensor))
        else:
            consts += f"/* {node.name}: constant operand {k + 1} '{tensor}', {list(data.shape)} */\n"
            consts += c_array(f"{base}_operand{k + 1}", data.reshape(-1))
            operands.append(f"{base}_operand{k + 1}")
    fn = f"tinyaot_{kernel}_broadcast_s8" if p.broadcast else f"tinyaot_{kernel}_s8"
    return kernel_op(p, base, fn, f"{kernel}_s8.c", operands, [arena_out(offsets, node.outputs[0])], constants=consts)


def emit_mul(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    return _binary(node, g, prefix, offsets, mul_s8.prepare(node, g), "mul")


def emit_add(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    """speed=False (size and memory modes): the 2 KB of input tables are left out."""
    return _binary(node, g, prefix, offsets, add_s8.prepare(node, g), "add", speed)


emit_sub = emit_add  # the add kernel; prepare reads the op and negates the second operand's scaled values


def emit_minimum(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    """speed=False (size and memory modes): the rescaled operands' tables are left out."""
    return _binary(node, g, prefix, offsets, minmax_s8.prepare(node, g), "minmax", speed)


emit_maximum = emit_minimum  # one kernel; prepare reads which from the op


def emit_lut(node: Node, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True):
    p = lut_s8.prepare(node, g)
    return kernel_op(p, layer_base(prefix, node), "tinyaot_lut_s8", "lut_s8.c", [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, node.outputs[0])],
                     notes={"table": f"{p.function}: output for input q at [q + 128]"})
