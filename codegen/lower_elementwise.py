"""Lowerings of kernels/rip_elementwise.h: ADD, SUB, MUL, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, PRELU (suffix broadcasting in the flat kernels, any other broadcast
through their ``_broadcast`` twins) and ADD_N.

The parameters are `rip.codegen.elementwise_params` (TFLite Micro's Prepare, bit for bit);
this module only decides which pointers the kernel gets, which constant data the op owns, and
whether the in-place mode the plan asks for is one the kernel supports. The C text comes from
the template pair ``templates/ops/elementwise_{data,call}.c.j2`` through
`rip.codegen.lowering.render_op`; `rip.codegen.lowerings` maps each op kind to its lowering.

In place (`rip.core.terms.InPlaceKind` ``"elementwise"``): the same call, with the output at or
below a full-size input; the kernels read element i before storing it, first to last. A
broadcast operand is re-read for every row, so it can never be the overwritten one.
"""

from __future__ import annotations

from rip.codegen import elementwise_params as ep
from rip.codegen import lower_float
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    operands,
    render_kernel,
    table_kernel,
    where,
)
from rip.core.errors import LoweringError
from rip.core.operators import Kernel
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator


def broadcast_kernel(kernel: Kernel, suffix: str = "_s8") -> Kernel:
    """The general-broadcast twin of a flat binary kernel (rip_add_s8 -> rip_add_broadcast_s8),
    or its 16x8 one (suffix ``_s16``: rip_add_broadcast_s16, any shape)."""
    function = kernel.function.removesuffix("_s8") + "_broadcast" + suffix
    return Kernel(function, kernel.struct, kernel.family)


def is_wide(graph: Graph, op: Operator) -> bool:
    """A 16x8 ADD, SUB, MUL, MAXIMUM or MINIMUM: its output is int16."""
    return graph.tensors[op.outputs[0]].dtype == "int16"


def lower_binary(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """ADD, SUB, MUL, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU: the flat kernel when both
    operands broadcast as suffixes of the output (a full tensor, 1x1x1xC, a scalar), else
    its general-broadcast twin; a constant operand (e.g. a per-channel scale of shape
    1x1x1xC, PRELU's alpha) is emitted as the op's own data. In place over a full-size
    operand."""
    if lower_float.is_float(graph, op):  # inside a float island
        return lower_float.lower_binary(graph, op, index, buffers, prefix)
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    in_place = check_operand_in_place(graph, op, buffers, kernel, InPlaceKind.ELEMENTWISE, (0, 1))
    params = kernel_params(ep.op_params, graph, op)
    assert not isinstance(params, ep.AddNParams)  # ADD_N is lower_add_n's
    x1, x2, y = (graph.tensors[t] for t in (*op.inputs[:2], op.outputs[0]))
    wide = is_wide(graph, op)  # the 16x8 kernels take every shape as a broadcast
    shape = kernel_params(lambda g, o: ep.broadcast_shape(x1, x2, y, always=wide), graph, op)
    if in_place:
        size = (params.input1_size, params.input2_size)[buffers.inplace_input or 0]
        if size != params.output_size:
            raise LoweringError(
                f"{where(graph, op)}: cannot run in place over input {buffers.inplace_input}:"
                f" it is the broadcast operand ({size} of {params.output_size} elements, read"
                " again for every row)"
            )
    if isinstance(params, ep.AddParams) and not wide:
        params = ep.with_add_terms(params)
    inputs, constants = operands(graph, op, (0, 1), buffers, prefix)
    call: object = params
    if shape is not None:
        kernel = broadcast_kernel(kernel, "_s16" if wide else "_s8")
        call = ep.BroadcastCall(params, shape)
    return render_kernel(graph, op, index, buffers, prefix, kernel, call, inputs, constants)


def lower_add_n(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """ADD_N over inputs of one shape and quantization; in place over any of them."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    positions = range(len(op.inputs))
    check_operand_in_place(graph, op, buffers, kernel, InPlaceKind.ELEMENTWISE, positions)
    params = kernel_params(ep.op_params, graph, op)
    inputs, constants = operands(graph, op, positions, buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)
