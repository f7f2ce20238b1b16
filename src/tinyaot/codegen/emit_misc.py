"""C emitters of the byte-moving, elementwise and reduction int8 ops (pooling, mean, concat, pad, mul, lut,
relu, transpose, quantize). Each calls the op's reference `prepare`, so C and NumPy read the same numbers."""
from __future__ import annotations

import numpy as np

from tinyaot.codegen.cformat import c_array, c_ident, c_int
from tinyaot.ir import Graph, Node
from tinyaot.ref import (
    concat_s8,
    lut_s8,
    max_pool2d_s8,
    mean_s8,
    mul_s8,
    pad_s8,
    relu_s8,
    requantize_s8,
    transpose_s8,
)


def _emitted(constants: str, call: str, const_bytes: int, kernel_file: str):
    from tinyaot.codegen.ops import EmittedOp  # here, not at the top: codegen.ops imports this module

    return EmittedOp(constants, call, const_bytes, kernel_file)


def _in(offsets: dict[str, str], tensor: str) -> str:
    return f"(const int8_t *)(arena + {offsets[tensor]})"


def _out(offsets: dict[str, str], tensor: str) -> str:
    return f"(int8_t *)(arena + {offsets[tensor]})"


def _args(*values) -> str:
    return ", ".join(c_int(v) if isinstance(v, (int, np.integer)) else str(v) for v in values)


def _call(fn: str, *args) -> str:
    return f"{fn}({_args(*args)});"


def _base(prefix: str, node: Node) -> str:
    return f"{prefix}_{c_ident(node.name)}"


def emit_max_pool2d(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = max_pool2d_s8.prepare(node, g)
    call = _call("tinyaot_max_pool2d_s8", _in(offsets, node.inputs[0]), p.batches, p.in_h, p.in_w, p.channels,
                 p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_top, p.pad_left, p.out_h, p.out_w,
                 p.act_min, p.act_max, _out(offsets, node.outputs[0]))
    return _emitted("", call, 0, "max_pool2d_s8.c")


def emit_mean(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = mean_s8.prepare(node, g)
    call = _call("tinyaot_mean_s8", _in(offsets, node.inputs[0]), p.outer, p.count, p.inner, p.bias,
                 p.multiplier, p.shift, p.output_zero_point, p.act_min, p.act_max, _out(offsets, node.outputs[0]))
    return _emitted("", call, 0, "mean_s8.c")


def emit_concat(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = concat_s8.prepare(node, g)
    base = _base(prefix, node)
    arrays = [(f"{base}_chunks", p.chunks), (f"{base}_multiplier", p.multiplier), (f"{base}_shift", p.shift),
              (f"{base}_input_zero_point", p.input_zero_point)]
    consts = "".join(c_array(n, a) for n, a in arrays)
    pointers = ",\n        ".join(_in(offsets, t) for t in node.inputs)
    kernel = _call("tinyaot_concat_s8", "inputs", p.num_inputs, *(n for n, _ in arrays), p.output_zero_point,
                   p.outer, _out(offsets, node.outputs[0]))
    call = f"{{\n    const int8_t *const inputs[{p.num_inputs}] = {{\n        {pointers}\n    }};\n    {kernel}\n}}"
    return _emitted(consts, call, sum(a.nbytes for _, a in arrays), "concat_s8.c")


def emit_pad(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = pad_s8.prepare(node, g)
    call = _call("tinyaot_pad_s8", _in(offsets, node.inputs[0]), p.batches, p.in_h, p.in_w, p.channels,
                 p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, p.pad_value, _out(offsets, node.outputs[0]))
    return _emitted("", call, 0, "pad_s8.c")


def emit_mul(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = mul_s8.prepare(node, g)
    base = _base(prefix, node)
    consts, nbytes, operands = "", 0, []
    for k, (tensor, data) in enumerate(zip(node.inputs, p.constants)):
        if data is None:
            operands.append(_in(offsets, tensor))
        else:
            name = f"{base}_operand{k}"
            consts += c_array(name, data.reshape(-1))
            nbytes += data.nbytes
            operands.append(name)
    tail = (p.input1_offset, p.input2_offset, p.output_offset, p.multiplier, p.shift, p.act_min, p.act_max,
            _out(offsets, node.outputs[0]))
    if not p.broadcast:
        call = _call("tinyaot_mul_s8", *operands, p.size, *tail)
    else:
        arrays = [(f"{base}_out_shape", p.out_shape), (f"{base}_a_strides", p.a_strides),
                  (f"{base}_b_strides", p.b_strides)]
        for n, a in arrays:
            consts += c_array(n, np.asarray(a, dtype=np.int32))
            nbytes += 16
        call = _call("tinyaot_mul_broadcast_s8", *operands, *(n for n, _ in arrays), *tail)
    return _emitted(consts, call, nbytes, "mul_s8.c")


def emit_lut(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = lut_s8.prepare(node, g)
    name = f"{_base(prefix, node)}_table"
    consts = f"/* {p.function}: output for input q at [q + 128] */\n" + c_array(name, p.table)
    call = _call("tinyaot_lut_s8", _in(offsets, node.inputs[0]), p.size, name, _out(offsets, node.outputs[0]))
    return _emitted(consts, call, p.table.nbytes, "lut_s8.c")


def emit_relu(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = relu_s8.prepare(node, g)
    call = _call("tinyaot_relu_s8", _in(offsets, node.inputs[0]), p.size, p.multiplier, p.shift,
                 p.input_zero_point, p.output_zero_point, p.act_min, p.act_max, _out(offsets, node.outputs[0]))
    return _emitted("", call, 0, "relu_s8.c")


def emit_quantize(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = requantize_s8.prepare(node, g)
    call = _call("tinyaot_requantize_s8", _in(offsets, node.inputs[0]), p.size, p.multiplier, p.shift,
                 p.input_zero_point, p.output_zero_point, _out(offsets, node.outputs[0]))
    return _emitted("", call, 0, "requantize_s8.c")


def emit_transpose(node: Node, g: Graph, prefix: str, offsets: dict[str, str]):
    p = transpose_s8.prepare(node, g)
    base = _base(prefix, node)
    arrays = [(f"{base}_out_shape", p.out_shape), (f"{base}_in_strides", p.in_strides)]
    consts = "".join(c_array(n, np.asarray(a, dtype=np.int32)) for n, a in arrays)
    call = _call("tinyaot_transpose_s8", _in(offsets, node.inputs[0]), *(n for n, _ in arrays),
                 _out(offsets, node.outputs[0]))
    return _emitted(consts, call, 32, "transpose_s8.c")


EMITTERS = {
    "max_pool2d": emit_max_pool2d,
    "mean": emit_mean,
    "concat": emit_concat,
    "pad": emit_pad,
    "mul": emit_mul,
    "lut": emit_lut,
    "relu": emit_relu,
    "quantize": emit_quantize,
    "transpose": emit_transpose,
}
