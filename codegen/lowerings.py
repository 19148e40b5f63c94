"""Which lowering turns each op into a kernel call (`LOWERINGS`, keyed by `Op`).

Written out, not filled by import side effects: adding an op is adding its row to the
operator table (rip.core.operators: its family, kernel function and params struct) and its
lowering here. Each lowering renders the template pair of its kernel family
(`rip.codegen.lowering`); there is one lowering module and one params module per family
(``lower_conv`` and ``conv_params`` for kernels/rip_conv.h, and likewise pool, reduce,
elementwise, activation, shape, resample, norm, matmul, float, svdf, lstm, state and fused).
"""

from __future__ import annotations

from rip.codegen import (
    lower_activation,
    lower_conv,
    lower_elementwise,
    lower_float,
    lower_fused,
    lower_lstm,
    lower_matmul,
    lower_norm,
    lower_pool,
    lower_reduce,
    lower_resample,
    lower_shape,
    lower_state,
    lower_svdf,
)
from rip.codegen.lowering import Lowering
from rip.core.errors import LoweringError
from rip.core.operators import Op
from rip.frontend.ir import Graph, Operator

# The lowering of every op the code generator runs (role kernel, and the folded ops, whose
# lowering refuses them); the kernel each calls is the operator table's (rip.core.operators).
LOWERINGS: dict[Op, Lowering] = {
    # kernels/rip_conv.h
    Op.CONV_2D: lower_conv.lower_conv,
    Op.GROUPED_CONV_2D: lower_conv.lower_grouped_conv,
    Op.DEPTHWISE_CONV_2D: lower_conv.lower_conv,
    Op.FULLY_CONNECTED: lower_conv.lower_fully_connected,
    # kernels/rip_pool.h
    Op.AVERAGE_POOL_2D: lower_pool.lower_pool,
    Op.MAX_POOL_2D: lower_pool.lower_pool,
    Op.GLOBAL_AVERAGE_POOL: lower_pool.lower_global_pool,
    # kernels/rip_reduce.h (a MEAN over H and W of NHWC runs rip_pool.h's global pool)
    Op.MEAN: lower_reduce.lower_mean,
    Op.SUM: lower_reduce.lower_reduce,
    Op.REDUCE_MAX: lower_reduce.lower_reduce,
    Op.REDUCE_MIN: lower_reduce.lower_reduce,
    Op.ARG_MAX: lower_reduce.lower_reduce,
    Op.ARG_MIN: lower_reduce.lower_reduce,
    # kernels/rip_elementwise.h
    Op.ADD: lower_elementwise.lower_binary,
    Op.SUB: lower_elementwise.lower_binary,
    Op.MUL: lower_elementwise.lower_binary,
    Op.MAXIMUM: lower_elementwise.lower_binary,
    Op.MINIMUM: lower_elementwise.lower_binary,
    Op.SQUARED_DIFFERENCE: lower_elementwise.lower_binary,
    Op.PRELU: lower_elementwise.lower_binary,
    Op.ADD_N: lower_elementwise.lower_add_n,
    # kernels/rip_activation.h
    Op.RELU: lower_activation.lower_unary,
    Op.RELU6: lower_activation.lower_unary,
    Op.QUANTIZE: lower_activation.lower_unary,
    Op.LOGISTIC: lower_activation.lower_unary,
    Op.TANH: lower_activation.lower_unary,
    Op.HARD_SWISH: lower_activation.lower_unary,
    Op.SOFTMAX: lower_activation.lower_softmax,
    Op.LOG_SOFTMAX: lower_activation.lower_softmax,
    Op.ABS: lower_activation.lower_unary,
    Op.LEAKY_RELU: lower_activation.lower_unary,
    Op.ELU: lower_activation.lower_unary,
    Op.RSQRT: lower_activation.lower_unary,
    # kernels/rip_shape.h
    Op.TRANSPOSE: lower_shape.lower_transpose,
    Op.RESIZE_NEAREST_NEIGHBOR: lower_shape.lower_resize_nearest,
    Op.CONCATENATION: lower_shape.lower_concatenation,
    Op.PAD: lower_shape.lower_pad,
    Op.STRIDED_SLICE: lower_shape.lower_movement,
    Op.SLICE: lower_shape.lower_movement,
    Op.SPLIT: lower_shape.lower_movement,
    Op.SPLIT_V: lower_shape.lower_movement,
    Op.UNPACK: lower_shape.lower_movement,
    Op.PACK: lower_shape.lower_concatenation,
    Op.DEPTH_TO_SPACE: lower_shape.lower_movement,
    Op.SPACE_TO_DEPTH: lower_shape.lower_movement,
    Op.GATHER: lower_shape.lower_movement,
    Op.PADV2: lower_shape.lower_pad,
    Op.MIRROR_PAD: lower_shape.lower_movement,
    Op.SPACE_TO_BATCH_ND: lower_shape.refuse_space_batch,  # folded into dilated convs
    Op.BATCH_TO_SPACE_ND: lower_shape.refuse_space_batch,
    # kernels/rip_resample.h
    Op.RESIZE_BILINEAR: lower_resample.lower_resize_bilinear,
    Op.TRANSPOSE_CONV: lower_resample.lower_transpose_conv,
    # kernels/rip_norm.h
    Op.L2_NORMALIZATION: lower_norm.lower_l2norm,
    # kernels/rip_matmul.h
    Op.BATCH_MATMUL: lower_matmul.lower_batch_matmul,
    # kernels/rip_float.h (ADD, SUB, MUL, MAXIMUM, MINIMUM and QUANTIZE go there in float)
    Op.DEQUANTIZE: lower_float.lower_quantize,
    Op.NEG: lower_float.lower_quantize,
    Op.DIV: lower_float.lower_binary,
    # kernels/rip_svdf.h
    Op.SVDF: lower_svdf.lower_svdf,
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: lower_lstm.lower_lstm,
    # kernels/rip_state.h
    Op.READ_VARIABLE: lower_state.lower_variable,
    Op.ASSIGN_VARIABLE: lower_state.lower_variable,
    # kernels/rip_fused.h
    Op.FUSED_CHAIN: lower_fused.lower_fused,
}


def lowering_for(graph: Graph, op: Operator) -> Lowering:
    """The lowering of ``op``, or a LoweringError naming the op and its output."""
    if op.kind not in LOWERINGS:
        raise LoweringError(f"no kernel for {op.describe(graph)}")
    return LOWERINGS[op.kind]
