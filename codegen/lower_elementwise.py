"""Lowerings of the elementwise, activation and data-movement ops to C.

One lowering per kernel family (``kernels/rip_elementwise.h``, ``rip_activation.h``,
``rip_shape.h``); `rip.codegen.kernels` maps each op kind to its lowering. The parameters are
`rip.codegen.elementwise_params.op_params` (TFLite Micro's Prepare, bit for bit); this module
only decides which pointers the kernel gets, which constant data the op owns, and whether the
in-place mode the plan asks for is one the kernel supports. Every C text comes from
the template pair of the kernel's header, ``templates/ops/<header>_data.c.j2`` (file scope)
and ``<header>_call.c.j2`` (the call), through `rip.codegen.lowering.render_op`.

In-place kinds (`rip.terms.InPlaceKind`):

* ``"elementwise"`` for ADD/SUB/MUL and the unary activations: the same call, with the
  output at or below a full-size input; the kernels read element i before storing it, first
  to last. A broadcast operand is re-read for every row, so it can never be the overwritten
  one.
* ``"reverse"`` for RESIZE_NEAREST_NEIGHBOR: output and input share a base address and the
  kernel traverses the output backwards (``reverse = 1``, Theorem 14), refused where some
  output pixel reads an input pixel above it (downsampling).
* SOFTMAX, CONCATENATION, TRANSPOSE and PAD read inputs out of order and need disjoint
  buffers; asking for anything else is a `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rip.codegen import elementwise_params as ep
from rip.codegen.lowering import (
    ConstantOperand,
    Lowered,
    OpBuffers,
    OpContext,
    render_op,
    where,
)
from rip.codegen.quant import ParamsError
from rip.errors import LoweringError
from rip.frontend.ir import Graph, Operator
from rip.terms import InPlaceKind

BINARY = ("ADD", "SUB", "MUL")
UNARY = ("RELU", "RELU6", "QUANTIZE", "LOGISTIC", "TANH", "HARD_SWISH")


@dataclass(frozen=True)
class Kernel:
    """The C side of one op kind: kernel function, params struct type and its header (which
    picks the template pair)."""

    function: str
    struct: str
    header: str


KERNELS: dict[str, Kernel] = {
    "ADD": Kernel("rip_add_s8", "rip_add_params", "rip_elementwise.h"),
    "SUB": Kernel("rip_sub_s8", "rip_sub_params", "rip_elementwise.h"),
    "MUL": Kernel("rip_mul_s8", "rip_mul_params", "rip_elementwise.h"),
    "RELU": Kernel("rip_relu_s8", "rip_relu_params", "rip_activation.h"),
    "RELU6": Kernel("rip_relu_s8", "rip_relu_params", "rip_activation.h"),
    "QUANTIZE": Kernel("rip_quantize_s8", "rip_quantize_params", "rip_activation.h"),
    "LOGISTIC": Kernel("rip_logistic_s8", "rip_logistic_params", "rip_activation.h"),
    "TANH": Kernel("rip_tanh_s8", "rip_tanh_params", "rip_activation.h"),
    "HARD_SWISH": Kernel("rip_hard_swish_s8", "rip_hard_swish_params", "rip_activation.h"),
    "SOFTMAX": Kernel("rip_softmax_s8", "rip_softmax_params", "rip_activation.h"),
    "RESIZE_NEAREST_NEIGHBOR": Kernel(
        "rip_resize_nearest_s8", "rip_resize_nearest_params", "rip_shape.h"
    ),
    "CONCATENATION": Kernel("rip_concatenation_s8", "rip_concat_params", "rip_shape.h"),
    "TRANSPOSE": Kernel("rip_transpose_s8", "rip_transpose_params", "rip_shape.h"),
    "PAD": Kernel("rip_pad_s8", "rip_pad_params", "rip_shape.h"),
}


# ---- shared checks --------------------------------------------------------------------------


def _check_buffers(graph: Graph, op: Operator, buffers: OpBuffers) -> None:
    """The driver's buffers must match the op: one entry per input, a pointer for every
    activation (a None there would silently read constant data that does not exist)."""
    if len(buffers.inputs) != len(op.inputs):
        raise LoweringError(
            f"{where(graph, op)}: {len(buffers.inputs)} input buffers for {len(op.inputs)} inputs"
        )
    for k, (tid, pointer) in enumerate(zip(op.inputs, buffers.inputs, strict=True)):
        if pointer is None and tid >= 0 and not graph.tensors[tid].is_constant:
            raise LoweringError(
                f"{where(graph, op)}: input {k} (tensor {tid}) is an activation but has no buffer"
            )


def _check_in_place(
    graph: Graph, op: Operator, buffers: OpBuffers, allowed: str | None, inputs: Sequence[int]
) -> bool:
    """True when the op runs in place. ``allowed`` is the one mode the kernel supports (None:
    none); ``inputs`` the input positions it may overwrite."""
    mode = buffers.inplace
    if mode is None:
        return False
    if mode != allowed:
        supported = f"only {allowed!r}" if allowed else "none (it needs disjoint buffers)"
        raise LoweringError(
            f"{where(graph, op)}: in-place mode {mode!r} is not supported by "
            f"{KERNELS[op.kind].function} (in-place modes: {supported})"
        )
    k = buffers.inplace_input
    if k not in inputs:
        raise LoweringError(
            f"{where(graph, op)}: in place over input {k}; {op.kind} may only overwrite "
            f"input {' or '.join(str(i) for i in inputs)}"
        )
    if buffers.inputs[k] is None:
        raise LoweringError(f"{where(graph, op)}: in place over constant input {k}")
    return True


def _params(graph: Graph, op: Operator, in_place: bool = False) -> ep.KernelParams:
    """op_params, with TFLite Micro's refusals reported as this op's LoweringError."""
    try:
        return ep.op_params(graph, op, in_place=in_place)
    except ParamsError as e:
        raise LoweringError(f"{where(graph, op)}: {e}") from None


def _operands(
    graph: Graph, op: Operator, positions: Sequence[int], buffers: OpBuffers, prefix: str
) -> tuple[list[str], list[ConstantOperand]]:
    """Pointer expressions of the data inputs at ``positions`` and the constant data the op
    emits for those that are constants (the driver passes None for them)."""
    pointers: list[str] = []
    constants: list[ConstantOperand] = []
    for k in positions:
        pointer = buffers.inputs[k]
        if pointer is not None:
            pointers.append(pointer)
            continue
        tensor = graph.tensors[op.inputs[k]]
        if tensor.data is None:
            raise LoweringError(
                f"{where(graph, op)}: model has no weights (constant input {k}, tensor "
                f"{tensor.id} {tensor.name!r}, has no data); compile the model with its weights"
            )
        if tensor.dtype != "int8" or len(tensor.data) != tensor.nbytes:
            raise LoweringError(
                f"{where(graph, op)}: constant input {k} is {tensor.dtype} of "
                f"{len(tensor.data)} bytes, not int8 of shape {tensor.shape}"
            )
        constant = ConstantOperand(f"{prefix}_operand{k}", tensor.data)
        constants.append(constant)
        pointers.append(constant.name)
    return pointers, constants


def _lowered(
    graph: Graph,
    op: Operator,
    index: int,
    buffers: OpBuffers,
    prefix: str,
    params: ep.KernelParams,
    inputs: Sequence[str],
    constants: Sequence[ConstantOperand],
) -> Lowered:
    """Render the kernel header's template pair; no kernel here uses scratch."""
    kernel = KERNELS[op.kind]
    return render_op(
        OpContext(
            kind=op.kind,
            header=kernel.header,
            function=kernel.function,
            struct=kernel.struct,
            params=params,
            prefix=prefix,
            # rip_model_invoke reports the failing op as its schedule index + 1 (0: success).
            status=index + 1,
            inputs=tuple(inputs),
            output=buffers.output,
            constants=tuple(constants),
        )
    )


