"""The driver holds every pass to its contract: it makes what it declares from what earlier passes made, leaves the
graphs it was given as they were, and leaves a graph that keeps the IR's rules; and it times each pass."""
from __future__ import annotations

import numpy as np
import pytest

from tinyaot.driver import Pass, Unit, run_passes
from tinyaot.errors import InternalCompilerError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.verify import IRError
from tinyaot.options import CompileOptions
from tinyaot.passes.fold_affine import fold_affine_chains
from tinyaot.passes.fuse_activations import fuse_activations
from tinyaot.pipeline import FLOAT_TFLITE, INT8_TFLITE, PT2E, PYTORCH, STREAM


def _graph() -> Graph:
    """x -> linear -> relu -> y, float."""
    w = Tensor("w", (4, 4), "float32", data=np.eye(4, dtype=np.float32))
    b = Tensor("b", (4,), "float32", data=np.zeros(4, dtype=np.float32))
    tensors = {t.name: t for t in (Tensor("x", (1, 4), "float32"), w, b, Tensor("h", (1, 4), "float32"),
                                   Tensor("y", (1, 4), "float32"))}
    nodes = [Node("fully_connected", "fc", ["x", "w", "b"], ["h"]), Node("relu", "relu", ["h"], ["y"],
                                                                         {"clamp": (0.0, float("inf"))})]
    return Graph(tensors, nodes, ["x"], ["y"])


def _unit() -> Unit:
    return Unit("t", CompileOptions(), graph=_graph())


def _same(u: Unit) -> dict:
    return {"graph": u.graph}


def test_a_pass_that_edits_its_input_is_caught():
    def relinks(u):
        u.graph.nodes[1].inputs = ["x"]
        return {"graph": u.graph}

    def clamps(u):  # what Node.set_attrs used to do
        u.graph.nodes[0].attrs = u.graph.nodes[0].attrs.replace(clamp=(0.0, 6.0))
        return {"graph": u.graph}

    def new_data(u):
        u.graph.tensor("w").data = u.graph.tensor("w").data * 2
        return {"graph": u.graph}

    for run in (relinks, clamps, new_data):
        with pytest.raises(InternalCompilerError, match=f"pass {run.__name__} edited a graph it was given"):
            run_passes([Pass(run.__name__, run)], _unit())


def test_the_float_passes_leave_their_input_as_it_was():
    g = _graph()
    fused = fuse_activations(g)
    assert [n.op for n in fused.nodes] == ["fully_connected"] and fused.nodes[0].attrs["clamp"] == (0.0, float("inf"))
    assert [n.op for n in g.nodes] == ["fully_connected", "relu"] and g.nodes[0].attrs.get("clamp") is None
    unit, _ = run_passes([Pass("fuse_activations", lambda u: {"graph": fuse_activations(u.graph)}, ir="float"),
                          Pass("fold_affine_chains", lambda u: {"graph": fold_affine_chains(u.graph)}, ir="float")],
                         _unit())
    assert [n.op for n in unit.graph.nodes] == ["fully_connected"]


def test_a_pass_makes_what_it_declares_from_what_was_made():
    with pytest.raises(InternalCompilerError, match=r"pass sneaky made \['graph', 'plan'\], not what it declares"):
        run_passes([Pass("sneaky", lambda u: {"graph": u.graph, "plan": None})], _unit())
    with pytest.raises(InternalCompilerError, match="pass generate needs plan, which no pass before it made"):
        run_passes([Pass("generate", _same, needs=("graph", "plan"))], _unit())
    with pytest.raises(InternalCompilerError, match="names fields a Unit does not have"):
        Pass("typo", _same, produces=("grpah",))


def test_the_ir_is_verified_after_each_pass():
    def breaks(u):
        g = u.graph.copy()
        g.nodes.reverse()  # relu now reads h before the linear writes it
        return {"graph": g}

    with pytest.raises(IRError, match="after the pass breaks, the graph breaks the IR's rules"):
        run_passes([Pass("fine", _same, ir="float"), Pass("breaks", breaks, ir="float")], _unit())
    run_passes([Pass("unchecked", breaks)], _unit())  # ir=None: not verified (an import's raw graph, say)


def test_each_pass_is_timed_in_order_and_skipped_ones_are_not():
    passes = [Pass("a", _same), Pass("skipped", _same, when=lambda u: False), Pass("b", _same)]
    _, times = run_passes(passes, _unit())
    assert [t.name for t in times] == ["a", "b"] and all(t.seconds >= 0 for t in times)


@pytest.mark.parametrize("table", [PYTORCH, STREAM, FLOAT_TFLITE, INT8_TFLITE, PT2E])
def test_every_table_makes_what_each_pass_needs_before_it(table):
    """Statically: every field a pass needs is made by an earlier pass (or is an input of the compile)."""
    made = {"model", "example", "calibration_input", "data", "float_model"}
    for p in table:
        assert set(p.needs) <= made, (p.name, set(p.needs) - made)
        made |= set(p.produces)
    assert {"graph", "plan", "float_plan", "sources", "budget"} <= made
