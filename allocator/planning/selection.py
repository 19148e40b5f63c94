"""The default plan: of the strategies the table marks selectable (``rip``, ``fused``), the
one whose total activation RAM is lowest (issue 25). ``fused``'s chains are already chosen
within the instruction budget (``PlanOptions.max_overhead``), so every candidate is within
it; a tie goes to the earlier entry of the table (``rip``: no recomputed rows), so fusion
is chosen only where it saves bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rip.allocator.planning.strategies import SELECTABLE, Variant
from rip.core.terms import Strategy


@dataclass(frozen=True)
class Selection:
    """The strategy chosen, and why, in words for the report."""

    strategy: Strategy
    reason: str


def total_bytes(peak: int, variant: Variant) -> int:
    """A plan's total activation RAM: its arena, which holds the kernels' scratch (the
    paper's accounting, ``scratch_in_arena`` False, leaves the scratch outside: added)."""
    return peak if variant.req.scratch_in_arena else peak + variant.req.scratch_bytes


def select(peaks: Mapping[Strategy, int], made: Mapping[Strategy, Variant]) -> Selection:
    """The selectable strategy with the lowest total (``peaks``: each planned strategy's
    arena), ties to the table's order; a KeyError when none of them was planned."""
    totals = {s: total_bytes(peaks[s], made[s]) for s in SELECTABLE if s in peaks}
    if not totals:
        raise KeyError(f"none of {', '.join(SELECTABLE)} was planned")
    best = min(totals, key=lambda s: (totals[s], SELECTABLE.index(s)))
    others = ", ".join(f"{s} {b:,} B" for s, b in totals.items() if s != best)
    if not others:
        return Selection(best, f"the only selectable strategy planned ({totals[best]:,} B)")
    if all(totals[s] == totals[best] for s in totals):
        why = f"{others}: fusion saves nothing, so no rows are recomputed"
    else:
        why = f"against {others}"
    return Selection(best, f"lowest total activation RAM, {totals[best]:,} B ({why})")
