"""The contract between the code generator and the per-kernel lowerings.

The generator decides where every tensor lives (arena offsets from the replay-checked plan)
and how each op runs in place; a lowering turns one op into C: file-scope declarations
(its constant data and params) and the statement(s) that call its kernel. Every C text is
rendered from the template pair of its kernel header under ``templates/ops/``
(`render_op`); the table of lowerings is `rip.codegen.kernels`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rip.codegen.templating import render
from rip.frontend.ir import Graph, Operator
from rip.terms import InPlaceKind


@dataclass(frozen=True)
class OpBuffers:
    """Where one op's activations are, as C pointer expressions into the arena.

    ``inputs`` has one entry per op input, in the op's input order: a pointer expression
    for an activation (e.g. ``"(rip_arena + 1024)"``), None for a constant or an absent
    optional input (constants are the lowering's own data). ``inplace`` says how
    the output overlays the input it overwrites (an InPlaceKind) or is None;
    ``inplace_input`` is that input's position in ``inputs``.
    """

    inputs: tuple[str | None, ...]
    output: str
    inplace: InPlaceKind | None = None
    inplace_input: int | None = None


@dataclass(frozen=True)
class Lowered:
    """C text for one op. ``decls`` defines its constant data at file scope (model_data.c):
    external ``const`` objects whose names all start with ``prefix``; ``declarations`` are
    their ``extern`` declarations (model_data.h). ``call`` is the body inside
    ``rip_model_invoke`` and must ``return`` a non-zero status if the kernel fails.
    ``scratch_bytes`` is what the kernel needs of the shared scratch buffer ``rip_scratch``
    (the context ``rip_ctx`` points at it); the generator checks it against the planner's
    formula. ``headers`` are the kernel headers the call needs."""

    decls: str
    declarations: str
    call: str
    scratch_bytes: int
    headers: tuple[str, ...]


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

    kind: str  # the IR op kind
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
    comment: str | None = None  # one line above the call: which kernel variant runs and why

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
    )


# A lowering: (graph, op, op_index, buffers, prefix) -> Lowered
Lowering = Callable[[Graph, Operator, int, OpBuffers, str], Lowered]


def where(graph: Graph, op: Operator, index: int | None = None) -> str:
    """How codegen messages name an op: ``Operator.describe`` with its output."""
    return op.describe(graph, index)
