"""Turn a calibrated float graph into an int8 graph: activations int8, weights int8, bias int32.

Which ops choose their own output parameters (from calibration) and which inherit their input's
follows TFLite: pooling, padding, views, transposes and standalone clamps keep the input's scale
and zero point; softmax always outputs scale 1/256, zero point -128 (int16: 1/32768, zero point 0).
"""
from __future__ import annotations

import numpy as np

from tinyaot.diagnostics import Finding
from tinyaot.errors import CalibrationError, UnsupportedOpError
from tinyaot.ir import Graph, Node, QParams, Tensor, ops
from tinyaot.ir.ops import OPS, ops_where
from tinyaot.quantize.mixed import (
    SOFTMAX16_QPARAMS,
    Converter,
    drop_dead_conversions,
    int16_qparams,
    plan_mixed,
    twin_name,
)
from tinyaot.quantize.observers import Range
from tinyaot.quantize.recurrent import lower_recurrent
from tinyaot.quantize.scheme import (
    INT32_MAX,
    INT32_MIN,
    activation_qparams,
    quantize_array,
    quantize_bias,
    quantize_weights_per_channel,
    round_half_away,
)
from tinyaot.quantize.svdf import lower_svdf
from tinyaot.ref.per_channel import DEAD_BIAS_LIMIT, per_channel_multipliers

SOFTMAX_QPARAMS = QParams.per_tensor(1.0 / 256.0, -128)
WEIGHT_AXIS = {name: s.weight_axis for name, s in OPS.items() if s.qparams == ops.WEIGHTED}
INHERIT = ops_where(qparams=ops.INHERIT)
OWN = ops_where(qparams=ops.OWN)
SOFTMAX = ops_where(qparams=ops.SOFTMAX)
FIXED = ops_where(qparams=ops.FIXED)  # output qparams the kernel fixes (OpSpec.fixed_qparams)
INT8_CONSTANTS = ops_where(int8_constants=True)
RECURRENT = ops_where(qparams=ops.RECURRENT)
SVDF = ops_where(qparams=ops.SVDF)
SOFTMAX_MIN_STEP = 2.0**-26  # TFLite Micro's softmax input resolution (beta * scale, Q5.26)


