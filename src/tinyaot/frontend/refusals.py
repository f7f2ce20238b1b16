"""What a PyTorch model uses that tinyaot cannot compile, said once for the whole model.

A user fixing one unsupported op at a time would compile, read, fix and compile again for each; the front end
instead keeps converting past a refusal (what reads a refused value is skipped: its error would only repeat the
first) and lists every refused op with its count and the first place it is used, the actionable part first. The
supported ops are one command away (`tinyaot ops`), grouped by family, rather than a 2,000-character list here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tinyaot.errors import TinyAOTError, UnsupportedOpError
from tinyaot.frontend import (
    pytorch_activations,
    pytorch_conv,
    pytorch_elementwise,
    pytorch_pooling,
    pytorch_recurrent,
    pytorch_shape,
    pytorch_slicing,
)
from tinyaot.frontend.fx_util import layer_name, layer_type, source_location

MAX_LINES = 12  # distinct refusals listed; the rest are counted
LIST_COMMAND = "run `tinyaot ops` for the ops tinyaot compiles, by family"

# `tinyaot ops`: (family, the ATen base names in it, matched as prefixes of the name between "aten." and the
# overload: "relu" covers relu, relu_ and relu6). An op no family claims is listed under "other".
FAMILIES = (
    ("convolution, linear, matmul, attention",
     ("conv", "linear", "matmul", "bmm", "scaled_dot_product_attention")),
    ("normalization", ("batch_norm", "layer_norm", "group_norm", "linalg_vector_norm")),
    ("recurrent", ("lstm", "gru")),
    ("activations", ("relu", "hardtanh", "clamp", "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu", "gelu",
                     "softmax", "_softmax")),
    ("pooling, mean, sum, resize", ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "mean", "sum",
                                    "upsample", "_upsample")),
    ("element-wise arithmetic", ("add", "sub", "rsub", "mul", "div", "minimum", "maximum", "max", "min")),
    ("slicing", ("slice", "narrow", "select", "split", "split_with_sizes", "chunk", "tensor_split", "unbind",
                 "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "getitem")),
    ("shape, layout, padding", ("reshape", "view", "_unsafe_view", "flatten", "squeeze", "unsqueeze", "permute",
                                "transpose", "t", "cat", "stack", "expand", "expand_as", "pad", "constant_pad_nd",
                                "reflection_pad", "replication_pad", "zeros")),
    ("no-ops at inference", ("dropout", "feature_dropout", "clone", "contiguous", "alias", "detach", "identity", "to",
                             "_to_copy", "type_as")),
)


def base_name(op: str) -> str:
    """'aten.relu_.default' -> 'relu_'; '<built-in function getitem>' -> 'getitem'."""
    if op.startswith("<built-in function "):
        return op[len("<built-in function "):-1]
    parts = op.split(".")
    return parts[1] if len(parts) > 2 else parts[-1]


# The family of an op no name above claims, by the converter module whose table holds it: an op added to
# pytorch_activations.py is listed with the activations without an edit here. (pytorch_spatial's pad and resize
# and pytorch_attention's norms and matmul span families: their names above place them.)
MODULE_FAMILIES = ((pytorch_conv.CONVERTERS, "convolution, linear, matmul, attention"),
                   (pytorch_recurrent.CONVERTERS, "recurrent"), (pytorch_activations.CONVERTERS, "activations"),
                   (pytorch_pooling.CONVERTERS, "pooling, mean, sum, resize"),
                   (pytorch_elementwise.CONVERTERS, "element-wise arithmetic"),
                   (pytorch_slicing.CONVERTERS, "slicing"), (pytorch_shape.CONVERTERS, "shape, layout, padding"))


def family_of(op: str) -> str:
    base = base_name(op)
    for family, names in FAMILIES:
        if any(base == n or (base.startswith(n) and not base[len(n):len(n) + 1].isalpha()) for n in names):
            return family
    return next((family for table, family in MODULE_FAMILIES if op in table), "other")


def by_family(ops) -> dict[str, list[str]]:
    """The ops grouped in FAMILIES' order (then "other"), each group sorted."""
    groups: dict[str, list[str]] = {family: [] for family, _ in FAMILIES}
    for op in sorted(ops):
        groups.setdefault(family_of(op), []).append(op)
    return {k: v for k, v in groups.items() if v}


@dataclass
class _Refusal:
    target: str
    why: str  # "" for an op with no converter
    nodes: list = field(default_factory=list)  # the FX nodes, in graph order
    error: TinyAOTError | None = None  # a converter's own refusal (the first), kept to raise as is when alone


@dataclass
class Refusals:
    """Every refusal of one model's conversion, grouped by op and reason."""

    supported: frozenset
    found: dict = field(default_factory=dict)  # (target, why) -> _Refusal

    def unknown(self, n) -> None:
        self._add(n, str(n.target), "", None)

    def refused(self, n, exc: TinyAOTError) -> None:
        """A converter refused the node: its reason (Builder.error's `what`) groups the same refusal."""
        self._add(n, str(n.target), getattr(exc, "what", None) or str(exc), exc)

    def _add(self, n, target: str, why: str, exc) -> None:
        r = self.found.setdefault((target, why), _Refusal(target, why, error=exc))
        r.nodes.append(n)

    def __bool__(self) -> bool:
        return bool(self.found)

    def error(self) -> TinyAOTError:
        refusals = list(self.found.values())
        if len(refusals) == 1 and refusals[0].error is not None and len(refusals[0].nodes) == 1:
            return refusals[0].error  # one converter refusal: its own message (and type) says it all
        uses = sum(len(r.nodes) for r in refusals)
        if len(refusals) == 1:
            head = f"unsupported operation {self._line(refusals[0])}"
        else:
            head = (f"this model uses {len(refusals)} operations tinyaot cannot compile ({uses} uses in all):\n  - "
                    + "\n  - ".join(self._line(r) for r in refusals[:MAX_LINES]))
            if len(refusals) > MAX_LINES:
                head += f"\n  - ... and {len(refusals) - MAX_LINES} more"
        return UnsupportedOpError(
            f"{head}\ntinyaot never falls back to float: rewrite these layers with supported ops, or open an issue "
            f"asking for the op; {LIST_COMMAND}."
        )

    def _line(self, r: _Refusal) -> str:
        n = r.nodes[0]
        where = source_location(n) or "(no source location recorded)"
        count = f" ({len(r.nodes)} uses), first" if len(r.nodes) > 1 else ""
        text = f"{r.target}{count} in layer '{layer_name(n)}'{layer_type(n)} at {where}"
        if r.why:
            return f"{text}: {r.why}"
        return text + self._in_place_advice(r.target)

    def _in_place_advice(self, target: str) -> str:
        """aten.X_ (an in-place op): its out-of-place twin may be supported."""
        base = base_name(target)
        if not base.endswith("_") or base.startswith("_"):
            return ""
        overload = target.rsplit(".", 1)[-1]
        twin = sorted((op for op in self.supported if base_name(op) == base[:-1]),
                      key=lambda op: op.rsplit(".", 1)[-1] != overload)  # aten.div_.Tensor -> aten.div.Tensor
        if twin:
            return (f": the in-place form of {twin[0]}, which tinyaot compiles: build the layer with inplace=False "
                    f"(e.g. nn.ReLU(inplace=False)) or write x = x.{base[:-1]}(...) instead of x.{base}(...)")
        return (f": an in-place op; its out-of-place form aten.{base[:-1]} has no integer kernel in tinyaot "
                "either")