# ---- the lowerings --------------------------------------------------------------------------


def lower_binary(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """ADD, SUB, MUL with suffix broadcasting; a constant operand (e.g. a per-channel scale of
    shape 1x1x1xC) is emitted as the op's own data. In place over a full-size operand."""
    _check_buffers(graph, op, buffers)
    in_place = _check_in_place(graph, op, buffers, InPlaceKind.ELEMENTWISE, (0, 1))
    params = _params(graph, op)
    assert isinstance(params, (ep.AddParams, ep.MulParams))
    if in_place:
        size = (params.input1_size, params.input2_size)[buffers.inplace_input or 0]
        if size != params.output_size:
            raise LoweringError(
                f"{where(graph, op)}: cannot run in place over input {buffers.inplace_input}:"
                f" it is the broadcast operand ({size} of {params.output_size} elements, read"
                " again for every row)"
            )
    inputs, constants = _operands(graph, op, (0, 1), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)


def lower_unary(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """RELU, RELU6, QUANTIZE (int8 -> int8), LOGISTIC, TANH, HARD_SWISH: one pass over the
    elements, in place at or below the input."""
    _check_buffers(graph, op, buffers)
    _check_in_place(graph, op, buffers, InPlaceKind.ELEMENTWISE, (0,))
    params = _params(graph, op)
    inputs, constants = _operands(graph, op, (0,), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)


def lower_disjoint_unary(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """SOFTMAX (each row is read twice: max, then sum) and TRANSPOSE (gathers across the
    tensor): output disjoint from the input. TRANSPOSE's permutation is in the params."""
    _check_buffers(graph, op, buffers)
    _check_in_place(graph, op, buffers, None, ())
    params = _params(graph, op)
    inputs, constants = _operands(graph, op, (0,), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)


def lower_resize_nearest(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """RESIZE_NEAREST_NEIGHBOR; in place (``"reverse"``: output base == input base) the
    kernel runs backwards. The size tensor is implied by the output shape."""
    _check_buffers(graph, op, buffers)
    in_place = _check_in_place(graph, op, buffers, InPlaceKind.REVERSE, (0,))
    params = _params(graph, op, in_place=in_place)
    inputs, constants = _operands(graph, op, (0,), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)


def lower_concatenation(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """CONCATENATION of any number of inputs (an input quantized unlike the output is
    requantized as a QUANTIZE before it would); the pointer table is built in the call
    because arena pointers need not be constant expressions at file scope."""
    _check_buffers(graph, op, buffers)
    _check_in_place(graph, op, buffers, None, ())
    if any(t < 0 for t in op.inputs):
        raise LoweringError(f"{where(graph, op)}: an input is absent")
    params = _params(graph, op)
    inputs, constants = _operands(graph, op, range(len(op.inputs)), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)


def lower_pad(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """An explicit PAD the rewrites kept (channel pads, several readers, a graph output),
    filled with the zero point."""
    _check_buffers(graph, op, buffers)
    _check_in_place(graph, op, buffers, None, ())
    # A graph-only model's paddings were guessed from the shapes by the reader (enough to
    # plan memory, not to compute): refuse rather than emit a guessed split.
    paddings = graph.tensors[op.inputs[1]] if len(op.inputs) > 1 and op.inputs[1] >= 0 else None
    if paddings is not None and paddings.is_constant and paddings.data is None:
        raise LoweringError(
            f"{where(graph, op)}: model has no weights (the paddings tensor {paddings.id} "
            f"{paddings.name!r} has no data); compile the model with its weights"
        )
    params = _params(graph, op)
    inputs, constants = _operands(graph, op, (0,), buffers, prefix)
    return _lowered(graph, op, index, buffers, prefix, params, inputs, constants)
