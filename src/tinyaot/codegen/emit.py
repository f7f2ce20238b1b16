"""What every emitter shares: the emitted op, arena pointers, and the one way a kernel is called.

A kernel call is `fn(inputs..., &<layer>_params, outputs...)` with the params struct written by
params.emit_params from the op's Params; each emitter only says which kernel and which buffers.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace

from tinyaot.codegen.cformat import c_ident
from tinyaot.codegen.params import NULLABLE_ARRAYS, emit_params, struct_name
from tinyaot.ir import Node

LINE = 116  # columns of a call inside invoke() (indented 4): the generated C keeps to 120


@dataclass(frozen=True)
class EmittedOp:
    constants: str  # C definitions placed at file scope (flash)
    call: str  # statement(s) inside invoke()
    kernel_file: str | None  # kernel source this op needs


def layer_base(prefix: str, node: Node) -> str:
    """The prefix of every symbol a layer defines: '<model>_<layer>'."""
    return f"{prefix}_{c_ident(node.name)}"


def arena_in(offsets: dict[str, str], tensor: str, ctype: str = "int8_t") -> str:
    return f"(const {ctype} *)(arena + {offsets[tensor]})"


def arena_out(offsets: dict[str, str], tensor: str, ctype: str = "int8_t") -> str:
    return f"({ctype} *)(arena + {offsets[tensor]})"


def c_call(fn: str, *args: str, width: int = LINE) -> str:
    """`fn(a, b, c);`, wrapped with the arguments aligned under the first when it does not fit in `width`."""
    one = f"{fn}({', '.join(args)});"
    if len(one) <= width:
        return one
    pad = " " * (len(fn) + 1)
    lines, line = [], f"{fn}("
    for k, arg in enumerate(args):
        piece = arg + (");" if k == len(args) - 1 else ",")
        if line.strip() not in ("", f"{fn}(") and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = pad + piece
        else:
            line += ("" if line.endswith("(") else " ") + piece
    return "\n".join([*lines, line])


def kernel_op(p, base: str, fn: str, kernel_file: str, before: list[str], after: list[str], *,
              constants: str = "", notes: dict[str, str] | None = None, comment: str | None = None) -> EmittedOp:
    """One kernel call `fn(*before, &<base>_params, *after)` with its params struct (and `constants`, such as
    constant operands, ahead of it); `comment` goes above the call."""
    call = c_call(fn, *before, f"&{base}_params", *after)
    if comment:
        call = f"/* {comment} */\n{call}"
    return EmittedOp(constants + emit_params(p, base, notes), call, kernel_file)


def plain_op(node: Node, prefix: str, offsets: dict[str, str], p, fn: str, kernel_file: str) -> EmittedOp:
    """`fn(input, &params, output)`: a kernel whose only buffers are the node's one input and one output."""
    return kernel_op(p, layer_base(prefix, node), fn, kernel_file, [arena_in(offsets, node.inputs[0])],
                     [arena_out(offsets, node.outputs[0])])


def without_speed_tables(p):
    """The params with their speed-only tables dropped (params.NULLABLE_ARRAYS: NULL in C, the kernel computes
    those values itself), nested params (a conv2d_add's add) included."""
    changes = {name: None for name in NULLABLE_ARRAYS.get(struct_name(type(p)), ())}
    for f in fields(p):
        if is_dataclass(getattr(p, f.name)):
            changes[f.name] = without_speed_tables(getattr(p, f.name))
    return replace(p, **changes)
