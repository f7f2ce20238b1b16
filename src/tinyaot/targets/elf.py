"""Sections of object files and linked images, read with pyelftools: the raw figures every size is made of."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile


class ImageSizes(NamedTuple):
    """Berkeley-style sizes of a linked image; a tuple, so `text, data, bss = sizes` reads as before."""

    text: int  # flash: code + rodata
    data: int  # initialised RAM (its load image is also in flash)
    bss: int  # zeroed RAM


def section_bytes(obj: Path, prefix: str) -> int:
    """Bytes of the sections of an object file whose names start with `prefix`."""
    return matching_section_bytes(obj, lambda name: name.startswith(prefix))


def matching_section_bytes(obj: Path, wanted: Callable[[str], bool]) -> int:
    """Bytes of the sections of an object file whose names `wanted` accepts."""
    with open(obj, "rb") as f:
        return sum(s.data_size for s in ELFFile(f).iter_sections() if wanted(s.name))


def elf_sizes(elf: Path, skip: tuple[str, ...] = ()) -> ImageSizes:
    """Text, data and bss of the allocated sections of an ELF, leaving out the sections named in `skip`."""
    text = data = bss = 0
    with open(elf, "rb") as f:
        for section in ELFFile(f).iter_sections():
            flags = section["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or section.name in skip:
                continue
            if section["sh_type"] == "SHT_NOBITS":
                bss += section["sh_size"]
            elif flags & SH_FLAGS.SHF_WRITE:
                data += section["sh_size"]
            else:
                text += section["sh_size"]
    return ImageSizes(text, data, bss)


def text_closure(obj: Path, sections: set[str]) -> set[str]:
    """`sections` (an object's .text.* function sections) and every .text.* section their relocations point at,
    transitively: a function whose address a kept one takes (a function pointer) is kept too, as --gc-sections
    keeps it, though no call edge leads there."""
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        refs: dict[str, set[str]] = {}
        for rel in elf.iter_sections():
            if rel["sh_type"] not in ("SHT_REL", "SHT_RELA"):
                continue
            target = elf.get_section(rel["sh_info"]).name
            symtab = elf.get_section(rel["sh_link"])
            for r in rel.iter_relocations():
                shndx = symtab.get_symbol(r["r_info_sym"])["st_shndx"]
                if isinstance(shndx, int) and shndx > 0:
                    name = elf.get_section(shndx).name
                    if name.startswith(".text."):
                        refs.setdefault(target, set()).add(name)
    kept, todo = set(), list(sections)
    while todo:
        s = todo.pop()
        if s not in kept:
            kept.add(s)
            todo.extend(refs.get(s, ()))
    return kept
