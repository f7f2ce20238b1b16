"""The op registry: every op's name, operands, typed attributes and traits, in one executable place.

Each stage reads what it needs from here rather than keeping its own list of op names: the quantizer asks how an
op's output qparams are chosen, the fusion pass which ops take a clamp, the planner which ops are views or may
run in place, the reference interpreter and the code generator which kernel an op runs, and which kernel
variants the plan may choose instead (ir/variants.py). Adding an op is one OpSpec here (its attrs dataclass,
ir/attrs.py, and traits), a converter per front end, a reference kernel (ref/<kernel>.py: prepare + <kernel>) and
its C kernel with its params struct; the generic emitter writes the call (an op needing more names its own
emitter); docs/ARCHITECTURE.md walks through it.

Conventions shared by all front ends (PyTorch, TFLite, PT2E) and all backends:
- Activations are NHWC (4-D) or [batch, features] (2-D). A PyTorch NCHW model is converted to NHWC
  at import time; the graph's `layout` says what layout the model's input is fed in.
- Quantized graphs: activations int8 with per-tensor QParams; weights int8 symmetric per output
  channel (QParams.axis = the output-channel axis); bias int32 with scale in_scale * w_scale[c].
- Scales are float32 values (stored as Python floats), as in a .tflite file; multipliers are
  computed from them in double precision, as TFLite Micro does.
- A fused activation is the attribute `clamp`: None or (lo, hi) in real units, hi may be inf.
  relu -> (0, inf), relu6 -> (0, 6), hardtanh(a, b) / clamp(a, b) -> (a, b). Kernels clamp to
  [max(-128, zp + round(lo / scale)), min(127, zp + round(hi / scale))] (TFLite's rule).
- Padding is explicit: (top, bottom, left, right) in pixels. Strides and dilations are (h, w).
"""
from __future__ import annotations

from dataclasses import dataclass

from tinyaot.errors import ModelError, PlanError
from tinyaot.ir.attrs import PAD_MODES as PAD_MODES  # its users' import path from before attrs.py
from tinyaot.ir.attrs import (
    AttrError,
    Attrs,
    AvgPoolAttrs,
    BatchMatmulAttrs,
    BatchNormAttrs,
    ClampAttrs,
    ConcatAttrs,
    ConvAddAttrs,
    ConvAttrs,
    DepthwiseAttrs,
    GroupNormAttrs,
    L2NormAttrs,
    LayerNormAttrs,
    LeakyReluAttrs,
    LutAttrs,
    MaxPoolAttrs,
    MeanAttrs,
    NoAttrs,
    PadAttrs,
    RecurrentAttrs,
    ReluAttrs,
    ResizeAttrs,
    SliceAttrs,
    SoftmaxAttrs,
    SvdfAttrs,
    TransposeAttrs,
    TransposeConvAttrs,
)
from tinyaot.ir.variants import (
    CONV2D_ADD_VARIANTS,
    CONV2D_VARIANTS,
    DEPTHWISE_VARIANTS,
    FULLY_CONNECTED_VARIANTS,
    PLAIN,
    KernelVariant,
)

RELU = (0.0, float("inf"))
RELU6 = (0.0, 6.0)


# --- traits -------------------------------------------------------------------------------------------------

# How lowering chooses an op's output qparams.
WEIGHTED = "weighted"  # from calibration; int8 weights per output channel along `weight_axis`, int32 bias
OWN = "own"  # from calibration
INHERIT = "inherit"  # the input's (the int8 values mean the same reals)
SOFTMAX = "softmax"  # fixed: scale 1/256, zero point -128 (TFLite's)
FIXED = "fixed"  # fixed by the kernel whatever the data: OpSpec.fixed_qparams (l2_normalize's 1/128, 0)
AFTER_LOWERING = "after lowering"  # made by a pass on the int8 graph, never lowered
FLOAT_ONLY = "float only"  # folded away before lowering
RECURRENT = "recurrent"  # quantize/recurrent.py: weights per gate row, the output's from calibration, the state's
#                         power-of-two scale from the calibrated range of the float graph's second output
SVDF = "svdf"  # quantize/svdf.py, TFLite's converter's SVDF scheme: the int16 state's symmetric scale from the
#               calibrated range of the float graph's observed output (the feature activations), the output's from
#               calibration


