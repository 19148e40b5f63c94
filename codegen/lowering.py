"""The contract between the code generator and the per-kernel lowerings.

The generator decides where every tensor lives (arena offsets from the replay-checked plan)
and how each op runs in place; a lowering turns one op into C: file-scope declarations
(its constant data and params) and the statement(s) that call its kernel. Every C text is
rendered from a Jinja2 template under ``templates/ops/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rip.errors import LoweringError
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
    """C text for one op. ``decls`` is file scope (static const data, params structs) and
    must prefix every symbol with ``prefix``; ``call`` is the body inside
    ``rip_model_invoke`` and must ``return`` a non-zero status if the kernel fails.
    ``scratch_bytes`` is what the kernel needs of the shared scratch buffer ``rip_scratch``
    (the context ``rip_ctx`` points at it); the generator checks it against the planner's
    formula. ``headers`` are the kernel headers the call needs."""

    decls: str
    call: str
    scratch_bytes: int
    headers: tuple[str, ...]


# A lowering: (graph, op, op_index, buffers, prefix) -> Lowered
Lowering = Callable[[Graph, Operator, int, OpBuffers, str], Lowered]

_REGISTRY: dict[str, Lowering] = {}


def register(*kinds: str) -> Callable[[Lowering], Lowering]:
    """Decorator: the lowering for these op kinds (IR kinds, e.g. "CONV_2D")."""

    def wrap(fn: Lowering) -> Lowering:
        for kind in kinds:
            _REGISTRY[kind] = fn
        return fn

    return wrap


def lowering_for(graph: Graph, op: Operator) -> Lowering:
    if op.kind not in _REGISTRY:
        raise LoweringError(f"no kernel for {op.describe(graph)}")
    return _REGISTRY[op.kind]
