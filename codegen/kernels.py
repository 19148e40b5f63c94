"""The kernel table: which lowering turns each IR op kind into a kernel call.

Written out, not filled by import side effects: adding a kernel is adding its lowering here.
Each lowering renders the template pair of its kernel header (`rip.codegen.lowering`).
"""

from __future__ import annotations

from rip.codegen import lower_elementwise as le
from rip.codegen import lower_spatial as ls
from rip.codegen.lowering import Lowering
from rip.errors import LoweringError
from rip.frontend.ir import Graph, Operator

LOWERINGS: dict[str, Lowering] = {
    # kernels/rip_conv.h
    "CONV_2D": ls.lower_conv,
    "DEPTHWISE_CONV_2D": ls.lower_conv,
    "FULLY_CONNECTED": ls.lower_fully_connected,
    # kernels/rip_pool.h
    "AVERAGE_POOL_2D": ls.lower_pool,
    "MAX_POOL_2D": ls.lower_pool,
    "GLOBAL_AVERAGE_POOL": ls.lower_global_pool,
    "MEAN": ls.lower_global_pool,  # over H and W only; the lowering refuses any other
    # kernels/rip_elementwise.h
    "ADD": le.lower_binary,
    "SUB": le.lower_binary,
    "MUL": le.lower_binary,
    # kernels/rip_activation.h
    "RELU": le.lower_unary,
    "RELU6": le.lower_unary,
    "QUANTIZE": le.lower_unary,
    "LOGISTIC": le.lower_unary,
    "TANH": le.lower_unary,
    "HARD_SWISH": le.lower_unary,
    "SOFTMAX": le.lower_disjoint_unary,
    # kernels/rip_shape.h
    "TRANSPOSE": le.lower_disjoint_unary,
    "RESIZE_NEAREST_NEIGHBOR": le.lower_resize_nearest,
    "CONCATENATION": le.lower_concatenation,
    "PAD": le.lower_pad,
}


def lowering_for(graph: Graph, op: Operator) -> Lowering:
    """The lowering of ``op``, or a LoweringError naming the op and its output."""
    if op.kind not in LOWERINGS:
        raise LoweringError(f"no kernel for {op.describe(graph)}")
    return LOWERINGS[op.kind]
