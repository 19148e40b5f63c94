"""The code generator's driver: a planned graph in, ``model.c``, ``model_data.c`` and
``model_data.h`` and ``model.h`` out.

Every tensor lives at its planned arena offset, named once (``RIP_OFFSET_T<id>``), and so
does every kernel's scratch (a buffer of the plan live for its op alone, handed to the
kernel as its own ``rip_context``, ``rip_op<N>_ctx``); every op is lowered through the
kernel table (`rip.codegen.lowerings`) into constant data (``model_data.c``, declared in
``model_data.h``) and one call in ``rip_model_invoke`` (``model.c``), so that ``model.c``
reads next to the .tflite: a table of the activations and scratch, then one commented call
per op. A planned right shift becomes a memmove before its op. Only
Jinja2 templates write C.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rip.allocator.planning.placement import SCRATCH, WEIGHTS, OpBuffer, Plan
from rip.allocator.planning.requirements import Requirements, scratch_per_core
from rip.codegen.lower_state import state_pointer
from rip.codegen.lowering import OpBuffers
from rip.codegen.lowerings import lowering_for
from rip.codegen.reference import default_inputs
from rip.codegen.templating import render
from rip.core.errors import CodegenError, LoweringError
from rip.core.kernel_variants import variant
from rip.core.names import token
from rip.core.operators import Op
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph


@dataclass(frozen=True)
class TensorSlot:
    name: str
    offset: int
    nbytes: int
    shape: tuple[int, ...]
    scale: float
    zero_point: int
    id: int = -1  # the tensor id in the graph (tN in the comments)
    storage: int = -1  # the tensor whose bytes it lives in (RIP_OFFSET_T<storage>)
    view: int = 0  # bytes past RIP_OFFSET_T<storage> where it starts (a slice's view)
    streamed: bool = False  # an input that streams in row by row: no offset in the arena
    dtype: str = "int8"  # int8, or uint8 (a uint8 interface)

    @property
    def rows(self) -> int:
        """H of an NHWC image (a streamed input's rows)."""
        return self.shape[1] if len(self.shape) == 4 else 1

    @property
    def row_bytes(self) -> int:
        return self.nbytes // self.rows


@dataclass(frozen=True)
class Activation:
    """One row of model.c's activation table: a buffer of the arena, live from op
    ``first`` to op ``last`` (inclusive)."""

    id: int
    name: str
    offset: int
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True)
class StateSlot:
    """One variable tensor of the persistent region: ``nbytes`` at ``offset`` of
    ``rip_state``, reset to ``fill`` (its int8 zero point, else 0, as TFLite Micro)."""

    id: int
    name: str
    offset: int
    nbytes: int
    fill: int
    init: bytes | None = None  # the model's reset bytes (CALL_ONCE's constants), or the fill


@dataclass(frozen=True)
class Scratch:
    """One op's scratch in the arena: ``nbytes`` at ``offset``, live for op ``op`` alone,
    passed to its kernel as the context ``name``."""

    op: int
    offset: int
    nbytes: int
    per_core: bool = False  # two cores share the op: a context each (rip_op<N>_ctxs[share])
    halves: bool = True  # per core: each core has half the buffer; else both share it all

    @property
    def name(self) -> str:
        return f"rip_op{self.op}_ctx"

    @property
    def core_bytes(self) -> int:
        """Each core's part of a per-core scratch (requirements.per_cores made both halves
        equal and 4-byte aligned)."""
        return self.nbytes // 2 if self.halves else self.nbytes

    @property
    def core1_offset(self) -> int:
        """Where core 1's part starts: past core 0's half, or at the start of a buffer both
        share."""
        return self.offset + (self.core_bytes if self.halves else 0)


@dataclass(frozen=True)
class TensorRef:
    """A tensor as an op comment names it: tN, its shape, and the tensor whose bytes it
    lives in (itself, or the tensor a RESHAPE aliases)."""

    id: int
    shape: tuple[int, ...]
    storage: int = -1


@dataclass(frozen=True)
class EmittedOp:
    index: int
    kind: Op
    source_index: int
    decls: str  # definitions of its constant data (model_data.c)
    call: str
    shift: tuple[int, int, int] | None  # (from offset, to offset, bytes): memmove first
    declarations: str = ""  # their extern declarations (model_data.h)
    inputs: tuple[TensorRef, ...] = ()  # activation inputs
    output: TensorRef | None = None
    inplace_over: int | None = None  # the input tensor the output overwrites
    gap: int | None = None  # bytes from the output's start to that input's start
    shift_storage: int | None = None  # the storage tensor a planned shift moves
    scratch: Scratch | None = None  # its kernel's scratch in the arena
    resident: bool = False  # its constant data in SRAM, copied at start-up (residency.py)
    shared: bool = False  # both cores run it, each its share (a two-core model)


