"""Lowering of kernels/rip_state.h: READ_VARIABLE and ASSIGN_VARIABLE, a resource
variable's bytes copied out of or into the persistent region (``rip_state`` in model.c),
where the model reads or assigns them. The generator's pointer of the variable's state
tensor (`rip.codegen.emit`) is into that region; the value's is in the arena."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    render_kernel,
    table_kernel,
    where,
)
from rip.core.errors import LoweringError
from rip.core.operators import Kernel, Op
from rip.frontend.ir import Graph, Operator, VariableParams


@dataclass(frozen=True)
class CopyParams:
    """rip_copy_params."""

    size: int


def state_pointer(graph: Graph, tid: int) -> str:
    """The C pointer of state tensor ``tid``: its bytes of the persistent region."""
    return f"(rip_state + {graph.state_offsets()[tid]})"


def lower_with_state(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str, kernel: Kernel,
    compute: Callable, states: Callable[[Any], tuple[int, ...]],
) -> Lowered:  # fmt: skip
    """An op of one arena input that updates state tensors of the persistent region (SVDF,
    UNIDIRECTIONAL_SEQUENCE_LSTM): out of place, the kernel called with its input, then the
    pointer of each state tensor ``states(params)`` names, in that order."""
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    params = kernel_params(compute, graph, op)
    inputs = (str(buffers.inputs[0]), *(state_pointer(graph, t) for t in states(params)))
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, ())


def lower_variable(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """READ_VARIABLE: the variable's bytes into its value; ASSIGN_VARIABLE: the value into
    the variable's bytes. Out of place (the two are never in one region)."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    if not isinstance(op.params, VariableParams) or buffers.inplace is not None:
        raise LoweringError(f"{where(graph, op, index)}: a variable copy runs out of place")
    state = state_pointer(graph, op.params.state)
    if op.kind == Op.READ_VARIABLE:
        source, target = state, buffers.output
    else:
        source, target = str(buffers.inputs[0]), state
    size = graph.tensors[op.params.state].nbytes
    copy = replace(buffers, output=target)
    return render_kernel(graph, op, index, copy, prefix, kernel, CopyParams(size), (source,), ())
