"""The accepted operators, as ``rip-compile --list-ops`` prints them: each with the
activation types it runs (int8, and the int16 / int32 pairs of a 16x8 model), how its
output may overlay an input (Appendix I's in-place class), how that gap is found, and the
code that runs it; with ``--rules``, what the validator requires of each.

Read from the operator table (`rip.core.operators`), never written out by hand: an op's
role, in-place class, kernel and family are its row; where the lowering picks the kernel
per layer (`OpSpec.variants`, a folded op's refusal) the lowering
(`rip.codegen.lowerings.LOWERINGS`) is named; the rules are the validator's constraint
functions (`rip.frontend.validate.RULES`), their docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rip.codegen.lowerings import LOWERINGS
from rip.core.operators import GAP_RULES, SPECS, OpSpec, Role
from rip.frontend.validate import RULES


@dataclass(frozen=True)
class OpEntry:
    kind: str
    in_place: str  # the InPlaceKind, or "disjoint" / "alias" / "interface"
    gap: str  # how the gap is found
    kernel: str  # the C function (or the lowering choosing among several) and its header
    types: str = "int8"  # the activation types it runs (OpSpec.wide_types), its state


def _types(s: OpSpec) -> str:
    text = ", ".join(["int8", *(f"{a}->{b}" for a, b in s.wide_types)])
    return text + (" + persistent state" if s.keeps_state else "")


def _kernel(s: OpSpec) -> str:
    kernel = s.kernel
    if kernel is not None and not s.variants:
        return f"{kernel.function} ({kernel.header})"
    lowering = LOWERINGS[s.op]  # the lowering picks the variant per layer
    return f"{lowering.__module__.rsplit('.', 1)[-1]}.{lowering.__name__} ({s.header})"


def _entry(s: OpSpec) -> OpEntry:
    return replace(_placement(s), types=_types(s))


def _placement(s: OpSpec) -> OpEntry:
    if s.role in (Role.ALIAS, Role.VIEW):
        return OpEntry(s.op, "alias", "shares its input's bytes", "none (no code)")
    if s.role is Role.INTERFACE:  # only at a float boundary
        return OpEntry(s.op, "interface", "removed at the float boundary", "none")
    if s.in_place is None:
        gap = "output apart from its inputs"
        if s.view_when_contiguous:
            gap += "; a view when its bytes are one contiguous run"
        return OpEntry(s.op, "disjoint", gap, _kernel(s))
    return OpEntry(s.op, str(s.in_place), GAP_RULES[s.in_place], _kernel(s))


def operator_table() -> list[OpEntry]:
    """Every accepted operator, and each kind the reader reads from one (a grouped CONV_2D),
    sorted by name."""
    return [_entry(SPECS[op]) for op in sorted(op for op, s in SPECS.items() if s.listed)]


def format_operator_table(rows: list[OpEntry]) -> str:
    """A fixed-width table, one operator a line."""
    head = OpEntry("operator", "in place", "gap", "kernel", "types")
    fields = ("kind", "in_place", "gap", "kernel")
    widths = [max(len(getattr(r, f)) for r in (head, *rows)) for f in fields]
    lines = []
    for r in (head, *rows):
        cells = (r.kind, r.in_place, r.gap, r.kernel)
        text = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        lines.append(f"{text}  {r.types}".rstrip())
    return "\n".join(lines)


def rules_text() -> str:
    """What the model validator requires of each accepted operator: its rules' docstrings,
    one a line (an op without rules has its shapes checked as the reader decodes it)."""
    lines = []
    for op in sorted(RULES):
        lines.append(op.value)
        for rule in RULES[op]:
            lines.append(f"  - {' '.join((rule.__doc__ or rule.__name__).split())}")
        if not RULES[op]:
            lines.append("  - shapes checked as the reader decodes its parameters")
    return "\n".join(lines)
