"""Lowering of kernels/rip_fused.h: a ``FUSED_CHAIN`` (rip.frontend.fusion) becomes the
members' constant data, one ``rip_fused_chain`` and one call of ``rip_fused_chain_s8``
over the chain's input, its rings (arena tensors the plan placed) and its output, which
may start the planned gap below the input (`rip.core.terms.InPlaceKind` ``"fused"``);
over a streamed input, one call of ``rip_fused_chain_streamed_s8`` with the model's row
source and the ring its rows arrive in.
"""

from __future__ import annotations

from rip.codegen import fused_params as fp
from rip.codegen.lower_conv import bias_values, constant_bytes
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    OpContext,
    activation_input,
    check_inplace,
    grouped,
    kernel_params,
    render_op,
    staged_filters,
    table_kernel,
    where,
)
from rip.core.errors import LoweringError
from rip.core.kernel_variants import FUSED_STREAMED
from rip.core.operators import Op
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator


def lower_fused(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """The chain's call: input, rings in member order, output."""
    streamed = op.params.source is not None
    check_inplace(graph, op, index, buffers, () if streamed else (InPlaceKind.FUSED,))
    rings = len(op.params.rings) + streamed  # a streamed input's ring comes last
    if len(buffers.extra_outputs) != rings:
        raise LoweringError(f"{where(graph, op, index)}: a ring has no arena buffer")
    extra = tuple(grouped(r) for r in buffers.extra_outputs)
    if streamed:  # its rows' ring first, then the members' rings
        src, extra = extra[-1], extra[:-1]
    else:
        src = activation_input(graph, op, index, buffers)
    own = iter(extra)  # a member whose rows are stored in its input's slot has no ring
    extra = tuple("NULL" if rows == 0 else next(own) for rows in op.params.ring_rows)

    def compute(g: Graph, o: Operator) -> fp.FusedKernelParams:
        return fp.fused_params(
            g,
            o,
            lambda m, k, what, n: constant_bytes(g, m, index, k, what, n),
            lambda m, channels: bias_values(g, m, index, channels),
        )

    params = kernel_params(compute, graph, op, index)
    kernel = table_kernel(op)
    function = FUSED_STREAMED.name if streamed else kernel.function
    convs = {k: len(s.filter) for k, s in enumerate(params.stages) if s.conv.kind == Op.CONV_2D}
    staged = staged_filters(graph, op, index, buffers, convs)
    return render_op(
        OpContext(
            kind=op.kind,
            header=kernel.header,
            function=function,
            struct=kernel.struct,
            params=params,
            prefix=prefix,
            status=index + 1,
            inputs=(src, *extra),
            output=grouped(buffers.output),
            scratch_bytes=params.scratch_bytes,
            scratch_context=buffers.context,
            comment=f"fused chain {params.names}: rings of "
            + ", ".join(str(s.ring_rows) for s in params.stages[:-1])
            + " rows",
            staged=staged,
        )
    )