@dataclass(frozen=True)
class OpSpec:
    name: str
    operands: tuple[str, ...]  # documentation of the inputs, in order ("..." = any number more)
    attrs: type[Attrs]
    doc: str
    qparams: str  # one of the constants above
    rescales: bool = False  # the int8 kernel accepts output qparams other than its input's
    weight_axis: int | None = None  # output-channel axis of the weight (operand 1)
    fuses_clamp: bool = False  # a following relu / clamp folds into this op's kernel
    view: bool = False  # no kernel: the output is another name for the input's bytes
    moves_only: bool = False  # output values are input values rearranged (qparams pass through)
    overlap: str | None = None  # in-place rule family (plan/overlap.py): elementwise | window | residual |
    #                              transposed
    macs: str | None = None  # work measure (report/macs.py): dense | conv | depthwise | transposed | recurrent
    ref: str | None = None  # reference kernel module ref/<ref>.py (prepare + <ref>); None for views
    emit: str | None = None  # codegen/<emit>.py:emit_<op>, when the generic call (inputs, &params, outputs) of
    #                           C kernel tinyaot_<ref> in c/kernels/<ref>.c is not enough
    title: str | None = None  # how the generated C's layer comments name the op ("Conv2d 3x3 /2")
    int8_constants: bool = False  # a constant operand is lowered to int8 with its own per-tensor qparams (from
    #                               its values) and read from flash by the kernel
    work_rows: int = 0  # > 0: a second output, the kernel's int16 working memory of work_rows x hidden values
    #                     (a recurrent layer's state within one invoke; not `state`, which survives invokes),
    #                     which no op reads: the plan places it in the arena, live at the layer's step
    s16: str | None = None  # the 16x8 variant (int16 activations, int8 weights, TFLite's 16x8 scheme): module
    #                         ref/<s16>.py and C kernel tinyaot_<s16> in c/kernels/<s16>.c, run for a node whose
    #                         first input or output is int16 (kernel_ref); None: the op takes int8 only
    state: str | None = None  # the op keeps bytes across invokes in the state region (plan/state.py family:
    #                            "window", the last frames a causal conv reads; "hidden" / "hidden_and_cell", a
    #                            recurrent layer's int16 state; "svdf", an SVDF's activation state); its kernel
    #                            takes them last. An op whose attrs have `stateful` keeps them only when that is
    #                            set (state_family)
    observed: bool = False  # in a float graph the node has a second output that only calibration reads (an SVDF's
    #                          feature activations, the values its state keeps), which lowering drops
    s16_by_input: bool = False  # the 16x8 variant runs for an int16 input only: an int8 input with an int16
    #                             output runs the int8 kernel, which then writes int16 (TFLM's int8 -> int16 softmax)
    variants: tuple[KernelVariant, ...] = ()  # kernels the plan may run it as instead of `ref` (ir/variants.py), in
    #                                           the order it tries them
    fixed_qparams: tuple[float, int] | None = None  # qparams FIXED: the output's (scale, zero point)
    split: str | None = None  # compile(cores=2) may share it between two cores (plan/cores.py): by output "rows" or
    #                          "channels", each core's kernel call given its half

    @property
    def outputs(self) -> int:
        return 2 if self.work_rows else 1

    @property
    def has_clamp(self) -> bool:
        return "clamp" in self.attrs._names()

    def variant(self, name: str) -> KernelVariant | None:
        """The variant a plan's record names; None for PLAIN (the op's own kernel). An unknown name is a plan
        that does not fit this registry: tinyaot's bug."""
        if name == PLAIN:
            return None
        for v in self.variants:
            if v.name == name:
                return v
        raise PlanError(f"{self.name} has no kernel variant {name!r}; it has: "
                        f"{', '.join(v.name for v in self.variants) or 'none'}")


def _spec(name, operands, attrs, doc, qparams, **traits) -> OpSpec:
    return OpSpec(name, operands, attrs, doc, qparams, **traits)