def lower_to_int8(g: Graph, ranges: dict[str, Range], int16=()) -> tuple[Graph, list[Finding]]:
    """The int8 graph, and what had to be clamped on the way (a bias beyond int32, a multiplier out of range).
    `int16`: layers given int16 activations (quantize/mixed.py); their readers run 16x8 kernels."""
    findings: list[Finding] = []
    ranges = _softmax_input_floor(g, ranges)
    q = g.replace(tensors={}, nodes=[])
    mix = plan_mixed(g, int16)
    convert = Converter(q, ranges)
    for name in g.inputs:
        _add_activation(q, g.tensor(name), _qparams_for(ranges, name))
    for node in g.nodes:
        if node.op in RECURRENT:  # weights per gate row and an int16 state (quantize/recurrent.py); int8 input
            x8 = convert.as_int8(node.inputs[0], node.source)
            findings += lower_recurrent(g, q, Node(node.op, node.name, [x8, *node.inputs[1:]], list(node.outputs),
                                                   dict(node.attrs), node.source), ranges)
            continue
        if node.op in SVDF:  # TFLite's converter's SVDF scheme, an int16 state (quantize/svdf.py); int8 input
            x8 = convert.as_int8(node.inputs[0], node.source)
            findings += lower_svdf(g, q, Node(node.op, node.name, [x8, *node.inputs[1:]], list(node.outputs),
                                              dict(node.attrs), node.source), ranges)
            continue
        wide = node.name in mix.nodes  # a 16x8 kernel: int16 activations in and out
        inputs = _rewired(g, node, wide, node.outputs[0] in mix.tensors, convert)
        out = g.tensor(node.outputs[0])
        if node.op in WEIGHT_AXIS:
            qp = int16_qparams(ranges[out.name]) if wide else _qparams_for(ranges, out.name)
            findings += _lower_weighted(g, q, node, WEIGHT_AXIS[node.op], qp, inputs[0])
        elif node.op in INHERIT:
            qp = q.tensor(inputs[0]).qparams
        elif node.op in OWN:
            qp = int16_qparams(ranges[out.name]) if wide else _qparams_for(ranges, out.name)
            if node.op in INT8_CONSTANTS and wide:
                inputs = _lower_int16_constants(g, q, inputs)
            elif node.op in INT8_CONSTANTS:
                lower_constant_operands(g, q, node)
            for c in (c for c in node.inputs if g.tensor(c).is_const and c not in q.tensors):
                q.add_tensor(g.tensor(c))  # float constants its prepare folds into integers (layer_norm's gamma)
        elif node.op in SOFTMAX:
            qp = SOFTMAX16_QPARAMS if wide else SOFTMAX_QPARAMS
        elif node.op in FIXED:
            qp = fixed_qparams(node.op)
        else:
            raise UnsupportedOpError(
                f"op '{node.op}' in layer '{node.name}' ({node.source or 'no source location'}) has no int8 "
                f"lowering; int8 ops available: "
                f"{', '.join(sorted(set(WEIGHT_AXIS) | INHERIT | OWN | SOFTMAX | FIXED | RECURRENT | SVDF))}"
            )
        attrs = dict(node.attrs)
        if wide and out.name not in mix.tensors:  # a 16x8 kernel whose output stays int8: its own int16 twin
            q.add_tensor(Tensor(twin_name(out.name, "int16"), out.shape, "int16", qparams=qp))
            q.nodes.append(Node(node.op, node.name, inputs, [twin_name(out.name, "int16")], attrs, node.source))
            qp8 = SOFTMAX_QPARAMS if node.op in SOFTMAX else _qparams_for(ranges, out.name)
            convert.to_int8_output(node, out, qp8, node.source)
            continue
        dtype = "int16" if wide or (OPS[node.op].view and q.tensor(inputs[0]).dtype == "int16") else "int8"
        q.add_tensor(Tensor(out.name, out.shape, dtype, qparams=qp))
        q.nodes.append(Node(node.op, node.name, inputs, list(node.outputs), attrs, node.source))
    if mix:
        drop_dead_conversions(q)
    return q, findings


def _rewired(g: Graph, node: Node, wide: bool, out16: bool, convert: Converter) -> list[str]:
    """The node's inputs in the precision its kernel reads: int16 twins for a 16x8 kernel, int8 ones for an int8
    kernel reading an int16 tensor; a view passes int16 on unless its output must be int8."""
    def one(name: str) -> str:
        if g.tensor(name).is_const:
            return name
        if wide:
            return convert.as_int16(name, node.source)
        if OPS[node.op].view and out16:
            return name
        return convert.as_int8(name, node.source)
    return [one(i) for i in node.inputs]


def lower_constant_operands(g: Graph, q: Graph, node: Node) -> None:
    """A constant operand of an element-wise op (a learned scale, an added tensor): int8 with per-tensor qparams
    covering its values, as TFLite's converter quantizes a constant input; its kernel reads it from flash. PT2E's
    lowering calls it too (quantize/pt2e_lower.py): PT2E leaves such an operand float."""
    for name in node.inputs:
        t = g.tensor(name)
        if not t.is_const or name in q.tensors or t.dtype != "float32":  # PT2E's may be int8 already
            continue
        data = np.asarray(t.data, dtype=np.float64)
        qp = activation_qparams(float(data.min()), float(data.max()))
        q.add_tensor(Tensor(name, t.shape, "int8", data=quantize_array(data, qp), qparams=qp))


