"""Assemble <name>.h and <name>.c from an int8 graph and its memory plan."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from tinyaot.codegen import emit_cores
from tinyaot.codegen.cformat import c_ident
from tinyaot.codegen.emit_inplace import KERNEL_DEPS
from tinyaot.codegen.emit_patch import emit_stage
from tinyaot.codegen.folder import write_model_files
from tinyaot.codegen.ops import EmittedOp, describe, emitter_for, variant_emitter
from tinyaot.codegen.params import constant_bytes
from tinyaot.codegen.placement import has_arrays, place_in_sram, sram_layers, sram_macro_lines
from tinyaot.errors import PlanError
from tinyaot.ir import Graph
from tinyaot.ir.ops import OPS, state_family
from tinyaot.plan import MemoryPlan
from tinyaot.plan.contract import io_facts
from tinyaot.version import __version__

SUPPORT_HEADERS = ("tinyaot_kernels.h", "tinyaot_fixedpoint.h", "tinyaot_dsp.h")


@dataclass
class CSources:
    """Generated files: name -> text. Kernel sources are copied from the package's C library.

    const_bytes: the flash the model's constants take on the target, measured from the definitions in <name>.c
    (params.constant_bytes), the figure the linker's .rodata of that file shows."""

    name: str
    files: dict[str, str] = field(default_factory=dict)
    const_bytes: int = 0
    sram_const_bytes: int = 0  # of const_bytes, what the start-up code copies to SRAM (codegen/placement.py)
    layer_array_bytes: dict[str, int] = field(default_factory=dict)  # each layer's constant arrays (what SRAM
    #                                                                   placing them would take)
    sram_layers: tuple[str, ...] = ()  # the layers whose arrays are in SRAM

    def write(self, directory: Path) -> list[Path]:
        """Write into `directory`, beside other models exported there (they share the kernel files)."""
        return write_model_files(Path(directory), self.name, self.files)

    @property
    def c_files(self) -> list[str]:
        return sorted(f for f in self.files if f.endswith(".c"))


def _library_file(sub: str, fname: str) -> str:
    return resources.files("tinyaot").joinpath("c", sub, fname).read_text()


def generate_c(g: Graph, plan: MemoryPlan, name: str, sram_constants=(), cores: int = 1) -> CSources:
    """sram_constants: the layers whose constant arrays go to SRAM, or "all" (codegen/placement.py). cores=2: the
    heavy layers split between two cores (plan/cores.py, codegen/emit_cores.py); cores=1 is the one-core C,
    unchanged."""
    prefix = c_ident(name).lower()
    macro = prefix.upper()
    unplaced = [n.name for n in g.nodes if state_family(n) is not None and plan.state_of(n.name) is None]
    if unplaced:
        raise PlanError(f"stateful layer(s) {', '.join(unplaced)} have no slot in the plan's state region: plan "
                        "the graph with plan.plan_graph, which places the state")
    offsets = {t: f"{macro}_OFFSET_{c_ident(b.name).upper()}" + (f" + {b.offset_in(t)}" if b.offset_in(t) else "")
               for b in plan.buffers for t in b.tensors}  # a slice read in place: at its offset in its input
    emitted = [(node, _emit(node, g, prefix, offsets, plan)) for node in g.nodes]
    for stage in plan.patches:  # the chain's layers: every call at its first step, each layer's constants at its own
        chain = g.nodes[stage.start : stage.end + 1]
        emitted[stage.start : stage.end + 1] = list(zip(chain, emit_stage(stage, g, prefix, offsets,
                                                                          speed=plan.optimize == "speed", plan=plan)))
    arrays = {node.name: constant_bytes(place_in_sram(e.constants, macro), placed_in_sram=True)
              for node, e in emitted if has_arrays(e.constants)}
    in_sram = sram_layers(sram_constants, list(arrays))
    emitted = [(node, replace(e, constants=place_in_sram(e.constants, macro)) if node.name in in_sram else e)
               for node, e in emitted]
    src = CSources(name=prefix, layer_array_bytes=arrays, sram_layers=tuple(n for n in arrays if n in in_sram))
    src.files[f"{prefix}.h"] = _header(g, plan, prefix, macro)
    two = emit_cores.two_cores(g, plan, prefix, macro, emitted, offsets) if cores == 2 else None
    src.files[f"{prefix}.c"] = _source(g, plan, prefix, macro, emitted, sram=bool(in_sram), two=two)
    if two is not None:
        src.files[f"{prefix}.h"] = src.files[f"{prefix}.h"].replace(
            f"#define {macro}_ARENA_SIZE", "\n".join(emit_cores.cores_contract(prefix, macro, two)) + "\n"
            f"#define {macro}_ARENA_SIZE", 1)
        src.files["tinyaot_multicore.h"] = _library_file("include", "tinyaot_multicore.h")
        src.files["multicore.c"] = _library_file("kernels", "multicore.c")
    src.const_bytes = constant_bytes(src.files[f"{prefix}.c"])
    src.sram_const_bytes = constant_bytes(src.files[f"{prefix}.c"], placed_in_sram=True)
    for h in SUPPORT_HEADERS:
        src.files[h] = _library_file("include", h)
    used = {e.kernel_file for _, e in emitted if e.kernel_file}
    for kernel in sorted(used | {d for k in used for d in KERNEL_DEPS.get(k, ())}):
        src.files[kernel] = _library_file("kernels", kernel)
    return src


