"""Lowerings of kernels/rip_elementwise.h: ADD, SUB and MUL, with suffix broadcasting.

The parameters are `rip.codegen.elementwise_params` (TFLite Micro's Prepare, bit for bit);
this module only decides which pointers the kernel gets, which constant data the op owns, and
whether the in-place mode the plan asks for is one the kernel supports. The C text comes from
the template pair ``templates/ops/elementwise_{data,call}.c.j2`` through
`rip.codegen.lowering.render_op`; `rip.codegen.kernels` maps each op kind to its lowering.

In place (`rip.terms.InPlaceKind` ``"elementwise"``): the same call, with the output at or
below a full-size input; the kernels read element i before storing it, first to last. A
broadcast operand is re-read for every row, so it can never be the overwritten one.
"""

from __future__ import annotations

from rip.codegen import elementwise_params as ep
from rip.codegen.lowering import (
    Kernel,
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    operands,
    render_kernel,
    where,
)
from rip.errors import LoweringError
from rip.frontend.ir import Graph, Operator
from rip.terms import InPlaceKind

HEADER = "rip_elementwise.h"
KERNELS: dict[str, Kernel] = {
    "ADD": Kernel("rip_add_s8", "rip_add_params", HEADER),
    "SUB": Kernel("rip_sub_s8", "rip_sub_params", HEADER),
    "MUL": Kernel("rip_mul_s8", "rip_mul_params", HEADER),
}


def lower_binary(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """ADD, SUB, MUL with suffix broadcasting; a constant operand (e.g. a per-channel scale of
    shape 1x1x1xC) is emitted as the op's own data. In place over a full-size operand."""
    kernel = KERNELS[op.kind]
    check_buffers(graph, op, buffers)
    in_place = check_operand_in_place(graph, op, buffers, kernel, InPlaceKind.ELEMENTWISE, (0, 1))
    params = kernel_params(ep.op_params, graph, op)
    if in_place:
        size = (params.input1_size, params.input2_size)[buffers.inplace_input or 0]
        if size != params.output_size:
            raise LoweringError(
                f"{where(graph, op)}: cannot run in place over input {buffers.inplace_input}:"
                f" it is the broadcast operand ({size} of {params.output_size} elements, read"
                " again for every row)"
            )
    inputs, constants = operands(graph, op, (0, 1), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)
