"""Lowering of kernels/rip_lstm.h: UNIDIRECTIONAL_SEQUENCE_LSTM.

Parameters from `rip.codegen.lstm_params`; C text from ``templates/ops/lstm_{data,call}.c.j2``.
The weights and biases are the op's own constants; the hidden and cell states are their
bytes of the persistent region (``rip_state`` in model.c, `Graph.state_offsets`), never the
arena. Out of place, no scratch.
"""

from __future__ import annotations

from rip.codegen import lstm_params as lp
from rip.codegen.lower_state import state_pointer
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    render_kernel,
    table_kernel,
)
from rip.frontend.ir import Graph, Operator


def lower_lstm(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """The whole sequence in one call: input from the arena, states from the persistent
    region."""
    kernel = table_kernel(op)
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, ())
    params = kernel_params(lp.op_params, graph, op)
    inputs = (
        str(buffers.inputs[0]),
        state_pointer(graph, params.hidden_state),
        state_pointer(graph, params.cell_state),
    )
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, ())