def _lower_int16_constants(g: Graph, q: Graph, inputs: list[str]) -> list[str]:
    """A 16x8 kernel's constant operands: symmetric int16 over their values (an int16 constant, as TFLite's
    16x8 converter writes one); named apart from an int8 twin another layer may read."""
    out = []
    for name in inputs:
        if name not in g.tensors or not g.tensor(name).is_const:  # an activation (perhaps an int16 twin)
            out.append(name)
            continue
        t = g.tensor(name)
        twin = twin_name(name, "int16")
        if twin not in q.tensors:
            data = np.asarray(t.data, dtype=np.float64)
            qp = int16_qparams(Range(float(data.min()), float(data.max())))
            q.add_tensor(Tensor(twin, t.shape, "int16", data=quantize_array(data, qp, "int16"), qparams=qp))
        out.append(twin)
    return out


def _softmax_input_floor(g: Graph, ranges: dict[str, Range]) -> dict[str, Range]:
    """TFLite Micro's softmax reads beta * (x - max) in Q5.26, so its input step must be at least 2**-26 / beta. A
    narrower range (attention scores of a freshly initialised model span 1e-9) rounds every input to one value,
    where the softmax is uniform, as it is in float to within that range: it is widened to 255 such steps, with
    the tensors it takes its qparams from."""
    ranges = dict(ranges)
    for node in (n for n in g.nodes if n.op in SOFTMAX):
        width = 255 * SOFTMAX_MIN_STEP / float(node.attrs.get("beta", 1.0))
        name = node.inputs[0]
        while True:
            r = ranges.get(name)
            if r is not None and r.hi - r.lo < width:
                mid = (r.lo + r.hi) / 2
                ranges[name] = Range(mid - width / 2, mid + width / 2)
            producer = g.producer(name)
            if producer is None or producer.op not in INHERIT or OPS[producer.op].rescales:
                break
            name = producer.inputs[0]  # a view or a move keeps its input's qparams
    return ranges


def fixed_qparams(op: str) -> QParams:
    """The output qparams of an op whose kernel fixes them (qparams trait FIXED)."""
    scale, zero_point = OPS[op].fixed_qparams
    return QParams.per_tensor(scale, zero_point)


def _qparams_for(ranges: dict[str, Range], name: str) -> QParams:
    r = ranges[name]
    return activation_qparams(r.lo, r.hi)


def _add_activation(q: Graph, t: Tensor, qp: QParams) -> Tensor:
    return q.add_tensor(Tensor(t.name, t.shape, "int8", qparams=qp))


def _lower_weighted(g: Graph, q: Graph, node: Node, axis: int, out_qp: QParams, x_name: str) -> list[Finding]:
    """int8 weights per channel; the bias int32 at input scale x weight scale, int64 for an int16 input (16x8)."""
    _, w_name, b_name = node.inputs
    x_q = q.tensor(x_name).qparams
    w_q, w_qp = quantize_weights_per_channel(g.tensor(w_name).data, axis=axis)
    bias = g.tensor(b_name).data
    w_q, w_qp = _negligible_channels_to_zero(g.tensor(w_name).data, w_q, w_qp, bias, q.tensor(x_name), out_qp)
    b_q, b_qp = quantize_bias(bias, x_q.scale[0], np.asarray(w_qp.scale))
    if q.tensor(x_name).dtype == "int16":
        b_q = round_half_away(np.asarray(bias, np.float64) / np.asarray(b_qp.scale)).astype(np.int64)
    q.add_tensor(Tensor(w_name, w_q.shape, "int8", data=w_q, qparams=w_qp))
    q.add_tensor(Tensor(b_name, b_q.shape, str(b_q.dtype), data=b_q, qparams=b_qp))
    return _bias_findings(node, bias, b_qp, x_q) + _multiplier_findings(node, x_q, w_qp, out_qp)


