"""A compile result is a value: CompiledModel is a read-only view of a frozen CompileResult, and no module of tinyaot
writes an attribute into a CompiledModel after the pipeline built it."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import make_mlp

import tinyaot
from tinyaot.model import CompiledModel
from tinyaot.result import CompileResult

SRC = Path(tinyaot.__file__).parent
# Every name a CompiledModel answers to, and what it keeps privately: an assignment to one of these outside
# model.py is (almost certainly) a write into a CompiledModel.
MEMBERS = frozenset({n for n in dir(CompiledModel) if not n.startswith("__")}
                    | {f.name for f in dataclasses.fields(CompileResult)} | {"_result", "_memo"})


@pytest.fixture(scope="module")
def cm():
    model = make_mlp([8, 16, 4], relu=True, seed=0)
    cal = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    return tinyaot.compile(model, torch.zeros(1, 8), calibration=cal)


@pytest.mark.parametrize("attr", ["findings", "budget", "int16_layers", "stream_info", "something_new", "_memo"])
def test_setting_an_attribute_of_a_compiled_model_raises(cm, attr):
    with pytest.raises(AttributeError, match=f"CompiledModel is read-only: cannot set '{attr}'"):
        setattr(cm, attr, None)
    with pytest.raises(AttributeError, match="read-only"):
        delattr(cm, attr)


def test_the_result_is_frozen_and_the_view_reads_it(cm):
    r = cm.result
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.findings = ()
    assert cm.graph is r.graph and cm.plan is r.plan and cm.findings == list(r.findings)
    assert cm.c_sources is r.sources and cm.arena_bytes == r.plan.arena_bytes
    assert cm.budget is r.budget and cm.budget is not None
    assert [t.name for t in cm.timings][:2] == ["import_torch", "fold_batch_norm"] and cm.timings[-1].name == \
        "check_budget" and all(t.seconds >= 0 for t in cm.timings)
    cm.findings.append("not kept")  # a fresh list each time: the result keeps a tuple
    assert cm.findings == list(r.findings)
    renamed = CompiledModel(dataclasses.replace(r, name="other"))  # another value, not an edit of this one
    assert renamed.name == "other" and cm.name == "model"


def _targets(t):
    if isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from _targets(e)
    elif isinstance(t, ast.Starred):
        yield from _targets(t.value)
    else:
        yield t


def attribute_writes(source: str) -> list[tuple[int, str]]:
    """(line, what) of every write that names a CompiledModel member on an object other than `self`: `x.attr = `,
    `x.attr += `, `setattr(x, "attr", ...)`, `object.__setattr__(x, "attr", ...)`, `x.__dict__["attr"] = `."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in (a for target in targets for a in _targets(target)):
            if isinstance(t, ast.Attribute) and t.attr in MEMBERS \
                    and not (isinstance(t.value, ast.Name) and t.value.id == "self"):
                found.append((node.lineno, ast.unparse(t)))
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and t.value.attr == "__dict__" \
                    and isinstance(t.slice, ast.Constant) and t.slice.value in MEMBERS:
                found.append((node.lineno, ast.unparse(t)))
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("setattr", "object.__setattr__") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in MEMBERS:
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_scan_finds_each_kind_of_write():
    """The scan below can fail: each way of writing into a CompiledModel is found, and self.x = ... is not."""
    source = """
cm.findings = []
cm.findings += [1]
cm.budget: object = None
a, cm.window = 1, 2
setattr(cm, "stream_info", 3)
object.__setattr__(cm, "_memo", 4)
cm.__dict__["check"] = 5
self.cm.int16_layers = {}
self.findings = []
cm.unrelated_attribute = 6
"""
    assert [line for line, _ in attribute_writes(source)] == [2, 3, 4, 5, 6, 7, 8, 9]


def test_nothing_outside_model_py_writes_into_a_compiled_model():
    writes = [f"{path.relative_to(SRC)}:{line}: {what}" for path in sorted(SRC.rglob("*.py"))
              if path != SRC / "model.py" for line, what in attribute_writes(path.read_text())]
    assert writes == []


def test_model_py_does_not_import_the_pipeline():
    """pipeline.py imports model.py; a streamed model's window is planned by backend.py, which knows neither."""
    def imported(path: Path) -> set[str]:
        return {n.module for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)} | \
            {a.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import) for a in n.names}

    assert "tinyaot.pipeline" not in imported(SRC / "model.py")
    assert not {"tinyaot.pipeline", "tinyaot.model"} & imported(SRC / "backend.py")


def test_compile_takes_every_compile_option_as_a_keyword_with_its_default():
    """tinyaot.compile spells its options out (no **options); CompileOptions documents them once: the two agree."""
    import inspect

    from tinyaot.options import CompileOptions

    params = inspect.signature(tinyaot.compile).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    inputs = ("calibration", "data", "float_model")  # what is compiled and checked, not how
    options = {n: p.default for n, p in params.items() if p.kind is p.KEYWORD_ONLY and n not in inputs}
    assert options == {f.name: f.default for f in dataclasses.fields(CompileOptions)}
    assert [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY][:3] == list(inputs)


def test_compile_options_are_checked_and_normalized():
    from tinyaot.errors import ModelError
    from tinyaot.options import CompileOptions
    from tinyaot.plan.contract import Contract
    from tinyaot.report.budget import PICO2

    o = CompileOptions(name="KWS", int16=["fc1"], preserve_input=1)
    assert (o.name, o.int16, o.target_memory, o.contract) == ("kws", ("fc1",), PICO2, Contract(True, False))
    assert dataclasses.replace(o, optimize="size").name == "kws"  # a replace is checked again, and still holds
    with pytest.raises(ModelError, match="optimize must be one of"):
        CompileOptions(optimize="fast")
    with pytest.raises(ModelError, match=r"no option 'optimise' \(did you mean 'optimize'\?\)"):
        tinyaot.compile(None, optimise="size")
