"""Lowerings of kernels/rip_float.h: a float32 island inside an int8 graph (DEQUANTIZE,
NEG, ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM in float32, and the QUANTIZE back to int8), as
TFLite Micro's reference kernels compute them.

The parameters are TFLite Micro's Prepare: DEQUANTIZE and QUANTIZE take the int8 side's
scale and zero point (the scale a float32, as the tensor stores it), the binary ops the
float clamp of their fused activation (CalculateActivationRange for float: none is the
whole float range). Binary ops always take the general broadcast (`elementwise_params
.broadcast_shape`, every axis). Never in place: the planner keeps non-int8 outputs apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.codegen import elementwise_params as ep
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    operands,
    render_kernel,
    table_kernel,
)
from rip.codegen.quant import ParamsError, any_scale_zp, tensor_size
from rip.core.operators import Kernel, Op
from rip.core.terms import Activation
from rip.frontend.ir import Graph, Operator

FLOAT_MAX = float(np.finfo(np.float32).max)
# CalculateActivationRange(float): the clamp of each fused activation
FLOAT_RANGE = {
    Activation.NONE: (-FLOAT_MAX, FLOAT_MAX),
    Activation.RELU: (0.0, FLOAT_MAX),
    Activation.RELU6: (0.0, 6.0),
    Activation.RELU_N1_TO_1: (-1.0, 1.0),
}
# RIP_F32_* of kernels/rip_float.h
BINARY_CODES = {Op.ADD: 0, Op.SUB: 1, Op.MUL: 2, Op.DIV: 3, Op.MAXIMUM: 4, Op.MINIMUM: 5}
QUANTIZE_F32 = Kernel("rip_quantize_f32", "rip_float_quant_params", "float")
BINARY_F32 = Kernel("rip_binary_f32", "rip_float_binary_params", "float")


@dataclass(frozen=True)
class FloatQuantParams:
    """rip_float_quant_params, and the element count."""

    scale: float
    zero_point: int
    size: int


@dataclass(frozen=True)
class FloatBinaryParams:
    """rip_float_binary_params, and the broadcast of the operands."""

    op: int
    activation_min: float
    activation_max: float
    shape: ep.BroadcastShape


def is_float(graph: Graph, op: Operator) -> bool:
    """The op computes in float32 (its output, or for QUANTIZE its input, is float32)."""
    return any(graph.tensors[t].dtype == "float32" for t in (op.inputs[0], op.outputs[0]))


def quant_params(graph: Graph, op: Operator) -> FloatQuantParams:
    """DEQUANTIZE (the int8 input's quantization) or QUANTIZE (the int8 output's)."""
    side = graph.tensors[op.inputs[0] if op.kind == Op.DEQUANTIZE else op.outputs[0]]
    if side.dtype != "int8":
        raise ParamsError(f"{op.describe()}: the quantized side is {side.dtype}, not int8")
    scale, zero_point = any_scale_zp(side)
    return FloatQuantParams(float(np.float32(scale)), zero_point, tensor_size(side))


def binary_params(graph: Graph, op: Operator) -> FloatBinaryParams:
    x1, x2, y = (graph.tensors[t] for t in (*op.inputs[:2], op.outputs[0]))
    activation = getattr(op.params, "activation", Activation.NONE)
    lo, hi = FLOAT_RANGE[activation]
    shape = ep.broadcast_shape(x1, x2, y, always=True)
    assert shape is not None  # always=True
    return FloatBinaryParams(BINARY_CODES[op.kind], lo, hi, shape)


def lower_quantize(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """DEQUANTIZE int8 -> float32, or QUANTIZE float32 -> int8 (``QUANTIZE_F32``); NEG."""
    kernel = QUANTIZE_F32 if op.kind == Op.QUANTIZE else table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, (0,))
    if op.kind == Op.NEG:
        params = FloatQuantParams(1.0, 0, tensor_size(graph.tensors[op.inputs[0]]))
    else:
        params = kernel_params(quant_params, graph, op)
    inputs, constants = operands(graph, op, (0,), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)


def lower_binary(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM in float32, over any broadcast; a constant
    operand is the op's own bytes."""
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, BINARY_F32, None, (0, 1))
    params = kernel_params(binary_params, graph, op)
    inputs, constants = operands(graph, op, (0, 1), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, BINARY_F32, params, inputs, constants)
