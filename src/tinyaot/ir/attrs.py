"""Op attributes: one frozen, validated dataclass per op family, which the op registry (ir/ops.py) names per op.

A Node's attrs read like a dict of the attributes that are set (`node.attrs["stride"]`, `node.attrs.get("clamp")`);
a wrong value (a negative stride, an unknown name, a clamp with lo > hi) is an AttrError naming the attribute,
raised when the Node is made, before any stage reads it.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tinyaot.errors import ModelError


class AttrError(ModelError):
    """An op was given attributes its spec does not allow (a front end's bug, or a malformed model file)."""


@dataclass(frozen=True, eq=False)
class Attrs(Mapping):
    """Typed, validated, immutable attributes. Read like a dict of the attributes that are set (None = unset),
    so `attrs.get("clamp")` and `attrs["stride"]` work in every stage; change one with `replace`."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):  # front ends build lists; the IR keeps tuples (hashable, frozen)
                object.__setattr__(self, f.name, tuple(value))
        self.validate()

    def validate(self) -> None:
        """Per-op checks; raise AttrError saying which attribute is wrong and why."""
        clamp = getattr(self, "clamp", None)
        if clamp is not None:
            _check_clamp("clamp", clamp)

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key, None) if key in self._names() else None
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self):
        return (n for n in self._names() if getattr(self, n) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __eq__(self, other) -> bool:  # equal to another Attrs or a dict holding the same set attributes
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted((k, repr(v)) for k, v in self.items()))))

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def replace(self, **changes) -> Attrs:
        return dataclasses.replace(self, **changes)


def _check_clamp(name: str, clamp) -> None:
    if len(clamp) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) for v in clamp) \
            or clamp[0] > clamp[1]:
        raise AttrError(f"{name} must be (lo, hi) in real units with lo <= hi, got {clamp!r}")


def _ints(attrs, name: str, n: int, minimum: int) -> None:
    """An optional tuple of n integers >= minimum; a single int stands for (v, v) (PyTorch's kernel_size=3)."""
    value = getattr(attrs, name)
    if value is None:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool) and n == 2:
        value = (value, value)
        object.__setattr__(attrs, name, value)
    if not isinstance(value, tuple) or len(value) != n or \
            any(isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < minimum for v in value):
        negative = " (no negative padding)" if minimum == 0 else ""
        raise AttrError(f"{name} must be {n} integers >= {minimum}{negative}, got {value!r}")


@dataclass(frozen=True, eq=False)
class NoAttrs(Attrs):
    pass


@dataclass(frozen=True, eq=False)
class ClampAttrs(Attrs):
    clamp: tuple[float, float] | None = None


@dataclass(frozen=True, eq=False)
class ConvAttrs(Attrs):
    stride: tuple[int, int] | None = None
    padding: tuple[int, int, int, int] | None = None
    dilation: tuple[int, int] | None = None
    clamp: tuple[float, float] | None = None

    def validate(self) -> None:
        super().validate()
        _ints(self, "stride", 2, 1)
        _ints(self, "padding", 4, 0)
        _ints(self, "dilation", 2, 1)


@dataclass(frozen=True, eq=False)
class TransposeConvAttrs(Attrs):
    """PyTorch's ConvTranspose2d: padding crops the full (in - 1) * stride + kernel result (top, bottom, left,
    right), output_padding adds rows / columns at the bottom / right."""

    stride: tuple[int, int] | None = None
    padding: tuple[int, int, int, int] | None = None
    output_padding: tuple[int, int] | None = None
    clamp: tuple[float, float] | None = None

    def validate(self) -> None:
        super().validate()
        _ints(self, "stride", 2, 1)
        _ints(self, "padding", 4, 0)
        _ints(self, "output_padding", 2, 0)


@dataclass(frozen=True, eq=False)
class DepthwiseAttrs(ConvAttrs):
    depth_multiplier: int | None = None

    def validate(self) -> None:
        super().validate()
        m = self.depth_multiplier
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise AttrError(f"depth_multiplier must be an integer >= 1, got {m!r}")


@dataclass(frozen=True, eq=False)
class ConvAddAttrs(ConvAttrs):
    """conv2d then add(skip, conv) in one kernel; the conv's own rounding travels with it."""

    conv: str | None = None  # the conv2d node the fusion came from
    conv_qparams: Any = None  # QParams the conv rounds to before the add
    conv_clamp: tuple[float, float] | None = None
    skip_input: int | None = None  # the skip's operand slot in the original add: 1 or 2

    def validate(self) -> None:
        super().validate()
        if self.conv_clamp is not None:
            _check_clamp("conv_clamp", self.conv_clamp)
        if self.skip_input not in (1, 2):
            raise AttrError(f"skip_input must be 1 or 2 (the skip's operand slot), got {self.skip_input!r}")
        if self.conv_qparams is None:
            raise AttrError("conv_qparams (the qparams the conv rounds to before the add) is required")


@dataclass(frozen=True, eq=False)
class MaxPoolAttrs(Attrs):
    kernel: tuple[int, int] | None = None
    stride: tuple[int, int] | None = None  # None: the kernel's size, as PyTorch defaults it
    padding: tuple[int, int, int, int] | None = None
    clamp: tuple[float, float] | None = None
    ceil_mode: bool | None = None  # PyTorch's: one more output where a last window would hang over the padded
    #                                input's end (it must start inside the input or the top / left padding)

    def validate(self) -> None:
        super().validate()
        _ints(self, "kernel", 2, 1)
        _ints(self, "stride", 2, 1)
        _ints(self, "padding", 4, 0)
        if self.ceil_mode not in (None, True, False):
            raise AttrError(f"ceil_mode must be True or False, got {self.ceil_mode!r}")


@dataclass(frozen=True, eq=False)
class AvgPoolAttrs(MaxPoolAttrs):
    count_include_pad: bool | None = None  # divide by the taps inside the padded input (PyTorch's rule: a ceil_mode
    #                                        window's overhang past the padding counts nowhere), not inside the input


@dataclass(frozen=True, eq=False)
class MeanAttrs(Attrs):
    axes: tuple[int, ...] = ()
    keepdims: bool | None = None
    clamp: tuple[float, float] | None = None

    def validate(self) -> None:
        super().validate()
        if not self.axes:
            raise AttrError("mean needs the axes it averages over")


@dataclass(frozen=True, eq=False)
class ConcatAttrs(Attrs):
    axis: int | None = None


@dataclass(frozen=True, eq=False)
class SliceAttrs(Attrs):
    """Per input axis: the first index taken, the end (exclusive) and the step, as Python's x[begin:end:step] with
    begin and end already resolved to 0 <= begin < end <= size (the input's shape checks the end)."""

    begin: tuple[int, ...] = ()
    end: tuple[int, ...] = ()
    strides: tuple[int, ...] | None = None  # None: every step 1

    def validate(self) -> None:
        rank = len(self.begin)
        strides = self.strides if self.strides is not None else (1,) * rank
        if not rank or len(self.end) != rank or len(strides) != rank:
            raise AttrError(f"slice needs begin, end (and strides) for every axis, got begin {self.begin!r}, end "
                            f"{self.end!r}, strides {self.strides!r}")
        for name, values, low in (("begin", self.begin, 0), ("end", self.end, 1), ("strides", strides, 1)):
            if any(isinstance(v, bool) or not isinstance(v, int) or v < low for v in values):
                raise AttrError(f"slice {name} must be integers >= {low}, got {values!r}")
        if any(b >= e for b, e in zip(self.begin, self.end)):
            raise AttrError(f"slice takes nothing along some axis: begin {self.begin!r}, end {self.end!r}")


PAD_MODES = ("constant", "reflect", "symmetric", "replicate")  # None = constant (the zero point)


@dataclass(frozen=True, eq=False)
class PadAttrs(Attrs):
    padding: tuple[int, int, int, int] | None = None
    mode: str | None = None  # PAD_MODES: reflect mirrors without the edge, symmetric with it, replicate repeats it

    def validate(self) -> None:
        _ints(self, "padding", 4, 0)
        if self.mode is not None and self.mode not in PAD_MODES:
            raise AttrError(f"pad mode must be one of {', '.join(PAD_MODES)}, got {self.mode!r}")


@dataclass(frozen=True, eq=False)
class ResizeAttrs(Attrs):
    """TFLite's resize flags (None = False); the output size is the output tensor's H and W (ir/resize.py)."""

    align_corners: bool | None = None
    half_pixel_centers: bool | None = None

    def validate(self) -> None:
        for name in ("align_corners", "half_pixel_centers"):
            if getattr(self, name) not in (None, True, False):
                raise AttrError(f"{name} must be True or False, got {getattr(self, name)!r}")


@dataclass(frozen=True, eq=False)
class SoftmaxAttrs(Attrs):
    beta: float | None = None

    def validate(self) -> None:
        if self.beta is not None and not (math.isfinite(self.beta) and self.beta > 0):
            raise AttrError(f"softmax beta must be a positive finite number, got {self.beta!r}")


@dataclass(frozen=True, eq=False)
class LutAttrs(Attrs):
    function: str = ""
    clamp: tuple[float, float] | None = None
    scale_by: float | None = None  # function "affine": y = x * scale_by + offset
    offset: float | None = None

    def validate(self) -> None:
        super().validate()
        if not self.function:
            raise AttrError("lut needs the function its table holds")


@dataclass(frozen=True, eq=False)
class ReluAttrs(Attrs):
    clamp: tuple[float, float] | None = None


@dataclass(frozen=True, eq=False)
class LeakyReluAttrs(Attrs):
    alpha: float | None = None  # the slope below zero: y = x for x >= 0, alpha * x below

    def validate(self) -> None:
        if self.alpha is None or isinstance(self.alpha, bool) or not math.isfinite(self.alpha):
            raise AttrError(f"leaky_relu alpha must be a finite number, got {self.alpha!r}")


@dataclass(frozen=True, eq=False)
class TransposeAttrs(Attrs):
    perm: tuple[int, ...] | None = None

    def validate(self) -> None:
        if self.perm is not None and sorted(self.perm) != list(range(len(self.perm))):
            raise AttrError(f"perm must be a permutation of 0..n-1, got {self.perm!r}")


@dataclass(frozen=True, eq=False)
class LayerNormAttrs(Attrs):
    eps: float | None = None

    def validate(self) -> None:
        if self.eps is not None and not (math.isfinite(self.eps) and self.eps >= 0):
            raise AttrError(f"layer_norm eps must be a finite number >= 0, got {self.eps!r}")


@dataclass(frozen=True, eq=False)
class L2NormAttrs(Attrs):
    eps: float | None = None  # the float definition's floor on the norm (PyTorch's F.normalize: 1e-12); the int8
    #                           kernel has none (TFLite Micro's: a zero row comes out zero)

    def validate(self) -> None:
        if self.eps is not None and not (math.isfinite(self.eps) and self.eps >= 0):
            raise AttrError(f"l2_normalize eps must be a finite number >= 0, got {self.eps!r}")


@dataclass(frozen=True, eq=False)
class GroupNormAttrs(LayerNormAttrs):
    groups: int | None = None

    def validate(self) -> None:
        super().validate()
        if isinstance(self.groups, bool) or not isinstance(self.groups, int) or self.groups < 1:
            raise AttrError(f"group_norm needs its number of channel groups, an integer >= 1, got {self.groups!r}")


@dataclass(frozen=True, eq=False)
class BatchMatmulAttrs(Attrs):
    adj_x: bool | None = None  # the lhs is stored transposed (its last two axes swapped)
    adj_y: bool | None = None  # the rhs likewise
    lhs_perm: tuple[int, ...] | None = None  # the lhs operand is transpose(stored tensor, lhs_perm), then adj_x
    rhs_perm: tuple[int, ...] | None = None  # likewise (a transpose folded in, read at permuted strides)

    def validate(self) -> None:
        for name in ("adj_x", "adj_y"):
            if getattr(self, name) not in (None, True, False):
                raise AttrError(f"batch_matmul {name} must be a bool, got {getattr(self, name)!r}")
        for name in ("lhs_perm", "rhs_perm"):
            perm = getattr(self, name)
            if perm is not None and (sorted(perm) != list(range(len(perm))) or perm[0] != 0):
                raise AttrError(f"batch_matmul {name} must be a permutation of 0..n-1 keeping the batch (0) first, "
                                f"got {perm!r}")


@dataclass(frozen=True, eq=False)
class BatchNormAttrs(Attrs):
    eps: float | None = None


@dataclass(frozen=True, eq=False)
class RecurrentAttrs(Attrs):
    """One unidirectional recurrent layer (lstm, gru) over a whole sequence, zero initial state per invoke (stateful:
    the state the last invoke left, in the node's state slot)."""

    hidden: int | None = None
    last_only: bool | None = None  # the output is the last step's hidden state [1, H] instead of [1, T, H]
    cell_clip: float | None = None  # lstm: > 0 clips the cell state to +-cell_clip (TFLite's option)
    stateful: bool | None = None  # streaming (passes/streaming.py), or an imported .tflite LSTM (TFLM's variable
    #                               tensors): the initial state is read from the node's state slot and the final one
    #                               written back (the spec's `state` trait)

    def validate(self) -> None:
        if isinstance(self.hidden, bool) or not isinstance(self.hidden, int) or self.hidden < 1:
            raise AttrError(f"a recurrent layer needs its hidden size, an integer >= 1, got {self.hidden!r}")
        if self.last_only not in (None, True, False):
            raise AttrError(f"last_only must be True or False, got {self.last_only!r}")
        if self.cell_clip is not None and not (math.isfinite(self.cell_clip) and self.cell_clip >= 0):
            raise AttrError(f"cell_clip must be a finite number >= 0, got {self.cell_clip!r}")
        if self.stateful not in (None, True, False):
            raise AttrError(f"stateful must be True or False, got {self.stateful!r}")


@dataclass(frozen=True, eq=False)
class SvdfAttrs(Attrs):
    """TFLite's SVDF: rank filters per output unit; the activation state (its last `memory` feature values per
    filter) is kept in the node's state slot across invokes at state_qparams, the weights_time's integer type."""

    rank: int | None = None
    state_qparams: Any = None  # QParams (per tensor) of the activation state: the feature matmul's output; None in
    #                            a float graph, whose lowering chooses it (quantize/svdf.py)
    float_clamp: tuple[float, float] | None = None  # TFLite's fused activation, which the float SVDF applies and
    #                                                 TFLM's integer kernel does not (the output range clamps)

    def validate(self) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise AttrError(f"svdf needs its rank, an integer >= 1, got {self.rank!r}")
        if self.float_clamp is not None:
            _check_clamp("float_clamp", self.float_clamp)