def _emit(node, g: Graph, prefix: str, offsets: dict[str, str], plan: MemoryPlan):
    """The kernel variant the plan recorded for this node (pairs, wide, an in-place ring) or the op's plain
    kernel; nothing for a slice the plan reads in place, nor for a layer of its patch stage (emit_patch.py)."""
    if any(node.name in stage.nodes for stage in plan.patches):
        return EmittedOp("", "", None)
    if not OPS[node.op].view and plan.reads_in_place(node):
        return EmittedOp("", "/* a slice read in place: its bytes are a run of its input's, nothing to do */", None)
    speed = plan.mode_of(node.name) == "speed"  # tables that only buy speed are flash the other modes keep
    choice = plan.kernel_of(node.name)
    variant = OPS[node.op].variant(choice.variant) if choice is not None else None
    if variant is not None:
        return variant_emitter(variant)(node, g, prefix, offsets, choice, variant, speed=speed)
    return emitter_for(node, g)(node, g, prefix, offsets, speed=speed)


def _banner(fname: str, name: str) -> str:
    return (
        f"/*\n * {fname} - generated by tinyaot {__version__} for model '{name}'. Do not edit.\n"
        " * Integer-only: no float, no malloc; all activations live in one static arena.\n */\n"
    )


def _io_macros(g: Graph, tensor: str, macro: str, kind: str) -> list[str]:
    t = g.tensor(tensor)
    qp = t.qparams
    dims = ", ".join(str(d) for d in t.shape)
    return [
        f"/* {kind.lower()}: {t.dtype} [{dims}], real = scale * (q - zero_point) */",
        f"#define {macro}_{kind}_SIZE {t.nbytes}",
        f"#define {macro}_{kind}_RANK {len(t.shape)}",
        f"#define {macro}_{kind}_SHAPE {{{dims}}}",
        f"#define {macro}_{kind}_SCALE {qp.scale[0]!r}  /* for host-side conversion only */",
        f"#define {macro}_{kind}_ZERO_POINT ({qp.zero_point[0]})",
    ]


def _several(g: Graph) -> bool:
    return len(g.inputs) > 1 or len(g.outputs) > 1


def _index_param(tensors) -> str:
    """Models with several inputs or outputs take the index in their accessors; one-input models keep (void)."""
    return ", size_t index" if len(tensors) > 1 else ""


