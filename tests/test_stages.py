"""Stages only look back: no stage imports a later one, and the planning stage leaves its input graph alone."""
from __future__ import annotations

import ast
from pathlib import Path

import tinyaot

SRC = Path(tinyaot.__file__).parent
# The pipeline's stages in order; a package may import its own and earlier ones (top-level modules anything). A
# stage is a package or one module of one ("quantize.fixedpoint"): the kernels' knowledge (ref/) ranks right after
# the IR and the fixed-point arithmetic, so every later stage asks it instead of re-deriving it.
STAGES = [("errors", "diagnostics", "ir"), ("fixedpoint", "quantize.fixedpoint"), ("ref",), ("frontend",), ("passes",),
          ("quantize",), ("plan",), ("codegen",), ("targets",), ("report",)]
RANK = {name: i for i, group in enumerate(STAGES) for name in group}


def stage_of(dotted: str) -> str | None:
    """The stage of a module inside tinyaot ("ref.conv2d_s8" -> "ref"): its longest prefix that is one."""
    parts = dotted.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in RANK), None)


def _imports(path: Path):
    """(line, imported tinyaot stage) for every import in the file, at module level or inside functions."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            other = stage_of(".".join(parts[1:])) if parts[0] == "tinyaot" and len(parts) > 1 else None
            if other is not None:
                yield node.lineno, other


def test_no_stage_imports_a_later_stage():
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        stage = stage_of(".".join(rel.with_suffix("").parts))
        if stage is None:
            continue  # pipeline, model, cli, demo...: they assemble the stages
        wrong += [f"{rel}:{line} imports tinyaot.{other}" for line, other in _imports(path)
                  if RANK[other] > RANK[stage]]
    assert wrong == []


def test_stages_are_ranked_module_by_module():
    """A module ranked apart from its package (quantize.fixedpoint) is judged by its own rank, both ways."""
    assert stage_of("quantize.fixedpoint") == "quantize.fixedpoint" and stage_of("quantize.lower") == "quantize"
    assert stage_of("ref.per_channel") == "ref" and stage_of("pipeline") is None
    assert RANK["ref"] < RANK["frontend"] < RANK["quantize"] < RANK["plan"]


def test_the_planning_stage_does_not_mutate_its_input():
    from conftest import shared_file

    from tinyaot.backend import plan_stage
    from tinyaot.frontend.tflite import from_tflite
    from tinyaot.plan.contract import Contract

    g = from_tflite(shared_file("models/mlperf_tiny/pretrainedResnet_quant.tflite"))  # residual adds to fuse
    before = ([n.name for n in g.nodes], dict(g.tensors), [dict(n.attrs) for n in g.nodes])
    planned, memory, free = plan_stage(g, 4, Contract(keep_input=True))
    assert ([n.name for n in g.nodes], dict(g.tensors), [dict(n.attrs) for n in g.nodes]) == before
    assert "conv2d_add" in {n.op for n in planned.nodes} and "conv2d_add" not in {n.op for n in g.nodes}
    assert memory.keep_input and free < memory.arena_bytes
    assert {t for b in memory.buffers if not b.scratch for t in b.tensors} <= set(planned.tensors)
