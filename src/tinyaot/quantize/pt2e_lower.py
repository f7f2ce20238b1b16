"""Lower a PT2E float graph with the quantizer's own qparams to int8: one integer kernel per dq -> op -> q.

Input: the float IR graph the PT2E walk built (`frontend/pt2e.py`), the qparams its quantize nodes recorded
per IR tensor, and the PT2E weight qparams. Nothing is calibrated or chosen here; every scale and zero point is
the PT2E graph's. How each pattern becomes integer code:

- linear / conv / depthwise, add, mul, cat, mean, LUT activations and standalone clamps rescale to the output's
  qparams inside the kernel (a fused ReLU that PT2E runs in float between the op and its quantize becomes the
  kernel's clamp);
- pools, pad and views keep their input's qparams (TFLite's rule); where PT2E quantizes their output with
  other qparams, a `quantize` node requantizes after them. A global average pool becomes `mean`, which rescales
  in one step as PT2E does;
- weights are the PT2E int8 values (recovered exactly from the dequantized float32 copy: |q| <= 128, so the
  division by the scale is within 1e-5 of the integer); bias is quantized to int32 with scale
  in_scale * w_scale[c] in double precision, rounding half to even like torch (a float bias landing exactly
  on a tie is vanishingly rare, so the choice of tie rule does not change any measured output).

Where tinyaot and the PT2E float reference differ: the int32 bias carries up to half a step of the accumulator's
scale that PT2E's float bias does not; the kernels requantize with TFLM's fixed-point multiplier and round half
away from zero, PT2E rounds its float32 result half to even; pools follow TFLM's integer rounding. Fed PT2E's own
int8 inputs, every kernel is at most one step off and equals PT2E on 99.0-100% of its outputs (conv, depthwise,
linear and average pools; add, max pool, concat, mul, LUTs and standalone clamps on all of them). In a whole
model those steps compound: an input one step off moves every output whose window covers it, by as many steps as
the layer's weights amplify it, so agreement falls with depth. benchmarks/pt2e.py measures it on 2,000 held-out
MNIST digits (output bytes equal to PT2E with per-tensor / per-channel weights; largest difference in steps):
seed MLP 99.9 / 99.95% (1), MLP 784-128-64-10 99.7 / 99.7% (1), LeNet-5 97.6 / 97.6% (1), DS-CNN with 9 convs
49.9 / 74.5% (4 / 3), MobileNetV1-0.25 with 27 convs 54.5 / 56.9% (14 / 10). Per layer, the DS-CNN (per channel)
equals PT2E on 99.97% of its first conv's outputs, 91.8% after the seventh conv and 80.7% after the ninth. The
predicted class agrees with PT2E on 99.2-100% of digits and int8 accuracy stays within 0.25 points of PT2E's on
every model: the differences are rounding, not errors, but byte equality with PT2E holds only for shallow models.
tinyaot.report.pt2e_agreement measures any model, per layer too (`pt2e_layer_agreement`).
"""
from __future__ import annotations

import math

import numpy as np

from tinyaot.errors import ModelError, UnsupportedOpError
from tinyaot.ir import Graph, Node, QParams, Tensor, ops
from tinyaot.ir.ops import OPS, ops_where
from tinyaot.quantize.lower import (
    FIXED,
    INT8_CONSTANTS,
    SOFTMAX_QPARAMS,
    WEIGHT_AXIS,
    fixed_qparams,
    lower_constant_operands,
)

SAME_QPARAMS = ops_where(qparams=ops.INHERIT, rescales=False)  # PT2E requantizes after them if it must
RESCALING = frozenset(n for n in ops_where(rescales=True) if OPS[n].qparams != ops.WEIGHTED)
MOVES_ONLY = ops_where(moves_only=True)  # a quantize after them holds for their input too
CLAMP_OPS = frozenset(n for n, s in OPS.items() if s.has_clamp and s.qparams != ops.AFTER_LOWERING)
INT32_MAX = 2**31 - 1


def lower_pt2e(g: Graph, act_q: dict, weight_q: dict) -> Graph:
    """The int8 graph: `act_q` maps IR tensor -> QInfo of its quantize node, `weight_q` IR weight -> QInfo."""
    g = _fuse_float_clamps(g, act_q)
    return _Lowering(g, _through_views(g, dict(act_q)), weight_q).run()


def _fuse_float_clamps(g: Graph, act_q: dict) -> Graph:
    """op -> relu -> q with the op's output never quantized: PT2E's fused pattern, one kernel with a clamp.

    An op whose output PT2E did quantize keeps its own output; the ReLU after it then rescales on its own. A new
    graph: `g` is left as it was.
    """
    g = g.copy()
    for act in [n for n in g.nodes if n.op == "relu"]:
        src = act.inputs[0]
        producer = g.producer(src)
        if producer is None or producer.op not in CLAMP_OPS - {"relu"} or producer.attrs.get("clamp"):
            continue
        if src in act_q or len(g.consumers(src)) != 1 or src in g.outputs:
            continue
        fused = producer.with_attrs(clamp=act.attrs["clamp"])
        fused.outputs = list(act.outputs)
        g.nodes[g.nodes.index(producer)] = fused
        g.nodes.remove(act)
    g.prune()
    return g


