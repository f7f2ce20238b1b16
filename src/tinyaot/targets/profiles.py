"""The compiler profiles: which compiler and which flags each target and each size measurement uses.

One place, because the flags decide the bytes: the host engine, the emulated Cortex-M33, the sizes tinyaot reports
and the Pico 2 project must each compile the generated C the same way every time, and a figure measured with one
profile is only comparable with a run built with the same one. Profiles are plain values; the targets locate the
compiler a profile names (targets/toolchain.py, targets/host.py) and add what is theirs alone (include directories,
the harness's own flags, link steps).
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ToolchainProfile:
    """A compiler (its program, and the environment variable that overrides it) and how it compiles C.

    A compile takes `flags`: the cpu options, then the C flags, then the defines, in that order; `link` is what a
    link adds to them (the host's shared library)."""

    name: str
    compiler: str
    compiler_env: str
    cpu: tuple[str, ...] = ()
    c_flags: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    link: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[str, ...]:
        return (*self.cpu, *self.c_flags, *self.defines)

    def compile_flags(self, *extra: str) -> list[str]:
        """`flags`, then what one compile adds (include directories, a call graph, warnings)."""
        return [*self.flags, *extra]

    def derived(self, name: str, **changes) -> ToolchainProfile:
        return replace(self, name=name, **changes)


# ---- the host: the system C compiler, for the host engine and the sanitizers --------------------------------------

HOST = ToolchainProfile("host", compiler="gcc", compiler_env="CC",
                        c_flags=("-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"))
# Position-independent code linked into a library this process loads with ctypes.
HOST_SHARED = HOST.derived("host-shared", c_flags=(*HOST.c_flags, "-fPIC"), link=("-shared",))
# AddressSanitizer + UndefinedBehaviorSanitizer, stopping at the first report (a report is a failed run). These come
# after the host's flags and win (-O1 over -O2).
SANITIZE_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
HOST_SANITIZED = HOST.derived("host-sanitized", c_flags=(*HOST.c_flags, *SANITIZE_FLAGS))

# ---- the Cortex-M33: arm-none-eabi-gcc for the RP2350's core --------------------------------------------------------

ARM_GCC = "arm-none-eabi-gcc"
ARM_GCC_ENV = "TINYAOT_ARM_GCC"
# ARMv8-M Mainline with the DSP extension and the single-precision FPU (newlib's multilib for it).
M33_CPU = ("-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16")

# The emulated Cortex-M33 (targets/m33): what the instruction counts are measured on.
M33 = ToolchainProfile("m33", compiler=ARM_GCC, compiler_env=ARM_GCC_ENV, cpu=M33_CPU, c_flags=(
    "-O2",
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-ffp-contract=off",  # no FMA contraction: float code matches the host build
    "-ffunction-sections",
    "-fdata-sections",
    "-g",
))
# The same core without the DSP extension: the portable C kernels (no SMLAD path).
M33_NODSP = M33.derived("m33-nodsp", cpu=("-mcpu=cortex-m33+nodsp", *M33_CPU[1:]))

# The code and static state tinyaot reports (targets/sizes.py): one function and one variable per section, and gcc's
# call graph, so what a firmware's --gc-sections link keeps is known without linking.
M33_SIZE = M33.derived("m33-size", c_flags=("-O2", "-std=c99", "-ffunction-sections", "-fdata-sections",
                                            "-fcallgraph-info=su"))

# ---- the Raspberry Pi Pico 2 --------------------------------------------------------------------------------------

# What Pico SDK 2.2.0 compiles with for PICO_BOARD=pico2 (Release), and the defines every file sees: the project's
# sizes and stack are measured with it, and its app runs on QEMU built with it (targets/pico2).
RP2350 = ToolchainProfile(
    "rp2350", compiler=ARM_GCC, compiler_env=ARM_GCC_ENV,
    cpu=("-mcpu=cortex-m33", "-mthumb", "-march=armv8-m.main+fp+dsp", "-mfloat-abi=softfp", "-mcmse"),
    c_flags=("-O3", "-DNDEBUG", "-ffunction-sections", "-fdata-sections", "-std=gnu11"),
    defines=("-DPICO_RP2350=1", "-DPICO_ON_DEVICE=1", '-DPICO_BOARD="pico2"'),
)


def m33_profile(dsp: bool) -> ToolchainProfile:
    """The emulated core with or without the DSP extension."""
    return M33 if dsp else M33_NODSP
