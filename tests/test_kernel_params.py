"""One calling convention: every kernel takes a `const tinyaot_<op>_params *`, and tinyaot_kernels.h's params
structs are the reference's Params dataclasses member for field, so the two cannot drift; shared thresholds are
defined once; the constants' flash size is measured, and equals what the compiler puts in .rodata."""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pytest
from conftest import shared_file
from kernel_suite import act, one_op_graph
from test_registry import CASES

import tinyaot
import tinyaot.ref
from tinyaot.backend import plan
from tinyaot.codegen import generate_c
from tinyaot.codegen.emit_conv import PATCH16_TAPS, SHORT_ROW
from tinyaot.codegen.kernel_header import KERNELS_HEADER, kernel_header
from tinyaot.codegen.params import HOST_ONLY, ParamsMismatch, constant_bytes, emit_params, struct_name
from tinyaot.ir import QParams, Tensor
from tinyaot.ref.concat_s8 import IDENTITY

HEADER = kernel_header()
LIBRARY = resources.files("tinyaot").joinpath("c")
INCLUDE = str(LIBRARY.joinpath("include"))


def _params_classes() -> dict[str, type]:
    """Every frozen *Params dataclass defined in tinyaot/ref, by name."""
    found = {}
    for info in pkgutil.iter_modules(tinyaot.ref.__path__):
        module = importlib.import_module(f"tinyaot.ref.{info.name}")
        for name, obj in vars(module).items():
            if name.endswith("Params") and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__:
                found[name] = obj
    return found


PARAMS = _params_classes()


def test_every_params_dataclass_has_its_struct_and_every_struct_its_dataclass():
    structs = {n for n in HEADER.structs if n.endswith("_params")}
    assert {struct_name(cls) for cls in PARAMS.values()} == structs
    assert len(PARAMS) >= 16 and set(HOST_ONLY) <= set(PARAMS)


def _c_kind(annotation: str) -> str:
    """What a dataclass field becomes in C: a scalar, an array in flash (pointer), a 4-vector or a nested struct."""
    if annotation in ("int", "bool"):
        return "int32_t"
    if annotation == "np.ndarray":
        return "pointer"
    if annotation.startswith("tuple[int"):  # tuple[int, ...] is a 4-vector; a longer one spells its ints
        return f"int32_t[{max(4, annotation.count('int'))}]"
    return f"struct {struct_name(PARAMS[annotation])}" if annotation in PARAMS else f"host only ({annotation})"


def _kind(f) -> str:
    if f.pointer:
        return "pointer"
    if f.nested:
        return f"struct {f.ctype}"
    return f"{f.ctype}[{f.length}]" if f.length else f.ctype


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_struct_members_are_the_dataclass_fields(name):
    """Same names, matching types; a field the C does not get is in HOST_ONLY with its reason."""
    cls = PARAMS[name]
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    host_only = HOST_ONLY.get(name, {})
    assert set(host_only) <= set(fields), f"HOST_ONLY names fields {name} does not have"
    members = {f.name: _kind(f) for f in HEADER.fields(struct_name(cls))}
    want = {n: _c_kind(t) for n, t in fields.items() if n not in host_only}
    assert members == want, f"{KERNELS_HEADER}'s {struct_name(cls)} differs from ref's {name}"


def test_every_kernel_takes_its_params_struct():
    """Each tinyaot_* kernel declared in the header takes exactly one `const tinyaot_<op>_params *`."""
    text = re.sub(r"/\*.*?\*/", " ", LIBRARY.joinpath("include", KERNELS_HEADER).read_text(), flags=re.S)
    kernels = re.findall(r"void (tinyaot_\w+)\(([^)]*)\);", text)
    assert len(kernels) >= 24
    for fn, args in kernels:
        params = re.findall(r"const (tinyaot_\w+_params) \*", args)
        assert len(params) == 1 and params[0] in HEADER.structs, f"{fn}({args})"
        scalars = re.findall(r"(?<![\w*])int32_t (\w+)", args)
        assert set(scalars) <= {"ring_pixels", "oy", "ox"}, f"{fn} takes numbers beside its params: {scalars}"


@pytest.mark.parametrize("op", sorted(CASES))
def test_every_emitter_passes_one_params_struct_in_flash(op):
    """One `static const tinyaot_<op>_params <layer>_params` per call, passed by address, no numbers beside it."""
    g = CASES[op]()
    src = generate_c(g, plan(g), "m").files["m.c"]
    structs = re.findall(r"^static const (tinyaot_\w+_params) (\w+) = \{", src, flags=re.M)
    calls = re.findall(r"^\s+(tinyaot_\w+)\(([^;]*)\);", src, flags=re.M)
    assert len(structs) == len(calls) == 1, (structs, calls)
    (_, name), (_, args) = structs[0], calls[0]
    assert f"&{name}" in args and not re.search(r"\b\d+\b", args), args  # buffers and the params only


# ---- the emit helper checks each value against its member --------------------------------------------------
@dataclass(frozen=True)
class LutParams:  # the name picks tinyaot_lut_params; the values are what each test breaks
    function: str
    size: object
    table: object


def test_emit_params_names_every_member_and_points_to_its_arrays():
    text = emit_params(LutParams("tanh", 8, np.arange(256, dtype=np.int16).astype(np.int8)), "m_t",
                       notes={"table": "tanh"})
    assert "/* tanh */\nstatic const int8_t m_t_table[256] = {" in text
    assert text.endswith("static const tinyaot_lut_params m_t_params = {\n"
                         "    .size = 8,\n"
                         "    .table = m_t_table,\n"
                         "};\n")