_SPECS = (
    _spec("fully_connected", ("x", "weight[out, in]", "bias[out]"), ClampAttrs,
          "y = x @ weight.T + bias over the last axis", WEIGHTED, weight_axis=0, fuses_clamp=True, macs="dense",
          ref="fully_connected_s8", s16="fully_connected_s16", emit="emit_conv", title="Linear",
          variants=FULLY_CONNECTED_VARIANTS, split="channels"),
    _spec("conv2d", ("x NHWC", "weight[out, kh, kw, in / groups]", "bias[out]"), ConvAttrs, "2-D convolution; "
          "grouped when the weight's input depth is in / groups (TFLite's rule)",
          WEIGHTED, weight_axis=0, fuses_clamp=True, overlap="window", macs="conv", ref="conv2d_s8",
          emit="emit_conv", title="Conv2d", s16="conv2d_s16", variants=CONV2D_VARIANTS, split="rows"),
    _spec("transpose_conv2d", ("x NHWC", "weight[out, kh, kw, in]", "bias[out]"), TransposeConvAttrs,
          "transposed convolution (TFLite's TRANSPOSE_CONV, PyTorch's ConvTranspose2d, groups = dilation = 1)",
          WEIGHTED, weight_axis=0, fuses_clamp=True, overlap="transposed", macs="transposed", ref="transpose_conv2d_s8",
          title="ConvTranspose2d"),
    _spec("depthwise_conv2d", ("x NHWC", "weight[1, kh, kw, in * multiplier]", "bias[in * multiplier]"),
          DepthwiseAttrs, "depthwise convolution (groups = in_channels)", WEIGHTED, weight_axis=3,
          fuses_clamp=True, overlap="window", macs="depthwise", ref="depthwise_conv2d_s8",
          title="DepthwiseConv2d", s16="depthwise_conv2d_s16", variants=DEPTHWISE_VARIANTS, split="rows"),
    _spec("max_pool2d", ("x NHWC",), MaxPoolAttrs, "max pooling; padding never wins; output keeps the input's "
          "qparams", INHERIT, fuses_clamp=True, overlap="window", ref="max_pool2d_s8", s16="max_pool2d_s16",
          title="MaxPool", split="rows"),
    _spec("avg_pool2d", ("x NHWC",), AvgPoolAttrs, "average pooling", INHERIT, fuses_clamp=True,
          overlap="window", ref="avg_pool2d_s8", s16="avg_pool2d_s16", title="AvgPool", split="rows"),
    _spec("mean", ("x",), MeanAttrs, "mean over a run of consecutive axes ((1, 2) of NHWC: global average "
          "pooling); clamp optional", OWN, rescales=True, ref="mean_s8", s16="mean_s16"),
    _spec("sum", ("x",), MeanAttrs, "sum over a run of consecutive axes (the mean's kernel without 1 / count); "
          "clamp optional; 16x8: TFLM's int16 SUM", OWN, rescales=True, ref="mean_s8", s16="mean_s16", title="Sum"),
    _spec("add", ("a", "b"), ClampAttrs, "elementwise add with rescaling (TFLite's ADD); NumPy broadcasting up to "
          "4-D; one operand may be constant", OWN, rescales=True, fuses_clamp=True, overlap="elementwise",
          ref="add_s8", s16="add_s16", int8_constants=True),
    _spec("sub", ("a", "b"), ClampAttrs, "a - b with rescaling (TFLite's SUB: the add kernel with the second scaled "
          "operand subtracted); NumPy broadcasting up to 4-D; one operand may be constant", OWN, rescales=True,
          fuses_clamp=True, overlap="elementwise", ref="add_s8", s16="add_s16", int8_constants=True),
    _spec("minimum", ("a", "b"), ClampAttrs, "elementwise minimum (TFLite's MINIMUM); an operand with other "
          "qparams than the output's is requantized first; NumPy broadcasting up to 4-D; one operand may be "
          "constant", OWN, rescales=True, fuses_clamp=True, overlap="elementwise", ref="minmax_s8",
          int8_constants=True),
    _spec("maximum", ("a", "b"), ClampAttrs, "elementwise maximum (TFLite's MAXIMUM), as minimum", OWN,
          rescales=True, fuses_clamp=True, overlap="elementwise", ref="minmax_s8", int8_constants=True),
    _spec("conv2d_add", ("x NHWC", "weight[out, kh, kw, in]", "bias[out]", "skip (the output's shape)"),
          ConvAddAttrs, "add(skip, conv2d(x)) fused (passes/fuse_residual.py): the conv rounds to conv_qparams "
          "and conv_clamp, then int8 add with clamp; skip_input 1|2 is the skip's operand slot", AFTER_LOWERING,
          overlap="residual", macs="conv", ref="conv2d_add_s8",
          emit="emit_residual", variants=CONV2D_ADD_VARIANTS, split="rows"),
    _spec("mul", ("a", "b"), ClampAttrs, "elementwise multiply with rescaling; NumPy broadcasting up to 4-D; one "
          "operand may be constant", OWN, rescales=True, fuses_clamp=True, overlap="elementwise", ref="mul_s8",
          s16="mul_s16", int8_constants=True),
    _spec("concat", ("x0", "x1", "..."), ConcatAttrs, "concatenation along any axis; inputs with other qparams "
          "are requantized; inputs may be constant (a class token)", OWN, rescales=True, ref="concat_s8",
          emit="emit_misc", s16="concat_s16", int8_constants=True),
    _spec("slice", ("x",), SliceAttrs, "x[begin:end:step] along every axis (any rank; any axis but the batch, "
          "axis 0, which it takes whole; PyTorch's slicing, narrow, select, split and chunk): moves bytes, keeps the "
          "input's qparams (no requantization); one run of its input is read in place where the plan finds that "
          "free (plan/lifetimes.py)", INHERIT,
          moves_only=True, ref="slice_s8", s16="slice_s16", title="Slice"),
    _spec("pad", ("x NHWC",), PadAttrs, "spatial padding (top, bottom, left, right) >= 0; mode constant (the zero "
          "point, real 0), reflect, symmetric or replicate", INHERIT, ref="pad_s8", s16="pad_s16"),
    _spec("resize_nearest", ("x NHWC",), ResizeAttrs, "nearest-neighbour resize of H and W to the output's, "
          "TFLite's RESIZE_NEAREST_NEIGHBOR (align_corners, half_pixel_centers)", INHERIT, moves_only=True,
          ref="resize_nearest_s8", s16="resize_nearest_s16", title="ResizeNearest"),
    _spec("resize_bilinear", ("x NHWC",), ResizeAttrs, "bilinear resize of H and W to the output's, TFLite's "
          "integer RESIZE_BILINEAR (10-bit source coordinates; align_corners, half_pixel_centers)", INHERIT,
          ref="resize_bilinear_s8", title="ResizeBilinear"),
    _spec("softmax", ("x",), SoftmaxAttrs, "softmax over the last axis; int8 output scale 1/256, zp -128; from an "
          "int8 input also int16 output, scale 1/65536, zp -32768 (TFLM's int8 -> int16 softmax)",
          SOFTMAX, ref="softmax_s8", s16="softmax_s16", s16_by_input=True),
    _spec("l2_normalize", ("x",), L2NormAttrs, "x / ||x|| over the last axis (PyTorch's F.normalize, TFLite's "
          "L2_NORMALIZATION) with TFLite Micro's integer kernel: int8, output scale 1/128 and zero point 0 (so 1.0 "
          "comes out as 127 / 128); eps floors the norm in the float definition only", FIXED,
          fixed_qparams=(1.0 / 128.0, 0), ref="l2_normalize_s8", title="L2Normalize"),
    _spec("lut", ("x",), LutAttrs, "elementwise function via a 256-entry int8 table; function: sigmoid, tanh, "
          "hardswish, hardsigmoid, silu, gelu (erf form), gelu_tanh (the real function, rounded), affine "
          "(x * scale_by + offset), or tflm_logistic, tflm_tanh, tflm_hard_swish (TFLite Micro's integer kernels, "
          "bit-exact); clamp optional; on int16, TFLM's int16 LOGISTIC / TANH or a 513-entry interpolated table",
          OWN, rescales=True, fuses_clamp=True, overlap="elementwise", ref="lut_s8", s16="lut_s16"),
    _spec("relu", ("x",), ReluAttrs, "standalone clamp when it cannot fuse into a producer; clamp required; "
          "rescales if qparams differ", INHERIT, rescales=True, overlap="elementwise", ref="relu_s8",
          s16="relu_s16"),
    _spec("prelu", ("x", "alpha (constant; broadcasts to x, e.g. one per channel, the last axis)"), NoAttrs,
          "x where x >= 0, alpha * x below, TFLite Micro's int8 PRELU: the input's offset taken off, then one "
          "requantization by input_scale / output_scale (x >= its zero point) or of x * alpha by input_scale * "
          "alpha_scale / output_scale", OWN, rescales=True, overlap="elementwise", ref="prelu_s8",
          int8_constants=True, title="PReLU"),
    _spec("leaky_relu", ("x",), LeakyReluAttrs, "x where x >= 0, alpha * x below with one alpha, TFLite Micro's "
          "int8 LEAKY_RELU: prelu's kernel with one alpha of 1 and the multiplier input_scale * alpha / "
          "output_scale (negative for a negative alpha); 16x8: TFLM's int16 LEAKY_RELU", OWN, rescales=True,
          overlap="elementwise", ref="prelu_s8", s16="leaky_relu_s16", title="LeakyReLU"),
    _spec("reshape", ("x",), NoAttrs, "a view: same bytes, new shape", INHERIT, view=True, moves_only=True),
    _spec("transpose", ("x",), TransposeAttrs, "moves bytes (2-D to 4-D); only where a view cannot do", INHERIT,
          moves_only=True, ref="transpose_s8", s16="transpose_s16"),
    _spec("quantize", ("x",), NoAttrs, "requantize int8 -> int8 with other qparams, or a legacy .tflite's uint8 "
          "input / output to / from int8; between int8, int16 (16x8) and int32 tensors (TFLM's QUANTIZE between "
          "integer types), the 16x8 variant", OWN, rescales=True, overlap="elementwise",
          ref="requantize_s8", s16="requantize_s16"),
    _spec("frame_shift", ("frame [1, 1, 1, C]",), NoAttrs, "streaming (passes/streaming.py): the output is the "
          "window [1, 1, K, C] of the last K - 1 frames, kept in the state region, then the new frame; the state "
          "moves on by one frame", AFTER_LOWERING, moves_only=True, ref="frame_shift_s8", emit="emit_stream",
          state="window", title="FrameShift"),
    _spec("uint8_to_int8", ("x uint8",), NoAttrs, "uint8 input -> int8 (q - 128), in place "
          "(passes/uint8_input.py)", AFTER_LOWERING, overlap="elementwise", ref="uint8_to_int8"),
    _spec("layer_norm", ("x", "gamma[D] (float)", "beta[D] (float)"), LayerNormAttrs, "layer normalization over "
          "the last axis (D): integer mean, variance and reciprocal square root, then the per-channel affine "
          "gamma, beta folded into per-channel requantization constants", OWN, rescales=True, ref="layer_norm_s8",
          title="LayerNorm"),
    _spec("group_norm", ("x (channels last)", "gamma[C] (float)", "beta[C] (float)"), GroupNormAttrs, "group "
          "normalization: each of `groups` groups of the channels (the last axis) over all positions of a sample, "
          "then the per-channel affine; layer_norm's integer kernel", OWN, rescales=True, ref="layer_norm_s8",
          title="GroupNorm"),
    _spec("batch_matmul", ("lhs [..., M, K]", "rhs [..., K, N]"), BatchMatmulAttrs, "matrix product of two "
          "activations over the last two axes (TFLite BATCH_MATMUL: zero points, int32 accumulate, one per-tensor "
          "requantization); batch axes broadcast; adj_x / adj_y: an operand stored transposed; lhs_perm / rhs_perm: "
          "an operand stored permuted (a folded transpose)", OWN,
          rescales=True, ref="batch_matmul_s8", title="BatchMatMul"),
    _spec("lstm", ("x [1, T, F]", "weight_ih[4H, F] (gates i, f, g, o)", "weight_hh[4H, H]", "bias[4H]"),
          RecurrentAttrs, "one unidirectional LSTM layer over the sequence (TFLite Micro's integer "
          "UNIDIRECTIONAL_SEQUENCE_LSTM: int16 gates in Q3.12, its int16 sigmoid / tanh, int16 cell state at a "
          "power-of-two scale, int8 hidden state); output [1, T, H], or [1, H] when last_only; second output: the "
          "float cell state (calibration), int16 working memory after lowering; stateful: the state carries over "
          "from the last invoke. The 16x8 variant (int16 input and hidden state, int64 gate biases): TFLM's 16x8 "
          "LSTM, for imported .tflite models (tinyaot's PTQ keeps recurrent layers int8)",
          RECURRENT, work_rows=6, macs="recurrent", ref="lstm_s8", s16="lstm_s16", emit="emit_recurrent",
          state="hidden_and_cell", title="LSTM"),
    _spec("gru", ("x [1, T, F]", "weight_ih[3H, F] (gates r, z, n)", "weight_hh[3H, H]", "bias_ih[3H]",
                  "bias_hh[3H]"), RecurrentAttrs, "one unidirectional GRU layer over the sequence (PyTorch's GRU, "
          "tinyaot's integer definition from the lstm's blocks: int16 Q3.12 gates, TFLM's int16 sigmoid / tanh, "
          "int16 hidden state at a power-of-two scale beside the int8 one); output [1, T, H], or [1, H] when "
          "last_only; second output: the float hidden state (calibration), int16 working memory after lowering; "
          "stateful: the state carries over from the last invoke", RECURRENT, work_rows=6, macs="recurrent",
          ref="gru_s8", emit="emit_recurrent", state="hidden", title="GRU"),
    _spec("svdf", ("x [batches, F]", "weights_feature[filters, F]", "weights_time[filters, memory] (int16 or int8)",
                   "bias[filters / rank]"), SvdfAttrs, "TFLite's SVDF with TFLite Micro's integer semantics: each "
          "invoke shifts every filter's activation state (kept in the state region across invokes, TFLite's variable "
          "tensor) by one, appends the requantized feature dot product, takes the dot product with weights_time, "
          "sums rank filters per unit with the bias and requantizes to int8; in a float graph (a float .tflite) the "
          "second output is the feature activations, whose calibrated range gives the int16 state its scale",
          SVDF, rescales=True, macs="svdf", ref="svdf_s8", emit="emit_stream", state="svdf", observed=True,
          title="SVDF"),
    _spec("batch_norm", ("x", "scale", "shift"), BatchNormAttrs, "y = x * scale + shift per channel; folded "
          "into the producing conv or linear (passes/fold_batch_norm.py)", FLOAT_ONLY),
)

