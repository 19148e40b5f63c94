"""A plan checked and drawn from its ``Problem`` alone, without a model (after TFLite Micro's
GreedyMemoryPlanner, which can verify its plan and print it as time against address).

``verify`` checks a plan against its problem's own rules: every buffer placed, aligned and
not negative; two buffers alive together never share a byte unless the plan uses an
in-place pair between them, and then the output sits ``gap`` bytes below its input (exactly
``gap`` for an exact pair, at the input's base for a shifted pair, whose input moves ``gap``
bytes right); the peak is what the offsets reach, and no lower than the problem's bound.
It is the planner's own contract; ``replay`` (which needs the graph) checks the plan
against the layers themselves.

``picture`` prints the plan as text: one row per schedule step, one column per slice of
the arena.
"""

from __future__ import annotations

from rip.allocator.planning.placement import Buffer, Pair, Plan, Problem, measure_peak
from rip.core.errors import PlanError

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
FREE = "."
INPLACE = "&"  # an in-place output over the input it overwrites, by design
CLASH = "!"  # two buffers on one byte that no pair relates: never in a verified plan


def _extent(plan: Plan, b: Buffer) -> int:
    """The bytes above ``b``'s offset it may touch: its size, plus the gap it is shifted by."""
    return b.size + sum(p.gap for p in plan.shifts if p.input == b.id)


def verify(problem: Problem, plan: Plan) -> None:
    """Raise PlanError naming the first rule ``plan`` breaks; return None when it keeps all."""
    v = problem.alignment
    off = plan.offsets
    ids = {b.id for b in problem.buffers}
    if set(off) != ids:
        missing, extra = sorted(ids - set(off)), sorted(set(off) - ids)
        raise PlanError(f"plan places {extra or 'no'} extra and misses {missing or 'no'} buffers")
    for bid, x in off.items():
        if x < 0 or x % v:
            raise PlanError(f"buffer {bid} at offset {x}: not a non-negative multiple of {v}")
    pairs = set(problem.pairs)
    for p in plan.aliased:
        if p not in pairs:
            raise PlanError(f"plan uses an in-place pair the problem does not offer: {p}")
    for p in plan.shifts:
        if p not in plan.aliased or not p.shiftable:
            raise PlanError(f"plan shifts a pair that is not a used, shiftable pair: {p}")
    used = {frozenset((p.input, p.output)): p for p in plan.aliased}
    shifted = set(plan.shifts)
    for i, a in enumerate(problem.buffers):
        for b in problem.buffers[i + 1 :]:
            if not a.overlaps(b):
                continue
            found = used.get(frozenset((a.id, b.id)))
            if found is None:
                ea, eb = off[a.id] + _extent(plan, a), off[b.id] + _extent(plan, b)
                if not (ea <= off[b.id] or eb <= off[a.id]):
                    raise PlanError(
                        f"buffers {a.id} and {b.id} are alive together (steps "
                        f"{max(a.first, b.first)}..{min(a.last, b.last)}) and share bytes"
                    )
                continue
            p = found
            gap = off[p.input] - off[p.output]
            if p in shifted:
                ok, need = gap == 0, "the output at its input's base (shifted)"
            elif p.exact:
                ok, need = gap == p.gap, f"a gap of exactly {p.gap} B"
            else:
                ok, need = gap >= p.gap, f"a gap of at least {p.gap} B"
            if not ok:
                raise PlanError(
                    f"op {p.op} writes buffer {p.output} over {p.input} with a gap of {gap} B; "
                    f"it needs {need}"
                )
    peak = measure_peak(problem, off, plan.shifts)
    if plan.peak != peak:
        raise PlanError(f"plan says peak {plan.peak} B, its offsets reach {peak} B")
    if plan.peak < problem.lower_bound():
        raise PlanError(f"peak {plan.peak} B is below the lower bound {problem.lower_bound()} B")


def _home(plan: Plan, shifts: dict[int, Pair], b: Buffer, step: int) -> int:
    """Where ``b`` sits at ``step``: a shifted input moves right by its gap at its op."""
    p = shifts.get(b.id)
    return plan.offsets[b.id] + (p.gap if p is not None and step >= p.op else 0)


def _bytes_in_use(spans: list[tuple[int, int]]) -> int:
    """The arena bytes the (lo, hi) spans cover: an in-place output over its input counts
    once, so a step never shows more than the arena holds."""
    total, reach = 0, 0
    for lo, hi in sorted(spans):
        if hi > reach:
            total += hi - max(lo, reach)
            reach = hi
    return total


def _cell(spans: list[tuple[int, int, int]], related: set[frozenset[int]], symbol: dict) -> str:
    """One column at one step, from the (lo, hi, id) byte spans that reach into it."""
    if not spans:
        return FREE
    mark = symbol[spans[0][2]]
    for i, (lo_a, hi_a, a) in enumerate(spans):
        for lo_b, hi_b, b in spans[i + 1 :]:
            if lo_a < hi_b and lo_b < hi_a:  # the same byte, not just the same column
                if frozenset((a, b)) not in related:
                    return CLASH
                mark = INPLACE
    return mark


def picture(problem: Problem, plan: Plan, width: int = 64) -> str:
    """The plan as text, time down and address across: each buffer drawn with its own
    symbol (the legend gives id, size, offset and steps), ``.`` free, ``&`` an in-place
    output over its input, ``!`` two unrelated buffers on one byte. Each column is
    ``ceil(peak / width)`` bytes; a cell shows what covers any byte of it. Each row ends
    with the bytes in use at that step (overlapping in-place buffers counted once)."""
    steps = max((b.last for b in problem.buffers), default=-1) + 1
    col = -(-max(plan.peak, 1) // width)
    cols = -(-max(plan.peak, 1) // col)
    symbol = {b.id: SYMBOLS[i % len(SYMBOLS)] for i, b in enumerate(problem.buffers)}
    related = {frozenset((p.input, p.output)) for p in plan.aliased}
    shifts = {p.input: p for p in plan.shifts}
    lines = [
        f"{plan.placer}: peak {plan.peak:,} B (lower bound {problem.lower_bound():,} B); "
        f"one column = {col:,} B"
    ]
    by_first = sorted(problem.buffers, key=lambda b: b.first)
    live: list = []  # the buffers alive at step k, kept by one sweep (linear in the picture)
    j = 0
    for k in range(steps):
        live = [b for b in live if b.last >= k]
        while j < len(by_first) and by_first[j].first <= k:
            if by_first[j].live_at(k):
                live.append(by_first[j])
            j += 1
        spans: list[list[tuple[int, int, int]]] = [[] for _ in range(cols)]
        held: list[tuple[int, int]] = []
        for b in live:
            lo = _home(plan, shifts, b, k)
            held.append((lo, lo + b.size))
            for c in range(lo // col, min(cols, -(-(lo + b.size) // col))):
                spans[c].append((lo, lo + b.size, b.id))
        row = "".join(_cell(sorted(cell), related, symbol) for cell in spans)
        lines.append(f"{k:>5} |{row}| {_bytes_in_use(held):>10,} B in use")
    legend = [
        f"{symbol[b.id]}={b.id}:{b.size:,}B@{plan.offsets[b.id]:,}[{b.first}..{b.last}]"
        for b in problem.buffers
    ]
    for i in range(0, len(legend), 4):
        lines.append("      " + "  ".join(f"{e:<30}" for e in legend[i : i + 4]).rstrip())
    return "\n".join(lines)
