"""Lowerings of kernels/rip_activation.h: RELU, RELU6, QUANTIZE (int8 -> int8), LOGISTIC,
TANH, HARD_SWISH, SOFTMAX, and ABS, LEAKY_RELU, ELU and RSQRT (a table of all 256 input
bytes).

The parameters are `rip.codegen.activation_params` (TFLite Micro's Prepare, bit for bit);
the C text comes from the template pair ``templates/ops/activation_{data,call}.c.j2``
through `rip.codegen.lowering.render_op`; `rip.codegen.lowerings` maps each op kind to its
lowering, the operator table (rip.core.operators) to its kernel.

In place (`rip.core.terms.InPlaceKind` ``"elementwise"``) for all but SOFTMAX: the same call, with
the output at or below the input; the kernels read element i before storing it, first to
last. SOFTMAX reads each row twice (max, then sum) and needs disjoint buffers; asking for
anything else is a `LoweringError`.
"""

from __future__ import annotations

from rip.codegen import activation_params as ap
from rip.codegen import lower_float
from rip.codegen.lowering import Lowered, OpBuffers, lower_one_input, table_kernel
from rip.core.operators import Kernel, Op, kernel_of
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator

UINT8 = "uint8"
LUT_KERNEL = kernel_of(Op.ABS)  # rip_lut_s8: any int8 -> int8 function of one byte
# an int16 or int32 side (OpSpec.wide_types): TFLite Micro's Requantize at any width, and
# its Softmax<int8_t, int16_t>
WIDE_QUANTIZE = Kernel("rip_quantize_wide", "rip_quantize_wide_params", "activation")
SOFTMAX_S16 = Kernel("rip_softmax_s8_s16", "rip_softmax_params", "activation")
SOFTMAX_16X8 = Kernel("rip_softmax_s16", "rip_softmax_s16_params", "activation")
SIGMOID_S16 = Kernel("rip_sigmoid_s16", "rip_sigmoid_s16_params", "activation")  # 16x8


def lower_unary(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """RELU, RELU6, QUANTIZE (int8 -> int8), LOGISTIC, TANH, HARD_SWISH, ABS, LEAKY_RELU,
    ELU, RSQRT: one pass over the elements, in place at or below the input."""
    if op.kind == Op.QUANTIZE and lower_float.is_float(graph, op):  # a float island's end
        return lower_float.lower_quantize(graph, op, index, buffers, prefix)
    kernel = table_kernel(op)
    types = {graph.tensors[t].dtype for t in (*op.inputs, *op.outputs)}
    if op.kind == Op.QUANTIZE and UINT8 in types:
        kernel = LUT_KERNEL  # a uint8 side: TFLite Micro's requantization as a table
    elif op.kind in (Op.QUANTIZE, Op.RELU, Op.RELU6) and ap.WIDE & types:
        kernel = WIDE_QUANTIZE  # a requantization and a clamp, at any width
    elif op.kind in (Op.LOGISTIC, Op.TANH) and "int16" in types:
        kernel = SIGMOID_S16
    return lower_one_input(
        graph, op, index, buffers, prefix, kernel, ap.op_params, InPlaceKind.ELEMENTWISE
    )


def lower_softmax(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """SOFTMAX over the last axis (each row is read twice: max, then sum): output disjoint
    from the input."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    kernel = table_kernel(op)
    if y.dtype == "int16":  # from int8 (Softmax<int8_t, int16_t>) or int16 (16x8)
        kernel = SOFTMAX_16X8 if x.dtype == "int16" else SOFTMAX_S16
    return lower_one_input(graph, op, index, buffers, prefix, kernel, ap.op_params, None)
