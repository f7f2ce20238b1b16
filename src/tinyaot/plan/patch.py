"""Patch-based execution (MCUNetV2): a chain of spatial layers run band by band instead of layer by layer.

The first stages of a CNN hold its largest feature maps, and their sum at one step is the layer-by-layer bound of
the arena. A patch stage runs such a chain (conv2d, depthwise_conv2d, pools: one activation input, one output,
each the only reader of the one before) over row bands of its last output: for each band, the rows every layer of
the chain needs are computed back from it (the halo each kernel's taps add), each layer runs its kernel on its
window (its plain kernel, or the pairs kernel the plan chose for a conv2d, called with the window's first row and
its own in_h / out_h / pad_top: a window in the middle of the image has no padding, the first and last keep the
image's), the windows of the layers inside the chain live in one small scratch buffer (each clear of the window
its layer reads and of the one read from it), and the last layer writes its band into the full output. Halo rows
are computed by more than one band: that is the extra work (MACs) the search bounds. The stage's output may sit
over its input at the overlap distance the bands allow: band k is written after the input rows it needs were read,
and must not reach the rows band k + 1 reads.

In the plan the stage is one step, its first layer's: the input dies and the output is born there, the scratch
lives there only, and the chain's inner tensors have no buffer; its other layers' steps have nothing to run.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import import_module

from tinyaot.ir import Graph
from tinyaot.ir.macs import node_macs
from tinyaot.ir.ops import OPS
from tinyaot.plan.lifetimes import Buffer, live_bytes
from tinyaot.plan.overlap import Overlap
from tinyaot.ref.conv2d_pairs_s8 import skipped_channels

PATCH_OPS = ("conv2d", "depthwise_conv2d", "max_pool2d", "avg_pool2d")  # plain kernels taking a row window
WINDOW_VARIANTS = ("pairs", "pairs_w8")  # variants a stage's layer keeps (on its window, its work buffer at the stage)
EXTRA_MACS = 0.15  # default bound on the recomputed halos' MACs, a fraction of the model's
MAX_LAYERS = 16  # longest chain tried
SCRATCH = "patch_scratch"
ESTIMATE_STEPS = 8  # the busiest steps an estimate compares


@dataclass(frozen=True)
class Window:
    """One layer of one band: it reads rows [in_lo, in_hi) of its input and writes rows [out_lo, out_hi) of its
    output, with pad_top rows of the image's padding above the window (0 inside the image)."""

    in_lo: int
    in_hi: int
    out_lo: int
    out_hi: int
    pad_top: int


@dataclass(frozen=True)
class PatchStage:
    nodes: tuple[str, ...]  # the chain, in order
    start: int  # step of its first node: the whole stage runs there
    input: str  # tensor read by the first node
    output: str  # tensor written by the last node
    windows: tuple[tuple[Window, ...], ...]  # [band][layer]
    row_bytes: tuple[int, ...]  # bytes of one row of each layer's output (the input's: in_row_bytes)
    in_row_bytes: int
    offsets: tuple[int, ...]  # each inner tensor's window (outputs of layers 0 .. L-2) in the scratch
    scratch: str  # the scratch buffer's name
    scratch_bytes: int
    distance: int  # the output may sit over the input at offset(output) <= offset(input) - distance
    macs: int  # the chain's MACs run in bands
    base_macs: int  # the chain's MACs layer by layer

    @property
    def bands(self) -> int:
        return len(self.windows)

    @property
    def extra_macs(self) -> int:
        return self.macs - self.base_macs

    @property
    def end(self) -> int:
        """The step of the chain's last node."""
        return self.start + len(self.nodes) - 1

    def text(self) -> str:
        """'6 layers (conv1 .. conv6) in 8 row bands, scratch 2,304 B, +3,456 MACs (+2.1 %)'."""
        pct = 100.0 * self.extra_macs / max(self.base_macs, 1)
        return (f"{len(self.nodes)} layers ({self.nodes[0]} .. {self.nodes[-1]}) in {self.bands} row bands, "
                f"scratch {self.scratch_bytes:,} B, +{self.extra_macs:,} MACs (+{pct:.1f} % of the stage's)")


def geometry(p) -> tuple[int, int, int, int, int, int]:
    """(in_h, out_h, kernel_h, stride_h, dilation_h, pad_top) of a windowed kernel's Params."""
    return p.in_h, p.out_h, p.kernel_h, p.stride_h, getattr(p, "dilation_h", 1), p.pad_top


def prepare(node, g: Graph):
    """The layer's reference Params (its geometry: rows, kernel, stride, dilation, padding)."""
    return getattr(import_module(f"tinyaot.ref.{OPS[node.op].ref}"), "prepare")(node, g)