def _io_section(g: Graph, macro: str) -> list[str]:
    """Every input's and output's size, shape, scale and zero point; a one-input one-output model keeps the
    unnumbered names (INPUT_SIZE, ...), several get them numbered (INPUT0_SIZE, INPUT1_SIZE, ...)."""
    lines = [f"#define {macro}_NUM_INPUTS {len(g.inputs)}", f"#define {macro}_NUM_OUTPUTS {len(g.outputs)}"]
    if not _several(g):
        return [*lines, f'#define {macro}_INPUT_LAYOUT "{g.layout}"', "",
                *_io_macros(g, g.inputs[0], macro, "INPUT"), "", *_io_macros(g, g.outputs[0], macro, "OUTPUT"), ""]
    lines.append("")
    for kind, tensors in (("INPUT", g.inputs), ("OUTPUT", g.outputs)):
        for i, t in enumerate(tensors):
            layout = g.io_layout_of(t)[0]
            if kind == "INPUT":
                lines.append(f'#define {macro}_INPUT{i}_LAYOUT "{layout}"')
            lines += _io_macros(g, t, macro, f"{kind}{i}")
            lines.append("")
    return lines


def _io_declarations(g: Graph, prefix: str, macro: str, in_dtype: str, in_ctype: str) -> list[str]:
    run = [f"/* Run one inference. Returns {macro}_OK, or {macro}_ERROR_NOT_INITIALIZED. */",
           f"int {prefix}_invoke(void);"]
    out_dtype, out_ctype = _output_ctype(g)
    if not _several(g):
        return [f"/* Where to write the {in_dtype} input ({macro}_INPUT_SIZE bytes), inside the arena (after init). */",
                f"{in_ctype} *{prefix}_input(void);", "", *run, "",
                f"/* The {out_dtype} output ({macro}_OUTPUT_SIZE bytes), inside the arena (after init). */",
                f"const {out_ctype} *{prefix}_output(void);"]
    return [*_accessor_comment(len(g.inputs), "input", f"Where to write the {in_dtype}", macro),
            f"{in_ctype} *{prefix}_input({_index_type(len(g.inputs))});", "", *run, "",
            *_accessor_comment(len(g.outputs), "output", f"The {out_dtype}", macro),
            f"const {out_ctype} *{prefix}_output({_index_type(len(g.outputs))});"]


def _index_type(n: int) -> str:
    return "size_t index" if n > 1 else "void"


def _accessor_comment(n: int, kind: str, what: str, macro: str) -> list[str]:
    if n == 1:
        return [f"/* {what} {kind} ({macro}_{kind.upper()}0_SIZE bytes), inside the arena (after init). */"]
    return [f"/* {what} {kind} number `index` ({macro}_{kind.upper()}<index>_SIZE bytes), inside the arena (after",
            f" * init); NULL for an index >= {macro}_NUM_{kind.upper()}S. */"]


def _io_accessors(g: Graph, plan: MemoryPlan, prefix: str, macro: str, in_ctype: str) -> list[str]:
    """<name>_instance_input/_output and the default instance's: an offset each, or a table of them."""
    out = []
    out_ctype = _output_ctype(g)[1]
    for kind, tensors, ctype in (("input", g.inputs, in_ctype), ("output", g.outputs, out_ctype)):
        const = "const " if kind == "output" else ""
        if len(tensors) == 1:
            out += [f"{const}{ctype} *{prefix}_instance_{kind}(const {prefix}_instance_t *instance)", "{",
                    f"    return ({const}{ctype} *)(instance->arena + {_offset(plan, tensors[0], macro)});", "}", ""]
            continue
        table = f"{prefix}_{kind}_offsets"
        out += [f"/* Arena offset of each {kind}, by index. */",
                f"static const uint32_t {table}[{len(tensors)}] = {{",
                *[f"    {_offset(plan, t, macro)},  /* {kind} {i}: {t} */" for i, t in enumerate(tensors)],
                "};", "",
                f"{const}{ctype} *{prefix}_instance_{kind}(const {prefix}_instance_t *instance, size_t index)", "{",
                f"    if (index >= {macro}_NUM_{kind.upper()}S) {{", "        return NULL;", "    }",
                f"    return ({const}{ctype} *)(instance->arena + {table}[index]);", "}", ""]
    for kind, tensors, ctype in (("input", g.inputs, in_ctype), ("output", g.outputs, out_ctype)):
        const = "const " if kind == "output" else ""
        several = len(tensors) > 1
        out += [f"{const}{ctype} *{prefix}_{kind}({'size_t index' if several else 'void'})", "{",
                f"    return {prefix}_instance_{kind}(&{prefix}_default_instance{', index' if several else ''});",
                "}", ""]
    return out


