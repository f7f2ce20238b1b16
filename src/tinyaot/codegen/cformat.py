"""Small helpers that render C literals and identifiers."""
from __future__ import annotations

import re

import numpy as np

C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t", "int16": "int16_t", "int64": "int64_t"}


def c_ident(name: str) -> str:
    """A valid C identifier from a layer/tensor name ('layers.0' -> 'layers_0')."""
    ident = re.sub(r"[^0-9a-zA-Z_]", "_", name)
    if not ident or ident[0].isdigit():
        ident = "t_" + ident
    return ident


def c_array(name: str, data: np.ndarray, per_line: int = 16, indent: str = "    ") -> str:
    """`static const T name[N] = {...};` with N spelled as the product of the tensor's dims."""
    ctype = C_TYPES[str(data.dtype)]
    flat = data.reshape(-1)
    dims = " * ".join(str(d) for d in data.shape) if data.ndim > 1 else str(flat.size)
    values = flat.tolist()  # Python ints: %-formatting a line at a time (megabytes of weights take seconds)
    width = max(len(str(min(values))), len(str(max(values)))) if values else 1
    full = f"{indent}{', '.join([f'%{width}d'] * per_line)},"
    lines = [full % tuple(values[i : i + per_line]) if len(values) - i >= per_line else
             f"{indent}{', '.join([f'%{width}d'] * (len(values) - i))}," % tuple(values[i:])
             for i in range(0, len(values), per_line)]
    body = "\n".join(lines) if lines else f"{indent}0"
    return f"static const {ctype} {name}[{dims}] = {{\n{body}\n}};\n"


def c_int(v: int) -> str:
    """Negative literals in parentheses so macros expand safely; INT32_MIN spelled portably."""
    v = int(v)
    if v == -(2**31):
        return "(-2147483647 - 1)"
    return f"({v})" if v < 0 else str(v)


def c_float_literal(x: float) -> str:
    return f"{float(x):.9g}f" if "e" in f"{float(x):.9g}" or "." in f"{float(x):.9g}" else f"{float(x):.1f}f"
