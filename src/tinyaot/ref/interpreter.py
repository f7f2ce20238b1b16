"""The reference interpreter: runs an int8 graph inside one byte array at the planned offsets.

Because every tensor lives at its planned arena offset, exactly as in the generated C, a planning
mistake (two live tensors sharing bytes) changes the answer here too. It reads the plan it is given (a
plan.MemoryPlan: offsets, overlaps, the kernel record of each node) and imports nothing of the planner: ref/ ranks
before plan/, which asks its kernels what they need.
"""
from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

from tinyaot.ir import Graph, Node
from tinyaot.ir.ops import OPS, kernel_ref, ops_where, state_family
from tinyaot.ref.patch import run_stage
from tinyaot.ref.state import STATE_FAMILIES


def _kernels(variant: str) -> dict[str, tuple[Callable, Callable]]:
    """op -> (prepare, kernel) from the registry: module ref/<ref>.py with prepare() and <ref>(), for the spec's
    `variant` ("ref": int8, "s16": the 16x8 one)."""
    out = {}
    for name, spec in OPS.items():
        ref = getattr(spec, variant)
        if ref is not None:
            module = importlib.import_module(f"tinyaot.ref.{ref}")
            out[name] = (module.prepare, getattr(module, ref))
    return out


# op -> (prepare, kernel); view ops need neither: their bytes are already in place.
KERNELS: dict[str, tuple[Callable, Callable]] = _kernels("ref")
S16_KERNELS: dict[str, tuple[Callable, Callable]] = _kernels("s16")  # int16 activations (ir.ops.kernel_ref)
VIEW_OPS = ops_where(view=True)


def kernel_for(node: Node, g: Graph) -> tuple[Callable, Callable]:
    """(prepare, kernel) that run this node: its op's int8 kernel, or the 16x8 one for int16 activations."""
    ref = kernel_ref(node, g)
    return S16_KERNELS[node.op] if ref is not None and ref == OPS[node.op].s16 else KERNELS[node.op]


def prepare_all(g: Graph) -> dict:
    """Node name -> its kernel's Params, computed once at compile time (views need none)."""
    return {n.name: kernel_for(n, g)[0](n, g) for n in g.nodes if n.op in KERNELS}


def run_unplanned(g: Graph, params: dict, x: np.ndarray, replace: dict | None = None) -> dict[str, np.ndarray]:
    """One sample, node by node, every tensor in its own array (no arena, no ring kernels): tensor -> value.

    The same bits as the planned run, at a fraction of the in-place kernels' cost, for reports that look at every
    layer. A tensor in `replace` is read from there by the nodes that consume it (a kernel fed other inputs).
    """
    replace = replace or {}
    values = {}
    for name, v in zip(g.inputs, g.per_input(x)):
        t_in = g.tensor(name)
        values[name] = np.asarray(v).astype(t_in.dtype).reshape(t_in.shape)
    for node in g.nodes:
        out = g.tensor(node.outputs[0])
        args = [replace.get(i, values[i]) for i in node.inputs if not g.tensor(i).is_const]
        if node.op in VIEW_OPS:
            y = args[0]
        elif state_family(node) is not None:  # a stateful kernel here runs as the first invoke after a reset
            y = kernel_for(node, g)[1](*args, params[node.name], initial_state(node, g))
        else:
            y = kernel_for(node, g)[1](*args, params[node.name])
        values[out.name] = np.asarray(y).astype(out.dtype).reshape(out.shape)
    return values


