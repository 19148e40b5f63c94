"""The contract between the code generator and the per-kernel lowerings.

The generator decides where every tensor lives (arena offsets from the replay-checked plan)
and how each op runs in place; a lowering turns one op into C: file-scope declarations
(its constant data and params) and the statement(s) that call its kernel. Every C text is
rendered from the template pair of its kernel header under ``templates/ops/``
(`render_op`); the table of lowerings is `rip.codegen.lowerings`. The checks and helpers the
lowering modules (one per kernel header: ``lower_conv``, ``lower_pool``, ``lower_elementwise``,
``lower_activation``, ``lower_shape``) share are here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rip.codegen.quant import ParamsError
from rip.codegen.templating import render
from rip.core.errors import LoweringError
from rip.core.operators import Kernel, kernel_of
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator

P = TypeVar("P")


@dataclass(frozen=True)
class OpBuffers:
    """Where one op's activations are, as C pointer expressions into the arena.

    ``inputs`` has one entry per op input, in the op's input order: a pointer expression
    for an activation (e.g. ``"(rip_arena + 1024)"``), None for a constant or an absent
    optional input (constants are the lowering's own data). ``inplace`` says how
    the output overlays the input it overwrites (an InPlaceKind) or is None;
    ``inplace_input`` is that input's position in ``inputs``. ``extra_outputs`` are the
    op's outputs after the first (a fused chain's rings). ``context`` is the C expression of
    the ``const rip_context *`` the kernel gets: its own scratch in the arena, at the offset
    the plan gave the op's scratch buffer (one of no bytes for an op without one; the
    default, one shared ``rip_ctx``, is what the one-op test harnesses define);
    ``scratch_bytes`` its size, the most a kernel variant may use (None: the op's own
    formula). ``staged`` holds, per filter of the op that flash-aware execution copies into
    SRAM (a CONV_2D's filter is member 0, a fused chain's stage k member k), the pointer
    expression of its arena buffer and the bytes the plan reserved there (staging.py).
    """

    inputs: tuple[str | None, ...]
    output: str
    inplace: InPlaceKind | None = None
    inplace_input: int | None = None
    extra_outputs: tuple[str, ...] = ()
    context: str = "&rip_ctx"
    scratch_bytes: int | None = None
    staged: dict[int, tuple[str, int]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Lowered:
    """C text for one op. ``decls`` defines its constant data at file scope (model_data.c):
    external ``const`` objects whose names all start with ``prefix``; ``declarations`` are
    their ``extern`` declarations (model_data.h). ``call`` is the body inside
    ``rip_model_invoke`` and must ``return`` a non-zero status if the kernel fails.
    ``scratch_bytes`` is what the kernel needs of its scratch (the buffer its context,
    `OpBuffers.context`, points at); the generator checks it against the plan's buffer.
    ``headers`` are the kernel headers the call needs."""

    decls: str
    declarations: str
    call: str
    scratch_bytes: int
    headers: tuple[str, ...]
    function: str = ""  # the kernel variant the call runs (rip.core.kernel_variants)


@dataclass(frozen=True)
class ConstantOperand:
    """A constant int8 operand the op owns: emitted as ``const int8_t name[size]``."""

    name: str
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class OpContext:
    """What every op template pair sees, whatever the kernel: ``templates/ops/<h>_data.c.j2``
    and ``<h>_call.c.j2`` for kernel header ``rip_<h>.h`` render from exactly these fields.

    ``inputs`` are the pointer expressions of the data inputs the call passes (arena
    pointers, or the names of the op's own ``constants``); ``params`` is the params module's
    dataclass for the kernel (its fields map onto the C struct ``struct``)."""

    kind: str  # the IR op kind (an Op)
    header: str  # the kernel header, e.g. "rip_conv.h"
    function: str  # the C kernel called
    struct: str  # its params struct type
    params: object
    prefix: str  # of every file-scope symbol
    status: int  # what the call returns on failure: schedule index + 1
    inputs: tuple[str, ...]
    output: str
    constants: tuple[ConstantOperand, ...] = ()
    filter: bytes | None = None
    bias: tuple[int, ...] | None = None
    quant: str | None = None  # "per_channel" | "per_tensor" | None
    scratch_bytes: int = 0
    scratch_context: str = "&rip_ctx"  # the call's scratch context (OpBuffers.context)
    comment: str | None = None  # one line above the call: which kernel variant runs and why
    # the row-streamed in-place depthwise kernel's baked schedule (rip.allocator.planning.scratch
    # .depthwise_ring_slots): each input row's ring slot, -1 if not saved; and the ring's rows
    ring_slots: tuple[int, ...] | None = None
    ring_rows: int = 0
    # flash-aware execution: per staged filter member, the SRAM pointer expression the
    # kernel reads it from; the call copies it there from flash first (`staged_filters`)
    staged: dict[int, str] = dataclasses.field(default_factory=dict)
    # the filter is read a word at a time (a packed one): emitted 4-byte aligned
    aligned_filter: bool = False

    @property
    def template_stem(self) -> str:
        return "ops/" + self.header.removeprefix("rip_").removesuffix(".h")


def _lines(text: str) -> str:
    """Rendered data without its blank lines (one object or declaration a line or block)."""
    return "".join(line + "\n" for line in text.splitlines() if line.strip())


def render_op(ctx: OpContext) -> Lowered:
    """Render one op's template pair: data (definitions and declarations) and call."""
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    data = f"{ctx.template_stem}_data.c.j2"
    return Lowered(
        decls=_lines(render(data, declare=False, **fields)),
        declarations=_lines(render(data, declare=True, **fields)),
        call=render(f"{ctx.template_stem}_call.c.j2", **fields).strip() + "\n",
        scratch_bytes=ctx.scratch_bytes,
        headers=(ctx.header,),
        function=ctx.function,
    )


def staged_filters(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, sizes: dict[int, int]
) -> dict[int, str]:
    """The SRAM pointer of every staged filter member of ``op``, checked: only members the
    lowering has (``sizes``: member -> the bytes its kernel reads), each buffer large
    enough for them."""
    out = {}
    for k, (pointer, reserved) in buffers.staged.items():
        if k not in sizes:
            raise LoweringError(
                f"{where(graph, op, index)}: the plan stages filter {k}, which this op has "
                "not (or whose kernel takes no copy)"
            )
        if sizes[k] > reserved:
            raise LoweringError(
                f"{where(graph, op, index)}: filter {k} is {sizes[k]} B, the plan staged "
                f"{reserved} B for it"
            )
        out[k] = grouped(pointer)
    return out


# A lowering: (graph, op, op_index, buffers, prefix) -> Lowered
Lowering = Callable[[Graph, Operator, int, OpBuffers, str], Lowered]


def where(graph: Graph, op: Operator, index: int | None = None) -> str:
    """How codegen messages name an op: ``Operator.describe`` with its output."""
    return op.describe(graph, index)


# ---- shared by the lowerings ------------------------------------------------------------


def kernel_params(
    compute: Callable[[Graph, Operator], P], graph: Graph, op: Operator, index: int | None = None
) -> P:
    """The kernel parameters; TFLite Micro's Prepare refusals become LoweringErrors."""
    try:
        return compute(graph, op)
    except ParamsError as e:
        raise LoweringError(f"{where(graph, op, index)}: {e}") from None


def grouped(expr: str) -> str:
    """``expr`` parenthesized unless it already is as a whole, so that a cast in front of it
    applies to the whole pointer expression (``(int8_t *)rip_arena + 8`` would not)."""
    if expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for k, ch in enumerate(expr):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                if k == len(expr) - 1:
                    return expr
                break
    return f"({expr})"


def activation_input(graph: Graph, op: Operator, index: int, buffers: OpBuffers) -> str:
    if not buffers.inputs or buffers.inputs[0] is None:
        raise LoweringError(f"{where(graph, op, index)}: its input is not an arena activation")
    return grouped(buffers.inputs[0])


def check_inplace(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, allowed: tuple[str, ...]
) -> None:
    """Refuse an in-place mode this op's conv or pool kernel does not implement (they overwrite
    input 0 only): the emitted code would silently read bytes it had already overwritten."""
    if buffers.inplace is None:
        return
    if buffers.inplace not in allowed:
        supported = " or ".join(repr(m) for m in allowed) if allowed else "no in-place mode"
        raise LoweringError(
            f"{where(graph, op, index)}: cannot run in place as {buffers.inplace!r} "
            f"(its kernel supports {supported})"
        )
    if buffers.inplace_input not in (None, 0):
        raise LoweringError(
            f"{where(graph, op, index)}: only its activation input (0) can be overwritten, "
            f"not input {buffers.inplace_input}"
        )


def table_kernel(op: Operator) -> Kernel:
    """The kernel the operator table names for ``op`` (`OpSpec.kernel`: function, params
    struct and family, whose header picks the template pair)."""
    try:
        return kernel_of(op.kind)
    except KeyError:
        raise LoweringError(f"no kernel for {op.describe()}") from None


def check_buffers(graph: Graph, op: Operator, buffers: OpBuffers) -> None:
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


def check_operand_in_place(
    graph: Graph,
    op: Operator,
    buffers: OpBuffers,
    kernel: Kernel,
    allowed: str | None,
    inputs: Sequence[int],
) -> bool:
    """True when the op runs in place (elementwise, activation and shape kernels). ``allowed``
    is the one mode the kernel supports (None: none); ``inputs`` the input positions it may
    overwrite."""
    mode = buffers.inplace
    if mode is None:
        return False
    if mode != allowed:
        supported = f"only {allowed!r}" if allowed else "none (it needs disjoint buffers)"
        raise LoweringError(
            f"{where(graph, op)}: in-place mode {mode!r} is not supported by "
            f"{kernel.function} (in-place modes: {supported})"
        )
    k = buffers.inplace_input
    if k is None or k not in inputs:
        raise LoweringError(
            f"{where(graph, op)}: in place over input {k}; {op.kind} may only overwrite "
            f"input {' or '.join(str(i) for i in inputs)}"
        )
    if buffers.inputs[k] is None:
        raise LoweringError(f"{where(graph, op)}: in place over constant input {k}")
    return True


def operands(
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
        if tensor.dtype not in ("int8", "int16", "float32") or len(tensor.data) != tensor.nbytes:
            raise LoweringError(
                f"{where(graph, op)}: constant input {k} is {tensor.dtype} of "
                f"{len(tensor.data)} bytes, not int8 (a 16x8 op's int16, a float island's"
                f" float32) of shape {tensor.shape}"
            )
        constant = ConstantOperand(f"{prefix}_operand{k}", tensor.data)
        constants.append(constant)
        pointers.append(constant.name)
    return pointers, constants


def render_kernel(
    graph: Graph,
    op: Operator,
    index: int,
    buffers: OpBuffers,
    prefix: str,
    kernel: Kernel,
    params: object,
    inputs: Sequence[str],
    constants: Sequence[ConstantOperand],
) -> Lowered:
    """Render the template pair of ``kernel``'s header for an elementwise, activation or shape
    kernel (none of them uses scratch)."""
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


def lower_one_input(
    graph: Graph,
    op: Operator,
    index: int,
    buffers: OpBuffers,
    prefix: str,
    kernel: Kernel,
    compute: Callable[[Graph, Operator], object],
    mode: str | None,
) -> Lowered:
    """An elementwise, activation or shape kernel of one data input (any other input of the op
    is in its params): in place over that input in ``mode`` (None: never)."""
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, mode, (0,))
    params = kernel_params(compute, graph, op)
    inputs, constants = operands(graph, op, (0,), buffers, prefix)
    return render_kernel(graph, op, index, buffers, prefix, kernel, params, inputs, constants)
