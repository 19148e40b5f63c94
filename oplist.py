"""The accepted operators, as ``rip-compile --list-ops`` prints them: each with how its
output may overlay an input (Appendix I's in-place class) and the code that runs it.

Derived from the tables the compiler itself uses, never written out by hand: the reader's
`SUPPORTED_OPS`, the rewrites' alias and interface kinds, the kernel table
`rip.codegen.lowerings.LOWERINGS` (and each lowering module's ``KERNELS`` and header), and the
planner's `IN_PLACE_CLASSES`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from rip.allocator.planning.requirements import GAP_RULES, IN_PLACE_CLASSES
from rip.codegen.lowerings import LOWERINGS
from rip.frontend.reader import SUPPORTED_OPS
from rip.frontend.rewrite import ALIAS_KINDS, INTERFACE_KINDS, SLICE_KINDS


@dataclass(frozen=True)
class OpEntry:
    kind: str
    in_place: str  # the InPlaceKind, or "disjoint" / "alias"
    gap: str  # how the gap is found
    kernel: str  # the C function (or the lowering choosing among several) and its header


def _kernel(kind: str) -> str:
    lowering = LOWERINGS[kind]
    module = sys.modules[lowering.__module__]
    header = next(
        (v for k, v in vars(module).items() if k.endswith("HEADER") and isinstance(v, str)),
        "?",
    )
    kernels = getattr(module, "KERNELS", {})
    if kind in kernels:
        function = kernels[kind].function
    else:  # the lowering picks the variant per layer
        function = f"{module.__name__.rsplit('.', 1)[-1]}.{lowering.__name__}"
    return f"{function} ({header})"


def operator_table() -> list[OpEntry]:
    """Every accepted operator, sorted by name."""
    rows = []
    for kind in sorted(SUPPORTED_OPS):
        if kind in ALIAS_KINDS or kind == "EXPAND_DIMS":  # EXPAND_DIMS: rewrite.alias_views
            rows.append(OpEntry(kind, "alias", "shares its input's bytes", "none (no code)"))
            continue
        if kind not in LOWERINGS:
            if kind in INTERFACE_KINDS:  # only at a float boundary
                rows.append(OpEntry(kind, "interface", "removed at the float boundary", "none"))
                continue
            rows.append(OpEntry(kind, "?", "?", "no kernel"))
            continue
        cls = IN_PLACE_CLASSES.get(kind)
        if cls is None:
            gap = "output apart from its inputs"
            if kind in SLICE_KINDS:
                gap += "; a view when its bytes are one contiguous run"
            rows.append(OpEntry(kind, "disjoint", gap, _kernel(kind)))
        else:
            rows.append(OpEntry(kind, str(cls), GAP_RULES[cls], _kernel(kind)))
    return rows


def format_operator_table(rows: list[OpEntry]) -> str:
    """A fixed-width table, one operator a line."""
    head = OpEntry("operator", "in place", "gap", "kernel")
    widths = [max(len(getattr(r, f)) for r in (head, *rows)) for f in ("kind", "in_place", "gap")]
    lines = []
    for r in (head, *rows):
        cells = (r.kind, r.in_place, r.gap)
        text = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        lines.append(f"{text}  {r.kernel}".rstrip())
    return "\n".join(lines)