OPS: dict[str, OpSpec] = {s.name: s for s in _SPECS}


def spec(op: str) -> OpSpec:
    try:
        return OPS[op]
    except KeyError:
        raise ModelError(f"unknown IR op {op!r}; the IR has: {', '.join(sorted(OPS))}") from None


WIDE_DTYPES = ("int16", "int32")  # activations wider than int8: TFLite's 16x8 ones, and QUANTIZE's int32
# The (input, output) types of a `quantize` node besides int8 -> int8: TFLM's QUANTIZE between integer types
# (PrepareQuantizeReference), which its 16x8 variant runs (ref/requantize_s16.py)
WIDE_CONVERSIONS = frozenset({("int8", "int16"), ("int8", "int32"), ("int16", "int8"), ("int16", "int16"),
                              ("int16", "int32"), ("int32", "int8"), ("int32", "int16")})


def kernel_ref(node, g) -> str | None:
    """The reference module (and C kernel) that runs `node`: the spec's 16x8 variant when its first input or
    output is int16 (or int32: QUANTIZE), else its int8 one; an op with `s16_by_input` reads its input's type only.
    An int16 tensor reaching an op without a 16x8 variant is refused."""
    s = spec(node.op)
    if s.ref is None:
        return None
    ends = [g.tensor(t) for t in node.inputs[:1]]
    if not s.s16_by_input:
        ends.append(g.tensor(node.outputs[0]))
    if not any(t.dtype in WIDE_DTYPES for t in ends):
        return s.ref
    if s.s16 is None:
        raise ModelError(f"layer {node.name!r} ({node.op}) has int16 activations, but {node.op} has no 16x8 "
                         f"kernel; the ops with one: {', '.join(ops_with_16x8()) or 'none'}. Keep this layer int8.")
    return s.s16


