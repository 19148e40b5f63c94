"""Lowerings of kernels/rip_shape.h: RESIZE_NEAREST_NEIGHBOR, CONCATENATION, TRANSPOSE and
PAD.

The parameters are `rip.codegen.shape_params` (TFLite Micro's Prepare, bit for bit); the C
text comes from the template pair ``templates/ops/shape_{data,call}.c.j2`` through
`rip.codegen.lowering.render_op`; `rip.codegen.lowerings` maps each op kind to its lowering.

In place (`rip.core.terms.InPlaceKind`): ``"reverse"`` for RESIZE_NEAREST_NEIGHBOR: output and
input share a base address and the kernel traverses the output backwards (``reverse = 1``,
Theorem 14), refused where some output pixel reads an input pixel above it (downsampling).
CONCATENATION, TRANSPOSE and PAD read inputs out of order and need disjoint buffers; asking
for anything else is a `LoweringError`. Issue 14 adds slices (STRIDED_SLICE, SLICE, SPLIT,
SPLIT_V, UNPACK), PACK (the concatenation kernel), DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER,
PADV2 (the pad kernel) and MIRROR_PAD, all disjoint.
"""

from __future__ import annotations

from functools import partial

from rip.codegen import shape_params as sp
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    lower_one_input,
    operands,
    render_kernel,
    table_kernel,
    where,
)
from rip.core.errors import LoweringError
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator


def lower_transpose(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """TRANSPOSE (gathers across the tensor): output disjoint from the input. The permutation
    is in the params."""
    return lower_one_input(graph, op, index, buffers, prefix, table_kernel(op), sp.op_params, None)


def lower_resize_nearest(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """RESIZE_NEAREST_NEIGHBOR; in place (``"reverse"``: output base == input base) the
    kernel runs backwards. The size tensor is implied by the output shape."""
    compute = partial(sp.op_params, in_place=buffers.inplace is not None)
    kernel = table_kernel(op)
    return lower_one_input(graph, op, index, buffers, prefix, kernel, compute, InPlaceKind.REVERSE)


def lower_concatenation(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """CONCATENATION of any number of inputs (an input quantized unlike the output is
    requantized as a QUANTIZE before it would); the pointer table is built in the call
    because arena pointers need not be constant expressions at file scope."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    if any(t < 0 for t in op.inputs):
        raise LoweringError(f"{where(graph, op)}: an input is absent")
    params = kernel_params(sp.op_params, graph, op)
    inputs, constants = operands(graph, op, range(len(op.inputs)), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)


def lower_pad(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """An explicit PAD the rewrites kept (channel pads, several readers, a graph output),
    filled with the zero point."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    # A graph-only model's paddings were guessed from the shapes by the reader (enough to
    # plan memory, not to compute): refuse rather than emit a guessed split.
    paddings = graph.tensors[op.inputs[1]] if len(op.inputs) > 1 and op.inputs[1] >= 0 else None
    if paddings is not None and paddings.is_constant and paddings.data is None:
        raise LoweringError(
            f"{where(graph, op)}: model has no weights (the paddings tensor {paddings.id} "
            f"{paddings.name!r} has no data); compile the model with its weights"
        )
    params = kernel_params(sp.op_params, graph, op)
    inputs, constants = operands(graph, op, (0,), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)


def lower_movement(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK (the slices the rewrites did not turn into
    views), DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER and MIRROR_PAD: one data input, output
    disjoint from it (each reads its input out of output order)."""
    return lower_one_input(graph, op, index, buffers, prefix, table_kernel(op), sp.op_params, None)


def refuse_space_batch(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND that ``fold_space_batch`` did not fold into a
    dilated convolution: refused (TFLite Micro's SPACE_TO_BATCH_ND pads with a value its
    Prepare never sets, so no byte-exact kernel can be written against it)."""
    raise LoweringError(
        f"{where(graph, op, index)}: only supported around a CONV_2D or DEPTHWISE_CONV_2D "
        "(stride 1, VALID, batch 1, input zero point 0 where it pads), which is folded into a "
        "dilated convolution"
    )
