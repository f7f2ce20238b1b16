"""The op registry is the contract: every op has its attrs spec, traits, reference kernel, C kernel and emitter,
and a one-op graph of it gives the same bytes in the reference and in host C."""
from __future__ import annotations

import importlib
from importlib import resources

import numpy as np
import pytest
from kernel_suite import Case, act, mismatches, one_op_graph, run_host

from tinyaot.errors import ModelError
from tinyaot.ir import Node, QParams, Tensor, ops
from tinyaot.ir.ops import OPS, ops_where
from tinyaot.ir.verify import IRError, verify_graph

RNG = np.random.default_rng(7)
KERNEL_OPS = sorted(n for n, s in OPS.items() if s.ref is not None)


def _weights(name, shape, axis):
    scales = tuple(float(np.float32(s)) for s in RNG.uniform(0.002, 0.01, size=shape[axis]))
    data = RNG.integers(-127, 128, size=shape).astype(np.int8)
    return Tensor(name, shape, "int8", data=data, qparams=QParams(scales, (0,) * len(scales), axis))


def _bias(n, x_scale, w):
    scales = tuple(x_scale * s for s in w.qparams.scale)
    return Tensor("b", (n,), "int32", data=RNG.integers(-2000, 2000, size=n).astype(np.int32),
                  qparams=QParams(scales, (0,) * n, 0))


def _conv(op):
    x = act("x", (1, 5, 5, 3), 0.05, -3)
    w = _weights("w", (4, 3, 3, 3) if op == "conv2d" else (1, 3, 3, 3), 0 if op == "conv2d" else 3)
    c = w.shape[0] if op == "conv2d" else 3
    attrs = {"stride": (1, 1), "padding": (1, 1, 1, 1), "dilation": (1, 1), "clamp": (0.0, float("inf"))}
    if op == "depthwise_conv2d":
        attrs["depth_multiplier"] = 1
    return one_op_graph(op, [x, w, _bias(c, 0.05, w)], act("y", (1, 5, 5, c), 0.04, -20), attrs)


def _conv_add():
    from tinyaot.passes.fuse_residual import fuse_residual_adds

    g = _conv("conv2d")
    g.tensors["y"] = act("y", (1, 5, 5, 4), 0.04, -20)
    s = act("s", (1, 5, 5, 4), 0.03, 5)
    g.add_tensor(s)
    g.add_tensor(act("z", (1, 5, 5, 4), 0.06, -1))
    g.inputs.append("s")
    g.nodes.append(Node("add", "add_0", ["s", "y"], ["z"], {}))
    g.outputs = ["z"]
    fused = fuse_residual_adds(g)
    assert fused is not None and [n.op for n in fused.nodes] == ["conv2d_add"]
    return fused


def _recurrent(op, gates):
    """A one-layer recurrent graph: its second output is the int16 working memory the plan places."""
    x = act("x", (1, 3, 5), 0.05, -3)
    w_ih, w_hh = _weights("w_ih", (gates * 4, 5), 0), _weights("w_hh", (gates * 4, 4), 0)
    biases = [_bias(gates * 4, 0.05, w_ih)] + ([Tensor("b_hh", (12,), "int32", data=RNG.integers(
        -2000, 2000, size=12).astype(np.int32))] if op == "gru" else [])
    g = one_op_graph(op, [x, w_ih, w_hh, *biases], act("y", (1, 3, 4), 0.01, 2), {"hidden": 4})
    g.add_tensor(Tensor("state", (6, 4), "int16", qparams=QParams.per_tensor(2.0**-11, 0)))
    g.nodes[0].outputs.append("state")
    return g


