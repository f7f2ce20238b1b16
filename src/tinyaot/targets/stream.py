"""One stream over a compiled model: frames fed one invoke at a time to the same state, reset on demand.

CompiledModel.run(frames, engine=...) starts every call from a reset (the C's init resets the state) and
runs the frames as consecutive invokes of one instance; a stream keeps going across calls, like firmware
that invokes once per new frame, and reset() is <name>_reset() (host) or the interpreter's reset.
"""
from __future__ import annotations

import numpy as np

from tinyaot.errors import ModelError
from tinyaot.ref.interpreter import Interpreter
from tinyaot.targets.base import RunResult
from tinyaot.targets.engines import host_build, raw_rows, split_rows


class _Stream:
    def __init__(self, cm):
        self.cm = cm

    def step(self, frames) -> np.ndarray:
        """One frame (or a batch of them, in order) -> the output of each, as run() shapes it."""
        batch, form = self.cm._as_batch(np.asarray(frames))
        if isinstance(batch, list):
            raise ModelError("streams take one input per frame")
        return self.cm._shape_like(self._run(batch.astype(self.cm.input_dtype)), form)


class ReferenceStream(_Stream):
    def __init__(self, cm):
        super().__init__(cm)
        self.interp = Interpreter(cm.graph, cm.plan)

    def _run(self, batch):
        return self.interp.run(batch)

    def reset(self) -> None:
        self.interp.reset()


class HostStream(_Stream):
    def __init__(self, cm):
        super().__init__(cm)
        self.model = host_build(cm).model
        self.model.init(None)  # binds the static arena and state, and resets the state

    def _run(self, batch):
        """The runner's packed rows as run() gives them: each output in its own dtype (int16 viewed as such), a
        list for several outputs."""
        return split_rows(self.cm, RunResult(self.model.run(raw_rows(batch)))).outputs

    def reset(self) -> None:
        self.model.reset()


STREAMS = {"reference": ReferenceStream, "host": HostStream}


def open_stream(cm, engine: str):
    if engine not in STREAMS:
        raise ModelError(f"a stream runs on {' or '.join(STREAMS)} (got {engine!r}); the m33 engine runs a batch of "
                         "frames as one stream with cm.run(frames, engine='m33')")
    return STREAMS[engine](cm)
