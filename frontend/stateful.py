"""Resource variables, named in one refusal before any structural check could misname them.

A streaming model (the microWakeWord kind) keeps its state in resource variables:
``VAR_HANDLE`` gives a handle, ``READ_VARIABLE`` / ``ASSIGN_VARIABLE`` read and write it,
and ``CALL_ONCE`` runs a second subgraph, with operators and no outputs, that initialises
them on the first invoke. Taken one check at a time such a model looks broken (an operator
without outputs, a resource tensor, a subgraph without outputs); `resource_variables` finds
the feature itself, in any subgraph, so that the refusal says what the model is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import tflite

from rip.core.operators import RESOURCE_VARIABLES, Op, ops
from rip.frontend.tflite_mapping import builtin_name

RESOURCE_OPS = ops(lambda s: s.resource_variable)


def resource_variables(model: Any) -> str | None:
    """One line naming the resource variable ops of ``model`` (a ``tflite.Model`` whose
    tables the validator has checked), the subgraphs CALL_ONCE runs, and that TFLite Micro
    runs them; None for a model without them."""
    codes = [builtin_name(model.OperatorCodes(j)) for j in range(model.OperatorCodesLength())]
    found: Counter[str] = Counter()
    inits: set[int] = set()
    for s in range(model.SubgraphsLength()):
        sub = model.Subgraphs(s)
        for i in range(sub.OperatorsLength()):
            op = sub.Operators(i)
            if not 0 <= op.OpcodeIndex() < len(codes):
                continue  # the validator names it
            name = codes[op.OpcodeIndex()]
            if name in RESOURCE_OPS:
                found[name] += 1
                if name == Op.CALL_ONCE:
                    inits.add(_init_subgraph(op))
    if not found:
        return None
    uses = ", ".join(f"{n} x{k}" if k > 1 else n for n, k in sorted(found.items()))
    runs = "".join(
        f"; CALL_ONCE runs subgraph {s} ({_subgraph_size(model, s)}) to initialise them"
        for s in sorted(inits)
    )
    return f"the model uses {uses}{runs}: {RESOURCE_VARIABLES}"


def _init_subgraph(op: Any) -> int:
    """The subgraph a CALL_ONCE operator runs (-1 when its options are missing)."""
    table = op.BuiltinOptions()
    if op.BuiltinOptionsType() != tflite.BuiltinOptions.CallOnceOptions or table is None:
        return -1
    opts = tflite.CallOnceOptions()
    opts.Init(table.Bytes, table.Pos)
    return int(opts.InitSubgraphIndex())


def _subgraph_size(model: Any, s: int) -> str:
    if not 0 <= s < model.SubgraphsLength():
        return "absent"
    sub = model.Subgraphs(s)
    return f"{sub.OperatorsLength()} operators, {sub.OutputsLength()} outputs"