def _patchable(node, g: Graph) -> bool:
    if node.op not in PATCH_OPS:
        return False
    acts = [t for t in node.inputs if t and not g.tensor(t).is_const]
    if len(acts) != 1 or len(node.outputs) != 1:
        return False
    x, y = g.tensor(acts[0]), g.tensor(node.outputs[0])
    return len(x.shape) == 4 and len(y.shape) == 4 and x.shape[0] == 1 and x.dtype == y.dtype == "int8"


def chains(g: Graph) -> list[tuple[int, int]]:
    """(first, last) steps of every maximal run of patchable layers, each reading the one before, whose inner
    tensors have no other reader and are no graph output."""
    readers: dict[str, int] = {}
    for n in g.nodes:
        for t in n.inputs:
            readers[t] = readers.get(t, 0) + 1
    out = []
    s = 0
    while s < len(g.nodes):
        if not _patchable(g.nodes[s], g):
            s += 1
            continue
        e = s
        while e + 1 < len(g.nodes):
            prev, nxt = g.nodes[e], g.nodes[e + 1]
            y = prev.outputs[0]
            if not _patchable(nxt, g) or nxt.inputs[0] != y or readers.get(y, 0) != 1 or y in g.outputs:
                break
            e += 1
        if e > s:
            out.append((s, e))
        s = e + 1
    return out


