"""Lowering of kernels/rip_norm.h: L2_NORMALIZATION.

Parameters from `rip.codegen.norm_params`; C text from the template pair
``templates/ops/norm_{data,call}.c.j2``. In place (`rip.core.terms.InPlaceKind` ``"elementwise"``):
the output at or below the input, as the kernel reads a row whole before writing it and then
reads each element before storing it.
"""

from __future__ import annotations

from rip.codegen import norm_params as npm
from rip.codegen.lowering import Lowered, OpBuffers, lower_one_input, table_kernel
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator


def lower_l2norm(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """L2_NORMALIZATION over the last axis, in place at or below its input."""
    kernel = table_kernel(op)
    return lower_one_input(
        graph, op, index, buffers, prefix, kernel, npm.op_params, InPlaceKind.ELEMENTWISE
    )
