"""Lowering of kernels/rip_resample.h: RESIZE_BILINEAR.

Parameters from `rip.codegen.resample_params`; C text from the template pair
``templates/ops/resample_{data,call}.c.j2``. Disjoint buffers only (each output row blends
two input rows, so no traversal order is proven safe over its input); asking for in place
is a `LoweringError`.
"""

from __future__ import annotations

from rip.codegen import resample_params as rp
from rip.codegen.lowering import Kernel, Lowered, OpBuffers, lower_one_input
from rip.frontend.ir import Graph, Operator

HEADER = "rip_resample.h"
KERNELS: dict[str, Kernel] = {
    "RESIZE_BILINEAR": Kernel("rip_resize_bilinear_s8", "rip_resize_bilinear_params", HEADER),
}


def lower_resize_bilinear(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """RESIZE_BILINEAR; the size tensor is implied by the output shape."""
    kernel = KERNELS[op.kind]
    return lower_one_input(graph, op, index, buffers, prefix, kernel, rp.op_params, None)
