"""Flash taken by generated code, measured on Cortex-M33 object files (not estimated)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from elftools.elf.elffile import ELFFile

M33_SIZE_FLAGS = ["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", "-O2",
                  "-std=c99", "-ffunction-sections", "-fdata-sections"]


def section_bytes(obj: Path, prefix: str) -> int:
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        return sum(s.data_size for s in elf.iter_sections() if s.name.startswith(prefix))


def m33_code_bytes(sources) -> int | None:
    """Sum of .text over the model's object files, or None when arm-none-eabi-gcc is missing."""
    from tinyaot.targets.toolchain import ToolchainMissing, find_m33_toolchain

    try:
        gcc = str(find_m33_toolchain().gcc)
    except ToolchainMissing:
        return None
    with tempfile.TemporaryDirectory(prefix="tinyaot-size-") as tmp:
        d = Path(tmp)
        sources.write(d)
        total = 0
        for c in sources.c_files:
            obj = d / (c[:-2] + ".o")
            subprocess.run([gcc, *M33_SIZE_FLAGS, "-I", str(d), "-c", str(d / c), "-o", str(obj)],
                           check=True, capture_output=True)
            total += section_bytes(obj, ".text")
        return total
