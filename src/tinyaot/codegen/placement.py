"""Where a layer's constants live. By default in flash (`static const`, .rodata), which a Pico 2 reads through its
16 KB XIP cache; a layer named in compile(sram_constants=...) has its arrays put in a .data section instead, which
the start-up code (the Pico SDK's crt0, the M33 harness's reset handler) copies to SRAM before main: the kernels
then read them at SRAM speed, and they take SRAM beside the arena. The C stays const-correct, so a kernel cannot
write them either way."""
from __future__ import annotations

import re

from tinyaot.errors import ModelError

_ARRAY = re.compile(r"^static const (\w+) (\w+)(\[[^\]]*\]) =", flags=re.M)


def sram_macro_lines(macro: str) -> list[str]:
    """The attribute the placed arrays carry: one .data section per array (GCC and Clang), so no two objects of
    different flags ever share a section; other compilers keep them in flash."""
    return [
        "/* Constants of the layers compiled with sram_constants: the start-up code copies them from flash to SRAM",
        " * with .data, so the kernels read them at SRAM speed instead of through the flash's XIP cache. */",
        "#if defined(__GNUC__) || defined(__clang__)",
        f'#define {macro}_IN_SRAM(symbol) __attribute__((section(".data.tinyaot." #symbol)))',
        "#else",
        f"#define {macro}_IN_SRAM(symbol)",
        "#endif",
        "",
    ]


def place_in_sram(constants: str, macro: str) -> str:
    """One layer's definitions with each array in SRAM (its params struct, a few words, stays in flash)."""
    return _ARRAY.sub(lambda m: f"static const {m[1]} {m[2]}{m[3]} {macro}_IN_SRAM({m[2]}) =", constants)


def sram_layers(requested, with_arrays: list[str]) -> frozenset[str]:
    """compile(sram_constants=...) against the layers that hold constant arrays: "all" is every one of them; a
    name that holds none is an error naming the ones that do."""
    if requested == "all":
        return frozenset(with_arrays)
    unknown = [n for n in requested if n not in with_arrays]
    if unknown:
        raise ModelError(f"sram_constants: no layer named {', '.join(repr(n) for n in unknown)} holds constants; "
                         f"the layers with constants are {', '.join(with_arrays) or 'none'} (or pass 'all')")
    return frozenset(requested)


def has_arrays(constants: str) -> bool:
    return _ARRAY.search(constants) is not None