def _svdf():
    """Rank 2, int16 state: the state persists across the suite's samples in the reference and in C alike."""
    x = act("x", (1, 6), 0.05, -3)
    wf = _weights("wf", (4, 6), 0)
    wt = Tensor("wt", (4, 3), "int16", data=RNG.integers(-3000, 3000, size=(4, 3)).astype(np.int16),
                qparams=QParams.per_tensor(float(np.float32(0.002)), 0))
    b = Tensor("b", (2,), "int32", data=RNG.integers(-2000, 2000, size=2).astype(np.int32))
    return one_op_graph("svdf", [x, wf, wt, b], act("y", (1, 2), 0.02, 3),
                        {"rank": 2, "state_qparams": QParams.per_tensor(float(np.float32(0.004)), 0)})


def _fc():
    x = act("x", (1, 8), 0.05, 4)
    w = _weights("w", (4, 8), 0)
    return one_op_graph("fully_connected", [x, w, _bias(4, 0.05, w)], act("y", (1, 4), 0.1, 3), {})


def _unary(op, shape, out, attrs, in_qp=(0.05, -3)):
    return one_op_graph(op, [act("x", shape, *in_qp)], out, attrs)


CASES = {
    "fully_connected": _fc,
    "conv2d": lambda: _conv("conv2d"),
    "depthwise_conv2d": lambda: _conv("depthwise_conv2d"),
    "transpose_conv2d": lambda: one_op_graph(
        "transpose_conv2d", [act("x", (1, 3, 3, 3), 0.05, -3), w := _weights("w", (4, 3, 3, 3), 0), _bias(4, 0.05, w)],
        act("y", (1, 6, 6, 4), 0.04, -20), {"stride": (2, 2), "padding": (1, 1, 1, 1), "output_padding": (1, 1),
                                            "clamp": (0.0, float("inf"))}),
    "conv2d_add": _conv_add,
    "max_pool2d": lambda: _unary("max_pool2d", (1, 4, 4, 3), act("y", (1, 2, 2, 3), 0.05, -3),
                                 {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0)}),
    "avg_pool2d": lambda: _unary("avg_pool2d", (1, 4, 4, 3), act("y", (1, 2, 2, 3), 0.05, -3),
                                 {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0)}),
    "mean": lambda: _unary("mean", (1, 4, 4, 3), act("y", (1, 1, 1, 3), 0.02, 1), {"axes": (1, 2),
                                                                                   "keepdims": True}),
    "add": lambda: one_op_graph("add", [act("a", (1, 4, 3), 0.05, -3), act("b", (1, 4, 3), 0.02, 7)],
                                act("y", (1, 4, 3), 0.06, 0), {}),
    "mul": lambda: one_op_graph("mul", [act("a", (1, 4, 3), 0.05, -3), act("b", (1, 4, 3), 0.02, 7)],
                                act("y", (1, 4, 3), 0.01, 2), {}),
    "sub": lambda: one_op_graph("sub", [act("a", (1, 2, 4, 3), 0.05, -3), act("b", (1, 1, 1, 3), 0.02, 7)],
                                act("y", (1, 2, 4, 3), 0.06, 0), {}),
    "minimum": lambda: one_op_graph("minimum", [act("a", (1, 4, 3), 0.05, -3), Tensor(
        "c", (3,), "int8", data=np.array([-90, 4, 100], np.int8), qparams=QParams.per_tensor(0.02, 7))],
        act("y", (1, 4, 3), 0.04, 1), {}),
    "maximum": lambda: one_op_graph("maximum", [act("a", (1, 4, 1), 0.05, -3), act("b", (1, 1, 3), 0.05, -3)],
                                    act("y", (1, 4, 3), 0.05, -3), {}),
    "concat": lambda: one_op_graph("concat", [act("a", (1, 2, 2, 3), 0.05, -3), act("b", (1, 2, 2, 2), 0.02, 7)],
                                   act("y", (1, 2, 2, 5), 0.05, -3), {"axis": 3}),
    "slice": lambda: _unary("slice", (1, 4, 5, 6), act("y", (1, 2, 5, 2), 0.05, -3),
                             {"begin": (0, 1, 0, 1), "end": (1, 4, 5, 6), "strides": (1, 2, 1, 3)}),
    "pad": lambda: _unary("pad", (1, 3, 3, 2), act("y", (1, 5, 5, 2), 0.05, -3), {"padding": (1, 1, 1, 1)}),
    "resize_nearest": lambda: _unary("resize_nearest", (1, 3, 4, 2), act("y", (1, 6, 7, 2), 0.05, -3),
                                     {"half_pixel_centers": True}),
    "resize_bilinear": lambda: _unary("resize_bilinear", (1, 3, 4, 2), act("y", (1, 6, 7, 2), 0.05, -3),
                                      {"half_pixel_centers": True}),
    "softmax": lambda: _unary("softmax", (1, 10), act("y", (1, 10), 1 / 256, -128), {"beta": 1.0}),
    "l2_normalize": lambda: _unary("l2_normalize", (1, 3, 8), act("y", (1, 3, 8), 1 / 128, 0), {"eps": 1e-12}),
    "lut": lambda: _unary("lut", (1, 16), act("y", (1, 16), 1 / 256, -128), {"function": "sigmoid"}),
    "relu": lambda: _unary("relu", (1, 16), act("y", (1, 16), 0.05, -3), {"clamp": (0.0, float("inf"))}),
    "prelu": lambda: one_op_graph("prelu", [act("x", (1, 2, 4, 3), 0.05, -3), Tensor(
        "alpha", (3,), "int8", data=np.array([-90, 4, 100], np.int8), qparams=QParams.per_tensor(0.01, 7))],
        act("y", (1, 2, 4, 3), 0.04, 1), {}),
    "leaky_relu": lambda: _unary("leaky_relu", (1, 16), act("y", (1, 16), 0.04, 1), {"alpha": -0.3}),
    "transpose": lambda: _unary("transpose", (1, 2, 3, 4), act("y", (1, 4, 2, 3), 0.05, -3), {"perm": (0, 3, 1, 2)}),
    "quantize": lambda: _unary("quantize", (1, 16), act("y", (1, 16), 0.03, 11), {}),
    "sum": lambda: _unary("sum", (1, 3, 4, 2), act("y", (1, 3, 1, 2), 0.2, -3), {"axes": (2,), "keepdims": True}),
    "layer_norm": lambda: one_op_graph(
        "layer_norm", [act("x", (1, 3, 8), 0.05, -3), Tensor("g", (8,), "float32", data=RNG.uniform(-1.5, 1.5, 8)
                                                             .astype(np.float32)),
                       Tensor("be", (8,), "float32", data=RNG.uniform(-0.5, 0.5, 8).astype(np.float32))],
        act("y", (1, 3, 8), 0.03, 2), {"eps": 1e-5}),
    "group_norm": lambda: one_op_graph(
        "group_norm", [act("x", (1, 2, 3, 8), 0.05, -3), Tensor("g", (8,), "float32", data=RNG.uniform(-1.5, 1.5, 8)
                                                                .astype(np.float32)),
                       Tensor("be", (8,), "float32", data=RNG.uniform(-0.5, 0.5, 8).astype(np.float32))],
        act("y", (1, 2, 3, 8), 0.03, 2), {"groups": 2, "eps": 1e-5}),
    "batch_matmul": lambda: one_op_graph("batch_matmul", [act("a", (1, 2, 3, 4), 0.05, -3),
                                                          act("b", (1, 2, 5, 4), 0.04, 7)],
                                         act("y", (1, 2, 3, 5), 0.1, 1), {"adj_y": True}),
    "uint8_to_int8": lambda: one_op_graph(
        "uint8_to_int8", [Tensor("x", (1, 16), "uint8", qparams=QParams.per_tensor(float(np.float32(0.05)), 125))],
        act("y", (1, 16), 0.05, -3), {}),
    "lstm": lambda: _recurrent("lstm", 4),
    "gru": lambda: _recurrent("gru", 3),
    "frame_shift": lambda: _unary("frame_shift", (1, 1, 1, 3), act("y", (1, 1, 4, 3), 0.05, -3), {}),  # 3 kept
    "svdf": _svdf,
}


