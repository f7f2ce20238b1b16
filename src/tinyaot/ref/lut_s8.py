"""lut_s8: an elementwise function of int8 through a 256-entry int8 table built at compile time.

table[q + 128] = clamp(round(f(input_scale * (q - input_zp)) / output_scale) + output_zp), evaluated in
double precision with ties rounded away from zero (TFLite's LUTPopulate rounding). This is tinyaot's
semantics for PyTorch models. The functions tflm_logistic / tflm_tanh / tflm_hard_swish (what the TFLite
importer emits) instead fill the table with TFLite Micro's own integer kernels (ref/tflm_activations.py), so a
.tflite model's activations are bit-exact with TFLM.

Tolerance against the real function: each table entry is within half an output step of f at the
dequantized input, so for a real input x (quantized first) the result is within
0.5 * output_scale + LIPSCHITZ[f] * 0.5 * input_scale of f(x), unless the output saturates.
An optional fused `clamp` narrows the table's range. Runs in place (out[i] depends on in[i] only).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tinyaot.errors import ModelError, TinyAOTError, UnsupportedOpError
from tinyaot.fixedpoint import activation_range
from tinyaot.ir import Graph, Node
from tinyaot.ref import _checks, tflm_activations
from tinyaot.ref.activations import FUNCTIONS as FUNCTIONS  # the functions' home: ref/activations.py
from tinyaot.ref.activations import LIPSCHITZ as LIPSCHITZ


@dataclass(frozen=True)
class LutParams:
    function: str
    size: int  # elements
    table: np.ndarray  # int8 [256]: output for input q at index q + 128

    @property
    def c_notes(self) -> dict[str, str]:
        """The comment above the table in the generated C: which function it holds."""
        return {"table": f"{self.function}: output for input q at [q + 128]"}


def affine(scale_by: float, offset: float) -> Callable[[np.ndarray], np.ndarray]:
    """x * scale_by + offset: a Python-scalar add/sub/mul/div in a PyTorch model (e.g. `x * 0.5 + 1`)."""
    return lambda x: x * scale_by + offset


def build_table(function: str, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                act_min: int = -128, act_max: int = 127, fn: Callable[[np.ndarray], np.ndarray] | None = None
                ) -> np.ndarray:
    f = fn if fn is not None else FUNCTIONS[function]
    real = in_scale * (np.arange(-128, 128, dtype=np.float64) - in_zp)
    v = f(real) / out_scale
    q = np.sign(v) * np.floor(np.abs(v) + 0.5) + out_zp
    return np.clip(q, act_min, act_max).astype(np.int8)


def prepare(node: Node, g: Graph) -> LutParams:
    x, y = _checks.io(node, g)
    function = node.attrs.get("function")
    fn = None
    if function == "affine":
        fn = affine(float(node.attrs["scale_by"]), float(node.attrs["offset"]))
    elif function not in FUNCTIONS and function not in tflm_activations.TFLM_FUNCTIONS:
        available = sorted(FUNCTIONS) + list(tflm_activations.TFLM_FUNCTIONS)
        raise UnsupportedOpError(f"lut '{node.name}': unknown function {function!r}; available: {', '.join(available)}")
    if x.size != y.size:
        raise ModelError(f"lut '{node.name}': output {list(y.shape)} must have as many elements as {list(x.shape)}")
    qp = y.qparams
    act_min, act_max = activation_range(node.attrs.get("clamp"), qp.scale[0], qp.zero_point[0])
    if function in tflm_activations.TFLM_FUNCTIONS:
        try:
            table = tflm_activations.build_table(function, x.qparams.scale[0], int(x.qparams.zero_point[0]),
                                                 qp.scale[0], int(qp.zero_point[0]))
        except TinyAOTError as exc:
            raise type(exc)(f"lut '{node.name}': {exc}") from None
        return LutParams(function, x.size, np.clip(table, act_min, act_max).astype(np.int8))
    table = build_table(function, x.qparams.scale[0], x.qparams.zero_point[0], qp.scale[0], qp.zero_point[0],
                        act_min, act_max, fn)
    return LutParams(function, x.size, table)


def lut_s8(x: np.ndarray, p: LutParams) -> np.ndarray:
    return p.table[x.astype(np.int16) + 128]