@dataclass(frozen=True)
class Stripped:
    """A float boundary op the front end removed: QUANTIZE (float input -> int8) or
    DEQUANTIZE (int8 -> float output); the compiled model takes and returns the int8 side."""

    kind: Op
    float_tensor: TensorRef
    int8_tensor: TensorRef


@dataclass(frozen=True)
class EmittedModel:
    """``arena_bytes`` is all the activation RAM (activations and every kernel's scratch);
    ``scratch_bytes`` the largest op's scratch inside it."""

    name: str
    strategy: str
    arena_bytes: int
    scratch_bytes: int
    inputs: tuple[TensorSlot, ...]
    outputs: tuple[TensorSlot, ...]
    headers: tuple[str, ...]
    ops: tuple[EmittedOp, ...]
    default_inputs: tuple[bytes, ...]
    activations: tuple[Activation, ...] = ()
    stripped: tuple[Stripped, ...] = ()
    # flash-aware execution: the staged filters' arena buffers, each live for its op only
    staged: tuple[Activation, ...] = ()
    cores: int = 1  # 2: rip_model_invoke runs on both cores (docs/two-cores.md)
    state: tuple[StateSlot, ...] = ()  # the persistent region (Graph.state)
    state_bytes: int = 0  # its size (Graph.state_bytes)

    @property
    def resident_ops(self) -> int:
        """Ops whose constant data is resident in SRAM."""
        return sum(op.resident for op in self.ops)

    @property
    def streams(self) -> bool:
        """Some input streams in row by row (model.h's row source API)."""
        return any(t.streamed for t in self.inputs)

    @property
    def scratches(self) -> tuple[Scratch, ...]:
        return tuple(op.scratch for op in self.ops if op.scratch is not None)

    @property
    def files(self) -> dict[str, str]:
        """model.h, model.c, model_data.h and model_data.c."""
        ctx = {"m": self}
        return {
            name: render(f"{name}.j2", **ctx)
            for name in ("model.h", "model.c", "model_data.h", "model_data.c")
        }


def _state_slots(graph: Graph) -> tuple[StateSlot, ...]:
    """The persistent region's tensors, where `Graph.state_offsets` puts them."""
    slots = []
    for tid, offset in graph.state_offsets().items():
        t = graph.tensors[tid]
        zp = t.quant.zero_point[0] if t.quant is not None and t.dtype == "int8" else 0
        init = graph.state_init.get(tid)
        slots.append(StateSlot(tid, t.name, offset, t.nbytes, int(zp) & 0xFF, init))
    return tuple(slots)


# The context of a kernel without scratch: a valid context of no bytes (a kernel checks its
# context before it asks for what it needs, none here), defined once in model.c.
NO_SCRATCH = "rip_no_scratch"


def offset_name(storage: int) -> str:
    """The C name of an activation's arena offset (model.c defines one per activation)."""
    return f"RIP_OFFSET_T{storage}"


def _slot(graph: Graph, plan: Plan, t: int) -> TensorSlot:
    tensor = graph.tensors[t]
    q = tensor.quant
    s = graph.storage(t)
    view = graph.storage_offset(t)
    streamed = s in graph.streamed
    return TensorSlot(tensor.name, -1 if streamed else plan.offsets[s] + view, tensor.nbytes,
                      tuple(tensor.shape), q.scale[0] if q else 0.0, q.zero_point[0] if q else 0,
                      t, s, view, streamed, tensor.dtype)  # fmt: skip


def _ref(graph: Graph, t: int) -> TensorRef:
    return TensorRef(t, tuple(graph.tensors[t].shape), graph.storage(t))


