"""The code generator's driver: a planned graph in, ``model.c`` / ``model.h`` out.

Every tensor lives at its planned arena offset; every op is lowered by its kernel family
(``codegen/lower_*.py``) into file-scope constant data and one call. A planned right shift
becomes a memmove before its op. Only Jinja2 templates write C.
"""

from __future__ import annotations

from dataclasses import dataclass

from rip.allocator.planning.placement import Plan
from rip.allocator.planning.requirements import Requirements
from rip.codegen import lower_elementwise, lower_spatial  # noqa: F401  (register lowerings)
from rip.codegen.lowering import LoweringError, OpBuffers, lowering_for
from rip.codegen.reference import default_inputs
from rip.codegen.templating import render
from rip.errors import CodegenError
from rip.frontend.ir import Graph


@dataclass(frozen=True)
class TensorSlot:
    name: str
    offset: int
    nbytes: int
    shape: tuple[int, ...]
    scale: float
    zero_point: int


@dataclass(frozen=True)
class EmittedOp:
    index: int
    kind: str
    source_index: int
    decls: str
    call: str
    shift: tuple[int, int, int] | None  # (from offset, to offset, bytes): memmove first


@dataclass(frozen=True)
class EmittedModel:
    name: str
    strategy: str
    arena_bytes: int
    scratch_bytes: int
    inputs: tuple[TensorSlot, ...]
    outputs: tuple[TensorSlot, ...]
    headers: tuple[str, ...]
    ops: tuple[EmittedOp, ...]
    default_inputs: tuple[bytes, ...]

    @property
    def files(self) -> dict[str, str]:
        """model.h and model.c."""
        ctx = {"m": self}
        return {"model.h": render("model.h.j2", **ctx), "model.c": render("model.c.j2", **ctx)}


def _slot(graph: Graph, plan: Plan, t: int) -> TensorSlot:
    tensor = graph.tensors[t]
    q = tensor.quant
    return TensorSlot(tensor.name, plan.offsets[graph.storage(t)], tensor.nbytes,
                      tuple(tensor.shape), q.scale[0] if q else 0.0,
                      q.zero_point[0] if q else 0)  # fmt: skip


def emit_model(graph: Graph, req: Requirements, plan: Plan, strategy: str) -> EmittedModel:
    """Lower every op of ``graph`` at the offsets of ``plan`` (already replay-checked)."""
    if not graph.has_weights:
        raise CodegenError(
            f"{graph.name}: the model has no weights (a graph-only file): --report and "
            "planning work on it, code generation needs the trained constants"
        )
    aliased = {p.op: p for p in plan.aliased}
    shifted = {p.op: p for p in plan.shifts}
    headers: dict[str, None] = {}
    ops = []
    for i, op in enumerate(graph.operators):
        home = {}  # storage id -> offset during this op (a shift moves the input)
        shift = None
        if i in shifted:
            p = shifted[i]
            src = plan.offsets[p.input]
            shift = (src, src + p.gap, graph.tensors[p.input].nbytes)
            home[p.input] = src + p.gap

        def ptr(t: int, home: dict = home) -> str:
            s = graph.storage(t)
            return f"(rip_arena + {home.get(s, plan.offsets[s])})"

        inputs = tuple(None if t < 0 or graph.tensors[t].is_constant else ptr(t)
                       for t in op.inputs)  # fmt: skip
        inplace = inplace_input = None
        if i in aliased:
            p = aliased[i]
            inplace = p.kind
            inplace_input = next(k for k, t in enumerate(op.inputs)
                                 if t >= 0 and graph.storage(t) == p.input)  # fmt: skip
        buffers = OpBuffers(inputs, ptr(op.outputs[0]), inplace, inplace_input)
        lowered = lowering_for(graph, op)(graph, op, i, buffers, f"op{i}")
        if lowered.scratch_bytes > req.ops[i].scratch_bytes:
            raise LoweringError(
                f"{op.describe(graph, i)} needs "
                f"{lowered.scratch_bytes} B of scratch, the plan reserved "
                f"{req.ops[i].scratch_bytes} B"
            )
        headers.update(dict.fromkeys(lowered.headers))
        ops.append(EmittedOp(i, op.kind, op.source_index, lowered.decls, lowered.call, shift))
    return EmittedModel(
        name=graph.name,
        strategy=strategy,
        arena_bytes=plan.peak,
        scratch_bytes=req.scratch_bytes,
        inputs=tuple(_slot(graph, plan, t) for t in graph.inputs),
        outputs=tuple(_slot(graph, plan, t) for t in graph.outputs),
        headers=tuple(headers),
        ops=tuple(ops),
        default_inputs=tuple(x.tobytes() for x in default_inputs(graph)),
    )
