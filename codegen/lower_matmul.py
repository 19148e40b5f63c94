"""Lowering of kernels/rip_matmul.h: BATCH_MATMUL.

Parameters from `rip.codegen.matmul_params`; C text from the template pair
``templates/ops/matmul_{data,call}.c.j2``. Either operand may be a constant (emitted as the
op's own int8 data). Never in place (the operator table gives BATCH_MATMUL no in-place
class: every output row reads a whole row of one operand and all of the other).
"""

from __future__ import annotations

from rip.codegen import matmul_params as mp
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
from rip.frontend.ir import Graph, Operator


def lower_batch_matmul(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """BATCH_MATMUL of two int8 operands (adj_x, adj_y, batch broadcasting), out of place."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    params = kernel_params(mp.op_params, graph, op)
    inputs, constants = operands(graph, op, (0, 1), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)
