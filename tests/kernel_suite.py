"""Many one-op int8 graphs in one C build: each case is a graph generated through codegen, and a wrapper model
`suite` runs them all per sample, so one gcc call (host) or one QEMU run (M33) checks dozens of cases.

Graph inputs beyond the first are written straight into the case's arena at their planned offsets (by the
reference interpreter and by the wrapper alike), so binary ops see independent operands.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from tinyaot.backend import plan
from tinyaot.codegen import generate_c
from tinyaot.ir import Graph, Node, QParams, Tensor
from tinyaot.plan import MemoryPlan
from tinyaot.ref.interpreter import Interpreter


def act(name: str, shape, scale: float, zp: int) -> Tensor:
    """An int8 activation; the scale is rounded to float32 as a .tflite stores it."""
    return Tensor(name, tuple(int(d) for d in shape), "int8", qparams=QParams.per_tensor(float(np.float32(scale)), zp))


def one_op_graph(op: str, inputs: list[Tensor], output: Tensor, attrs: dict | None = None) -> Graph:
    """inputs: activations become graph inputs (in order), constants (data set) stay in flash."""
    g = Graph(tensors={}, nodes=[], inputs=[t.name for t in inputs if not t.is_const], outputs=[output.name],
              layout="NHWC")
    for t in [*inputs, output]:
        if t.name not in g.tensors:
            g.add_tensor(t)
    g.nodes.append(Node(op, f"{op}_0", [t.name for t in inputs], [output.name], dict(attrs or {})))
    return g


@dataclass
class Case:
    name: str  # a C identifier, unique in the suite
    graph: Graph
    samples: list[np.ndarray]  # one int8 array (S, *shape) per graph input
    optimize: str = "memory"  # plan/kernels.py: the plain int8 kernels; "speed" / "size" the pairs kernels
    plan: MemoryPlan = field(init=False)

    def __post_init__(self):
        self.plan = plan(self.graph, optimize=self.optimize)

    @property
    def n_samples(self) -> int:
        return len(self.samples[0])

    def in_bytes(self) -> int:
        return sum(self.graph.tensor(t).nbytes for t in self.graph.inputs)

    def out_bytes(self) -> int:
        return self.graph.tensor(self.graph.outputs[0]).nbytes

    def reference(self) -> np.ndarray:
        """(S, out_bytes) int8 from the NumPy interpreter (one array per input for a graph with several)."""
        interp = Interpreter(self.graph, self.plan)
        several = len(self.graph.inputs) > 1
        return np.stack([interp.invoke([d[s] for d in self.samples] if several else self.samples[0][s]).reshape(-1)
                         for s in range(self.n_samples)])


def pack_inputs(cases: list[Case]) -> np.ndarray:
    """Row s holds sample s of every input of every case, in order."""
    n = cases[0].n_samples
    return np.stack([np.concatenate([d[s].reshape(-1) for c in cases for d in c.samples]) for s in range(n)])


def split_outputs(cases: list[Case], out: np.ndarray) -> list[np.ndarray]:
    parts, pos = [], 0
    for c in cases:
        parts.append(out[:, pos : pos + c.out_bytes()])
        pos += c.out_bytes()
    return parts


def suite_sources(cases: list[Case]) -> dict[str, str]:
    """Every case's generated C plus suite.h/suite.c, a model-shaped wrapper (init/input/invoke/output).

