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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Variable:
    """One resource variable of subgraph 0: its shared name, the bytes a
    CALL_ONCE initialisation assigns it (None: TFLite Micro's default, its zero point),
    and the tensor whose type, shape and quantization it holds (an assigned or read value)."""

    name: str
    like: int
    init: bytes | None


@dataclass(frozen=True)
class ResourceVariables:
    """Subgraph 0's resource variables as rip runs them: each READ_VARIABLE a copy from the
    variable's bytes in the persistent region, each ASSIGN_VARIABLE a copy into them, at
    their places in the schedule (TFLite Micro's order); VAR_HANDLE and CALL_ONCE leave no
    operator (``dropped``), the constants CALL_ONCE's subgraph assigns become the values the
    state is reset to. ``of_op`` gives the variable (an index of ``variables``) each READ and
    ASSIGN uses, ``value`` the tensor it reads into or assigns from."""

    variables: tuple[Variable, ...]
    of_op: dict[int, int]
    value: dict[int, int]
    dropped: frozenset[int]
    init_subgraph: int | None


def _handles(model: Any, s: int) -> dict[int, str]:
    """Resource tensor -> variable name, for the VAR_HANDLE ops of subgraph ``s``."""
    sub = model.Subgraphs(s)
    codes = [builtin_name(model.OperatorCodes(j)) for j in range(model.OperatorCodesLength())]
    out = {}
    for i in range(sub.OperatorsLength()):
        op = sub.Operators(i)
        if codes[op.OpcodeIndex()] != Op.VAR_HANDLE or not op.OutputsLength():
            continue
        opts = tflite.VarHandleOptions()
        table = op.BuiltinOptions()
        name = ""
        if table is not None:
            opts.Init(table.Bytes, table.Pos)
            name = (opts.SharedName() or b"").decode(errors="replace")
        # TFLite Micro finds a variable by its shared name (an absent container matches any):
        # every handle of one name, in any subgraph, is the same variable
        out[int(op.Outputs(0))] = name
    return out


def resource_plan(model: Any) -> ResourceVariables | str:
    """How subgraph 0's resource variables run (see `ResourceVariables`), or one line
    naming what rip cannot run: a CALL_ONCE subgraph that does more than assign constants,
    a variable read or assigned at two sizes, a handle that is no VAR_HANDLE's."""
    codes = [builtin_name(model.OperatorCodes(j)) for j in range(model.OperatorCodesLength())]
    sub = model.Subgraphs(0)
    handles = _handles(model, 0)
    names: dict[str, int] = {}
    variables: list[list[Any]] = []  # [name, like tensor, init bytes, size]
    of_op: dict[int, int] = {}
    value: dict[int, int] = {}
    dropped: set[int] = set()
    init_subgraph = None

    def variable(name: str) -> int:
        if name not in names:
            names[name] = len(variables)
            variables.append([name, -1, None, None])
        return names[name]

    def nbytes(s: Any, t: int) -> int:
        tensor = s.Tensors(t)
        n = 1
        for d in tensor.ShapeAsNumpy() if tensor.ShapeLength() else ():
            n *= int(d)
        return n

    for i in range(sub.OperatorsLength()):
        op = sub.Operators(i)
        kind = codes[op.OpcodeIndex()]
        ins = [int(t) for t in op.InputsAsNumpy()] if op.InputsLength() else []
        outs = [int(t) for t in op.OutputsAsNumpy()] if op.OutputsLength() else []
        if kind in (Op.VAR_HANDLE, Op.CALL_ONCE):
            dropped.add(i)
            if kind == Op.CALL_ONCE:
                if init_subgraph is not None:
                    return f"operator {i} is a second CALL_ONCE; rip runs one initialisation"
                init_subgraph = _init_subgraph(op)
            continue
        if kind not in (Op.READ_VARIABLE, Op.ASSIGN_VARIABLE):
            continue
        if not ins or ins[0] not in handles:
            return f"operator {i} ({kind}) reads a handle no VAR_HANDLE of subgraph 0 makes"
        data = outs[0] if kind == Op.READ_VARIABLE and outs else ins[1] if len(ins) > 1 else -1
        if data < 0:
            return f"operator {i} ({kind}) has no value tensor"
        v = variable(handles[ins[0]])
        size = nbytes(sub, data)
        if variables[v][3] not in (None, size):
            return f"operator {i} ({kind}) uses variable {handles[ins[0]]!r} at another size"
        variables[v][1], variables[v][3] = (
            variables[v][1] if variables[v][1] >= 0 else data,
            size,
        )
        of_op[i], value[i] = v, data
    if init_subgraph is not None:
        if not 0 < init_subgraph < model.SubgraphsLength():
            return f"CALL_ONCE runs subgraph {init_subgraph}, which is not in the model"
        init = model.Subgraphs(init_subgraph)
        init_handles = _handles(model, init_subgraph)
        for i in range(init.OperatorsLength()):
            op = init.Operators(i)
            kind = codes[op.OpcodeIndex()]
            if kind == Op.VAR_HANDLE:
                continue
            ins = [int(t) for t in op.InputsAsNumpy()] if op.InputsLength() else []
            buf = model.Buffers(init.Tensors(ins[1]).Buffer()) if len(ins) > 1 else None
            if kind != Op.ASSIGN_VARIABLE or buf is None or not buf.DataLength():
                return (
                    f"CALL_ONCE's subgraph {init_subgraph} runs {kind} (operator {i}); rip "
                    "runs an initialisation that assigns constants only"
                )
            name = init_handles.get(ins[0])
            if name is None or name not in names:
                continue  # a variable subgraph 0 never uses
            v = names[name]
            data = buf.DataAsNumpy().tobytes()
            if len(data) != variables[v][3]:
                return (
                    f"CALL_ONCE assigns {name!r} {len(data)} B, subgraph 0 uses {variables[v][3]} B"
                )
            variables[v][2] = data
    return ResourceVariables(
        tuple(Variable(n, like, init) for n, like, init, _ in variables),
        of_op,
        value,
        frozenset(dropped),
        init_subgraph,
    )


def resource_operands(
    plan: ResourceVariables, i: int, ins: tuple[int, ...], outs: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Operator ``i``'s tensors as rip reads it: a READ_VARIABLE writes its value and reads
    nothing of the arena, an ASSIGN_VARIABLE reads its value, VAR_HANDLE and CALL_ONCE
    touch none (the resource handles are no tensors of rip's)."""
    if i in plan.dropped:
        return (), ()
    if i in plan.of_op:
        value = plan.value[i]
        return ((), (value,)) if value in outs else ((value,), ())
    return ins, outs