@pytest.mark.parametrize("size,table,words", [
    (8, np.zeros(256, np.int32), "points to int8_t, got a int32 array"),
    (2**31, np.zeros(256, np.int8), "is an int32_t, got 2147483648"),
    (8, None, "points to int8_t, got a NoneType"),
])
def test_emit_params_refuses_values_that_do_not_fit(size, table, words):
    with pytest.raises(ParamsMismatch, match=re.escape(words)):
        emit_params(LutParams("tanh", size, table), "m_t")


def test_emit_params_refuses_a_member_the_dataclass_lacks():
    @dataclass(frozen=True)
    class SoftmaxParams:
        outer: int
        depth: int

    with pytest.raises(ParamsMismatch, match="tinyaot_softmax_params.input_multiplier has no field"):
        emit_params(SoftmaxParams(1, 10), "m_s")


# ---- thresholds defined once -----------------------------------------------------------------------------------
def test_thresholds_are_defined_once_in_the_headers():
    """The compiler's choice of the patch kernel reads the limits the C sizes its buffers with; the identity
    requantization the kernels test for is the reference's."""
    assert PATCH16_TAPS == HEADER.define("TINYAOT_CONV_PATCH16_TAPS")
    assert SHORT_ROW == HEADER.define("TINYAOT_CONV_SHORT_ROW")
    assert IDENTITY == (HEADER.define("TINYAOT_IDENTITY_MULTIPLIER"), HEADER.define("TINYAOT_IDENTITY_SHIFT"))
    for kernel in LIBRARY.joinpath("kernels").iterdir():  # no second copy in a kernel
        code = kernel.read_text()
        assert "== (1 << 30)" not in code and not re.search(r"#define \w*(PATCH16|SHORT_ROW)", code), kernel.name


# ---- constant sizes: measured, and equal to the compiled .rodata -----------------------------------------------
def _broadcast_mul_with_a_constant():
    c = Tensor("c", (1, 1, 3), "int8", data=np.array([[[3, -7, 9]]], np.int8), qparams=QParams.per_tensor(0.02, 0))
    return one_op_graph("mul", [act("a", (1, 4, 3), 0.05, -3), c], act("y", (1, 4, 3), 0.01, 2), {})


def _models() -> dict[str, dict[str, str]]:
    """Generated sources covering every params struct: one graph per kernel op, a broadcast mul with a constant
    operand, and KWS (rings, the pointwise and patch convs)."""
    graphs = {op: make() for op, make in CASES.items()} | {"mul_const": _broadcast_mul_with_a_constant()}
    out = {name: generate_c(g, plan(g), name).files for name, g in graphs.items()}
    kws = tinyaot.compile(str(shared_file("models/mlperf_tiny/kws_ref_model.tflite")), name="kws")
    return out | {"kws": kws.c_sources.files}


def _rodata(gcc: list[str], files: dict[str, str], name: str, tmp_path) -> int:
    from elftools.elf.elffile import ELFFile

    d = tmp_path / name
    d.mkdir()
    for fname, text in files.items():
        (d / fname).write_text(text)
    obj = d / f"{name}.o"
    subprocess.run([*gcc, "-O2", "-std=c99", "-fdata-sections", f"-I{d}", "-c", str(d / f"{name}.c"), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    with open(obj, "rb") as f:  # .rodata.cst* / .str*: the compiler's own literal pools (x86 vector constants)
        return sum(s.data_size for s in ELFFile(f).iter_sections()
                   if s.name.startswith(".rodata") and not re.fullmatch(r"\.rodata\.(cst\d+|str\d+\.\d+)", s.name))


@pytest.mark.arm
def test_constant_bytes_equal_the_rodata_on_cortex_m33(tmp_path):
    gcc = [shutil.which("arm-none-eabi-gcc"), "-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"]
    for name, files in _models().items():
        measured = constant_bytes(files[f"{name}.c"])
        assert measured == _rodata(gcc, files, name, tmp_path), name


@pytest.mark.host
def test_constant_bytes_equal_the_rodata_on_the_host(tmp_path):
    """With 8-byte pointers (x86-64, non-PIC so that pointer tables stay in .rodata): the layout rules hold there
    too."""
    for name, files in _models().items():
        assert constant_bytes(files[f"{name}.c"], pointer_bytes=8) == _rodata(["gcc", "-fno-pic"], files, name,
                                                                             tmp_path), name


def _layout_check(sizes: dict[str, int]) -> str:
    """C that compiles only if sizeof(each struct) is the size given (C99 has no static_assert)."""
    lines = ['#include "tinyaot_kernels.h"']
    lines += [f"typedef char size_of_{n}[(sizeof({n}) == {s}) ? 1 : -1];" for n, s in sizes.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.arm
def test_struct_sizes_are_the_compilers(tmp_path):
    for gcc, pointer in (([shutil.which("gcc")], 8), ([shutil.which("arm-none-eabi-gcc"), "-mcpu=cortex-m33",
                                                       "-mthumb"], 4)):
        check = tmp_path / f"layout{pointer}.c"
        check.write_text(_layout_check({n: HEADER.size(n, pointer) for n in HEADER.structs}))
        proc = subprocess.run([*gcc, "-std=c99", "-pedantic", "-Wall", "-Werror", "-Wno-unused-local-typedefs",
                               f"-I{INCLUDE}", "-fsyntax-only", str(check)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
