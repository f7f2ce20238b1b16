"""The wide fully connected kernels (tinyaot_fully_connected_wide_s8 / _wide_w8_s8 in c/kernels/fully_connected_s8.c),
the `wide` and `wide_w8` variants.

They compute fully_connected_s8's numbers six or eight outputs at a time over weights laid out at compile time
(codegen/emit_conv.py: int16 pairs for speed, int8 in the kernel's order for size), the input offset folded into
the bias and the fast requantization (ref/per_channel.py) after. The reference is the plain kernel's; this module
holds what the plan needs to know of them: when a layer qualifies (they need no work buffer).

The kernels' MACs are exact for every channel (wrapping int32 sums, as TFLM's); only the requantization has a fast
form with conditions. Channels no fast form takes run TFLM's requantization on their raw accumulator (the `_mixed`
entry points, which the emitter picks for such a layer), so a layer never falls back to the plain kernel for its
requantization: a fall-back per channel, which the plan's record notes (the channels and why).
"""
from __future__ import annotations

from dataclasses import replace

from tinyaot.errors import ModelError
from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS
from tinyaot.ir.variants import KernelOptions
from tinyaot.ref import fully_connected_s8
from tinyaot.ref.per_channel import FAST_ALIGNMENT, FastRequant, fast_requant, input_range

HOME = "fully_connected_wide_s8"  # this module, as ir/variants.py names it
IN_GROUP = 8  # the kernels read the input in whole groups of 8 features (fewer: from a padded copy)
MAX_LEFT = {"int16": 8, "int8": 0}  # a left shift the weights take (ref/per_channel.py form 2): int16 weights
#                                     hold 2^8 * int8; int8 weights cannot be scaled


def qualifies(node: Node, g: Graph, options: KernelOptions) -> tuple[bool, str]:
    """An int8 layer with constant weights, in an arena at least word aligned, with a multiple of 8 input
    features (or fewer than 8 in one batch, which the kernel pads to 8); the note says which channels take which
    requantization (ref/per_channel.py)."""
    if options.alignment < FAST_ALIGNMENT:
        return False, f"the arena is {options.alignment}-byte aligned; the kernel loads words (LDRD)"
    x, w, b = (g.tensor(n) for n in node.inputs[:3])
    y = g.tensor(node.outputs[0])
    if len(w.shape) != 2:
        return False, "its weights are not a matrix"
    if w.shape[1] % IN_GROUP and (w.shape[1] > IN_GROUP or x.size != w.shape[1]):
        return False, (f"{w.shape[1]} input features in {x.size // w.shape[1]} batches; the wide kernels read whole "
                       f"groups of {IN_GROUP} (fewer in one batch from a padded copy)")
    if x.dtype != "int8" or w.data is None or None in (w.qparams, x.qparams, y.qparams):
        return False, f"its input is {x.dtype}, or its weights are not constant int8"
    variant = next(v for v in OPS[node.op].variants if v.home == HOME and v.serves(options.optimize))
    try:
        fast = requantization(node, g, variant.weights)
    except ModelError as e:
        return False, str(e)
    return (False, fast) if isinstance(fast, str) else (True, fast.note)


def requantization(node: Node, g: Graph, weights: str) -> FastRequant | str:
    """The layer's fast requantization (ref/per_channel.py) for weights of type `weights` in flash, over the
    values its input can hold; the reason where a channel cannot take it. The kernel sums the raw inputs from the
    bias with the input offset folded in, so that is the bias it is given and the bound covers every partial sum
    of that order (each term 0 or x * w). Channels no fast form takes are marked exact (TFLM's requantization in
    the kernel). The plan's `qualifies` and the emitter both ask this."""
    p = fully_connected_s8.prepare(node, g)
    folded = replace(p, bias=p.folded_bias, input_offset=0)
    return fast_requant(folded, input_range(g, node.inputs[0]), MAX_LEFT[weights], exact_ok=True)


def work_bytes(node: Node, g: Graph) -> int:
    """No work buffer: the kernel keeps its eight accumulators in registers."""
    return 0


def wide_six_rows(out_features: int) -> int:
    """The rows tinyaot_fully_connected_wide_s8 computes in groups of six before its groups of eight (its
    fc_six_rows; a multiple of 6, past out_features where the last group of six is partial): the most whose rest
    is whole groups of eight; else, one or two rows left over (and at least 8 rows), one group of six less; else
    out_features rounded up to a multiple of 6.

    >>> [wide_six_rows(n) for n in (1, 4, 5, 6, 8, 10, 12, 13, 14, 15, 21, 128, 640)]
    [6, 6, 6, 6, 0, 12, 12, 6, 6, 18, 24, 120, 624]
    """
    for six in range(out_features - out_features % 6, -1, -6)[:4]:
        if (out_features - six) % 8 == 0:
            return six
    left = out_features % 6
    six = out_features - left
    return six - 6 if left in (1, 2) and six >= 6 else six + (6 if left else 0)


def wide_cut_keeps_layout(out_features: int, cut: int) -> bool:
    """Whether the speed kernel's rows [0, cut) and [cut, out_features), each run as a layer of its own (two cores
    sharing the layer, plan/cores.py), find their weights laid out as the whole layer's are: each half's own
    wide_six_rows must be the whole layout's rows of six that fall in it.

    >>> [c for c in range(1, 40) if wide_cut_keeps_layout(40, c)]
    [6, 12, 18, 24, 32]
    """
    six = wide_six_rows(out_features)
    if six > out_features:  # a padded last group of six: no half of it stands alone
        return False
    first, second = min(cut, six), max(six - cut, 0)
    if cut <= six and cut % 6:
        return False
    if cut > six and (cut - six) % 8:
        return False
    return wide_six_rows(cut) == first and wide_six_rows(out_features - cut) == second
