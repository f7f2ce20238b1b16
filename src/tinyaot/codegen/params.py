"""The one calling convention: every kernel takes a `const tinyaot_<op>_params *` filled from its Params dataclass.

The reference's `prepare` makes a frozen Params per node (ref/<kernel>.py); the generated C gets the same numbers
as a `static const` struct in flash, one designated initializer per field, with the Params' arrays emitted
beside it and pointed to. The struct's name comes from the dataclass's (ConvParams -> tinyaot_conv_params), its
members from tinyaot_kernels.h (kernel_header.py); each member is read by name from the Params instance, so a
field renamed on one side only fails here, and tests/test_kernel_params.py checks the whole header against the
dataclasses. Fields the C never needs are listed in HOST_ONLY, each with the reason.

Flash sizes are measured from the emitted definitions themselves (`constant_bytes`), not estimated per op.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from tinyaot.codegen.cformat import C_TYPES, c_array, c_int
from tinyaot.codegen.kernel_header import SCALAR_BYTES, TARGET_POINTER_BYTES, CField, kernel_header
from tinyaot.errors import InternalError

# Params fields that stay on the host, by dataclass name: field -> why the kernel does not need it.
HOST_ONLY: dict[str, dict[str, str]] = {
    "FullyConnectedParams": {"input_offset": "folded into bias at compile time (folded_bias)"},
    "LutParams": {"function": "named in the table's comment"},
    "MulParams": {
        "a_shape": "read through a_strides",
        "b_shape": "read through b_strides",
        "broadcast": "chooses tinyaot_mul_s8 or tinyaot_mul_broadcast_s8 at compile time (MulParams.c_kernel)",
        "constants": "constant operands are emitted as arrays and passed as the operand pointers",
    },
    "AddParams": {
        "a_shape": "read through a_strides",
        "b_shape": "read through b_strides",
        "broadcast": "chooses tinyaot_add_s8 or tinyaot_add_broadcast_s8 at compile time (AddParams.c_kernel)",
        "constants": "constant operands are emitted as arrays and passed as the operand pointers",
    },
    "MinmaxParams": {
        "a_shape": "read through a_strides",
        "b_shape": "read through b_strides",
        "broadcast": "chooses tinyaot_minmax_s8 or tinyaot_minmax_broadcast_s8 at compile time (MinmaxParams.c_kernel)",
        "constants": "constant operands are emitted as arrays and passed as the operand pointers",
    },
    "Add16Params": {
        "a_shape": "read through a_strides",
        "b_shape": "read through b_strides",
        "constants": "constant operands are emitted as arrays and passed as the operand pointers",
    },
    "Mul16Params": {
        "a_shape": "read through a_strides",
        "b_shape": "read through b_strides",
        "constants": "constant operands are emitted as arrays and passed as the operand pointers",
    },
    "BatchMatmulParams": {
        "lhs_view": "shape, perm and adj_x are folded into the lhs strides",
        "rhs_view": "shape, perm and adj_y are folded into the rhs strides",
    },
    "TransposeParams": {"perm": "folded into in_strides", "in_shape": "folded into in_strides"},
    "ConcatParams": {"constants": "constant inputs are emitted as arrays and passed in the input pointer array"},
    "Concat16Params": {"constants": "constant inputs are emitted as arrays and passed in the input pointer array"},
    "SvdfParams": {"input_zero_point": "folded into feature_bias at compile time",
                   "bias": "folded into unit_bias with the state's zero point at compile time"},
}


# Arrays a kernel can do without (NULL: it computes the values itself), by struct: speed mode's tables, which
# the size and memory modes leave out (codegen/emit.py without_speed_tables). Any other pointer must be an array.
NULLABLE_ARRAYS = {"tinyaot_add_params": ("input1_table", "input2_table"),  # 2 KB of flash per add
                   "tinyaot_minmax_params": ("input1_table", "input2_table"),  # 256 B per rescaled operand
                   "tinyaot_conv16_params": ("weights16",),  # 2 B per weight
                   "tinyaot_fully_connected16_params": ("weights16",),  # 2 B per weight
                   "tinyaot_lstm16_params": ("weights_ih16", "weights_hh16")}  # 2 B per weight


# Members whose values are named by a family of the header's #defines, by struct: member -> the defines' prefix;
# the generated C reads `.mode = TINYAOT_PAD_REFLECT`, not a bare number.
NAMED_VALUES = {"tinyaot_pad_params": {"mode": "TINYAOT_PAD_"}, "tinyaot_lut16_params": {"mode": "TINYAOT_LUT16_"},
                "tinyaot_pad16_params": {"mode": "TINYAOT_PAD_"}}


class ParamsMismatch(InternalError):
    """A Params instance does not fit its C struct (a bug in tinyaot: the header and the dataclass drifted)."""


def struct_name(params_type: type) -> str:
    """tinyaot_<snake name>_params from the dataclass name: ConvParams -> tinyaot_conv_params,
    MaxPool2DParams -> tinyaot_max_pool2d_params, Uint8ToInt8Params -> tinyaot_uint8_to_int8_params."""
    stem = params_type.__name__.removesuffix("Params")
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])|(?<=[a-z])(?=[A-Z])", "_", stem).lower()
    return f"tinyaot_{snake}_params"


def emit_params(p, base: str, notes: dict[str, str] | None = None) -> str:
    """The arrays of `p` (`static const T <base>_<field>[...]`) and `static const tinyaot_<op>_params
    <base>_params`, its designated initializer naming every member. `notes`: a comment above an array."""
    arrays: list[str] = []
    body = _initializer(p, struct_name(type(p)), base, arrays, notes or {}, "    ")
    return "".join(arrays) + f"static const {struct_name(type(p))} {base}_params = {body};\n"


def _initializer(p, struct: str, base: str, arrays: list[str], notes: dict[str, str], indent: str) -> str:
    lines = []
    for f in kernel_header().fields(struct):
        if not hasattr(p, f.name):
            raise ParamsMismatch(f"{struct}.{f.name} has no field in {type(p).__name__}")
        lines.append(f"{indent}.{f.name} = {_value(f, getattr(p, f.name), struct, base, arrays, notes, indent)},")
    return "{\n" + "\n".join(lines) + f"\n{indent[:-4]}}}"


def _value(f: CField, v, struct: str, base: str, arrays: list[str], notes: dict[str, str], indent: str) -> str:
    where = f"{struct}.{f.name}"
    if f.nested:
        if not dataclasses.is_dataclass(v) or struct_name(type(v)) != f.ctype:
            raise ParamsMismatch(f"{where} is a {f.ctype}, got {type(v).__name__}")
        return _initializer(v, f.ctype, f"{base}_{f.name}", arrays, {}, indent + "    ")
    if f.pointer and v is None and f.name in NULLABLE_ARRAYS.get(struct, ()):
        return "0"  # NULL: the kernel computes what the array would hold (codegen/emit.py without_speed_tables)
    if f.pointer:
        if not isinstance(v, np.ndarray) or (f.ctype != "void" and C_TYPES.get(str(v.dtype)) != f.ctype):
            got = f"{v.dtype} array" if isinstance(v, np.ndarray) else type(v).__name__
            raise ParamsMismatch(f"{where} points to {f.ctype}, got a {got}")
        name = f"{base}_{f.name}"
        note = f"/* {notes[f.name]} */\n" if f.name in notes else ""
        arrays.append(note + c_array(name, v))
        return name
    if f.length is not None:
        if len(v) != f.length:
            raise ParamsMismatch(f"{where} holds {f.length} values, got {len(v)}")
        return "{" + ", ".join(_scalar(where, x) for x in v) + "}"
    prefix = NAMED_VALUES.get(struct, {}).get(f.name)
    if prefix is not None:
        return _named(where, prefix, v)
    return _scalar(where, v)


def _named(where: str, prefix: str, v) -> str:
    names = [k for k, value in kernel_header().defines.items() if k.startswith(prefix) and value == v]
    if len(names) != 1:
        raise ParamsMismatch(f"{where} is one of the {prefix}* defines, got {v!r}")
    return names[0]


def _scalar(where: str, v) -> str:
    if not isinstance(v, (int, np.integer)) or not -(2**31) <= int(v) < 2**31:
        raise ParamsMismatch(f"{where} is an int32_t, got {v!r}")
    return c_int(int(v))


# ---- flash taken by the emitted constants, measured from the emitted definitions ----------------------------
_DEFINITION = re.compile(r"^static const (\w+) (\w+)(?:\[([^\]]*)\])?( \w+_IN_SRAM\(\w+\))? =", flags=re.M)


def constant_bytes(c_source: str, pointer_bytes: int = TARGET_POINTER_BYTES, placed_in_sram: bool | None = None) -> int:
    """Bytes of every file-scope `static const` definition in a generated .c: arrays as element count x element
    size (the count read from the emitted dimension, e.g. `[32 * 784]`), params structs by their layout.
    tests/test_kernel_params.py checks this against the compiled object's .rodata. placed_in_sram=True counts only
    the arrays codegen/placement.py put in SRAM (False: only the others)."""
    total = 0
    for ctype, name, dims, sram in _DEFINITION.findall(c_source):
        if placed_in_sram is not None and bool(sram) != placed_in_sram:
            continue
        size = SCALAR_BYTES.get(ctype) or kernel_header().size(ctype, pointer_bytes)
        if dims:
            if not re.fullmatch(r"\s*\d+(\s*\*\s*\d+)*\s*", dims):
                raise ValueError(f"constant {name}: cannot measure the dimension [{dims}]")
            size *= int(np.prod([int(d) for d in dims.split("*")], dtype=np.int64))
        total += size
    return total