def band_edges(rows: int, bands: int) -> list[tuple[int, int]]:
    return [(k * rows // bands, (k + 1) * rows // bands) for k in range(bands)]


def stage_of(g: Graph, first: int, last: int, bands: int, alignment: int = 4, params=None, macs=None,
             scratch_name: str = SCRATCH) -> PatchStage:
    """The stage running steps first..last of g in `bands` row bands of the last layer's output (params, macs: each
    layer's Params and MACs, when known)."""
    nodes = g.nodes[first : last + 1]
    params = params or {}
    ps = [params.get(n.name) or prepare(n, g) for n in nodes]
    out_h = ps[-1].out_h
    windows = []
    for lo, hi in band_edges(out_h, bands):
        per_layer = []
        for p in reversed(ps):
            in_h, _, k, s, d, pad = geometry(p)
            need_lo, need_hi = lo * s - pad, (hi - 1) * s - pad + (k - 1) * d + 1
            r0, r1 = max(need_lo, 0), min(need_hi, in_h)
            per_layer.append(Window(r0, r1, lo, hi, r0 - need_lo))
            lo, hi = r0, r1
        windows.append(tuple(reversed(per_layer)))
    row_bytes = tuple(g.tensor(n.outputs[0]).nbytes // g.tensor(n.outputs[0]).shape[1] for n in nodes)
    x = g.tensor(nodes[0].inputs[0])
    in_row = x.nbytes // x.shape[1]
    inner = [max((w[i].out_hi - w[i].out_lo) * row_bytes[i] for w in windows) for i in range(len(nodes) - 1)]
    offsets, scratch = scratch_layout(inner, alignment)
    macs = macs or {}
    layer_macs = [macs[n.name] if n.name in macs else node_macs(n, g) for n in nodes]
    row_macs = [m // max(p.out_h, 1) for m, p in zip(layer_macs, ps)]
    run = sum((w[i].out_hi - w[i].out_lo) * row_macs[i] for w in windows for i in range(len(nodes)))
    distance = max(windows[k][-1].out_hi * row_bytes[-1] - windows[k + 1][0].in_lo * in_row
                   for k in range(bands - 1))
    return PatchStage(tuple(n.name for n in nodes), first, nodes[0].inputs[0], nodes[-1].outputs[0],
                      tuple(windows), row_bytes, in_row, offsets, scratch_name, scratch, distance, run,
                      sum(layer_macs))


def scratch_layout(sizes: list[int], alignment: int) -> tuple[tuple[int, ...], int]:
    """Offsets of the inner windows in the scratch, and its size: window i is written by layer i and read by layer
    i + 1, so it shares no byte with windows i - 1 and i + 1 and may reuse any other's. Largest first, each at the
    lowest aligned offset clear of its placed neighbours.

    >>> scratch_layout([100, 400, 100, 50], 4)
    ((400, 0, 400, 0), 500)
    """
    offsets: dict[int, int] = {}
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        taken = sorted((offsets[j], offsets[j] + sizes[j]) for j in (i - 1, i + 1) if j in offsets)
        x = 0
        for lo, hi in taken:
            if x + sizes[i] <= lo:
                break
            x = max(x, _align(hi, alignment))
        offsets[i] = x
    out = tuple(offsets[i] for i in range(len(sizes)))
    return out, _align(max((o + s for o, s in zip(out, sizes)), default=0), alignment)


def keeps_variant(choice, node, g: Graph) -> bool:
    """Whether a layer of a stage runs its chosen variant on its windows (the pairs kernels, but not their sparse
    form) rather than its plain kernel."""
    if choice.variant not in WINDOW_VARIANTS or node.op != "conv2d":
        return False
    return not skipped_channels(node, g).any()


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def stage_buffers(buffers: list[Buffer], stage: PatchStage, g: Graph) -> list[Buffer]:
    """The plan's buffers with the stage: its inner tensors have none, its output is born at its first step, and
    the scratch lives there only."""
    inner = {g.nodes[s].outputs[0] for s in range(stage.start, stage.end)}
    out = []
    for b in buffers:
        if set(b.tensors) & inner:
            continue
        if stage.output in b.tensors:
            b = replace(b, first=stage.start, producer=stage.nodes[0])
        out.append(b)
    if any(b.name == stage.scratch for b in out):
        raise ValueError(f"a buffer is named {stage.scratch!r}; the patch stage's scratch needs that name")
    out.append(Buffer(stage.scratch, (stage.scratch,), stage.scratch_bytes, stage.start, stage.start, stage.nodes[0],
                      scratch=True))
    return sorted(out, key=lambda b: (b.first, b.name))


def stage_overlap(buffers: list[Buffer], stage: PatchStage, pinned=frozenset(), outputs=()) -> Overlap | None:
    """The output over the dying input, when the input dies at the stage."""
    by_tensor = {t: b for b in buffers for t in b.tensors}
    src, dst = by_tensor.get(stage.input), by_tensor.get(stage.output)
    if src is None or dst is None or src.last != stage.start or src.name in pinned:
        return None
    if any(by_tensor.get(t) is src for t in outputs):
        return None
    return Overlap(src.name, dst.name, stage.start, stage.distance - src.offset_in(stage.input), stage.bands)


def estimate(buffers: list[Buffer], n_steps: int) -> tuple[int, ...]:
    """Live bytes at each step, scratch included, less the bytes an output born there could share with the
    inputs that die there (as a ring or a stage's bands let it), busiest first: an optimistic arena and, where
    stages tie on it (the input's step, which no later stage changes), the steps after it, to rank stages before
    placing the best few."""
    live = live_bytes(buffers, n_steps)
    born, dying = [0] * len(live), [0] * len(live)
    for b in buffers:
        if b.scratch:
            continue
        if b.producer == "input" or b.first < b.last:  # an input may die where it is born, at step 0
            dying[b.last] += b.nbytes
        if b.producer != "input":
            born[b.first] += b.nbytes
    return tuple(sorted((x - min(a, d) for x, a, d in zip(live, born, dying)), reverse=True)[:ESTIMATE_STEPS])


def scratch_name(g: Graph, k: int) -> str:
    """The k-th stage's scratch buffer: a name no tensor has."""
    name = SCRATCH if k == 0 else f"{SCRATCH}_{k}"
    while name in g.tensors:
        name += "_"
    return name


def splits(g: Graph, stage: PatchStage, max_extra: int, alignment: int = 4, params=None) -> list[tuple]:
    """The pairs of stages that could replace `stage`: its chain cut in two, each part in its own bands, their
    extra MACs within max_extra (a stage whose scratch is the arena's peak may cost less as two)."""
    out = []
    names = (stage.scratch, stage.scratch + "_b")
    for m in range(stage.start + 1, stage.end - 1):
        for b1 in (2, 3, 4, 6, 8, 12, 16, 24):
            if b1 > g.tensor(g.nodes[m].outputs[0]).shape[1]:
                break
            first = stage_of(g, stage.start, m, b1, alignment, params, None, names[0])
            for b2 in (2, 3, 4, 6, 8, 12, 16, 24):
                if b2 > g.tensor(stage.output).shape[1]:
                    break
                second = stage_of(g, m + 1, stage.end, b2, alignment, params, None, names[1])
                if first.extra_macs + second.extra_macs <= max_extra:
                    out.append((first, second))
    return out


def candidates(g: Graph, max_extra: int, alignment: int = 4, params=None, taken=(), name: str = SCRATCH
               ) -> list[PatchStage]:
    """Every stage (a sub-chain of a chain, 2 to 24 bands of its last output) whose extra MACs stay within
    max_extra and whose steps are none of the `taken` stages'."""
    busy = {s for st in taken for s in range(st.start, st.end + 1)}
    params = params if params is not None else {}  # filled: the caller keeps them for its next call
    macs = {}
    found = []
    runs = chains(g)
    for first, last in runs:  # each layer's Params and MACs once: its geometry is all a stage reads of them
        for n in g.nodes[first : last + 1]:
            params.setdefault(n.name, prepare(n, g))
            macs[n.name] = node_macs(n, g)
    for first, last in runs:
        for s in range(first, last):
            for e in range(s + 1, min(last, s + MAX_LAYERS - 1) + 1):
                if busy & set(range(s, e + 1)):
                    break
                out_h = g.tensor(g.nodes[e].outputs[0]).shape[1]
                for bands in sorted({b for b in (2, 3, 4, 6, 8, 12, 16, 24) if b <= out_h}):
                    st = stage_of(g, s, e, bands, alignment, params, macs, name)
                    if st.extra_macs <= max_extra:
                        found.append(st)
    return found
