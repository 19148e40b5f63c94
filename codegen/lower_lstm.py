"""Lowering of kernels/rip_lstm.h: UNIDIRECTIONAL_SEQUENCE_LSTM.

Parameters from `rip.codegen.lstm_params`; C text from ``templates/ops/lstm_{data,call}.c.j2``.
The weights and biases are the op's own constants; the hidden and cell states are their
bytes of the persistent region (``rip_state`` in model.c, `Graph.state_offsets`), never the
arena. Out of place, no scratch.
"""

from __future__ import annotations

from rip.codegen import lstm_params as lp
from rip.codegen.lower_state import lower_with_state
from rip.codegen.lowering import Lowered, OpBuffers, table_kernel
from rip.frontend.ir import Graph, Operator


def lower_lstm(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """The whole sequence in one call: input from the arena, hidden and cell state from the
    persistent region."""
    return lower_with_state(
        graph, op, index, buffers, prefix, table_kernel(op), lp.op_params,
        lambda p: (p.hidden_state, p.cell_state),
    )  # fmt: skip