def _through_views(g: Graph, qinfo: dict) -> dict:
    """view(x) -> q equals q(x) -> view: a view's input with no quantize of its own takes its output's qparams."""
    for node in reversed(g.nodes):
        x, y = node.inputs[0], node.outputs[0]
        if node.op in MOVES_ONLY and y in qinfo and x not in qinfo and len(g.consumers(x)) == 1 and x not in g.outputs:
            qinfo[x] = qinfo[y]
    return qinfo


class _Lowering:
    def __init__(self, g: Graph, qinfo: dict, weight_q: dict):
        self.g = g
        self.qinfo = qinfo
        self.weight_q = weight_q
        self.in_range: set[str] = set()  # int8 tensors already clamped to their quantize node's [quant_min, quant_max]
        self.q = g.replace(tensors={}, nodes=[])

    def run(self) -> Graph:
        for name in self.g.inputs:
            info = self.qinfo.get(name)
            if info is None:
                raise UnsupportedOpError(
                    "the model input is used in float before any quantize: tinyaot compiles int8 end to end, so "
                    "the PT2E graph must quantize its input first (annotate the first op's input in the quantizer)"
                )
            clamp = _range_clamp(info)
            self.in_range.add(name)
            if clamp is None:
                self.q.add_tensor(Tensor(name, self.g.tensor(name).shape, "int8", qparams=info.qparams()))
                continue
            # PT2E's input quantize clamps to [quant_min, quant_max]: so does the compiled model, on its int8 input
            raw = self.tensor(self.fresh(f"{name}_raw"), self.g.tensor(name).shape, info.qparams())
            self.tensor(name, self.g.tensor(name).shape, info.qparams())
            self.q.nodes.append(Node("relu", f"{name}_range", [raw], [name], {"clamp": clamp}, "input quantize"))
            self.q.inputs = [raw if i == name else i for i in self.q.inputs]
        for node in self.g.nodes:
            self.lower(node)
        self.q.prune()
        return self.q

    # -- helpers --
    def qp(self, name: str, node: Node) -> QParams:
        t = self.q.tensors.get(name)
        if t is None or t.qparams is None:
            raise self.float_error(node, f"its input '{name}' is float")
        return t.qparams

    def float_error(self, node: Node, what: str) -> UnsupportedOpError:
        return UnsupportedOpError(
            f"layer '{node.name}' ({node.op}) at {node.source or '(no source location recorded)'}: {what}, so the "
            "PT2E graph runs float math here between quantize/dequantize pairs. tinyaot never runs float at run "
            "time: quantize this op's output in the quantizer (an output QuantizationSpec for it, or fuse it "
            "into the op before it) and re-run prepare_pt2e / convert_pt2e"
        )

    def tensor(self, name: str, shape, qp: QParams) -> str:
        self.q.add_tensor(Tensor(name, tuple(shape), "int8", qparams=qp))
        return name

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.q.tensors or name in self.g.tensors:
            name = f"{base}_{k}"
            k += 1
        return name

    def emit(self, node: Node, op: str, inputs: list[str], out: str, qp: QParams, attrs: dict, info=None,
             suffix: str = ""):
        """One int8 node; the narrower int8 range of a quantize node (`info`) becomes a clamp (a relu node if `op`
        has none), as PT2E's quantize clamps to [quant_min, quant_max]."""
        clamp = _range_clamp(info)
        if info is not None:
            self.in_range.add(out)
        if clamp is not None and op == "quantize":  # relu requantizes and clamps in one kernel
            op, attrs = "relu", {}
        shape = self.g.tensor(out).shape
        attrs = dict(attrs)
        if clamp is not None and op in CLAMP_OPS:
            attrs["clamp"] = _intersect(attrs.get("clamp"), clamp)
            clamp = None
        target = out if clamp is None else self.fresh(f"{out}_unclamped")
        self.tensor(target, shape, qp)
        self.q.nodes.append(Node(op, node.name + suffix, list(inputs), [target], attrs, node.source))
        if clamp is not None:
            self.q.nodes.append(Node("relu", f"{node.name}{suffix}_range", [target], [out], {"clamp": clamp},
                                     node.source))
            self.tensor(out, shape, qp)

    # -- ops --
    def lower(self, node: Node) -> None:
        op, out = node.op, node.outputs[0]
        activations = [i for i in node.inputs if not self.g.tensor(i).is_const]
        in_qps = [self.qp(i, node) for i in activations]
        info = self.qinfo.get(out)
        if op in WEIGHT_AXIS:
            if info is None:
                raise self.float_error(node, "its output is never quantized")
            w, b = self.weights(node, in_qps[0])
            self.emit(node, op, [node.inputs[0], w, b], out, info.qparams(), node.attrs, info)
        elif _is_global(node, self.g):
            self.global_average(node, in_qps[0], info)
        elif op in RESCALING:
            if info is None:
                raise self.float_error(node, "its output is never quantized")
            if op in INT8_CONSTANTS:  # an element-wise op's constant operand (PReLU's alpha): int8, as in PTQ
                lower_constant_operands(self.g, self.q, node)
            for c in (c for c in node.inputs if self.g.tensor(c).is_const and c not in self.q.tensors):
                self.q.add_tensor(self.g.tensor(c))  # float constants its prepare folds (layer_norm's gamma)
            self.emit(node, op, list(node.inputs), out, info.qparams(), node.attrs, info)
        elif op in SAME_QPARAMS:
            self.keep_then_requantize(node, in_qps[0], info)
        elif op == "softmax":
            self.keep_then_requantize(node, SOFTMAX_QPARAMS, info)
        elif op in FIXED:
            self.keep_then_requantize(node, fixed_qparams(op), info)
        else:
            raise UnsupportedOpError(
                f"layer '{node.name}' ({op}) at {node.source or '(no source location recorded)'} has no int8 "
                f"kernel; PT2E graphs compile ops: {', '.join(sorted(set(WEIGHT_AXIS) | RESCALING | SAME_QPARAMS))}"
                ", softmax"
            )

    def global_average(self, node: Node, x_qp: QParams, info) -> None:
        """Global average pooling. With equal qparams TFLM's avg_pool2d rounds once, (sum + n/2) / n; with other
        output qparams `mean` rescales in one step, as PT2E's float average followed by its quantize does."""
        out, shape = node.outputs[0], self.g.tensor(node.inputs[0]).shape
        clamp = node.attrs.get("clamp")
        if info is None or info.qparams() == x_qp:
            attrs = {"kernel": tuple(shape[1:3]), "stride": tuple(shape[1:3]), "padding": (0, 0, 0, 0),
                     "count_include_pad": False, "clamp": clamp}
            if len(self.g.tensor(out).shape) == 4:
                self.emit(node, "avg_pool2d", list(node.inputs), out, x_qp, attrs, info)
                return
            mid = self.fresh(f"{out}_4d")  # mean without keepdim: pool to [N, 1, 1, C], then a view
            self.tensor(mid, (shape[0], 1, 1, shape[3]), x_qp)
            self.q.nodes.append(Node("avg_pool2d", node.name, list(node.inputs), [mid], attrs, node.source))
            self.emit(node, "reshape", [mid], out, x_qp, {}, info, suffix="_view")
        else:
            attrs = {"axes": (1, 2), "keepdims": len(self.g.tensor(out).shape) == 4, "clamp": clamp}
            self.emit(node, "mean", list(node.inputs), out, info.qparams(), attrs, info)

    def keep_then_requantize(self, node: Node, own: QParams, info) -> None:
        """The op computes in `own` qparams; if PT2E quantizes its output differently, requantize after it."""
        out = node.outputs[0]
        if info is None or info.qparams() == own:
            x = node.inputs[0]
            if x in self.in_range and self.qinfo.get(x) == info:  # moving bytes keeps them in range: no clamp
                info = None
                self.in_range.add(out)
            self.emit(node, node.op, list(node.inputs), out, own, node.attrs, info)
            return
        if node.op == "avg_pool2d" and not node.attrs.get("ceil_mode") and (
                node.attrs.get("count_include_pad") or not any(node.attrs.get("padding", ()))):
            self.average_as_depthwise(node, own, info)
            return
        mid = self.fresh(f"{out}_own")
        self.tensor(mid, self.g.tensor(out).shape, own)
        self.q.nodes.append(Node(node.op, node.name, list(node.inputs), [mid], dict(node.attrs), node.source))
        self.emit(node, "quantize", [mid], out, info.qparams(), {}, info, suffix="_requantize")

    def average_as_depthwise(self, node: Node, x_qp: QParams, info) -> None:
        """An average pool PT2E quantizes with other qparams, as one rounding: a depthwise conv whose weights are all
        127 at scale 1 / (127 * window), so the int32 sum is rescaled once to the output (no pool-then-requantize
        double rounding). Taps in the padding add zero, as count_include_pad=True divides by the whole window."""
        kh, kw = node.attrs["kernel"]
        c = self.g.tensor(node.inputs[0]).shape[3]
        w_scale = float(np.float32(1.0 / (127 * kh * kw)))
        w = self.fresh(f"{node.name}_window")
        self.q.add_tensor(Tensor(w, (1, kh, kw, c), "int8", data=np.full((1, kh, kw, c), 127, np.int8),
                                 qparams=QParams.per_tensor(w_scale, 0)))
        b = self.fresh(f"{node.name}_zero_bias")
        self.q.add_tensor(Tensor(b, (c,), "int32", data=np.zeros(c, np.int32),
                                 qparams=QParams.per_tensor(float(np.float32(x_qp.scale[0] * w_scale)), 0)))
        attrs = {"stride": tuple(node.attrs.get("stride") or (kh, kw)), "padding": tuple(node.attrs.get("padding",
                 (0, 0, 0, 0))), "dilation": (1, 1), "depth_multiplier": 1, "clamp": node.attrs.get("clamp")}
        self.emit(node, "depthwise_conv2d", [node.inputs[0], w, b], node.outputs[0], info.qparams(), attrs, info)

    def weights(self, node: Node, x_qp: QParams) -> tuple[str, str]:
        """The PT2E int8 weights (exact) and the int32 bias, with the IR's per-channel axis."""
        w_name, b_name = node.inputs[1], node.inputs[2]
        wt, info = self.g.tensor(w_name), self.weight_q.get(w_name)
        if info is None:
            raise self.float_error(node, "its weights are float")
        if any(z != 0 for z in info.zero_point):
            raise UnsupportedOpError(
                f"layer '{node.name}' ({node.op}) at {node.source or '(no source location recorded)'}: weights "
                f"are asymmetric (zero points {sorted(set(info.zero_point))[:4]}); the int8 kernels take symmetric "
                "weights: use qscheme=torch.per_tensor_symmetric or torch.per_channel_symmetric for them"
            )
        axis = WEIGHT_AXIS[node.op]
        out_c = wt.shape[axis]
        if len(info.scale) not in (1, out_c):
            raise ModelError(f"layer '{node.name}': {len(info.scale)} weight scales for {out_c} output channels")
        scales = np.asarray(info.scale, np.float64)
        bshape = [1] * wt.data.ndim
        bshape[axis] = -1
        real = wt.data.astype(np.float64) / (scales.reshape(bshape) if len(scales) > 1 else scales[0])
        ints = np.rint(real)
        if np.abs(real - ints).max(initial=0.0) > 1e-3 or ints.min(initial=0) < -128 or ints.max(initial=0) > 127:
            raise ModelError(f"layer '{node.name}': its dequantized weights are not int8 multiples of their scales "
                             "(the PT2E graph's weights were edited after convert_pt2e?)")
        qp = info.qparams(axis)
        self.q.add_tensor(Tensor(w_name, wt.shape, "int8", data=ints.astype(np.int8), qparams=qp))
        bias_scale = float(x_qp.scale[0]) * (scales if len(scales) > 1 else np.full(out_c, scales[0]))
        bias = np.rint(self.g.tensor(b_name).data.astype(np.float64) / bias_scale)
        if np.abs(bias).max(initial=0.0) > INT32_MAX:
            raise ModelError(f"layer '{node.name}': the bias does not fit int32 at scale input_scale * weight_scale "
                             "(the input scale is tiny for this bias); check the input's calibration")
        b_qp = QParams(tuple(float(np.float32(s)) for s in bias_scale), (0,) * out_c, axis=0)
        self.q.add_tensor(Tensor(b_name, (out_c,), "int32", data=bias.astype(np.int32), qparams=b_qp))
        return w_name, b_name


