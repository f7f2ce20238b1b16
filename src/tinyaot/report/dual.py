"""The two-core profile (compile(cores=2), `tinyaot profile --cores 2`): per layer, the one-core instructions and
each core's on QEMU mps2-an521 (targets/m33/an521.py), the critical path, the speed-up, and what the second core
costs in RAM.

The critical path is the sum over layers of the slower core's part plus the barrier at each split layer (the
least core 0 spent in the join in this run: the barrier with core 1 already done, an upper bound), plus what the
one-core run executes outside the layers (invoke's own instructions), which core 0 runs alone. The one-core
figures are the same int8 graph planned and generated for one core (its own C, its own M33 run), and the
outputs of the two runs must be the same bytes.
"""
from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from rich.table import Table

from tinyaot.backend import plan_and_generate
from tinyaot.plan.cores import plan_cores
from tinyaot.report.render import render_text
from tinyaot.targets.base import ModelSources
from tinyaot.targets.engines import raw_rows
from tinyaot.targets.m33 import M33Target
from tinyaot.targets.m33.an521 import run_model_two_cores


@dataclass(frozen=True)
class LayerCores:
    step: int  # in the two-core model's invoke
    layer: str
    op: str
    single: int  # the one-core model's instructions for this layer
    core0: int  # core 0's (a split layer: its part, the post included)
    core1: int  # core 1's part (0: core 0 alone)
    critical: int  # the slower core, plus the barrier at a split layer
    how: str  # the split (rows / channels and the cut) or why the layer stays on core 0


@dataclass(frozen=True)
class DualProfileReport:
    model: str
    single_core_instructions: int
    critical_path_instructions: int
    core_instructions: tuple[int, int]  # each core's own, core 0's waits at the barriers included
    barrier_instructions: int
    layers: tuple[LayerCores, ...]
    outputs_equal: bool  # the two-core run's output bytes == the one-core run's
    arena_bytes: tuple[int, int]  # one core, two cores
    core1_work_bytes: int  # core 1's scratch for the split kernels (in the two-core arena, placed by the plan)
    core1_stack_bytes: int  # the stack region the an521 harness gives core 1

    @property
    def speedup(self) -> float:
        return self.single_core_instructions / max(self.critical_path_instructions, 1)

    @property
    def ratio(self) -> float:
        return self.critical_path_instructions / max(self.single_core_instructions, 1)

    @property
    def second_core_ram_bytes(self) -> int:
        """The arena's growth: the split layers placed apart from their inputs, core 1's work buffers. Its stack
        is the port's (core1_stack_bytes here)."""
        return self.arena_bytes[1] - self.arena_bytes[0]

    def to_dict(self) -> dict:
        return {"model": self.model, "single_core_instructions": self.single_core_instructions,
                "critical_path_instructions": self.critical_path_instructions, "speedup": self.speedup,
                "critical_path_ratio": self.ratio, "core_instructions": list(self.core_instructions),
                "barrier_instructions": self.barrier_instructions, "outputs_equal": self.outputs_equal,
                "arena_bytes": {"one_core": self.arena_bytes[0], "two_cores": self.arena_bytes[1]},
                "core1_work_bytes": self.core1_work_bytes, "core1_stack_bytes": self.core1_stack_bytes,
                "second_core_ram_bytes": self.second_core_ram_bytes,
                "layers": [asdict(row) for row in self.layers]}

    def __rich_console__(self, console, options):
        t = Table(title=f"Two Cortex-M33 cores (QEMU mps2-an521), '{self.model}': critical path "
                  f"{self.critical_path_instructions:,} of {self.single_core_instructions:,} one-core instructions "
                  f"({self.ratio:.3f}x, speed-up {self.speedup:.2f}x)")
        for col in ("step", "layer", "one core", "core 0", "core 1", "critical", "split"):
            names = col in ("layer", "split")
            t.add_column(col, justify="left" if names else "right", overflow="fold" if names else "ellipsis",
                         ratio=3 if col == "split" else None)
        for r in self.layers:
            t.add_row(str(r.step), r.layer, f"{r.single:,}", f"{r.core0:,}", f"{r.core1:,}" if r.core1 else "",
                      f"{r.critical:,}", r.how)
        yield t
        yield (f"cores: {self.core_instructions[0]:,} + {self.core_instructions[1]:,} instructions; barrier "
               f"{self.barrier_instructions} instructions per split layer; outputs "
               f"{'equal to' if self.outputs_equal else 'DIFFERENT from'} the one-core run's")
        yield (f"second core's RAM: {self.second_core_ram_bytes:,} B of arena ({self.arena_bytes[0]:,} -> "
               f"{self.arena_bytes[1]:,} B, core 1's work buffers up to {self.core1_work_bytes:,} B of it) plus its "
               f"stack ({self.core1_stack_bytes:,} B in the an521 harness)")

    def __str__(self) -> str:
        return render_text(self)


