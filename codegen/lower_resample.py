"""Lowerings of kernels/rip_resample.h: RESIZE_BILINEAR and TRANSPOSE_CONV.

Parameters from `rip.codegen.resample_params`; C text from the template pair
``templates/ops/resample_{data,call}.c.j2``. Disjoint buffers only (each bilinear output row
blends two input rows; a transposed convolution's output pixel gathers a window of inputs),
so no traversal order is proven safe over the input; asking for in place is a
`LoweringError`.
"""

from __future__ import annotations

import numpy as np

from rip.codegen import resample_params as rp
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    OpContext,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    lower_one_input,
    render_op,
    table_kernel,
    where,
)
from rip.core.errors import LoweringError
from rip.frontend.ir import Graph, Operator


def lower_resize_bilinear(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """RESIZE_BILINEAR; the size tensor is implied by the output shape."""
    kernel = table_kernel(op)
    return lower_one_input(graph, op, index, buffers, prefix, kernel, rp.op_params, None)


def _constant(graph: Graph, op: Operator, k: int, dtype: str) -> bytes:
    t = graph.tensors[op.inputs[k]]
    if not t.is_constant or t.data is None or t.dtype != dtype or len(t.data) != t.nbytes:
        raise LoweringError(
            f"{where(graph, op)}: input {k} (tensor {t.id} {t.name!r}) must be a constant "
            f"{dtype} tensor with its data (compile the model with its weights)"
        )
    return t.data


def lower_transpose_conv(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """TRANSPOSE_CONV: filter, bias and per-channel requantization as constant data; the
    data input is input 2 (input 0 is the output shape)."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    params = kernel_params(rp.transpose_conv_params, graph, op, index)
    pointer = buffers.inputs[2]
    if pointer is None:
        raise LoweringError(f"{where(graph, op, index)}: its input is not an arena activation")
    bias = None
    if params.has_bias:
        bias = tuple(int(v) for v in np.frombuffer(_constant(graph, op, 3, "int32"), "<i4"))
    return render_op(
        OpContext(
            kind=op.kind,
            header=kernel.header,
            function=kernel.function,
            struct=kernel.struct,
            params=params,
            prefix=prefix,
            status=index + 1,
            inputs=(pointer,),
            output=buffers.output,
            filter=_constant(graph, op, 1, "int8"),
            bias=bias,
            quant="per_channel",
        )
    )
