"""The C of a two-core model (compile(cores=2), plan/cores.py): each split layer's two parts, core 1's loop, the
barrier (tinyaot_multicore.h).

A part is the layer's own kernel call with a copy of its params struct that covers the core's rows or channels:
fewer output rows (and, from the second core's first input row on, the input pointer moved there, fewer input rows
and no top padding), or fewer output channels (the weights, bias and requantization pointers moved to the first
one). The call is the emitter's own, so the part runs the kernel the plan chose; core 1 gets its own work buffer,
which the plan placed in the arena beside core 0's (plan/cores.py core1_work_buffers).
"""
from __future__ import annotations

import re
from dataclasses import replace

from tinyaot.codegen.cformat import c_ident
from tinyaot.codegen.emit import EmittedOp, c_call, layer_base
from tinyaot.errors import InternalCompilerError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.plan import MemoryPlan
from tinyaot.plan.cores import CHANNELS, CORE1_WORK, CorePlan, CoreSplit, one_row, plan_cores, row_params

_NESTED = {"tinyaot_conv_add_params": "conv.", "tinyaot_conv_sparse_params": "conv."}
_WORK = "(int32_t *)(void *)(arena + "
_WIDE_INT16 = "tinyaot_fully_connected_wide_s8"  # int16 pairs: in_features / 2 words per row


def parse_call(call: str) -> tuple[str, list[str]]:
    """The kernel and its arguments, from an emitted call (comments and line wrapping dropped)."""
    text = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", "", call, flags=re.S)).strip()
    m = re.fullmatch(r"(\w+)\((.*)\);", text)
    if m is None:
        raise InternalCompilerError(f"two cores: cannot read the kernel call {call!r}")
    args, depth, cur = [], 0, ""
    for ch in m.group(2):
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return m.group(1), [*args, cur.strip()]


def _moved(arg: str, offset: int) -> str:
    """`(T *)(arena + X)` moved on by `offset` bytes."""
    return arg if offset == 0 else f"{arg[:-1]} + {offset})"


def part_function(node: Node, g: Graph, prefix: str, e: EmittedOp, split: CoreSplit, work1: str) -> list[str]:
    """static void <layer>_part(uint8_t *arena, int32_t core): the layer's kernel on the core's half."""
    base = layer_base(prefix, node)
    fn, args = parse_call(e.call)
    m = re.search(rf"static const (\w+) {re.escape(base)}_params\b", e.constants)
    if m is None:
        raise InternalCompilerError(f"two cores: no params struct for layer '{node.name}'")
    struct = m.group(1)
    k = args.index(f"&{base}_params")
    bodies = []
    for core, (lo, hi) in enumerate(((0, split.cut), (split.cut, split.total))):
        part = (_channel_part if split.axis == CHANNELS else _batch_part if OPS[node.op].split == CHANNELS
                else _row_part)
        sets, moved = part(node, g, base, struct, fn, lo, hi)
        call = list(args)
        call[k] = "&p"
        for i, offset in moved.items():
            call[i if i >= 0 else len(call) + i] = _moved(call[i if i >= 0 else len(call) + i], offset)
        if core == 1:
            call = [work1 if a.startswith(_WORK) else a for a in call]
        bodies.append([*sets, *c_call(fn, *call, width=108).split("\n")])
    what = f"output {split.axis}"
    return [f"/* {node.name}: {what} [0, {split.cut}) on core 0, [{split.cut}, {split.total}) on core 1 */",
            f"static void {base}_part(uint8_t *arena, int32_t core)", "{",
            f"    {struct} p = {base}_params;", "    if (core == 0) {",
            *(f"        {line}" for line in bodies[0]), "    } else {",
            *(f"        {line}" for line in bodies[1]), "    }", "}", ""]