The cases' model .c files are renamed .inc and included by suite.c, so they build as one translation unit
(the generated symbols and macros all carry the case's prefix, so they cannot clash)."""
    files: dict[str, str] = {}
    for c in cases:
        files.update(generate_c(c.graph, c.plan, c.name).files)
        # One translation unit for all cases (suite.c includes them): one compiler run instead of dozens.
        files[f"{c.name}.inc"] = files.pop(f"{c.name}.c")
    in_size = sum(c.in_bytes() for c in cases)
    out_size = sum(c.out_bytes() for c in cases)
    files["suite.h"] = "\n".join([
        "#ifndef SUITE_H", "#define SUITE_H", "#include <stddef.h>", "#include <stdint.h>",
        "#define SUITE_ARENA_SIZE 1", f"#define SUITE_INPUT_SIZE {in_size}", f"#define SUITE_OUTPUT_SIZE {out_size}",
        "int suite_init(uint8_t *arena, size_t arena_size);", "int8_t *suite_input(void);",
        "int suite_invoke(void);", "const int8_t *suite_output(void);", "#endif", "",
    ])
    body = ["#include <stddef.h>", "#include <stdint.h>", "#include <string.h>", '#include "suite.h"']
    body += [f'#include "{c.name}.inc"' for c in cases]
    body += ["static int8_t suite_in[SUITE_INPUT_SIZE];", "static int8_t suite_out[SUITE_OUTPUT_SIZE];",
             "int8_t *suite_input(void) { return suite_in; }",
             "const int8_t *suite_output(void) { return suite_out; }",
             "int suite_init(uint8_t *arena, size_t arena_size)", "{", "    (void)arena;", "    (void)arena_size;"]
    body += [f"    if ({c.name}_init(NULL, 0) != 0) {{ return -1; }}" for c in cases]
    body += ["    return 0;", "}", "int suite_invoke(void)", "{"]
    ipos = opos = 0
    for c in cases:
        g = c.graph
        for i, name in enumerate(g.inputs):  # a graph with several inputs takes each at its index
            nbytes = g.tensor(name).nbytes
            at = f"{c.name}_input({i}u)" if len(g.inputs) > 1 else f"{c.name}_input()"
            body.append(f"    memcpy({at}, suite_in + {ipos}, {nbytes});")
            ipos += nbytes
        body.append(f"    if ({c.name}_invoke() != 0) {{ return -1; }}")
        body.append(f"    memcpy(suite_out + {opos}, {c.name}_output(), {c.out_bytes()});")
        opos += c.out_bytes()
    body += ["    return 0;", "}", ""]
    files["suite.c"] = "\n".join(body)
    return files


def run_host(cases: list[Case]) -> list[np.ndarray]:
    from tinyaot.targets.host import HostModel, build_shared_library

    files = suite_sources(cases)
    lib = build_shared_library(files, "suite")
    host = HostModel(lib, "suite", sum(c.in_bytes() for c in cases), sum(c.out_bytes() for c in cases), 1)
    host.init(None)
    return split_outputs(cases, host.run(pack_inputs(cases)))


def run_m33_suite(cases: list[Case], directory: Path, dsp: bool = True):
    from tinyaot.targets.m33 import run_m33

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for fname, text in suite_sources(cases).items():
        (directory / fname).write_text(text)
    result = run_m33(directory, "suite", pack_inputs(cases), sum(c.out_bytes() for c in cases), dsp=dsp)
    return split_outputs(cases, result.outputs), result


def mismatches(cases: list[Case], got: list[np.ndarray]) -> list[str]:
    """Names (and first differing sample) of the cases whose bytes differ from the reference."""
    bad = []
    for c, out in zip(cases, got):
        want = c.reference()
        if not np.array_equal(out, want):
            s = int(np.argwhere((out != want).any(axis=1))[0, 0])
            bad.append(f"{c.name} (sample {s}: got {out[s][:8]} want {want[s][:8]})")
    return bad


# ---- calling a kernel directly (ctypes), with the params struct the generated C would hold ------------------------
@cache
def _struct_type(name: str) -> type[ctypes.Structure]:
    from tinyaot.codegen.kernel_header import kernel_header

    def ctype(f):
        if f.pointer:
            return ctypes.c_void_p
        base = _struct_type(f.ctype) if f.nested else {"int32_t": ctypes.c_int32, "int8_t": ctypes.c_int8}[f.ctype]
        return base * f.length if f.length else base

    return type(name, (ctypes.Structure,), {"_fields_": [(f.name, ctype(f)) for f in kernel_header().fields(name)]})


def c_params(p, struct: str | None = None) -> ctypes.Structure:
    """`p` (a ref Params) as its tinyaot_<op>_params (or `struct`), for `lib.tinyaot_<op>(..., ctypes.byref(
    c_params(p)), ...)`; the arrays it points to are kept alive by the returned struct."""
    from tinyaot.codegen.kernel_header import kernel_header
    from tinyaot.codegen.params import struct_name

    name = struct or struct_name(type(p))
    out = _struct_type(name)()
    keep = []
    for f in kernel_header().fields(name):
        v = getattr(p, f.name)
        if f.pointer:
            keep.append(np.ascontiguousarray(v))
            setattr(out, f.name, keep[-1].ctypes.data)
        elif f.nested:
            keep.append(c_params(v, f.ctype))
            setattr(out, f.name, keep[-1])
        elif f.length:
            setattr(out, f.name, (ctypes.c_int32 * f.length)(*(int(x) for x in v)))
        else:
            setattr(out, f.name, int(v))
    out._keep = keep  # the arrays (and nested structs) the pointers refer to
    return out


def fixedpoint_library(directory: Path, c_source: str) -> ctypes.CDLL:
    """A C test body built against tinyaot_fixedpoint.h (warnings as errors), loaded: the requantization tests'
    way to call the header's inline routines from NumPy."""
    import subprocess
    from importlib import resources

    include = resources.files("tinyaot").joinpath("c", "include")
    src, so = directory / "rq.c", directory / "rq.so"
    src.write_text('#include "tinyaot_fixedpoint.h"\n' + c_source)
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{include}",
                    str(src), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))