def _is_global(node: Node, g: Graph) -> bool:
    """An average over the whole (unpadded) H x W of an NHWC map: avg_pool2d with one window, or mean (1, 2)."""
    shape, out = g.tensor(node.inputs[0]).shape, g.tensor(node.outputs[0]).shape
    if len(shape) != 4:
        return False
    if node.op == "mean":
        return tuple(sorted(int(a) % 4 for a in node.attrs.get("axes", ()))) == (1, 2) and out[-1] == shape[3]
    return (node.op == "avg_pool2d" and tuple(node.attrs.get("kernel", ())) == tuple(shape[1:3])
            and not any(node.attrs.get("padding", (0,) * 4))
            and tuple(out[1:3]) == (1, 1))


def _range_clamp(info):
    """A quantize node's [quant_min, quant_max] narrower than int8, as a clamp in real units (or None)."""
    if info is None or (info.qmin == -128 and info.qmax == 127):
        return None
    s, zp = info.scale[0], info.zero_point[0]
    lo = -math.inf if info.qmin == -128 else s * (info.qmin - zp)
    hi = math.inf if info.qmax == 127 else s * (info.qmax - zp)
    return (lo, hi)


def _intersect(a, b):
    if a is None:
        return b
    return (max(a[0], b[0]), min(a[1], b[1]))
