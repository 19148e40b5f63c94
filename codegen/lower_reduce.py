"""Lowerings of kernels/rip_reduce.h: MEAN and SUM over any axes, REDUCE_MAX, REDUCE_MIN,
ARG_MAX and ARG_MIN.

The parameters are `rip.codegen.reduce_params` (TFLite Micro's Prepare, bit for bit); the C
text comes from the template pair ``templates/ops/reduce_{data,call}.c.j2`` through
`rip.codegen.lowering.render_op`; `rip.codegen.lowerings` maps each op kind to its lowering.
A MEAN over H and W of an NHWC tensor is normally a GLOBAL_AVERAGE_POOL by then
(`rip.frontend.rewrite.mean_to_global_pool`) and runs rip_pool.h's kernel.

Never in place (Appendix I: a reduction reads many inputs for each output, so the planner
gives it disjoint buffers); asking for an in-place mode is a `LoweringError`.
"""

from __future__ import annotations

from rip.codegen import lower_pool
from rip.codegen import reduce_params as rp
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    activation_input,
    check_buffers,
    check_operand_in_place,
    grouped,
    kernel_params,
    render_kernel,
    table_kernel,
)
from rip.core.operators import Kernel
from rip.frontend.ir import Graph, Operator

REDUCE_SUM_S16 = Kernel("rip_reduce_sum_s16", "rip_reduce_params", "reduce")  # 16x8 MEAN, SUM


def lower_reduce(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """One walk over the input per output element; output disjoint from the input."""
    wide = graph.tensors[op.inputs[0]].dtype == "int16"
    kernel = REDUCE_SUM_S16 if wide else table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, (0,))
    params = kernel_params(rp.reduce_params, graph, op)
    source = activation_input(graph, op, index, buffers)
    output = OpBuffers(buffers.inputs, grouped(buffers.output))
    return render_kernel(graph, op, index, output, prefix, kernel, params, [source], [])


def lower_mean(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """A MEAN over H and W of a 4-D tensor runs the global pool (the same arithmetic, what
    the rewrite makes of it); any other MEAN, and a 16x8 one, the reduction kernel."""
    x = graph.tensors[op.inputs[0]]
    if x.dtype == "int8" and len(x.shape) == 4 and set(op.params.axes) == {1, 2}:
        return lower_pool.lower_global_pool(graph, op, index, buffers, prefix)
    return lower_reduce(graph, op, index, buffers, prefix)
