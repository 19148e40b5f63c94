"""Lowerings of kernels/rip_pool.h: AVERAGE_POOL_2D, MAX_POOL_2D and GLOBAL_AVERAGE_POOL
(and a MEAN over H and W, the same kernel).

Each becomes file-scope constant data (the params struct and the dims structs, ``const``
so that it stays in flash) and one guarded kernel call over the arena pointers the generator
chose, returning ``index + 1`` when the kernel refuses its arguments. The numbers come from
:mod:`rip.codegen.pool_params` (TFLite Micro's Prepare arithmetic); the C text from the
template pair ``templates/ops/pool_*.c.j2`` (`rip.codegen.lowering.render_op`).
`rip.codegen.lowerings` maps each op kind to its lowering.
"""

from __future__ import annotations

from rip.codegen import lower_wide
from rip.codegen import pool_params as pp
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    OpContext,
    activation_input,
    check_inplace,
    grouped,
    kernel_params,
    render_op,
    table_kernel,
)
from rip.core.operators import Kernel, Op, kernel_of
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator


def lower_pool(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """Average and max pooling, out of place or "rip" (each output pixel's channels are
    accumulated in scratch before any is stored)."""
    if lower_wide.is_wide(graph, op):  # 16x8 (kernels/rip_wide.h)
        return lower_wide.lower_pool(graph, op, index, buffers, prefix)
    p = kernel_params(pp.pool_params, graph, op, index)
    check_inplace(graph, op, index, buffers, (InPlaceKind.RIP,))
    return _pool_op(graph, op, index, buffers, prefix, p, table_kernel(op))


def lower_global_pool(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """GLOBAL_AVERAGE_POOL, and a MEAN over H and W left unrewritten (the same arithmetic);
    any other MEAN is refused. Never in place: the kernel requires disjoint buffers, and a
    reduction is not among the planner's in-place operators (Appendix I)."""
    p = kernel_params(pp.mean_params, graph, op, index)
    check_inplace(graph, op, index, buffers, ())
    # a MEAN over H and W runs the global pool's kernel too
    return _pool_op(graph, op, index, buffers, prefix, p, kernel_of(Op.GLOBAL_AVERAGE_POOL))


def _pool_op(
    graph: Graph,
    op: Operator,
    index: int,
    buffers: OpBuffers,
    prefix: str,
    p: pp.KernelParams,
    kernel: Kernel,
) -> Lowered:
    return render_op(
        OpContext(
            kind=op.kind,
            header=kernel.header,
            function=kernel.function,
            struct=kernel.struct,
            params=p,
            prefix=prefix,
            status=index + 1,
            inputs=(activation_input(graph, op, index, buffers),),
            output=grouped(buffers.output),
            scratch_bytes=p.scratch_bytes,
            scratch_context=buffers.context,
        )
    )