def _negligible_channels_to_zero(w: np.ndarray, w_q: np.ndarray, w_qp: QParams, bias: np.ndarray, x: Tensor,
                                 out_qp: QParams) -> tuple[np.ndarray, QParams]:
    """A channel whose weights cannot move its output by half a step on any input in range (trained models keep
    such dead channels: weights of 1e-30 in the MLPerf VWW float model) gets zero weights at the scale of the
    layer's largest live channel, so it shares their requantization (and their fast kernel, ref/per_channel.py)
    and outputs its bias; the scale grows only as far as a large bias needs to stay below DEAD_BIAS_LIMIT. Scaled
    by its own tiny weights, its bias would overflow int32 and its multiplier underflow to 0."""
    w = np.asarray(w, np.float64)
    axis = w_qp.axis
    reduce_axes = tuple(i for i in range(w.ndim) if i != axis)
    fan_in = w.size // w.shape[axis]
    info = np.iinfo(x.dtype)
    x_scale, x_zp = x.qparams.scale[0], x.qparams.zero_point[0]
    x_abs = x_scale * max(abs(info.min - x_zp), abs(info.max - x_zp))
    reach = (np.abs(w).max(axis=reduce_axes) if reduce_axes else np.abs(w)) * x_abs * fan_in
    dead = reach < out_qp.scale[0] / 2
    if not dead.any() or x_scale <= 0:
        return w_q, w_qp
    scale = np.asarray(w_qp.scale, np.float64).copy()
    shared = scale[~dead].max() if (~dead).any() else out_qp.scale[0] / x_scale / 256
    need = np.abs(np.asarray(bias, np.float64).reshape(-1)) / (x_scale * float(DEAD_BIAS_LIMIT))
    scale[dead] = np.float32(np.maximum(shared, need[dead]))
    w_q = w_q.copy()
    index = [slice(None)] * w.ndim
    index[axis] = np.flatnonzero(dead)
    w_q[tuple(index)] = 0
    return w_q, QParams(tuple(float(s) for s in scale), w_qp.zero_point, axis=axis)


def _bias_findings(node: Node, bias: np.ndarray, b_qp: QParams, x_q: QParams) -> list[Finding]:
    exact = np.asarray(bias, np.float64).reshape(-1) / np.asarray(b_qp.scale)
    over = np.flatnonzero((exact > INT32_MAX) | (exact < INT32_MIN))
    if len(over) == 0:
        return []
    c = int(over[0])
    return [Finding(
        "bias_clamped", node.name,
        f"layer '{node.name}': the bias of {len(over)} output channel(s) (first: channel {c}, {float(bias[c]):.4g}) "
        f"does not fit int32 at scale {b_qp.scale[c]:.3g} (input scale {x_q.scale[0]:.3g} x weight scale) and was "
        "clamped, so those channels are wrong",
        "the input range of this layer is far narrower than its bias: calibrate on representative data (the "
        "input's range is too small), or check the weights of this layer for near-zero channels")]


def _multiplier_findings(node: Node, x_q: QParams, w_qp: QParams, out_qp: QParams) -> list[Finding]:
    reals = [x_q.scale[0] * ws / out_qp.scale[0] for ws in w_qp.scale]
    for ws, real in zip(w_qp.scale, reals):
        if not np.isfinite(real) or real < 0:
            raise CalibrationError(f"layer '{node.name}': its requantization multiplier is {real!r} (input scale "
                                   f"{x_q.scale[0]:.3g}, weight scale {ws:.3g}, output scale {out_qp.scale[0]:.3g}); "
                                   "calibrate on finite, non-constant samples")
    m, shift = per_channel_multipliers(x_q.scale[0], w_qp.scale, out_qp.scale[0], len(reals))  # the kernels' own
    bad = [(c, real) for c, real in enumerate(reals)
           if m[c] == 0 or (shift[c] == 30 and m[c] == INT32_MAX and real > 2.0**30)]
    if not bad:
        return []
    c, real = bad[0]
    what = "underflows to 0 (the channel always outputs its bias)" if real < 1 else "saturates"
    return [Finding(
        "multiplier_clamped", node.name,
        f"layer '{node.name}': the requantization multiplier of {len(bad)} channel(s) (first: channel {c}, "
        f"{real:.3g}) {what}",
        "the output range of this layer does not match its inputs: calibrate on representative data")]