class Interpreter:
    def __init__(self, g: Graph, plan):
        self.graph = g
        self.plan = plan
        self.arena = np.zeros(plan.arena_bytes, dtype=np.uint8)
        self.params = prepare_all(g)
        # the state region (plan/state.py): apart from the arena, kept from one invoke to the next
        self.state = np.zeros(getattr(plan, "state_bytes", 0), dtype=np.uint8)
        self.reset()
        # step -> units: nodes whose output the plan put over a dying input are run in the C's write order
        self.streamed: dict[int, int] = {}
        for ov in getattr(plan, "overlaps", ()):
            if plan.shares_bytes(ov):
                self.streamed[ov.step] = max(self.streamed.get(ov.step, 1), ov.units)

    def reset(self) -> None:
        """Every state slot back to its initial value, as <name>_reset() does in the C."""
        for slot in getattr(self.plan, "state", ()):
            self.state[slot.offset : slot.offset + slot.nbytes] = slot.fill & 0xFF

    def state_view(self, node: str) -> np.ndarray:
        slot = self.plan.state_of(node)
        return self.state[slot.offset : slot.offset + slot.nbytes].view(np.int8)

    def view(self, tensor: str) -> np.ndarray:
        t = self.graph.tensor(tensor)
        off = self.plan.offset_of(tensor)
        return self.arena[off : off + t.nbytes].view(t.dtype).reshape(t.shape)

    def invoke(self, x: np.ndarray, trace: Callable[[Node, np.ndarray], None] | None = None) -> np.ndarray:
        g = self.graph
        for name, v in zip(g.inputs, g.per_input(x)):
            t_in = g.tensor(name)
            self.view(name)[...] = np.asarray(v).astype(t_in.dtype).reshape(t_in.shape)
        in_place = getattr(self.plan, "reads_in_place", lambda node: False)
        for step, node in enumerate(g.nodes):
            stage = self.plan.stage_at(step) if getattr(self.plan, "patches", ()) else None
            if stage is not None:  # the chain runs band by band at its start
                if step == stage.start:
                    self._run_stage(stage)
                if trace is not None and step == stage.end:
                    trace(node, self.view(node.outputs[0]).copy())
                continue
            if node.op not in VIEW_OPS and not in_place(node):  # a view's bytes (a slice's read in place) are there
                self._execute(step, node)
            if trace is not None:
                trace(node, self.view(node.outputs[0]).copy())
        outs = [self.view(name).copy() for name in g.outputs]
        return outs[0] if len(outs) == 1 else outs

    def _run_stage(self, stage) -> None:
        """A patch stage (plan/patch.py): its scratch overwritten first, so a misplaced one shows."""
        g = self.graph
        off = self.plan.offsets[stage.scratch]
        self.arena[off : off + stage.scratch_bytes] = 0xA5
        nodes = g.nodes[stage.start : stage.end + 1]
        shapes = [(g.tensor(n.inputs[0]).shape, g.tensor(n.outputs[0]).shape) for n in nodes]
        run_stage(self.arena, stage, self.plan.offset_of(stage.input), self.plan.offset_of(stage.output), off,
                  shapes, [kernel_for(n, g)[1] for n in nodes], [self.params[n.name] for n in nodes])

    def _execute(self, step: int, node: Node) -> None:
        """Run one node. An output placed over a dying input is written unit by unit (plan/overlap.py), each
        unit recomputed from the arena as the C finds it then, so an unsafe overlap gives a wrong answer."""
        g = self.graph
        choice = self.plan.kernel_of(node.name) if hasattr(self.plan, "kernel_of") else None
        if choice is not None and choice.work:  # its scratch is overwritten at this step: a misplaced one shows
            off = self.plan.offsets[choice.work]
            self.arena[off : off + choice.work_bytes] = 0xA5
        for extra in node.outputs[1:]:  # a recurrent kernel's working memory (the spec's work_rows): the same
            self.view(extra).view(np.uint8)[...] = 0xA5  # bytes the C overwrites, so a misplaced one shows here too
        variant = OPS[node.op].variant(choice.variant) if choice is not None else None
        if variant is not None and variant.runs_in_arena:  # its own write order (a ring; int8 kernels only)
            run = importlib.import_module(f"tinyaot.ref.{variant.home}").run
            run(self.arena, self.plan.offset_of, node, choice, KERNELS[node.op][1], self.params[node.name])
            return
        out = self.view(node.outputs[0])
        if state_family(node) is not None:  # reads and moves on its state slot: runs once, whole
            args = [self.view(i) for i in node.inputs if not g.tensor(i).is_const]
            y = kernel_for(node, g)[1](*args, self.params[node.name], self.state_view(node.name))
            out[...] = np.asarray(y, dtype=out.dtype).reshape(out.shape)
            return
        units = self.streamed.get(step, 1)
        flat = out.reshape(-1).view(np.uint8)
        for u in range(units):
            args = [self.view(i) for i in node.inputs if not g.tensor(i).is_const]
            y = kernel_for(node, g)[1](*args, self.params[node.name])
            y_bytes = np.ascontiguousarray(y, dtype=out.dtype).reshape(-1).view(np.uint8)
            lo, hi = u * flat.size // units, (u + 1) * flat.size // units
            flat[lo:hi] = y_bytes[lo:hi]

    def run(self, xs):
        """Run a batch of samples one at a time (the C runs one sample per invoke). Several inputs: a list with
        one batch per input; several outputs: a list with one batch per output."""
        g = self.graph
        batches = g.per_input(xs)
        results = [self.invoke([b[i] for b in batches] if len(batches) > 1 else batches[0][i])
                   for i in range(len(batches[0]))]
        if len(g.outputs) == 1:
            return np.stack(results)
        return [np.stack([r[k] for r in results]) for k in range(len(g.outputs))]


def initial_state(node: Node, g: Graph) -> np.ndarray:
    """A stateful node's slot as a reset leaves it."""
    nbytes, fill = STATE_FAMILIES[state_family(node)](node, g)
    return np.full(nbytes, fill, dtype=np.int8)