def test_every_kernel_op_has_a_case_here():
    assert sorted(CASES) == KERNEL_OPS  # a new op gets its one-op graph here


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_op_has_its_spec_and_traits(op):
    s = OPS[op]
    assert issubclass(s.attrs, ops.Attrs) and s.doc and s.operands
    assert s.qparams in (ops.WEIGHTED, ops.OWN, ops.INHERIT, ops.SOFTMAX, ops.FIXED, ops.AFTER_LOWERING,
                         ops.FLOAT_ONLY, ops.RECURRENT, ops.SVDF)
    assert (s.fixed_qparams is not None) == (s.qparams == ops.FIXED)
    assert not s.observed or s.qparams == ops.SVDF  # a float graph's observed output: lowering must drop it
    assert (s.weight_axis is not None) == (s.qparams == ops.WEIGHTED)
    assert s.overlap in (None, "elementwise", "window", "residual", "transposed")
    assert s.macs in (None, "dense", "conv", "depthwise", "transposed", "recurrent", "svdf")
    from tinyaot.plan.state import STATE_FAMILIES

    assert s.state is None or s.state in STATE_FAMILIES  # state kept between invokes: a family plan/state.py knows
    if s.view:
        assert s.ref is None and s.overlap is None
    elif s.qparams != ops.FLOAT_ONLY:
        assert s.ref is not None, f"{op} has no reference kernel"


