"""The kernel table: which lowering turns each IR op kind into a kernel call.

Written out, not filled by import side effects: adding a kernel is adding its lowering here.
Each lowering renders the template pair of its kernel header (`rip.codegen.lowering`); there is
one lowering module and one params module per header (``lower_conv`` and ``conv_params`` for
kernels/rip_conv.h, and likewise pool, elementwise, activation and shape).
"""

from __future__ import annotations

from rip.codegen import (
    lower_activation,
    lower_conv,
    lower_elementwise,
    lower_fused,
    lower_pool,
    lower_shape,
)
from rip.codegen.lowering import Lowering
from rip.errors import LoweringError
from rip.frontend.ir import Graph, Operator

LOWERINGS: dict[str, Lowering] = {
    # kernels/rip_conv.h
    "CONV_2D": lower_conv.lower_conv,
    "DEPTHWISE_CONV_2D": lower_conv.lower_conv,
    "FULLY_CONNECTED": lower_conv.lower_fully_connected,
    # kernels/rip_pool.h
    "AVERAGE_POOL_2D": lower_pool.lower_pool,
    "MAX_POOL_2D": lower_pool.lower_pool,
    "GLOBAL_AVERAGE_POOL": lower_pool.lower_global_pool,
    "MEAN": lower_pool.lower_global_pool,  # over H and W only; the lowering refuses any other
    # kernels/rip_elementwise.h
    "ADD": lower_elementwise.lower_binary,
    "SUB": lower_elementwise.lower_binary,
    "MUL": lower_elementwise.lower_binary,
    # kernels/rip_activation.h
    "RELU": lower_activation.lower_unary,
    "RELU6": lower_activation.lower_unary,
    "QUANTIZE": lower_activation.lower_unary,
    "LOGISTIC": lower_activation.lower_unary,
    "TANH": lower_activation.lower_unary,
    "HARD_SWISH": lower_activation.lower_unary,
    "SOFTMAX": lower_activation.lower_softmax,
    # kernels/rip_shape.h
    "TRANSPOSE": lower_shape.lower_transpose,
    "RESIZE_NEAREST_NEIGHBOR": lower_shape.lower_resize_nearest,
    "CONCATENATION": lower_shape.lower_concatenation,
    "PAD": lower_shape.lower_pad,
    # kernels/rip_fused.h
    "FUSED_CHAIN": lower_fused.lower_fused,
}


def lowering_for(graph: Graph, op: Operator) -> Lowering:
    """The lowering of ``op``, or a LoweringError naming the op and its output."""
    if op.kind not in LOWERINGS:
        raise LoweringError(f"no kernel for {op.describe(graph)}")
    return LOWERINGS[op.kind]
