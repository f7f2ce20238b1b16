"""C emitter of the op that needs more than the generic call (codegen/ops.py): concat, whose inputs are a pointer
array. It calls the op's reference `prepare`, so C and NumPy read the same numbers, and passes the Params to the
one calling convention (emit.kernel_op). (The binary element-wise ops take the generic call: their Params name
their kernel, plain or broadcast, and the generic call passes constant operands from flash.)"""
from __future__ import annotations

from tinyaot.codegen.cformat import c_array
from tinyaot.codegen.emit import LINE, EmittedOp, arena_in, arena_out, c_call, layer_base
from tinyaot.codegen.params import emit_params
from tinyaot.ir import Graph, Node
from tinyaot.ref import concat_s8, concat_s16


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