def state_family(node) -> str | None:
    """The plan/state.py family of the bytes `node` keeps from one invoke to the next, or None: its op's `state`
    trait, which an op with a `stateful` attribute (the recurrent layers) has only when that is set."""
    s = spec(node.op)
    if s.state is None or ("stateful" in s.attrs._names() and not node.attrs.get("stateful")):
        return None
    return s.state


def ops_with_16x8() -> list[str]:
    """The ops whose spec names a 16x8 (int16-activation) kernel, sorted."""
    return sorted(x.name for x in _SPECS if x.s16)


def ops_with_variant(**fields) -> frozenset[str]:
    """The ops with a kernel variant whose fields all equal the given values, e.g. ops_with_variant(placed=True)."""
    return frozenset(s.name for s in _SPECS if any(all(getattr(v, k) == x for k, x in fields.items())
                                                    for v in s.variants))


def ops_where(**traits) -> frozenset[str]:
    """The ops whose traits all equal the given values, e.g. ops_where(view=True)."""
    return frozenset(s.name for s in _SPECS if all(getattr(s, k) == v for k, v in traits.items()))


def make_attrs(op: str, attrs) -> Attrs:
    """Validate `attrs` (a dict, or Attrs of this op) against the op's spec."""
    cls = spec(op).attrs
    if isinstance(attrs, cls):
        return attrs
    given = dict(attrs or {})
    unknown = sorted(set(given) - set(cls._names()))
    if unknown:
        raise AttrError(f"op {op!r} has no attribute(s) {', '.join(unknown)}; it takes: "
                        f"{', '.join(cls._names()) or 'none'}")
    try:
        return cls(**given)
    except (TypeError, ValueError) as exc:
        raise AttrError(f"op {op!r}: bad attributes {given!r}: {exc}") from None
