"""Lowering of kernels/rip_svdf.h: SVDF.

Parameters from `rip.codegen.svdf_params`; C text from ``templates/ops/svdf_{data,call}.c.j2``.
The weights and bias are the op's own constants; the state is its bytes of the persistent
region (``rip_state`` in model.c, `Graph.state_offsets`), never the arena. Out of place.
"""

from __future__ import annotations

from rip.codegen import svdf_params as sp
from rip.codegen.lower_state import lower_with_state
from rip.codegen.lowering import Lowered, OpBuffers, table_kernel
from rip.core.operators import Kernel
from rip.frontend.ir import Graph, Operator

# int16 time weights and state (the converter's usual SVDF): TFLite Micro's EvalInt16Svdf
SVDF_S16 = Kernel("rip_svdf_s8_s16", "rip_svdf_params", "svdf")


def lower_svdf(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """SVDF (int8, int8 or int16 state): input from the arena, state from the persistent
    region."""
    kernel = table_kernel(op)
    if graph.tensors[op.params.state].dtype == "int16":
        kernel = SVDF_S16
    return lower_with_state(
        graph, op, index, buffers, prefix, kernel, sp.op_params, lambda p: (p.state,)
    )