def emit_model(
    graph: Graph,
    req: Requirements,
    plan: Plan,
    strategy: str,
    op_buffers: tuple[OpBuffer, ...] = (),
    resident: Collection[int] = (),
) -> EmittedModel:
    """Lower every op of ``graph`` at the offsets of ``plan`` (already replay-checked, with
    the op-lived buffers ``op_buffers`` of its problem: staged filters); ``resident``: the
    ops whose constant data goes to SRAM (.data), not flash. On two cores (``req.cores``)
    an op the planner gave a scratch per core runs on both where its kernel shares
    (KernelVariant.shares), else on core 0 alone."""
    cores = req.cores
    if not graph.has_weights:
        raise CodegenError(
            f"{graph.name}: the model has no weights (a graph-only file): --report and "
            "planning work on it, code generation needs the trained constants"
        )
    aliased = {p.op: p for p in plan.aliased}
    shifted = {p.op: p for p in plan.shifts}
    staged: dict[int, dict[int, tuple[str, int]]] = {}  # op -> filter member -> (ptr, bytes)
    for b in op_buffers:
        if b.role == SCRATCH:  # each op's scratch is the requirements' (req.op_buffer)
            continue
        if b.role != WEIGHTS:
            raise CodegenError(f"op-lived buffer {b.id}: no code for role {b.role!r}")
        staged.setdefault(b.op, {})[b.member] = (f"(rip_arena + {plan.offsets[b.id]})", b.size)
    headers: dict[str, None] = {}
    ops = []
    state = set(graph.state)
    for i, op in enumerate(graph.operators):
        moved = {}  # storage id -> bytes a planned shift moved it up by, during this op
        shift = shift_storage = None
        if i in shifted:
            p = shifted[i]
            src = plan.offsets[p.input]
            shift = (src, src + p.gap, graph.tensors[p.input].nbytes)
            shift_storage = p.input
            moved[p.input] = p.gap

        def ptr(t: int, moved: dict = moved) -> str:
            s = graph.storage(t)
            if s in state:  # a resource variable's bytes: the persistent region
                return state_pointer(graph, s)
            shift = moved.get(s, 0) + graph.storage_offset(t)  # a view starts inside s
            extra = f" + {shift}" if shift else ""
            return f"(rip_arena + {offset_name(s)}{extra})"

        def at(t: int, moved: dict = moved) -> int:
            s = graph.storage(t)
            return plan.offsets[s] + moved.get(s, 0) + graph.storage_offset(t)

        activations = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        inputs = tuple(None if t < 0 or graph.tensors[t].is_constant else ptr(t)
                       for t in op.inputs)  # fmt: skip
        inplace = inplace_input = over = gap = None
        if i in aliased:
            p = aliased[i]
            inplace = InPlaceKind(p.kind)  # a model's pairs have a kind (placement.Pair)
            inplace_input = next(k for k, t in enumerate(op.inputs)
                                 if t >= 0 and graph.storage(t) == p.input)  # fmt: skip
            over = op.inputs[inplace_input]
            gap = at(over) - at(op.outputs[0])
        output = ptr(op.outputs[0])
        if over is not None and gap == 0:
            output = ptr(over)  # one base, one expression (the channel kernel has one pointer)
        rings = tuple(ptr(t) for t in op.outputs[1:])  # a fused chain's rings
        own = req.op_buffer(i)  # the op's scratch: a buffer of the plan, live for it alone
        per_core = own is not None and i in req.shared
        scratch = None
        if own is not None:  # in halves where each core has its own (requirements.per_cores)
            halves = scratch_per_core(op)
            scratch = Scratch(i, plan.offsets[own.id], own.size, per_core, halves)
        reserved = 0 if scratch is None else scratch.core_bytes if per_core else scratch.nbytes
        context = f"&{NO_SCRATCH}" if scratch is None else f"&{scratch.name}"
        if per_core:
            context += "s[share]"  # model.c's run function picks the core's (or the whole)
        buffers = OpBuffers(
            inputs, output, inplace, inplace_input, rings, context, reserved, staged.get(i, {})
        )
        lowered = lowering_for(graph, op)(graph, op, i, buffers, f"rip_op{i}")
        if lowered.scratch_bytes > reserved:
            raise LoweringError(
                f"{op.describe(graph, i)} needs "
                f"{lowered.scratch_bytes} B of scratch, the plan reserved {reserved} B"
            )
        headers.update(dict.fromkeys(lowered.headers))
        ops.append(
            EmittedOp(
                index=i,
                kind=op.kind,
                source_index=op.source_index,
                decls=lowered.decls,
                call=lowered.call,
                shift=shift,
                declarations=lowered.declarations,
                inputs=tuple(_ref(graph, t) for t in activations),
                output=_ref(graph, op.outputs[0]),
                inplace_over=over,
                gap=gap,
                shift_storage=shift_storage,
                scratch=scratch,
                resident=i in resident,
                shared=per_core and kernel_shares(lowered.function),
            )
        )
    table = sorted(req.lifetimes.values(), key=lambda lt: (lt.first, lt.id))
    return EmittedModel(
        name=token(graph.name),  # it reaches C strings, Makefiles, CMake and the result line
        strategy=strategy,
        arena_bytes=plan.peak,
        scratch_bytes=req.scratch_bytes,
        inputs=tuple(_slot(graph, plan, t) for t in graph.inputs),
        outputs=tuple(_slot(graph, plan, t) for t in graph.outputs),
        headers=tuple(headers),
        ops=tuple(ops),
        default_inputs=tuple(x.tobytes() for x in default_inputs(graph)),
        activations=tuple(
            Activation(
                lt.id,
                graph.tensors[lt.id].name,
                plan.offsets[lt.id],
                lt.size,
                lt.first,
                lt.last,
            )
            for lt in table
        ),
        stripped=tuple(
            Stripped(Op(kind), _ref(graph, f), _ref(graph, q)) for kind, f, q in graph.interface
        ),
        state=_state_slots(graph),
        state_bytes=graph.state_bytes,
        staged=tuple(
            Activation(b.id, f"op {b.op} filter {b.member}", plan.offsets[b.id], b.size, b.op, b.op)
            for b in op_buffers
            if b.role == WEIGHTS
        ),
        cores=cores,
    )


def kernel_shares(function: str) -> bool:
    """Whether kernel ``function`` runs a core's share of an op (KernelVariant.shares)."""
    try:
        return variant(function).shares
    except KeyError:
        return False