_IO_CTYPES = {"uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t"}  # else int8_t


def _io_ctype(g: Graph, tensors) -> tuple[str, str]:
    """(dtype, C type) of the accessors: int8, uint8, int16 (16x8) or int32 (a QUANTIZE's); `void` when the
    tensors' types differ (each is named in the header's macros)."""
    dtypes = list(dict.fromkeys(g.tensor(t).dtype for t in tensors))
    if len(dtypes) > 1:
        return "/".join(dtypes), "void"
    return dtypes[0], _IO_CTYPES.get(dtypes[0], "int8_t")


def _input_ctype(g: Graph) -> tuple[str, str]:
    return _io_ctype(g, g.inputs)


def _output_ctype(g: Graph) -> tuple[str, str]:
    return _io_ctype(g, g.outputs)


def _header(g: Graph, plan: MemoryPlan, prefix: str, macro: str) -> str:
    guard = f"{macro}_H"
    in_dtype, in_ctype = _input_ctype(g)
    lines = [
        _banner(f"{prefix}.h", prefix),
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"/* The arena holds every activation, input and output included ({plan.n_steps} steps). */",
        f"#define {macro}_ARENA_SIZE {plan.arena_bytes}",
        f"#define {macro}_ARENA_ALIGNMENT {plan.alignment}",
        f"#define {macro}_ARENA_LOWER_BOUND {plan.lower_bound}  /* live bytes at the busiest step */",
        *_state_size(plan, macro),
        *_io_section(g, macro),
        *_contract_comment(g, plan, macro, prefix),
        *_state_contract(g, plan, prefix),
        "",
        "/* Status codes. */",
        f"#define {macro}_OK 0",
        f"#define {macro}_ERROR_ARENA_TOO_SMALL (-1)",
        f"#define {macro}_ERROR_ARENA_MISALIGNED (-2)",
        f"#define {macro}_ERROR_NOT_INITIALIZED (-3)",
        f"#define {macro}_ERROR_NULL_ARGUMENT (-4)",
        *([f"#define {macro}_ERROR_STATE_TOO_SMALL (-5)", f"#define {macro}_ERROR_STATE_MISALIGNED (-6)"]
          if plan.state else []),
        "",
        "/*",
        f" * Bind the arena. Pass NULL to use the built-in static arena (unless {macro}_NO_STATIC_ARENA",
        f" * is defined), or a buffer of at least {macro}_ARENA_SIZE bytes aligned to",
        f" * {macro}_ARENA_ALIGNMENT. Returns {macro}_OK or a negative status.",
        " */",
        f"int {prefix}_init(uint8_t *arena, size_t arena_size);",
        "",
        *_state_declarations(plan, prefix, macro),
        *_io_declarations(g, prefix, macro, in_dtype, in_ctype),
        "",
        *_instances_comment(plan, prefix),
        "typedef struct {",
        "    uint8_t *arena;",
        *(["    uint8_t *state;  /* the state region: bound by instance_bind_state */"] if plan.state else []),
        f"}} {prefix}_instance_t;",
        "",
        f"int {prefix}_instance_init({prefix}_instance_t *instance, uint8_t *arena, size_t arena_size);",
        *([f"int {prefix}_instance_bind_state({prefix}_instance_t *instance, uint8_t *state, size_t state_size);",
           f"int {prefix}_instance_reset(const {prefix}_instance_t *instance);"] if plan.state else []),
        f"{in_ctype} *{prefix}_instance_input(const {prefix}_instance_t *instance{_index_param(g.inputs)});",
        f"int {prefix}_instance_invoke(const {prefix}_instance_t *instance);",
        f"const {_output_ctype(g)[1]} *{prefix}_instance_output(const {prefix}_instance_t *instance"
        f"{_index_param(g.outputs)});",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def _source(g: Graph, plan: MemoryPlan, prefix: str, macro: str, emitted, sram: bool = False, two=None) -> str:
    """two: a two-core model's file-scope C and split calls (_two_cores); None for one core."""
    _, in_ctype = _input_ctype(g)
    parts, split_calls = two if two is not None else ([], {})
    out = [
        _banner(f"{prefix}.c", prefix),
        "#include <stddef.h>",
        "#include <stdint.h>",
        *(["#include <string.h>"] if plan.state else []),
        "",
        f'#include "{prefix}.h"',
        '#include "tinyaot_kernels.h"',
        *(['#include "tinyaot_multicore.h"'] if two is not None else []),
        "",
        "/* Arena offset of every activation buffer, from the static memory plan. */",
    ]
    for b in sorted(plan.buffers, key=lambda b: plan.offsets[b.name]):
        out.append(
            f"#define {macro}_OFFSET_{c_ident(b.name).upper()} {plan.offsets[b.name]}"
            f"  /* {b.nbytes} B, steps {b.first}-{b.last} */"
        )
    out += _state_offsets(g, plan, macro)
    out += [
        "",
        "/* A profiler may define this to timestamp the end of each step; it costs nothing otherwise. */",
        f"#ifndef {macro}_PROFILE_STEP",
        f"#define {macro}_PROFILE_STEP(step) ((void)0)",
        "#endif",
        *(emit_cores.profile_hooks(macro) if two is not None else []),
        "",
        *(sram_macro_lines(macro) if sram else []),
    ]
    for node, e in emitted:
        if e.constants:
            out.append(f"/* {describe(node, g)} */")
            out.append(e.constants)
    out += [
        *parts,
        f"#ifndef {macro}_NO_STATIC_ARENA",
        f"/* The arena needs {macro}_ARENA_ALIGNMENT-byte alignment: the union gives 8 in any C99, the",
        " * attribute more on GCC/Clang; init checks the address either way. */",
        "#if defined(__GNUC__) || defined(__clang__)",
        f"#define {macro}_ARENA_ALIGNED __attribute__((aligned({macro}_ARENA_ALIGNMENT)))",
        "#else",
        f"#define {macro}_ARENA_ALIGNED",
        "#endif",
        "static union {",
        f"    uint8_t bytes[{macro}_ARENA_SIZE];",
        "    int64_t align;",
        f"}} {prefix}_static_arena {macro}_ARENA_ALIGNED;",
        "#endif",
        "",
        *_static_state(plan, prefix, macro),
        f"static {prefix}_instance_t {prefix}_default_instance;",
        "",
        f"int {prefix}_instance_init({prefix}_instance_t *instance, uint8_t *arena, size_t arena_size)",
        "{",
        "    if (instance == NULL || arena == NULL) {",
        f"        return {macro}_ERROR_NULL_ARGUMENT;",
        "    }",
        f"    if (arena_size < {macro}_ARENA_SIZE) {{",
        f"        return {macro}_ERROR_ARENA_TOO_SMALL;",
        "    }",
        f"    if (((uintptr_t)arena & ({macro}_ARENA_ALIGNMENT - 1u)) != 0u) {{",
        f"        return {macro}_ERROR_ARENA_MISALIGNED;",
        "    }",
        "    instance->arena = arena;",
        *(["    instance->state = NULL;"] if plan.state else []),
        *(emit_cores.launch(prefix) if two is not None else []),
        f"    return {macro}_OK;",
        "}",
        "",
        *_state_functions(plan, prefix, macro),
        f"int {prefix}_init(uint8_t *arena, size_t arena_size)",
        "{",
        "    if (arena == NULL) {",
        f"#ifndef {macro}_NO_STATIC_ARENA",
        f"        arena = {prefix}_static_arena.bytes;",
        f"        arena_size = sizeof {prefix}_static_arena.bytes;",
        "#else",
        f"        return {macro}_ERROR_ARENA_TOO_SMALL;",
        "#endif",
        "    }",
        f"    {'int status = ' if plan.state else 'return '}{prefix}_instance_init(&{prefix}_default_instance, arena, "
        "arena_size);",
        *_init_binds_state(plan, prefix, macro),
        "}",
        "",
        *_io_accessors(g, plan, prefix, macro, in_ctype),
        *(emit_cores.set_cores(prefix) if two is not None else []),
        f"int {prefix}_invoke(void)",
        "{",
        f"    return {prefix}_instance_invoke(&{prefix}_default_instance);",
        "}",
        "",
        f"int {prefix}_instance_invoke(const {prefix}_instance_t *instance)",
        "{",
        "    uint8_t *const arena = (instance != NULL) ? instance->arena : NULL;",
        "    if (arena == NULL) {",
        f"        return {macro}_ERROR_NOT_INITIALIZED;",
        "    }",
        *([f"    uint8_t *const state = instance->state;  /* {macro}_STATE_SIZE bytes kept between invokes */",
           "    if (state == NULL) {", f"        return {macro}_ERROR_NOT_INITIALIZED;", "    }"]
          if plan.state else []),
    ]
    for step, (node, e) in enumerate(emitted):
        if e.kernel_file is None or not e.call:  # a view; a layer of a patch stage, called at the stage's start
            continue
        out.append(f"    /* {describe(node, g)} */")
        out.append("    " + split_calls.get(node.name, e.call).replace("\n", "\n    "))
        out.append(f"    {macro}_PROFILE_STEP({step});")
    out += [f"    return {macro}_OK;", "}", ""]
    return "\n".join(out)


def _contract_comment(g: Graph, plan: MemoryPlan, macro: str, prefix: str) -> list[str]:
    """The buffer contract, read from the plan: what invoke does to the input, and where the output sits."""
    facts = io_facts(plan, g.inputs, g.outputs)
    if _several(g):
        return _contract_comment_several(facts, macro, prefix)
    if facts.input_overwritten:
        inp = [f" * - invoke() overwrites the input: after {prefix}_invoke() the input bytes hold intermediate",
               " *   values, so write a whole new input before every invoke (compile with preserve_input to",
               " *   keep it, at the arena cost the report shows)."]
    else:
        how = "compiled with preserve_input" if plan.keep_input else "no other buffer uses its bytes"
        inp = [f" * - invoke() leaves the input as it was ({how}): a sliding window kept in the input",
               " *   buffer survives, only the new part needs writing."]
    if facts.output_overlaps_input:
        out = [" * - The output shares bytes with the input: writing the next input destroys the last output,",
               " *   so copy the output first (or compile with separate_output)."]
    else:
        out = [" * - The output does not share bytes with the input: the next input may be written while the",
               " *   last output is still read (double buffering)."]
    until = ", or until the next input is written" if facts.output_overlaps_input else ""
    return [
        "/*",
        " * Buffer contract. Input and output live inside the arena, at fixed offsets.",
        *inp,
        *out,
        f" * - The output is valid until the next invoke(){until}.",
        " */",
        f"#define {macro}_INVOKE_PRESERVES_INPUT {0 if facts.input_overwritten else 1}",
        f"#define {macro}_OUTPUT_OVERLAPS_INPUT {1 if facts.output_overlaps_input else 0}",
    ]


def _contract_comment_several(facts, macro: str, prefix: str) -> list[str]:
    """The buffer contract of a model with several inputs or outputs: the facts hold for all of them."""
    inp = (f" * - invoke() may overwrite the inputs: write every input before each {prefix}_invoke()."
           if facts.input_overwritten
           else " * - invoke() leaves every input as it was (no other buffer uses their bytes).")
    out = (" * - An output may share bytes with an input: copy the outputs before writing the next inputs."
           if facts.output_overlaps_input else " * - No output shares bytes with an input (double buffering works).")
    return ["/*", " * Buffer contract. Inputs and outputs live inside the arena, at fixed offsets.", inp, out,
            " * - The outputs are valid until the next invoke().", " */",
            f"#define {macro}_INVOKE_PRESERVES_INPUT {0 if facts.input_overwritten else 1}",
            f"#define {macro}_OUTPUT_OVERLAPS_INPUT {1 if facts.output_overlaps_input else 0}"]


def _offset(plan: MemoryPlan, tensor: str, macro: str) -> str:
    return f"{macro}_OFFSET_{c_ident(plan.buffer_of(tensor).name).upper()}"


# ---- the state region (plan/state.py): only models with stateful layers have one --------------------------


def _state_size(plan: MemoryPlan, macro: str) -> list[str]:
    if not plan.state:
        return []
    return ["/* The state region keeps what the stateful layers carry from one invoke to the next, apart from",
            " * the arena (RAM = arena + state). */",
            f"#define {macro}_STATE_SIZE {plan.state_bytes}",
            f"#define {macro}_STATE_ALIGNMENT {plan.alignment}"]


def _state_contract(g: Graph, plan: MemoryPlan, prefix: str) -> list[str]:
    """What a stateful model's invoke does to its state, and (streaming) what its input is."""
    if not plan.state:
        return []
    lines = ["/*", " * State contract.",
             f" * - Each invoke reads and updates the state region: {prefix}_init binds the built-in one (or",
             f" *   {prefix}_bind_state the caller's) and resets it; invokes never clear it; {prefix}_reset()",
             " *   returns it to the start (every byte at its zero point, real 0), as for a new stream."]
    if any(OPS[n.op].state == "window" for n in g.nodes):
        lines += [" * - Streaming: the input is the newest frame only. Each invoke consumes it and outputs what the",
                  " *   full-window model outputs for the window ending at that frame; the earlier frames each",
                  " *   causal conv needs are in the state region, so no sliding window is kept in the input: write",
                  " *   the next whole frame before every invoke (invoke may overwrite it, see above).",
                  " * - After a reset the past frames are zeros: the k-th frame's output is the full model's output",
                  " *   at frame k of a stream starting at the reset (each conv's causal zero padding before it)."]
    if any(state_family(n) in ("hidden", "hidden_and_cell") for n in g.nodes):
        lines += [" * - Each recurrent layer keeps its hidden (and cell) state in the state region: the k-th invoke",
                  " *   after a reset runs frame k of a sequence that starts at the reset (from zero state), so reset",
                  " *   where a new sequence starts; the input is the newest frame only."]
    if any(state_family(n) == "svdf" for n in g.nodes):
        lines += [" * - Each SVDF layer keeps its activation state (TFLite's variable tensor: its last feature values",
                  " *   per filter) in the state region, as TFLite Micro keeps it from one Invoke to the next; reset()",
                  " *   is TFLite Micro's Reset (ResetVariableTensors): call it where a new input stream starts."]
    return [*lines, " */"]


def _state_declarations(plan: MemoryPlan, prefix: str, macro: str) -> list[str]:
    if not plan.state:
        return []
    return ["/*",
            f" * Bind the caller's state region ({macro}_STATE_SIZE bytes aligned to {macro}_STATE_ALIGNMENT) instead",
            f" * of the built-in one ({macro}_NO_STATIC_STATE leaves it out: then call this after init), and reset it.",
            " */",
            f"int {prefix}_bind_state(uint8_t *state, size_t state_size);", "",
            f"/* Start a new stream: the state back to its initial value. Returns {macro}_OK or a negative status. */",
            f"int {prefix}_reset(void);", ""]


def _state_offsets(g: Graph, plan: MemoryPlan, macro: str) -> list[str]:
    if not plan.state:
        return []
    out = ["", "/* State region offset of every stateful layer's slot; the state is never part of the arena. */"]
    for slot in plan.state:
        out.append(f"#define {macro}_STATE_OFFSET_{c_ident(slot.node).upper()} {slot.offset}"
                   f"  /* {slot.nbytes} B, reset to {slot.fill} */")
    return out


def _static_state(plan: MemoryPlan, prefix: str, macro: str) -> list[str]:
    if not plan.state:
        return []
    return [f"#ifndef {macro}_NO_STATIC_STATE",
            "#if defined(__GNUC__) || defined(__clang__)",
            f"#define {macro}_STATE_ALIGNED __attribute__((aligned({macro}_STATE_ALIGNMENT)))",
            "#else",
            f"#define {macro}_STATE_ALIGNED",
            "#endif",
            "static union {",
            f"    uint8_t bytes[{macro}_STATE_SIZE];",
            "    int64_t align;",
            f"}} {prefix}_static_state {macro}_STATE_ALIGNED;",
            "#endif", ""]


def _init_binds_state(plan: MemoryPlan, prefix: str, macro: str) -> list[str]:
    if not plan.state:
        return []
    return [f"    if (status != {macro}_OK) {{", "        return status;", "    }",
            f"#ifndef {macro}_NO_STATIC_STATE",
            f"    return {prefix}_bind_state({prefix}_static_state.bytes, sizeof {prefix}_static_state.bytes);",
            "#else",
            "    return status;",
            "#endif"]


def _state_functions(plan: MemoryPlan, prefix: str, macro: str) -> list[str]:
    """bind_state and reset, for an instance and for the built-in one."""
    if not plan.state:
        return []
    resets = [f"    memset(instance->state + {macro}_STATE_OFFSET_{c_ident(s.node).upper()}, {s.fill}, {s.nbytes}u);"
              f"  /* {s.node} */" for s in plan.state]
    return [
        f"int {prefix}_instance_bind_state({prefix}_instance_t *instance, uint8_t *state, size_t state_size)",
        "{",
        "    if (instance == NULL || state == NULL) {", f"        return {macro}_ERROR_NULL_ARGUMENT;", "    }",
        f"    if (state_size < {macro}_STATE_SIZE) {{", f"        return {macro}_ERROR_STATE_TOO_SMALL;", "    }",
        f"    if (((uintptr_t)state & ({macro}_STATE_ALIGNMENT - 1u)) != 0u) {{",
        f"        return {macro}_ERROR_STATE_MISALIGNED;", "    }",
        "    instance->state = state;",
        f"    return {prefix}_instance_reset(instance);",
        "}", "",
        f"int {prefix}_instance_reset(const {prefix}_instance_t *instance)",
        "{",
        "    if (instance == NULL || instance->state == NULL) {", f"        return {macro}_ERROR_NOT_INITIALIZED;",
        "    }",
        "    /* every slot at its zero point (memset stores the int8 value's byte) */",
        *resets,
        f"    return {macro}_OK;",
        "}", "",
        f"int {prefix}_bind_state(uint8_t *state, size_t state_size)", "{",
        f"    return {prefix}_instance_bind_state(&{prefix}_default_instance, state, state_size);", "}", "",
        f"int {prefix}_reset(void)", "{", f"    return {prefix}_instance_reset(&{prefix}_default_instance);", "}", "",
    ]


def _instances_comment(plan: MemoryPlan, prefix: str) -> list[str]:
    if not plan.state:
        return ["/*",
                " * Several instances of this model (two sensors, one per core): each has its own arena and runs",
                " * independently of the others, since the kernels keep no state outside the arena. The functions",
                " * above drive one built-in instance; these take the instance. instance_init needs an arena (no "
                "NULL).",
                " */"]
    return ["/*",
            " * Several instances of this model (two sensors, one per core): each has its own arena and its own",
            " * state region and runs independently of the others. The functions above drive one built-in",
            " * instance; these take the instance: instance_init binds an arena (no NULL), then",
            f" * {prefix}_instance_bind_state a state region of its own (which resets it) before the first invoke.",
            " */"]