def one_core_twin(cm):
    """The same int8 graph planned and generated for one core (a model of cm's own class)."""
    return type(cm)(plan_and_generate(cm.name, replace(cm.result.options, cores=1), cm.graph))


def dual_profile(cm, x=None, one=None) -> DualProfileReport:
    """Profile a cores=2 model on both cores against its one-core twin (`one`, made from the same graph when not
    given); x: one input as profile() takes it (a list of them for several; default: zeros)."""
    one = one_core_twin(cm) if one is None else one
    if x is None:
        flat = np.zeros((1, sum(cm.input_sizes)), np.int8)
    elif isinstance(x, (list, tuple)):  # several inputs: their bytes back to back, as the harness takes them
        flat = raw_rows([np.asarray(v).reshape(1, -1) for v in x])
    else:  # one input in its own dtype: its bytes
        flat = raw_rows(np.asarray(x, dtype=cm.input_dtype).reshape(1, -1))
    flat = np.asarray(flat, dtype=np.int8).reshape(1, -1)
    out_bytes = sum(cm.output_sizes)
    with tempfile.TemporaryDirectory(prefix="tinyaot-dual-") as tmp:
        one.c_sources.write(Path(tmp) / "one")
        sources = replace(ModelSources.in_directory(Path(tmp) / "one", one.name, flat.shape[1], out_bytes),
                          input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes))
        plain = M33Target(build_dir=Path(tmp) / "plain").run(M33Target(build_dir=Path(tmp) / "plain").build(sources),
                                                               flat)
        marked_t = M33Target(build_dir=Path(tmp) / "marked", profile=True)
        marked = marked_t.run(marked_t.build(sources), flat)
        cm.c_sources.write(Path(tmp) / "two")
        run = run_model_two_cores(Path(tmp) / "two", cm.name, flat, out_bytes, Path(tmp) / "two" / "build",
                                  input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes))
    single_by_layer = {one.graph.nodes[s].name: n for s, n in (marked.step_instructions or {}).items()}
    outside = plain.instructions - sum(single_by_layer.values())
    cplan = plan_cores(cm.graph, cm.plan, 2)
    kept = dict(cplan.kept)
    rows = []
    for s in run.steps:
        node = cm.graph.nodes[s.step]
        split = cplan.split_of(node.name)
        critical = s.core0 if s.job is None else max(s.core0, s.core1) + run.join
        rows.append(LayerCores(s.step, node.name, node.op, single_by_layer.get(node.name, 0), s.core0, s.core1,
                               critical, split.reason if split is not None else kept.get(node.name, "")))
    work = max((c.work_bytes for c in cm.plan.kernels if cplan.split_of(c.node) is not None), default=0)
    return DualProfileReport(cm.name, plain.instructions, run.critical_path + max(outside, 0), run.core_instructions,
                             run.join, tuple(rows), bool(np.array_equal(run.outputs.reshape(-1),
                                                                        plain.outputs.reshape(-1))),
                             (one.plan.arena_bytes, cm.plan.arena_bytes), work, run.core1_stack_bytes)
