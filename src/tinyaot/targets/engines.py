"""The engines CompiledModel.run accepts: one registry, name -> how to run a compiled model there.

Adding an engine is one `register` call here; `ENGINES` (the names, in registration order) and the error for an
unknown name follow from the registry, so no other list of engine names needs to be kept in step.
"""
from __future__ import annotations

import tempfile
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ref.interpreter import Interpreter
from tinyaot.targets import m33  # the module, looked up at call time: tests replace m33.run_m33
from tinyaot.targets.base import ModelSources, RunResult
from tinyaot.targets.host import HostLibrary, HostTarget


@dataclass(frozen=True)
class Engine:
    """A way to run a compiled model: `run(model, batch, arena_bytes)` with the batch in the model's input shape
    and dtype; `emulated` engines measure instructions and stack (CompiledModel keeps the latest as last_m33)."""

    name: str
    description: str
    run: Callable[..., RunResult]
    emulated: bool = False


REGISTRY: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    REGISTRY[engine.name] = engine
    return engine


def engine_named(name: str) -> Engine:
    """The registered engine, or a ModelError naming the choices."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ModelError(f"unknown engine {name!r}; choose one of {', '.join(REGISTRY)}") from None


def raw_rows(batch) -> np.ndarray:
    """One int8 row per inference: the C runners copy raw bytes (uint8 inputs are viewed, not converted). Several
    inputs (a list of batches): each row holds them back to back, in order."""
    if isinstance(batch, list):
        return np.ascontiguousarray(np.concatenate([raw_rows(b) for b in batch], axis=1))
    return np.ascontiguousarray(batch).reshape(len(batch), -1).view(np.int8)


def split_rows(cm, result: RunResult) -> RunResult:
    """A runner's packed output rows (bytes) -> each output in its own dtype (int16 outputs are viewed as such),
    one array per output for a model with several outputs."""
    edges = np.cumsum([0, *cm.output_sizes])
    dtypes = [cm.graph.tensor(t).dtype for t in cm.graph.outputs]
    outs = [np.ascontiguousarray(result.outputs[:, a:b]).view(dt) for a, b, dt in zip(edges[:-1], edges[1:], dtypes)]
    return replace(result, outputs=outs[0] if cm.n_outputs == 1 else outs)


_HOST_BUILDS: dict[int, HostLibrary] = {}  # id(CompiledModel) -> its loaded library, while the model lives


def host_build(cm) -> HostLibrary:
    """The model's host library, built and loaded once per CompiledModel: kept here, by the model's identity, and
    dropped when the model is (a CompiledModel is a value nothing writes into)."""
    key = id(cm)
    if key not in _HOST_BUILDS:
        _HOST_BUILDS[key] = HostTarget().build(ModelSources.of(cm))
        weakref.finalize(cm, _HOST_BUILDS.pop, key, None)
    return _HOST_BUILDS[key]


def _run_reference(cm, batch: np.ndarray, arena_bytes: int | None) -> RunResult:
    return RunResult(Interpreter(cm.graph, cm.plan).run(batch))


def _run_host(cm, batch: np.ndarray, arena_bytes: int | None) -> RunResult:
    return split_rows(cm, HostTarget().run(host_build(cm), raw_rows(batch), arena_bytes=arena_bytes))


def _run_m33(cm, batch: np.ndarray, arena_bytes: int | None) -> RunResult:
    """The harness binds the model's static arena (`arena_bytes` is for the host's caller-provided arena)."""
    with tempfile.TemporaryDirectory(prefix="tinyaot-") as tmp:
        cm.c_sources.write(Path(tmp))
        result = m33.run_m33(Path(tmp), cm.name, raw_rows(batch), sum(cm.output_sizes),
                             input_sizes=tuple(cm.input_sizes), output_sizes=tuple(cm.output_sizes))
        return split_rows(cm, result)


register(Engine("reference", "the reference interpreter", _run_reference))
register(Engine("host", "host C", _run_host))
register(Engine("m33", "the emulated Cortex-M33", _run_m33, emulated=True))

ENGINES = tuple(REGISTRY)