def _row_part(node: Node, g: Graph, base: str, struct: str, fn: str, lo: int, hi: int):
    """Output rows [lo, hi) (a 1-D layer's columns): the field settings and the byte offsets of the arguments that
    move (by index)."""
    f = _NESTED.get(struct, "")
    p = row_params(node, g)
    x, y = g.tensor(node.inputs[0]).shape, g.tensor(node.outputs[0]).shape
    sets = []
    if one_row(p):  # [1][W][C] is [W][1][C]: the row seen as a column, its columns as rows (same bytes)
        p, turned = _turned(p)
        sets += [f"p.{f}{k} = {v};" for k, v in turned.items()]
        x, y = (x[0], x[2], 1, x[3]), (y[0], y[2], 1, y[3])
    sets = [f"p.{f}out_h = {hi - lo};", *(line for line in sets if not line.startswith(f"p.{f}out_h "))]
    in_offset = 0
    first = lo * p.stride_h - p.pad_top  # the first input row the part's windows start at
    if lo > 0 and first >= 0:
        in_offset = first * x[2] * x[3]
        sets += [f"p.{f}in_h = {p.in_h - first};", f"p.{f}pad_top = 0;"]
    elif lo > 0:
        sets.append(f"p.{f}pad_top = {p.pad_top - lo * p.stride_h};")
    out_offset = lo * y[2] * y[3]
    moved = {0: in_offset, -1: out_offset}
    if node.op == "conv2d_add":
        moved[1] = out_offset  # the skip has the output's shape
    return sets, moved


def _turned(p):
    """A one-row layer's geometry with rows and columns exchanged: (the turned values, the fields to set)."""
    pairs = [("in_h", "in_w"), ("out_h", "out_w"), ("kernel_h", "kernel_w"), ("stride_h", "stride_w"),
             ("dilation_h", "dilation_w"), ("pad_top", "pad_left"), ("pad_bottom", "pad_right")]
    turned = {}
    for a, b in pairs:
        if hasattr(p, a):
            turned[a], turned[b] = getattr(p, b), getattr(p, a)
    return replace(p, **turned), turned


def _batch_part(node: Node, g: Graph, base: str, struct: str, fn: str, lo: int, hi: int):
    """Rows [lo, hi) of a fully connected layer over several rows (its batches): contiguous in and out."""
    in_features, out_features = g.tensor(node.inputs[1]).shape[1], g.tensor(node.inputs[1]).shape[0]
    return [f"p.batches = {hi - lo};"], {0: lo * in_features, -1: lo * out_features}


def _channel_part(node: Node, g: Graph, base: str, struct: str, fn: str, lo: int, hi: int):
    """Output channels [lo, hi) of a fully connected layer."""
    in_features = g.tensor(node.inputs[1]).shape[1]
    if fn.startswith(_WIDE_INT16[:-3]) and "_w8" not in fn:  # the speed kernels (and their _mixed form)
        weights, triples = f"(const int32_t *){base}_params.weights + {lo * in_features // 2}", 3  # [rows][in / 2]
    else:
        weights, triples = f"(const int8_t *){base}_params.weights + {lo * in_features}", 1
    sets = [f"p.out_features = {hi - lo};"]
    if lo:
        sets += [f"p.weights = {weights};", f"p.bias = {base}_params.bias + {lo};",
                 f"p.multiplier = {base}_params.multiplier + {triples * lo};",
                 f"p.shift = {base}_params.shift + {lo};"]
    return sets, {-1: lo}


def runtime(prefix: str, macro: str, jobs: list[str]) -> list[str]:
    """The mailbox, core 1's loop, the dispatch of a job to its part, and core 0's side of a split layer."""
    mb = f"{prefix}_mailbox"
    return [
        f"static tinyaot_mailbox {mb};",
        f"static int {prefix}_core1_running;",
        f"static int {prefix}_use_core1 = 1;",
        f"static void {prefix}_part(uint8_t *arena, int32_t job, int32_t core)",
        "{",
        *(["    (void)arena;", "    (void)core;"] if not jobs else []),
        "    switch (job) {",
        *(f"    case {i}:\n        {name}_part(arena, core);\n        break;" for i, name in enumerate(jobs)),
        "    default:",
        "        break;",
        "    }",
        "}",
        "",
        "/* Core 1: wait for a job, run its part, say it is done; forever. */",
        f"static void {prefix}_core1_main(void)",
        "{",
        "    uint32_t seen = 0u;",
        "    for (;;) {",
        f"        seen = tinyaot_mc_next(&{mb}, seen);",
        f"        {macro}_PROFILE_CORE1(-1);",
        f"        {prefix}_part({mb}.arena, {mb}.job, 1);",
        f"        tinyaot_mc_finish(&{mb}, seen);",
        f"        {macro}_PROFILE_CORE1({mb}.job);",
        "    }",
        "}",
        "",
        "/* Core 0: one split layer, both parts, then the barrier (both parts on core 0 when there is no core 1). */",
        *([f"static void {prefix}_split(uint8_t *arena, int32_t job) __attribute__((unused));"] if not jobs else []),
        f"static void {prefix}_split(uint8_t *arena, int32_t job)",
        "{",
        f"    if ({prefix}_core1_running && {prefix}_use_core1) {{",
        f"        tinyaot_mc_post(&{mb}, job, arena);",
        f"        {prefix}_part(arena, job, 0);",
        f"        {macro}_PROFILE_PART(job);",
        f"        tinyaot_mc_join(&{mb});",
        "    } else {",
        f"        {prefix}_part(arena, job, 0);",
        f"        {prefix}_part(arena, job, 1);",
        "    }",
        "}",
        "",
    ]


