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
    lower_norm,
    lower_pool,
    lower_reduce,
    lower_resample,
    lower_shape,
)
from rip.codegen.lowering import Lowering
from rip.core.errors import LoweringError
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
    # kernels/rip_reduce.h (a MEAN over H and W of NHWC runs rip_pool.h's global pool)
    "MEAN": lower_reduce.lower_mean,
    "SUM": lower_reduce.lower_reduce,
    "REDUCE_MAX": lower_reduce.lower_reduce,
    "REDUCE_MIN": lower_reduce.lower_reduce,
    "ARG_MAX": lower_reduce.lower_reduce,
    "ARG_MIN": lower_reduce.lower_reduce,
    # kernels/rip_elementwise.h
    "ADD": lower_elementwise.lower_binary,
    "SUB": lower_elementwise.lower_binary,
    "MUL": lower_elementwise.lower_binary,
    "MAXIMUM": lower_elementwise.lower_binary,
    "MINIMUM": lower_elementwise.lower_binary,
    "SQUARED_DIFFERENCE": lower_elementwise.lower_binary,
    "PRELU": lower_elementwise.lower_binary,
    "ADD_N": lower_elementwise.lower_add_n,
    # kernels/rip_activation.h
    "RELU": lower_activation.lower_unary,
    "RELU6": lower_activation.lower_unary,
    "QUANTIZE": lower_activation.lower_unary,
    "LOGISTIC": lower_activation.lower_unary,
    "TANH": lower_activation.lower_unary,
    "HARD_SWISH": lower_activation.lower_unary,
    "SOFTMAX": lower_activation.lower_softmax,
    "LOG_SOFTMAX": lower_activation.lower_softmax,
    "ABS": lower_activation.lower_unary,
    "LEAKY_RELU": lower_activation.lower_unary,
    "ELU": lower_activation.lower_unary,
    # kernels/rip_shape.h
    "TRANSPOSE": lower_shape.lower_transpose,
    "RESIZE_NEAREST_NEIGHBOR": lower_shape.lower_resize_nearest,
    "CONCATENATION": lower_shape.lower_concatenation,
    "PAD": lower_shape.lower_pad,
    # ---- kernels/rip_shape.h --------------------------------------------------------------------
    "STRIDED_SLICE": lower_shape.lower_movement,
    "SLICE": lower_shape.lower_movement,
    "SPLIT": lower_shape.lower_movement,
    "SPLIT_V": lower_shape.lower_movement,
    "UNPACK": lower_shape.lower_movement,
    "PACK": lower_shape.lower_concatenation,
    "DEPTH_TO_SPACE": lower_shape.lower_movement,
    "SPACE_TO_DEPTH": lower_shape.lower_movement,
    "GATHER": lower_shape.lower_movement,
    "PADV2": lower_shape.lower_pad,
    "MIRROR_PAD": lower_shape.lower_movement,
    "SPACE_TO_BATCH_ND": lower_shape.refuse_space_batch,  # folded into dilated convs
    "BATCH_TO_SPACE_ND": lower_shape.refuse_space_batch,
    # kernels/rip_resample.h
    "RESIZE_BILINEAR": lower_resample.lower_resize_bilinear,
    "TRANSPOSE_CONV": lower_resample.lower_transpose_conv,
    # kernels/rip_norm.h
    "L2_NORMALIZATION": lower_norm.lower_l2norm,
    # kernels/rip_fused.h
    "FUSED_CHAIN": lower_fused.lower_fused,
}


def lowering_for(graph: Graph, op: Operator) -> Lowering:
    """The lowering of ``op``, or a LoweringError naming the op and its output."""
    if op.kind not in LOWERINGS:
        raise LoweringError(f"no kernel for {op.describe(graph)}")
    return LOWERINGS[op.kind]
