"""A patch stage (plan/patch.py) run in the arena: each band's windows through the chain's kernels.

Each layer runs its own kernel on a window: the same Params with the window's rows (in_h, out_h) and the padding
above it (pad_top), which is what the generated C passes its kernel, from the window's first row. The input is
read from the arena as it is when the band starts and the output band written into it, so an output placed over
the input too closely gives a wrong answer here too.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np


def window_params(p, w):
    """The Params of one layer run on window `w` (plan.patch.Window)."""
    return replace(p, in_h=w.in_hi - w.in_lo, out_h=w.out_hi - w.out_lo, pad_top=w.pad_top)


def run_stage(arena: np.ndarray, stage, input_offset: int, output_offset: int, scratch_offset: int, shapes,
              kernels, params) -> None:
    """shapes: each layer's (input, output) NHWC shapes; kernels, params: each layer's kernel and Params."""
    for band in stage.windows:
        for i, w in enumerate(band):
            (_, _, in_w, in_c), (_, _, out_w, out_c) = shapes[i]
            rows_in = w.in_hi - w.in_lo
            if i == 0:
                start = input_offset + w.in_lo * stage.in_row_bytes
            else:
                start = scratch_offset + stage.offsets[i - 1]
            x = arena[start : start + rows_in * in_w * in_c].view(np.int8).reshape(1, rows_in, in_w, in_c)
            y = np.asarray(kernels[i](x, window_params(params[i], w)), dtype=np.int8).reshape(-1).view(np.uint8)
            if i == len(band) - 1:
                start = output_offset + w.out_lo * stage.row_bytes[i]
            else:
                start = scratch_offset + stage.offsets[i]
            arena[start : start + y.size] = y
