"""Residual adds fused into their convs (passes/fuse_residual.py, conv2d_add): the same bits as conv then add,
the sum written over the skip so ResNet-8 holds two feature maps instead of three, and a sum written ahead
of the skip bytes it still needs gives a wrong answer in the reference."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_int8, shared_file

import tinyaot
from tinyaot.frontend.tflite import from_tflite
from tinyaot.ir import Node
from tinyaot.passes.fuse_residual import fuse_residual_adds
from tinyaot.plan import buffers_of, plan_memory
from tinyaot.ref.interpreter import Interpreter

RESNET = "models/mlperf_tiny/pretrainedResnet_quant.tflite"
_cache: dict = {}


def _resnet(optimize: str = "memory"):
    """memory: the plain int8 kernels this file's plan figures are about; speed is checked once below."""
    if optimize not in _cache:
        _cache[optimize] = tinyaot.compile(str(shared_file(RESNET)), name="resnet", optimize=optimize)
    return _cache[optimize]


def _trace(g, plan, x) -> dict[str, np.ndarray]:
    seen: dict[str, np.ndarray] = {}
    Interpreter(g, plan).invoke(x, trace=lambda node, y: seen.__setitem__(node.name, y))
    return seen


def test_resnet8_holds_two_feature_maps():
    """Each block's second conv adds the skip in its epilogue and writes the sum over it: 32x32x16 x 2 =
    32,768 B (33,312 B with the plain add, 49,152 B layer by layer, 55,000 B in TFLM)."""
    cm = _resnet()
    fused = [n for n in cm.graph.nodes if n.op == "conv2d_add"]
    assert [n.name for n in fused] == ["add_3", "add_7", "add_11"]
    assert not any(n.op == "add" for n in cm.graph.nodes)
    assert cm.arena_bytes == 32_768  # issue 4 asks <= 34,000
    assert cm.plan.offset_of("add_3_out") == cm.plan.offset_of("conv2d_0_out")  # the busiest block: sum over skip
    src = cm.c_sources.files["resnet.c"]
    assert src.count("tinyaot_conv2d_add_s8(") == 3 and "tinyaot_add_s8(" not in src
    assert {"conv2d_add_s8.c", "conv2d_s8.c", "add_s8.c"} <= set(cm.c_sources.files)


def test_resnet8_speed_plan_adds_only_the_work_buffers():
    """optimize="speed" (the default): the same fused blocks through the pairs kernel, every conv with its
    work buffer at its own step; 752 B more than memory mode (the work buffers that no gap holds)."""
    cm = _resnet("speed")
    assert [n.name for n in cm.graph.nodes if n.op == "conv2d_add"] == ["add_3", "add_7", "add_11"]
    assert sum(k.variant == "pairs" for k in cm.plan.kernels) == 9 and cm.plan.rings == ()
    assert cm.arena_bytes == 33_520 and cm.lower_bound_bytes == 49_152
    src = cm.c_sources.files["resnet.c"]
    assert src.count("tinyaot_conv2d_add_pairs_s8(") == 3 and src.count("tinyaot_conv2d_pairs_s8(") == 6


def test_fusion_changes_no_bit():
    g = from_tflite(shared_file(RESNET))
    fused = fuse_residual_adds(g)
    assert fused is not None and len(fused.nodes) == len(g.nodes) - 3
    assert "conv2d_2_out" in g.tensors and "conv2d_2_out" not in fused.tensors  # g itself is untouched
    x = random_int8((2, 32, 32, 3), seed=31)
    for sample in x:
        plain = _trace(g, plan_memory(buffers_of(g), len(g.nodes)), sample)
        both = _trace(fused, plan_memory(buffers_of(fused), len(fused.nodes)), sample)
        for name in ("add_3", "add_7", "add_11", "softmax_15"):
            np.testing.assert_array_equal(both[name], plain[name])


def test_a_sum_written_ahead_of_the_skip_gives_a_wrong_answer():
    """Move the first block's sum one pixel above its skip under a lying rule: the reference writes each row
    over skip bytes the next row still reads, and the block's output changes (checked right after its step,
    before any later layer could disturb it)."""
    cm = _resnet()
    g, plan = cm.graph, cm.plan
    lie = tuple(replace(o, distance=-64) if (o.input, o.output) == ("conv2d_0_out", "add_3_out") else o
                for o in plan.overlaps)
    offsets = dict(plan.offsets)
    offsets["add_3_out"] += 64
    moved = replace(plan, overlaps=lie, offsets=offsets, arena_bytes=plan.arena_bytes + 64)
    x = random_int8((1, 32, 32, 3), seed=32)[0]
    assert (_trace(g, moved, x)["add_3"] != _trace(g, plan, x)["add_3"]).any()


def _tiny_block(shared_conv_out: bool):
    """x -> conv a -> conv b; y = a + b, and (optionally) b also feeds a second output path."""
    g = from_tflite(shared_file(RESNET))
    if shared_conv_out:  # conv2d_2's output read twice: not fusable there
        g.nodes.append(Node("relu", "extra", ["conv2d_2_out"], ["extra_out"], {}))
        g.add_tensor(replace(g.tensor("conv2d_2_out"), name="extra_out"))
        g.outputs.append("extra_out")
    return g


def test_only_convs_read_by_the_add_alone_are_fused():
    fused = fuse_residual_adds(_tiny_block(shared_conv_out=True))
    names = {n.name for n in fused.nodes if n.op == "conv2d_add"}
    assert names == {"add_7", "add_11"}  # add_3's conv output also feeds 'extra'
    assert any(n.op == "add" and n.name == "add_3" for n in fused.nodes)


def test_a_fused_node_without_its_attrs_is_refused():
    """The registry validates attributes when the node is made, before any stage reads them."""
    from tinyaot.errors import ModelError

    g = fuse_residual_adds(from_tflite(shared_file(RESNET)))
    node = next(n for n in g.nodes if n.op == "conv2d_add")
    for missing in ("skip_input", "conv_qparams"):
        with pytest.raises(ModelError, match=missing):
            Node(node.op, node.name, node.inputs, node.outputs, {k: v for k, v in node.attrs.items() if k != missing})


@pytest.mark.host
def test_resnet8_fused_in_c_equals_the_reference():
    cm = _resnet()
    x = random_int8((6, 32, 32, 3), seed=33)
    np.testing.assert_array_equal(cm.run(x, engine="host"), cm.run(x, engine="reference"))
