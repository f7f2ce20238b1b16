"""Streaming: a causal Conv1d / TCN or recurrent int8 graph over a window of T frames -> a step function over one frame.

The full-window model and its streamed twin share every weight and qparam (this pass runs on the int8 graph
calibrated on full windows), so each step's output is byte for byte the full model's output at that frame.
Every tensor that runs along time shrinks to one frame; each causal conv (kernel k, dilation d, left padding
(k - 1) * d, by an F.pad before it or its own padding) instead reads a window of K = (k - 1) * d + 1 frames that
a frame_shift node assembles from the new frame and the K - 1 frames it keeps in the state region
(ref/frame_shift_s8.py). After a reset the kept frames are zero points (real 0): the causal zero padding the
full model puts before its first frame, so step t after a reset outputs the full model's frame t of a stream
that starts at the reset.

Recurrent layers (nn.LSTM / nn.GRU: lstm and gru nodes over [1, T, F], time on axis 1) stream as themselves:
each becomes `stateful`, so its kernel starts from the state in its slot of the state region (h, and an LSTM's c;
plan/state.py) instead of zero and leaves its final state there, and one frame per invoke is then T = 1. After a
reset the slot is zero, the zero initial state the full model starts every sequence from, so step t after a
reset outputs the full model's output at frame t of the sequence that starts at the reset (for t < T: byte for
byte the full model's frame t). A layer whose output is only its last step (last_only: output[:, -1], h_n[-1])
outputs at step t its hidden state after frame t, so step t outputs what the full model outputs for a sequence
ending at frame t; whatever follows it per frame (a Linear head) runs once per step. Unlike a conv's window, the
state carries every frame since the reset (the receptive field is unbounded), so beyond frame T a step is what
the model outputs for the longer sequence, not for the last T frames: reset where a new sequence starts.

What cannot stream exactly is refused, each with the reason: a conv that pads on the right (it reads the
future), a stride > 1 along time (one output per s frames), pooling or a mean over time and anything that
flattens time into features (the output needs the whole window, not a bounded past), and ops the rules
below do not know.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node, Tensor
from tinyaot.ir.ops import (
    OPS,
    ConcatAttrs,
    MaxPoolAttrs,
    MeanAttrs,
    PadAttrs,
    RecurrentAttrs,
    SliceAttrs,
    SoftmaxAttrs,
    TransposeAttrs,
)

TIME = 2  # NHWC axis of time in a Conv1d graph: [1, 1, T, C] (PyTorch's [N, C, L] input is [1, C, L], also 2)
SEQUENCE_TIME = 1  # axis of time of a recurrent layer's input and output sequence: [1, T, F]
WHAT_STREAMS = ("causal Conv1d (F.pad(x, ((k - 1) * dilation, 0)) then padding=0, stride 1), nn.LSTM / nn.GRU "
                "layers (their whole output sequence or its last step), per-frame ops "
                "(activations, add, mul, requantize, Linear / softmax over channels, concat and slices over "
                "channels), reshapes and transposes that keep the time axis")


@dataclass(frozen=True)
class StreamInfo:
    """What the conversion made: the full window's frames, how many frames back an output reaches, the layers."""

    window_frames: int  # T of the full-window model
    receptive_field: int | None  # frames an output depends on (1 + sum of (k - 1) * d along the deepest path);
    #                              None: unbounded (a recurrent layer's state carries every frame since the reset)
    layers: tuple[str, ...]  # the streamed convs (each with a frame_shift in front unless k == 1) and recurrent layers


def stream_graph(g: Graph) -> tuple[Graph, StreamInfo]:
    """The step-function twin of the int8 graph `g` (left alone) and what it keeps."""
    return _Streamer(g).run()


