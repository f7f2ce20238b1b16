"""The kernel library's headers, read as data: every params struct's fields and every shared #define.

tinyaot_kernels.h is the contract between the generated code and the kernels. Rather than keep a second copy of
its field lists and thresholds in Python, code generation reads them from the header itself (the file the
generated sources ship with), so the two cannot drift; tests/test_kernel_params.py checks the header against
the reference Params dataclasses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

KERNELS_HEADER = "tinyaot_kernels.h"
HEADERS = (KERNELS_HEADER, "tinyaot_fixedpoint.h")
SCALAR_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8}
TARGET_POINTER_BYTES = 4  # Cortex-M33 (ILP32): what flash sizes are reported for


@dataclass(frozen=True)
class CField:
    """One member of a params struct: `const int32_t *bias;`, `int32_t out_shape[4];`, `tinyaot_add_params add;`."""

    name: str
    ctype: str  # int32_t, int8_t, void, or a struct's name
    pointer: bool = False  # a pointer to const ctype (an array in flash)
    length: int | None = None  # an array member of `length` elements

    @property
    def nested(self) -> bool:
        return not self.pointer and self.ctype not in SCALAR_BYTES


@dataclass(frozen=True)
class KernelHeader:
    structs: dict[str, tuple[CField, ...]]  # typedef name -> members, in declaration order
    defines: dict[str, int]  # integer #defines named TINYAOT_*

    def fields(self, struct: str) -> tuple[CField, ...]:
        if struct not in self.structs:
            raise KeyError(f"{KERNELS_HEADER} declares no struct {struct}")
        return self.structs[struct]

    def define(self, name: str) -> int:
        return self.defines[name]

    def size(self, struct: str, pointer_bytes: int = TARGET_POINTER_BYTES) -> int:
        """sizeof(struct) under the usual C layout rules (each member at its alignment, the end padded)."""
        return self._layout(struct, pointer_bytes)[0]

    def _layout(self, struct: str, pointer_bytes: int) -> tuple[int, int]:
        offset, align = 0, 1
        for f in self.fields(struct):
            size, a = self._member(f, pointer_bytes)
            offset = -(-offset // a) * a + size
            align = max(align, a)
        return -(-offset // align) * align, align

    def _member(self, f: CField, pointer_bytes: int) -> tuple[int, int]:
        if f.pointer:
            return pointer_bytes, pointer_bytes
        size, align = self._layout(f.ctype, pointer_bytes) if f.nested else (SCALAR_BYTES[f.ctype],) * 2
        return size * (f.length or 1), align


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def _members(body: str) -> tuple[CField, ...]:
    """`const int32_t *a, *b; int32_t c[4];` -> CFields (the only declaration forms params structs use)."""
    out = []
    for decl in filter(None, (d.strip() for d in body.split(";"))):
        m = re.fullmatch(r"(const\s+)?(\w+)\s+(.+)", decl, flags=re.S)
        if m is None:
            raise ValueError(f"{KERNELS_HEADER}: cannot read the struct member '{decl}'")
        for declarator in m.group(3).split(","):
            d = re.fullmatch(r"\s*(\*?)\s*(\w+)\s*(?:\[(\d+)\])?\s*", declarator)
            if d is None:
                raise ValueError(f"{KERNELS_HEADER}: cannot read the declarator '{declarator}' in '{decl}'")
            length = int(d.group(3)) if d.group(3) else None
            out.append(CField(d.group(2), m.group(2), pointer=bool(d.group(1)), length=length))
    return tuple(out)


def parse_header(text: str) -> KernelHeader:
    code = _strip_comments(text)
    structs = {name: _members(body)
               for body, name in re.findall(r"typedef\s+struct\s*\{([^{}]*)\}\s*(\w+)\s*;", code)}
    defines = {name: int(value, 0) for name, value in
               re.findall(r"^\s*#define\s+(TINYAOT_\w+)\s+\(?(-?(?:0x[0-9a-fA-F]+|\d+))\)?\s*$", code, flags=re.M)}
    return KernelHeader(structs, defines)


@lru_cache(maxsize=1)
def kernel_header() -> KernelHeader:
    """The library headers' structs and defines (read once)."""
    include = resources.files("tinyaot").joinpath("c", "include")
    structs: dict[str, tuple[CField, ...]] = {}
    defines: dict[str, int] = {}
    for name in HEADERS:
        h = parse_header(include.joinpath(name).read_text())
        structs |= h.structs
        defines |= h.defines
    return KernelHeader(structs, defines)
