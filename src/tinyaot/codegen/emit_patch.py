"""C of a patch stage (plan/patch.py): each band's layers called on their windows, unrolled in invoke().

Every layer keeps its plain kernel and its arrays (emitted once); each distinct window shape (first band, the
middle ones, the last) gets its own small params struct pointing at them, the same numbers with the window's
in_h, out_h and pad_top (ref/patch.py window_params, what the reference runs). A band's first layer reads the
input from the window's first row, the layers inside the chain read and write the two halves of the stage's
scratch, and the last writes its band of the output.
"""
from __future__ import annotations

from importlib import import_module

from tinyaot.codegen.emit import EmittedOp, c_call, layer_base, without_speed_tables
from tinyaot.codegen.emit_conv import _fast, conv_kernel, pairs_params
from tinyaot.codegen.params import _initializer, struct_name
from tinyaot.ir import Graph
from tinyaot.ir.ops import OPS
from tinyaot.ref import conv2d_pairs_s8, conv2d_s8
from tinyaot.ref.patch import window_params


def _kernel(node, g: Graph, speed: bool, choice=None):
    """(Params, C function, kernel file) of the layer's kernel, as its own emitter chooses them: its plain kernel,
    or the pairs variant the plan kept for it (plan/patch.py keeps_variant)."""
    variant = OPS[node.op].variant(choice.variant) if choice is not None and not choice.plain else None
    if variant is not None:
        fast = _fast(conv2d_pairs_s8.requantization(node, g, variant.weights), node)
        return pairs_params(conv2d_s8.prepare(node, g), variant.weights == "int8", fast), variant.c_kernel, \
            variant.c_file
    if node.op == "conv2d":
        p, fn = conv_kernel(conv2d_s8.prepare(node, g))
        return p, fn, "conv2d_s8.c"
    ref = OPS[node.op].ref
    p = import_module(f"tinyaot.ref.{ref}").prepare(node, g)
    if not speed:
        p = without_speed_tables(p)
    return p, getattr(p, "c_kernel", f"tinyaot_{ref}"), f"{ref}.c"


def _at(base: str, nbytes: int) -> str:
    return f"{base} + {nbytes}" if nbytes else base


def emit_stage(stage, g: Graph, prefix: str, offsets: dict[str, str], speed: bool = True, plan=None
               ) -> list[EmittedOp]:
    """One EmittedOp per layer of the stage: each carries its constants; the first, every call of the stage."""
    nodes = g.nodes[stage.start : stage.end + 1]
    ops, names, works = [], [], []  # per layer: (constants, kernel file, function), its params per band, work
    for i, node in enumerate(nodes):
        choice = plan.kernel_of(node.name) if plan is not None else None
        p, fn, kernel_file = _kernel(node, g, speed, choice)
        works.append([f"(int32_t *)(void *)(arena + {offsets[choice.work]})"] if choice is not None and choice.work
                     and not choice.plain else [])
        base = layer_base(prefix, node)
        struct = struct_name(type(p))
        arrays: list[str] = []
        shapes: dict[tuple[int, int, int], str] = {}
        structs = []
        per_band = []
        for band in stage.windows:
            q = window_params(p, band[i])
            key = (q.in_h, q.out_h, q.pad_top)
            if key not in shapes:
                shapes[key] = f"{base}_w{len(shapes)}_params"
                body = _initializer(q, struct, base, arrays if not structs else [], getattr(p, "c_notes", None) or {},
                                    "    ")
                structs.append(f"/* rows {q.in_h} -> {q.out_h}, {q.pad_top} padding rows above */\n"
                               f"static const {struct} {shapes[key]} = {body};\n")
            per_band.append(shapes[key])
        ops.append(("".join(arrays) + "".join(structs), kernel_file, fn))
        names.append(per_band)
    scratch = f"arena + {offsets[stage.scratch]}"
    calls = [f"/* patch stage: {stage.text()} */"]
    for k, band in enumerate(stage.windows):
        calls.append(f"/* band {k}: output rows {band[-1].out_lo}-{band[-1].out_hi - 1} */")
        for i, w in enumerate(band):
            src = (_at(f"arena + {offsets[stage.input]}", w.in_lo * stage.in_row_bytes) if i == 0
                   else _at(scratch, stage.offsets[i - 1]))
            dst = (_at(f"arena + {offsets[stage.output]}", w.out_lo * stage.row_bytes[i]) if i == len(band) - 1
                   else _at(scratch, stage.offsets[i]))
            calls.append(c_call(ops[i][2], f"(const int8_t *)({src})", f"&{names[i][k]}", *works[i],
                                f"(int8_t *)({dst})"))
    out = [EmittedOp(ops[0][0], "\n".join(calls), ops[0][1])]
    return out + [EmittedOp(c, "", f) for c, f, _ in ops[1:]]
