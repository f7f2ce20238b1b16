"""The CNN kernels against real arithmetic: on the same 60 random one-op graphs per op family as
test_cnn_kernels.py, the int8 reference output is within about one output step of the float op applied to the
dequantized inputs, weights and bias (what the int8 values stand for)."""
from __future__ import annotations

import numpy as np
import pytest
from test_cnn_kernels import GENERATORS, N_HOST, S_HOST, cases

from tinyaot.quantize.float_eval import FLOAT_OPS
from tinyaot.ref.interpreter import KERNELS

# Output steps each family may be off: half a step of output rounding, plus a little for TFLM's double rounding
# in the requantize, add's rescaled operands and softmax's fixed-point exp (measured worst: 0.50-0.52).
BOUND = {"conv2d": 0.6, "depthwise_conv2d": 0.6, "avg_pool2d": 0.5 + 1e-9, "add": 0.6, "softmax": 0.6}


def _real(t, q=None) -> np.ndarray:
    data = t.data if q is None else q
    return t.qparams.dequantize(np.asarray(data))


@pytest.mark.parametrize("op", list(GENERATORS))
def test_int8_reference_within_an_output_step_of_the_real_op(op):
    worst = 0.0
    for case, _ in cases(op, N_HOST, S_HOST):
        g = case.graph
        node = g.nodes[0]
        prepare, kernel = KERNELS[node.op]
        params = prepare(node, g)
        out = g.tensor(node.outputs[0])
        scale, zp = out.qparams.scale[0], out.qparams.zero_point[0]
        lo, hi = scale * (-128 - zp), scale * (127 - zp)
        for k in range(S_HOST):
            acts = {name: samples[k] for name, samples in zip(g.inputs, case.samples)}
            args = [acts[i] for i in node.inputs if not g.tensor(i).is_const]
            got = kernel(*args, params).astype(np.float64).reshape(out.shape)
            reals = [_real(g.tensor(i), acts.get(i)) for i in node.inputs]
            want = np.clip(FLOAT_OPS[node.op](node, reals, g), lo, hi).reshape(out.shape)
            steps = np.abs((got - zp) * scale - want) / scale
            worst = max(worst, float(steps.max()))
    # > 0.4: the cases really round (a test that compared nothing would see 0)
    assert 0.4 < worst <= BOUND[op], f"{op}: int8 is {worst:.3f} output steps from the real op"