class _Streamer:
    def __init__(self, g: Graph):
        self.g = g
        self.tensors = dict(g.tensors)
        self.nodes: list[Node] = []
        self.axis: dict[str, int] = {}  # tensor -> its time axis (absent: no time extent, e.g. constants)
        self.rf: dict[str, int | None] = {}  # tensor -> receptive field in frames (None: unbounded)
        self.pads: dict[str, tuple[str, int]] = {}  # a dropped causal pad's output -> (its input, left frames)
        self.whole: set[str] = set()  # one frame with no time axis: a last_only recurrent layer's output and what
        #                               is computed from it (each step's value, whole)
        self.layers: list[str] = []
        self.frames = 0

    def run(self) -> tuple[Graph, StreamInfo]:
        g = self.g
        if len(g.inputs) != 1:
            raise UnsupportedOpError(f"stream=True takes a model with one input (the frames); this one has "
                                     f"{len(g.inputs)}")
        self._input(g.inputs[0])
        for node in g.nodes:
            self._node(node)
        for name in g.outputs:
            if name not in self.axis and name not in self.whole:
                raise UnsupportedOpError(f"stream=True: the output '{name}' has no time axis (it summarizes the "
                                         "whole window), so there is no per-frame output to stream")
            if name in self.pads:
                raise UnsupportedOpError(f"stream=True: the output '{name}' is a padded window; streaming needs "
                                         "the pad to feed a causal conv")
        out = g.replace(tensors=self.tensors, nodes=self.nodes)
        out.prune()
        rf = _widest(self.rf[name] for name in g.outputs)
        return out, StreamInfo(self.frames, rf, tuple(self.layers))

    # ---- tensors ----------------------------------------------------------------------------------------------
    def _input(self, name: str) -> None:
        t = self.g.tensor(name)
        if self._recurrent_model():
            if len(t.shape) != 3 or t.shape[SEQUENCE_TIME] < 2:
                raise UnsupportedOpError(
                    f"stream=True: the input '{name}' of shape {list(t.shape)} is not a sequence of frames; a "
                    "recurrent model streams from its [1, frames, features] input (batch_first; a time-major "
                    "model's [frames, 1, features] view of it), with at least 2 frames")
            axis = SEQUENCE_TIME
        elif len(t.shape) not in (3, 4) or (len(t.shape) == 4 and t.shape[1] != 1) or t.shape[TIME] < 2:
            raise UnsupportedOpError(
                f"stream=True: the input '{name}' of shape {list(t.shape)} is not a sequence of frames; streaming "
                "takes a Conv1d model's input, [1, channels, frames] in PyTorch's layout (or [1, 1, frames, "
                "channels] NHWC), or a recurrent model's [1, frames, features], with at least 2 frames")
        else:
            axis = TIME
        self.frames = t.shape[axis]
        self._set(name, axis)
        self.rf[name] = 1

    def _recurrent_model(self) -> bool:
        """Recurrent layers and no convs: the input's time runs along axis 1 ([1, T, F]), not a Conv1d's 2."""
        kinds = [OPS[n.op] for n in self.g.nodes]
        return any(s.attrs is RecurrentAttrs for s in kinds) and not any(_is_conv(s) for s in kinds)

    def _set(self, name: str, axis: int, frames: int = 1) -> None:
        """`name` runs along time on `axis`: one frame of it (a window: `frames`) in the streamed graph."""
        t = self.tensors[name]
        if t.shape[axis] != self.frames:
            raise ModelError(f"stream=True: tensor '{name}' {list(t.shape)} should hold {self.frames} frames on axis "
                             f"{axis}")
        shape = list(t.shape)
        shape[axis] = frames
        self.tensors[name] = dataclasses.replace(t, shape=tuple(shape))
        self.axis[name] = axis

    # ---- nodes ------------------------------------------------------------------------------------------------
    def _node(self, node: Node) -> None:
        timed = [i for i in node.inputs if i in self.axis or i in self.pads or i in self.whole]
        if not timed:  # nothing along time reaches it (a constant computation): unchanged
            self.nodes.append(node)
            return
        s = OPS[node.op]
        if s.attrs is RecurrentAttrs:
            return self._recurrent(node)
        if any(i in self.whole for i in timed):
            return self._per_step(node, s, timed)
        if _is_conv(s):
            return self._conv(node)
        padded = [i for i in node.inputs if i in self.pads]
        if padded:
            _refuse(node, "reads a padded window but is not a conv; streaming drops a causal pad only in front of "
                          "the conv it feeds")
        if s.attrs is PadAttrs:
            return self._pad(node)
        axis = self._axis_through(node, s, timed[0])
        self._set(node.outputs[0], axis)
        self.rf[node.outputs[0]] = _widest(self.rf.get(i, 1) for i in timed)
        if s.attrs is SliceAttrs:  # a slice of other axes takes the one frame whole
            end = list(node.attrs["end"])
            end[axis] = 1
            node = Node(node.op, node.name, list(node.inputs), list(node.outputs),
                        dict(node.attrs.replace(end=tuple(end)).items()), source=node.source)
        self.nodes.append(node)

    def _recurrent(self, node: Node) -> None:
        """An lstm / gru layer over the sequence: the same node, stateful (its state kept in its slot), T = 1."""
        x = node.inputs[0]
        if self.axis.get(x) != SEQUENCE_TIME or len(self.g.tensor(x).shape) != 3:
            _refuse(node, "reads a tensor that is not a sequence [1, frames, features] with time on axis 1 (the "
                          "last step of a layer, or a conv's [1, 1, frames, channels] feature map)")
        y = node.outputs[0]
        if node.attrs.get("last_only"):
            self.whole.add(y)  # the hidden state after this frame: the output of a sequence that ends here
        else:
            self._set(y, SEQUENCE_TIME)
        self.rf[y] = None
        self.nodes.append(Node(node.op, node.name, list(node.inputs), list(node.outputs),
                               dict(node.attrs.replace(stateful=True).items()), source=node.source))
        self.layers.append(node.name)

    def _per_step(self, node: Node, s, timed: list[str]) -> None:
        """An op on the last step of a recurrent layer (a Linear head on output[:, -1]): once per step, as is."""
        if any(i not in self.whole for i in timed):
            _refuse(node, "mixes the last step of a recurrent layer with a whole sequence")
        if _is_conv(s) or s.attrs is PadAttrs:
            _refuse(node, "convolves or pads the last step of a recurrent layer, which has no time axis")
        self.whole.add(node.outputs[0])
        self.rf[node.outputs[0]] = None
        self.nodes.append(node)

    def _axis_through(self, node: Node, s, ref: str) -> int:
        """The output's time axis for an op that works frame by frame (`ref`: its first operand along time);
        refused otherwise, with the reason."""
        g = self.g
        x = g.tensor(ref)
        ax = self.axis[ref]
        y = g.tensor(node.outputs[0])
        if s.view:
            before = math.prod(x.shape[:ax])
            for a, d in enumerate(y.shape):
                if d == self.frames and math.prod(y.shape[:a]) == before:
                    return a
            _refuse(node, f"reshapes {list(x.shape)} to {list(y.shape)}, merging the time axis with others (a "
                          "flatten over time feeds a layer the whole window at once)")
        if s.attrs is TransposeAttrs:
            return list(node.attrs["perm"]).index(ax)
        if s.attrs is SliceAttrs:
            steps = node.attrs.get("strides") or (1,) * len(x.shape)
            if (node.attrs["begin"][ax], node.attrs["end"][ax], steps[ax]) != (0, self.frames, 1):
                _refuse(node, "slices along time (a frame range of the window, e.g. a Chomp1d's x[:, :, :-k]: "
                              "write the causal conv as F.pad(x, ((k - 1) * dilation, 0)) then padding=0)")
            return ax
        if s.overlap == "elementwise" or s.attrs is ConcatAttrs or s.macs == "dense" or s.attrs is SoftmaxAttrs:
            self._same_frames(node, x, ax, node.inputs[:1] if s.macs == "dense" else node.inputs)
            if s.attrs is ConcatAttrs and node.attrs.get("axis", -1) % len(y.shape) == ax:
                _refuse(node, "concatenates along time")
            if (s.macs == "dense" or s.attrs is SoftmaxAttrs) and ax == len(x.shape) - 1:
                _refuse(node, "works over the last axis, which is time here (the whole window at once)")
            return ax + len(y.shape) - len(x.shape)  # broadcasting aligns the axes from the right
        if s.attrs is MeanAttrs and ax in [a % len(x.shape) for a in node.attrs["axes"]]:
            _refuse(node, "averages over time (global pooling): its output depends on every frame of the window, "
                          "not a bounded past, so no fixed state of past frames gives it exactly")
        if issubclass(s.attrs, MaxPoolAttrs):
            _refuse(node, "pools over time: pooling windows and strides along time change the frame rate or need "
                          "the whole window (global pooling)")
        _refuse(node, "is not one of the layers streaming handles")

    def _same_frames(self, node: Node, x: Tensor, ax: int, operands) -> None:
        """Every operand runs along x's time axis `ax`, or has no time extent at all (a per-channel constant).
        `operands`: those that broadcast (a Linear's weight and bias do not: they act on each frame's features)."""
        for name in operands:
            t = self.g.tensor(name)
            if name in self.axis:
                if self.axis[name] - len(t.shape) != ax - len(x.shape):
                    _refuse(node, "mixes operands whose time runs along different axes")
            elif _time_extent(t, x, ax) > 1:
                _refuse(node, f"has an operand '{name}' that varies along time on its own (a constant per frame)")

    def _pad(self, node: Node) -> None:
        """A causal pad (left along time only, the zero point) is dropped: the conv it feeds streams it."""
        x = node.inputs[0]
        top, bottom, left, right = node.attrs.get("padding") or (0, 0, 0, 0)
        if node.attrs.get("mode") not in (None, "constant"):
            _refuse(node, f"pads with mode {node.attrs['mode']!r}; a streamed causal pad is zeros (the constant mode)")
        if self.axis.get(x) != TIME or top or bottom:
            _refuse(node, "pads other axes than time")
        if right:
            _refuse(node, f"pads {right} frame(s) on the right, i.e. reads the future: not causal. A causal Conv1d "
                          "pads on the left only: F.pad(x, ((k - 1) * dilation, 0))")
        self.pads[node.outputs[0]] = (x, left)

    def _conv(self, node: Node) -> None:
        g = self.g
        src = node.inputs[0]
        left_pad = 0
        if src in self.pads:
            src, left_pad = self.pads[src]
        if self.axis.get(src) != TIME or g.tensor(src).shape[1] != 1:
            _refuse(node, "is a 2-D conv; streaming takes Conv1d layers ([1, 1, frames, channels] NHWC)")
        w = g.tensor(node.inputs[1])
        kh, kw = w.shape[1], w.shape[2]
        stride = node.attrs.get("stride") or (1, 1)
        dilation = node.attrs.get("dilation") or (1, 1)
        top, bottom, left, right = node.attrs.get("padding") or (0, 0, 0, 0)
        if stride[1] != 1:
            _refuse(node, f"has stride {stride[1]} along time: it outputs one frame for every {stride[1]} it reads, so "
                          "a one-frame step has no output at most frames; streaming needs stride 1")
        if kh != 1 or top or bottom:
            _refuse(node, "is not a Conv1d (its kernel or padding spans more than one row)")
        span = (kw - 1) * dilation[1] + 1
        if right:
            _refuse(node, f"pads {right} frame(s) on the right (Conv1d padding= pads both sides), so each output reads "
                          "future frames: not causal. Use F.pad(x, ((k - 1) * dilation, 0)) and padding=0")
        if left + left_pad != span - 1:
            _refuse(node, f"is padded by {left + left_pad} frame(s) on the left but reads {span} (kernel {kw}, "
                          f"dilation {dilation[1]}); a causal conv that keeps the frame count pads "
                          f"(k - 1) * dilation = {span - 1}")
        x = g.tensor(src)
        before = self.rf.get(src, 1)
        self.rf[node.outputs[0]] = None if before is None else before + span - 1
        if span > 1:
            window = _fresh(self.tensors, f"{node.name}_window")
            self.tensors[window] = Tensor(window, (1, 1, span, x.shape[3]), x.dtype, qparams=x.qparams)
            self.nodes.append(Node("frame_shift", _fresh({n.name for n in self.nodes} | {n.name for n in g.nodes},
                                                         f"{node.name}_frames"), [src], [window], {},
                                   source=node.source))
            src = window
        conv = Node(node.op, node.name, [src, *node.inputs[1:]], node.outputs,
                    dict(node.attrs.replace(padding=(0, 0, 0, 0)).items()), source=node.source)
        self.nodes.append(conv)
        self.layers.append(node.name)
        self._set(node.outputs[0], TIME)


def _is_conv(s) -> bool:
    return s.macs in ("conv", "depthwise") and "dilation" in s.attrs._names()


def _widest(fields) -> int | None:
    """The largest receptive field, None (unbounded) if any is."""
    fields = list(fields)
    return None if any(f is None for f in fields) else max(fields)


def _time_extent(t: Tensor, x: Tensor, ax: int) -> int:
    """Frames a broadcast operand `t` holds along x's time axis `ax` (NumPy alignment from the right)."""
    k = ax - (len(x.shape) - len(t.shape))
    return t.shape[k] if 0 <= k < len(t.shape) else 1


def _fresh(taken, name: str) -> str:
    while name in taken:
        name += "_"
    return name


def _refuse(node: Node, why: str):
    where = f" ({node.source})" if node.source else ""
    raise UnsupportedOpError(f"stream=True: layer '{node.name}'{where} {why}. Streaming converts {WHAT_STREAMS}.")