@pytest.mark.parametrize("op", KERNEL_OPS)
def test_every_kernel_op_has_a_reference_a_c_kernel_and_an_emitter(op):
    from tinyaot.codegen.ops import emitter

    module = importlib.import_module(f"tinyaot.ref.{OPS[op].ref}")
    assert callable(module.prepare) and callable(getattr(module, OPS[op].ref))
    g = CASES[op]()
    emitted = emitter(OPS[op])(g.nodes[0], g, "m", {t: "0" for t in g.tensors})  # read from the spec
    kernels = resources.files("tinyaot").joinpath("c", "kernels")
    assert kernels.joinpath(emitted.kernel_file).is_file(), emitted.kernel_file
    if OPS[op].emit is None:  # the generic call: tinyaot_<ref>(inputs, &params, output) in <ref>.c, or the
        #                       function its Params name (a binary op's broadcast kernel)
        fn = getattr(module.prepare(g.nodes[0], g), "c_kernel", f"tinyaot_{OPS[op].ref}")
        assert emitted.kernel_file == f"{OPS[op].ref}.c" and emitted.call.startswith(f"{fn}(")
        assert f"&m_{g.nodes[0].name}_params" in emitted.call


@pytest.mark.parametrize("op", sorted(n for n, s in OPS.items() if s.s16))
def test_every_16x8_variant_has_a_reference_and_a_c_kernel(op):
    """An op's s16 trait names its 16x8 kernel: ref/<s16>.py (prepare + <s16>) and tinyaot_<s16> in <s16>.c,
    declared in tinyaot_kernels.h with the params struct of its dataclass."""
    from tinyaot.codegen.kernel_header import kernel_header
    from tinyaot.codegen.params import struct_name

    ref = OPS[op].s16
    module = importlib.import_module(f"tinyaot.ref.{ref}")
    assert callable(module.prepare) and callable(getattr(module, ref))
    kernel = resources.files("tinyaot").joinpath("c", "kernels", f"{ref}.c")
    assert f"tinyaot_{ref}(" in kernel.read_text()
    header = resources.files("tinyaot").joinpath("c", "include", "tinyaot_kernels.h").read_text()
    assert f"tinyaot_{ref}(" in header
    params = [v for v in vars(module).values() if isinstance(v, type) and v.__name__.endswith("Params")
              and v.__module__ == module.__name__]
    assert params and kernel_header().fields(struct_name(params[0]))  # test_kernel_params checks the members


