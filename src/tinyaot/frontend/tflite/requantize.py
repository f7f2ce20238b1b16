"""QUANTIZE: requantization between integer types inside an int8 / 16x8 model (a float model refuses it: policy.py;
a float32 input's QUANTIZE is folded into the model input)."""
from __future__ import annotations

import tinyaot.frontend.tflite.tflm_checks as tflm
from tinyaot.errors import UnsupportedOpError
from tinyaot.frontend.tflite.importer import Importer
from tinyaot.frontend.tflite.reader import OpInfo
from tinyaot.ir.ops import WIDE_CONVERSIONS

_UINT8_QUANTIZE = {("uint8", "int8"), ("int8", "uint8")}  # TFLM's QUANTIZE: uint8 only to or from int8


def quantize(imp: Importer, op: OpInfo) -> None:
    """QUANTIZE between integer types (TFLM's Requantize): int8, int16 and int32 ends as TFLM pairs them
    (ir.ops.WIDE_CONVERSIONS), and a legacy uint8 input or output to or from int8; a float32 one is folded at the
    model input only."""
    (xi,) = imp.args(op, 1, 1)
    pair = (imp.t(xi).dtype, imp.t(op.outputs[0]).dtype)
    if "uint8" in pair and pair not in _UINT8_QUANTIZE:
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts {pair[0]} to {pair[1]}; TFLite Micro's "
                                 "QUANTIZE converts uint8 only to int8 and to uint8 only from int8 "
                                 "(EvalQuantizeReference refuses the rest)")
    if pair[0] not in ("int8", "int16", "int32", "uint8"):
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts a {imp.t(xi).type_name} tensor inside "
                                 "the model; tinyaot folds QUANTIZE only at the model input, and requantizes "
                                 "between int8, int16 and int32 (and a legacy uint8 input or output to or from int8) "
                                 "elsewhere")
    if pair != ("int8", "int8") and pair not in WIDE_CONVERSIONS and pair not in _UINT8_QUANTIZE:
        raise UnsupportedOpError(f"operator {op.index} (QUANTIZE) converts {pair[0]} to {pair[1]}; TFLite Micro's "
                                 "QUANTIZE converts int8 -> int8, uint8 <-> int8 and "
                                 f"{', '.join(f'{a} -> {b}' for a, b in sorted(WIDE_CONVERSIONS))}")
    imp.node(op, "quantize", [imp.ir_input(xi, op)], {})
    imp.prepare(tflm.rescale, op, [xi], op.outputs[0])


