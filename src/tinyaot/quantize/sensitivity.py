"""How much one layer's kernel alone loses: its int8 (or 16x8) kernel on float inputs rounded exactly to its input's
qparams, its output against float's, as a signal-to-quantization-noise ratio.

Mixed precision chooses by it (quantize/mixed.py, int16="auto") and the per-layer error report prints it
(report/quant_error.py, "local SQNR"), so a layer is judged on its own rounding, not on what came before it.
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.ir.ops import state_family
from tinyaot.quantize.scheme import quantize_array
from tinyaot.ref.interpreter import KERNELS, initial_state, kernel_for

LOCAL_SAMPLES = 50  # samples for the per-layer kernel-alone measurement (the reference kernels are slow)


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    noise = float(np.sum((got - ref) ** 2))
    signal = float(np.sum(ref**2))
    if noise == 0:
        return math.inf
    return 10 * math.log10(max(signal, 1e-30) / noise)


def local_sqnr(params: dict, node, g, ref_values: dict) -> float:
    """The node's int8 (or 16x8) kernel alone: float inputs rounded to their qparams, output against float. A stateful
    kernel runs each sample as the first invoke after a reset, as the traced run and the float reference do."""
    if node.op not in KERNELS or node.name not in params:
        return math.nan
    ins = [g.tensor(i) for i in node.inputs if not g.tensor(i).is_const]
    if any(t.name not in ref_values or t.dtype not in ("int8", "int16") or t.qparams is None for t in ins):
        return math.nan
    out = g.tensor(node.outputs[0])
    kernel, p = kernel_for(node, g)[1], params[node.name]
    n = min(LOCAL_SAMPLES, len(ref_values[ins[0].name]))
    got, want = [], []
    for s in range(n):
        args = [quantize_array(ref_values[t.name][s].reshape(t.shape), t.qparams, t.dtype) for t in ins]
        state = () if state_family(node) is None else (initial_state(node, g),)
        y = np.asarray(kernel(*args, p, *state)).astype(np.float64)
        got.append((y.reshape(-1) - out.qparams.zero_point[0]) * out.qparams.scale[0])
        want.append(ref_values[out.name][s].reshape(-1))
    return sqnr_db(np.concatenate(want), np.concatenate(got))