VARIANTS = [(op, v) for op, s in sorted(OPS.items()) for v in s.variants]


@pytest.mark.parametrize("op,variant", VARIANTS, ids=[f"{op}-{v.name}" for op, v in VARIANTS])
def test_every_kernel_variant_has_its_home_c_kernel_and_emitter(op, variant):
    """A variant's spec names its parts (ir/variants.py): ref/<home>.py with qualifies (work_bytes unless the
    placement sizes it, run when it writes in its own order), its C function declared in tinyaot_kernels.h and
    defined in its file, the kernel files that file calls, and codegen/<emit>.py emit_<name>."""
    from tinyaot.codegen.ops import variant_emitter
    from tinyaot.ir.variants import OPTIMIZE_MODES, PLAIN, WEIGHT_BYTES

    home = importlib.import_module(f"tinyaot.ref.{variant.home}")
    assert callable(home.qualifies)
    assert variant.placed or callable(home.work_bytes)
    assert not variant.runs_in_arena or callable(home.run)
    kernels = resources.files("tinyaot").joinpath("c", "kernels")
    header = resources.files("tinyaot").joinpath("c", "include", "tinyaot_kernels.h").read_text()
    assert f"{variant.c_kernel}(" in kernels.joinpath(variant.c_file).read_text() and f"{variant.c_kernel}(" in header
    assert all(kernels.joinpath(dep).is_file() for dep in variant.c_deps)
    assert callable(variant_emitter(variant))
    assert set(variant.modes) <= set(OPTIMIZE_MODES) and variant.weights in WEIGHT_BYTES
    assert [v.name for v in OPS[op].variants].count(variant.name) == 1 and variant.name != PLAIN
    assert OPS[op].variant(variant.name) is variant and OPS[op].variant(PLAIN) is None


def test_variants_sharing_a_c_file_agree_on_what_it_calls():
    """Kernel files are copied per file: two variants in one file must name the same dependencies."""
    deps = {}
    for _, v in VARIANTS:
        assert deps.setdefault(v.c_file, v.c_deps) == v.c_deps, v.c_file


def test_a_plan_record_names_an_unknown_variant_clearly():
    from tinyaot.errors import PlanError

    with pytest.raises(PlanError, match="conv2d has no kernel variant 'quads'; it has: pairs, pairs_w8, ring"):
        OPS["conv2d"].variant("quads")


@pytest.mark.parametrize("op", sorted(n for n, s in OPS.items() if s.qparams not in (ops.AFTER_LOWERING,
                                                                                   ops.FLOAT_ONLY)))
def test_every_op_a_float_model_can_hold_has_its_real_definition(op):
    from tinyaot.quantize import float_eval

    module = float_eval if hasattr(float_eval, f"real_{op}") else importlib.import_module(f"tinyaot.ref.{OPS[op].ref}")
    assert float_eval.FLOAT_OPS[op] is getattr(module, f"real_{op}")  # here, or beside its kernel


def test_no_table_of_op_names_outside_the_registry():
    """Stages find an op's parts from its spec (ref module, emitter module, real_<op>), not from their own lists."""
    import ast
    from pathlib import Path

    import tinyaot

    names = set(OPS)
    found = []
    root = Path(tinyaot.__file__).parent
    for path in sorted(root.rglob("*.py")):
        if path.name == "ops.py" and path.parent.name == "ir" or path.relative_to(root).parts[0] == "frontend":
            continue  # the registry itself; front ends map their own op names (aten, TFLite builtins)
        for node in ast.walk(ast.parse(path.read_text())):
            keys = []
            if isinstance(node, ast.Dict):
                keys = node.keys
            elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                keys = node.elts
            ops_named = [k.value for k in keys if isinstance(k, ast.Constant) and k.value in names]
            if len(ops_named) >= 2:
                found.append(f"{path.name}:{node.lineno} {ops_named}")
    assert found == []