def set_cores(prefix: str) -> list[str]:
    """<name>_set_cores: core 0 alone (1) or both cores (2) from the next invoke, to compare them."""
    return [f"int {prefix}_set_cores(int cores)", "{",
            f"    {prefix}_use_core1 = cores >= 2;",
            f"    return {prefix}_core1_running && {prefix}_use_core1 ? 2 : 1;", "}", ""]


def profile_hooks(macro: str) -> list[str]:
    return [f"#ifndef {macro}_PROFILE_PART", f"#define {macro}_PROFILE_PART(job) ((void)0)", "#endif",
            f"#ifndef {macro}_PROFILE_CORE1", f"#define {macro}_PROFILE_CORE1(job) ((void)0)", "#endif"]


def launch(prefix: str) -> list[str]:
    """init's launch of core 1, once."""
    return [f"    if (!{prefix}_core1_running) {{",
            f"        {prefix}_core1_running = tinyaot_core1_launch({prefix}_core1_main) == 0;", "    }"]


def two_core_parts(g: Graph, cplan: CorePlan, prefix: str, macro: str, emitted, work_of,
                   offsets: dict[str, str]) -> tuple[list[str], dict]:
    """The file-scope C of the split layers and the runtime, and each split layer's call in invoke. work_of:
    a layer's work buffer ("" for none)."""
    lines, calls, jobs = [], {}, []
    for node, e in emitted:
        split = cplan.split_of(node.name)
        if split is None:
            continue
        work = work_of(node.name)
        work1 = f"{_WORK}{offsets[work + CORE1_WORK]})" if work else ""
        lines += part_function(node, g, prefix, e, split, work1)
        jobs.append(layer_base(prefix, node))
        calls[node.name] = f"{prefix}_split(arena, {split.job});  /* {split.reason} */"
    head = [f"/* Two cores (tinyaot_multicore.h): {len(cplan.splits)} layers split, core 1 launched by init. */"]
    return [*head, "", *lines, *runtime(prefix, macro, jobs)], calls


def cores_contract(prefix: str, macro: str, two) -> list[str]:
    """The header's word on the second core (tinyaot_multicore.h has the details)."""
    n = len(two[1])
    return ["/*",
            f" * Two cores: {n} layers run half on each core. {prefix}_init launches core 1 once, through",
            " * tinyaot_core1_launch (the port's: multicore_launch_core1 on an RP2350; tinyaot_multicore.h), into a",
            " * loop that runs the second halves; call init and invoke from core 0, and leave core 1 to the model.",
            " * Without a second core (the weak tinyaot_core1_launch) core 0 runs both halves: the same bytes.",
            f" * {prefix}_set_cores(1) makes core 0 run both halves from the next invoke (to compare), (2) both",
            " * cores again; it answers how many cores the next invoke will use.",
            " */",
            f"#define {macro}_CORES 2",
            f"int {prefix}_set_cores(int cores);"]


def two_cores(g: Graph, plan: MemoryPlan, prefix: str, macro: str, emitted, offsets: dict[str, str]):
    """The file-scope C of a two-core model and each split layer's call in invoke."""
    def work_of(node: str) -> str:
        choice = plan.kernel_of(node)
        return choice.work if choice is not None else ""
    offsets = offsets | {b.name: f"{macro}_OFFSET_{c_ident(b.name).upper()}" for b in plan.buffers}
    return two_core_parts(g, plan_cores(g, plan, 2), prefix, macro, emitted, work_of, offsets)
