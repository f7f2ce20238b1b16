"""Kernel choices the plan makes per layer, before placement, and the working memory they need as arena buffers.

Every node whose op lists kernel variants (ir/variants.py) gets one record (plan/choice.py KernelChoice): the first
variant, in its spec's order, that serves the optimize mode and qualifies (its home's `qualifies`, ref/<home>.py),
else its plain kernel; with why each other variant was not chosen. `optimize="speed"` so gives the convs that
qualify the pairs kernel (two output pixels at a time, int16 weights widened at compile time, a work buffer live
only at the layer's step) and fully connected layers the wide kernel (int16 weights, no work buffer);
`optimize="size"` the same kernels reading int8 weights (no more flash than the int8 model); `optimize="memory"`
the plain int8 kernels, whose ring variants give the smallest arena. A layer qualifies when its requantization can
take the fast exact path (ref/per_channel.py) and the arena is at least word aligned. Variants chosen while
placing (rings) are left to plan/inplace.py, which never gives a ring to a node that has a variant already.
"""
from __future__ import annotations

from dataclasses import replace
from importlib import import_module

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import OPTIMIZE_MODES, PLAIN, KernelOptions, KernelVariant
from tinyaot.plan.choice import KernelChoice
from tinyaot.plan.lifetimes import Buffer

OPTIMIZE = OPTIMIZE_MODES


def check_optimize(optimize: str) -> str:
    if optimize not in OPTIMIZE:
        raise ModelError(f"optimize must be one of {', '.join(OPTIMIZE)}, got {optimize!r}: 'speed' (the default) "
                         "widens conv and fully connected weights to int16 for the fastest kernels, 'size' keeps "
                         "them int8 (a fast conv kernel, no more flash than the int8 model), 'memory' the plain "
                         "int8 kernels and the smallest arena")
    return optimize


def home(variant: KernelVariant):
    """The variant's kernel knowledge: ref/<home>.py (qualifies, work_bytes, its Params)."""
    return import_module(f"tinyaot.ref.{variant.home}")


def kernel_choices(g: Graph, options: KernelOptions, taken: set[str]) -> list[KernelChoice]:
    """One record per node whose op has variants, in graph order; a chosen variant's work buffer gets a name not
    in `taken` (which it then joins)."""
    check_optimize(options.optimize)
    for layer, mode in options.layer_modes:
        check_optimize(mode)
    out = []
    for node in g.nodes:
        variants = OPS[node.op].variants
        if not variants:
            continue
        chosen, rejected, note = None, [], ""
        for v in (v for v in variants if not v.placed):
            ok, why = _qualifies(v, node, g, options, chosen)
            if ok:
                chosen, note = v, why
            else:
                rejected.append((v.name, why))
        out.append(_record(node, g, chosen, tuple(rejected), taken, note))
    return out


def _qualifies(v: KernelVariant, node: Node, g: Graph, options: KernelOptions,
               chosen: KernelVariant | None) -> tuple[bool, str]:
    """Whether `v` runs `node`, and why not (or, when it does, what its home notes of the layer)."""
    mode = options.mode(node.name)
    if not v.serves(mode):
        return False, f"optimize={mode!r} does not choose it (it is for {' / '.join(v.modes)})"
    if chosen is not None:
        return False, f"{chosen.name} comes first"
    return home(v).qualifies(node, g, replace(options, optimize=mode, layer_modes=()))


def _record(node: Node, g: Graph, chosen: KernelVariant | None, rejected, taken: set[str],
            note: str) -> KernelChoice:
    if chosen is None:
        return KernelChoice(node.name, PLAIN, rejected=rejected)
    nbytes = home(chosen).work_bytes(node, g)
    if not nbytes:
        return KernelChoice(node.name, chosen.name, rejected=rejected, note=note)
    name = f"{node.name}_work"
    while name in taken:
        name += "_"
    taken.add(name)
    return KernelChoice(node.name, chosen.name, name, nbytes, rejected, note=note)


def work_buffers(g: Graph, choices: list[KernelChoice]) -> list[Buffer]:
    """Each choice's work buffer, live only at its node's step (a kernel's scratch)."""
    step = {n.name: s for s, n in enumerate(g.nodes)}
    return [Buffer(c.work, (c.work,), c.work_bytes, step[c.node], step[c.node], c.node, scratch=True)
            for c in choices if c.work]


def own_overlap(g: Graph, choices, overlap: str) -> frozenset[str]:
    """The nodes whose chosen variant has its own in-place rule `overlap` (plan/overlap.py), e.g. "pairs"."""
    ops = {n.name: n.op for n in g.nodes}
    return frozenset(c.node for c in choices if not c.plain
                     and OPS[ops[c.node]].variant(c.variant).overlap == overlap)


def for_mode(g: Graph, choices, optimize: str) -> tuple[KernelChoice, ...]:
    """The same records with each chosen variant replaced by its twin for `optimize` (the variant of the same home
    that serves it: pairs -> pairs_w8 for "size"), or by the plain kernel where the twin does not qualify (int8
    weights take no left shift), work buffers kept: what the plan's kernels cost in that mode."""
    nodes = {n.name: n for n in g.nodes}
    out = []
    for c in choices:
        spec = OPS[nodes[c.node].op]
        v = spec.variant(c.variant)
        if v is not None and not v.serves(optimize):
            twin = next((t for t in spec.variants if t.home == v.home and t.serves(optimize)), v)
            ok, _ = home(twin).qualifies(nodes[c.node], g, KernelOptions(optimize))
            c = replace(c, variant=twin.name if ok else PLAIN, note=c.note if ok else "")
        out.append(c)
    return tuple(out)