@pytest.mark.host
def test_every_kernel_op_one_op_graph_reference_equals_host_c():
    """int8-input cases in one C build (kernel_suite); the uint8 one through its own compiled model."""
    from tinyaot.backend import plan
    from tinyaot.model import CompiledModel
    from tinyaot.result import CompileResult

    cases, others = [], []
    for op in KERNEL_OPS:
        g = CASES[op]()
        verify_graph(g, "the test's construction", quantized=True)
        samples = [RNG.integers(0 if g.tensor(n).dtype == "uint8" else -128, 256 if g.tensor(n).dtype == "uint8"
                                else 128, size=(4, *g.tensor(n).shape)).astype(g.tensor(n).dtype) for n in g.inputs]
        if all(g.tensor(n).dtype == "int8" for n in g.inputs):
            cases.append(Case(f"case_{op}", g, samples))  # not the op name: uint8_to_int8.c is a kernel file
        else:
            others.append((op, g, samples[0]))
    assert mismatches(cases, run_host(cases)) == []
    for op, g, x in others:
        memory = plan(g)
        cm = CompiledModel(CompileResult(f"case_{op}", g, memory, memory))
        np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x, engine="reference"), err_msg=op)


def test_attributes_are_validated_when_the_node_is_made():
    with pytest.raises(ModelError, match="stride must be 2 integers >= 1"):
        Node("conv2d", "c", ["x", "w", "b"], ["y"], {"stride": (0, 1)})
    with pytest.raises(ModelError, match="has no attribute"):
        Node("relu", "r", ["x"], ["y"], {"clmap": (0.0, 6.0)})
    with pytest.raises(ModelError, match="unknown IR op"):
        Node("sort", "s", ["x"], ["y"], {})
    n = Node("conv2d", "c", ["x", "w", "b"], ["y"], {"stride": [2, 2]})
    assert n.attrs["stride"] == (2, 2) and n.attrs.get("clamp") is None and "clamp" not in n.attrs
    clamped = n.with_attrs(clamp=(0.0, 6.0))
    assert clamped.attrs == {"stride": (2, 2), "clamp": (0.0, 6.0)}  # unset attributes stay unset (None)
    assert n.attrs.get("clamp") is None and clamped.inputs is not n.inputs  # a new node: n is left as it was
    assert Node("max_pool2d", "p", ["x"], ["y"], {"kernel": 3}).attrs["kernel"] == (3, 3)
    with pytest.raises(ModelError, match="lo <= hi"):
        n.with_attrs(clamp=(6.0, 0.0))


def test_the_ir_verifier_names_the_stage_and_the_broken_rule():
    g = CASES["max_pool2d"]()
    g.tensors["y"] = act("y", (1, 2, 2, 3), 0.5, 0)  # a pool must keep its input's qparams
    with pytest.raises(IRError, match="(?s)after lowering.*must keep its input's qparams"):
        verify_graph(g, "lowering", quantized=True)
    g = CASES["add"]()
    g.nodes[0].inputs = ["a"]
    with pytest.raises(IRError, match="has 1 operands"):
        verify_graph(g, "a pass", quantized=True)


def test_trait_sets_are_derived_from_the_registry():
    from tinyaot.passes.fuse_activations import FUSABLE_PRODUCERS
    from tinyaot.plan.lifetimes import VIEW_OPS
    from tinyaot.quantize import lower, pt2e_lower
    from tinyaot.ref import interpreter

    assert lower.INHERIT == {"reshape", "max_pool2d", "avg_pool2d", "pad", "transpose", "relu", "resize_nearest",
                             "resize_bilinear", "slice"}
    assert pt2e_lower.SAME_QPARAMS == lower.INHERIT - {"relu"}  # relu rescales: PT2E gives it its own qparams
    assert VIEW_OPS == interpreter.VIEW_OPS == ops_where(view=True) == {"reshape"}
    assert FUSABLE_PRODUCERS == ops_where(fuses_clamp=True)
    assert set(interpreter.KERNELS) == set(KERNEL_OPS)
