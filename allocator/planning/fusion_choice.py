"""Which chains the ``fused`` strategy fuses: the split of every candidate chain into fused
sub-chains (and ops left alone) that minimises the model's peak under an instruction budget
(issue 12, "the planner chooses").

Fusing saves memory but may cost loop overhead, so it is a decision: the plan minimises the
estimated peak subject to the summed estimated overhead of the fused chains (each chain's
estimate less its ops' estimates alone, `cost_model.CostModel.overhead`, calibrated on the
board's core, `cost_model.for_core`) staying within ``max_overhead`` times the estimated
instructions of the unfused model (default 5%). For a candidate peak P, each chain's
dynamic program over its split points picks the cheapest split (in estimated overhead;
ties: fewer fused members) whose steps all stay within P bytes, so a chain whose steps
already fit P stays unfused; the cheapest total overhead only falls as P grows, so a binary
search over the step sizes finds the smallest P within the budget. With no budget
(``max_overhead=None``) P is the lowest peak fusion reaches at all.

The bytes of a step are the layer-by-layer limit the MILP meets on these models
(`Problem.lower_bound`'s formula): the bytes alive at the step, less what the op's
in-place pair saves, plus its kernel's scratch (a buffer of the arena live for the op). A
fused segment's step is every step it replaces: the buffers alive at any of them, less its
intermediates, plus its rings and the fused kernel's scratch, less its own in-place saving
(`simulate_gap`). Fusing a whole chain is not always best: a long chain holds its input,
its output and every ring at once, while two shorter ones each hold less (MCUNet-in3's
stem). The MILP then places exactly and the replay checks.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import cache

from rip.allocator.planning.cost_model import CostModel, load
from rip.allocator.planning.options import DEFAULT_MAX_OVERHEAD
from rip.allocator.planning.placement import align_up
from rip.allocator.planning.requirements import Requirements, chain_scratch_bytes, fused_chain
from rip.allocator.theory.fused import (
    fused_gap,
    planned_rows,
    ring_bytes,
    source_bytes,
    source_rows,
)
from rip.core.errors import LayerError
from rip.frontend.fusion import ChainSpan, candidates
from rip.frontend.ir import Graph
from rip.frontend.liveness import live_totals

UNFUSABLE = 1 << 62  # the cost of a segment the theory refuses (Theorem 13's domain)


@dataclass(frozen=True)
class Choice:
    """The chains to fuse (in schedule order) with each one's estimated overhead in
    instructions, the estimated peak (bytes, the largest step), and the budget they fit:
    ``max_overhead`` (None: no budget) of ``unfused`` (estimated instructions of the model
    run layer by layer)."""

    chains: tuple[ChainSpan, ...]
    overheads: tuple[float, ...]
    peak_estimate: int
    unfused: float
    max_overhead: float | None
    board: str  # the cost model's column

    @property
    def overhead(self) -> float:
        return sum(self.overheads)

    @property
    def budget(self) -> float:
        return math.inf if self.max_overhead is None else self.max_overhead * self.unfused


# one chain's option: (estimated overhead, fused members, segments (j, i) of members, whole)
Option = tuple[float, int, tuple[tuple[int, int], ...], bool]


def choose(
    graph: Graph,
    req: Requirements,
    alignment: int = 4,
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD,
    costs: CostModel | None = None,
) -> Choice:
    """The chains to fuse: the lowest estimated peak whose fused chains' estimated overhead
    is at most ``max_overhead`` x the unfused model's (None: unbounded)."""
    costs = load() if costs is None else costs
    ops = graph.operators
    buffers = list(req.lifetimes.values())
    outputs = {graph.storage(t) for t in graph.outputs}
    size = {b.id: b.size for b in buffers}
    last = {b.id: b.last for b in buffers}

    alive = live_totals(buffers, len(ops))  # bytes alive at each step, one sweep
    in_arena = req.scratch_in_arena  # each op's scratch adds to its step
    # the op reading a streamed input: it runs only as (the head of) a fused chain
    streams = {
        k for k, op in enumerate(ops) if op.inputs and graph.storage(op.inputs[0]) in graph.streamed
    }

    def live(a: int, b: int) -> set[int]:
        return {x.id for x in buffers if x.first <= b and x.last >= a}

    @cache
    def single(k: int) -> int:
        saving = max(
            (
                size[c.input] + size[c.output]
                - max(size[c.output], align_up(c.gap, alignment) + size[c.input])
                for c in req.ops[k].candidates
            ),
            default=0,
        )  # fmt: skip
        return alive[k] - saving + (req.ops[k].scratch_bytes if in_arena else 0)

    def fused(a: int, b: int, residual: int | None) -> int:
        end = b if residual is None else residual
        try:
            chain = fused_chain(graph, ops[a : b + 1], residual is not None)
        except LayerError:
            return UNFUSABLE
        # the members' outputs but the chain's own (the last member's too, before an ADD)
        inner = {graph.storage(ops[k].outputs[0]) for k in range(a, end)}
        si = graph.storage(ops[a].inputs[0])
        so = graph.storage(ops[end].outputs[0])
        total = sum(size[s] for s in live(a, end) - inner) + sum(ring_bytes(chain))
        if a in streams:  # its input is no buffer: the ring its rows arrive in
            total += source_bytes(chain)
        if in_arena:
            out = ops[end].outputs[0]
            total += chain_scratch_bytes(graph, ops[a : b + 1], out, residual is not None,
                                         a in streams)  # fmt: skip
        if a not in streams and last.get(si, end) <= end and si not in outputs:
            gap = align_up(fused_gap(chain), alignment)
            total -= size[si] + size[so] - max(size[so], gap + size[si])
        return total

    def span(a: int, b: int, residual: int | None) -> ChainSpan:
        """Ops a..b (and the ADD ``residual``) as the chain to fuse, rings sized."""
        chain = fused_chain(graph, ops[a : b + 1], residual is not None)
        return ChainSpan(a, b, residual, planned_rows(chain),
                         source_rows(chain) if a in streams else 0)  # fmt: skip

    def alone(a: int, b: int) -> bool:
        """Ops a..b are one op run by itself (not a fused chain)."""
        return a == b and a not in streams

    @cache
    def step(a: int, b: int) -> int:
        """Ops a..b of the schedule as one step: fused, or the op alone."""
        return single(a) if alone(a, b) else fused(a, b, None)

    @cache
    def extra(a: int, b: int, residual: int | None = None) -> float:
        """Estimated overhead of fusing ops a..b (0 for an op alone). An estimate below 0
        counts as 0: a fused kernel is fused to lower the peak, never to pay for another
        chain's overhead with an estimate within the cost model's error. The op reading a
        streamed input runs as a chain of one at the least, asked for by the user: that
        much counts as its own cost, and only fusing more ops with it against the budget."""
        if a == b and residual is None:
            return 0.0
        res = None if residual is None else ops[residual]
        return max(0.0, costs.overhead(graph, ops[a : b + 1], res))

    chains = candidates(graph)
    whole = {c.first: fused(c.first, c.last, c.residual) for c in chains if c.residual is not None}

    def best(chain: ChainSpan, peak: int) -> Option | None:
        """The cheapest split of ``chain`` whose steps all fit ``peak`` (None: none does)."""
        first, n = chain.first, chain.last - chain.first + 1
        table: list[Option | None] = [(0.0, 0, (), False)]
        for i in range(1, n + 1):
            options = []
            for j in range(i):
                prev = table[j]
                if prev is None or step(first + j, first + i - 1) > peak:
                    continue
                k = i - j
                options.append(
                    (
                        prev[0] + extra(first + j, first + i - 1),
                        prev[1] + (0 if alone(first + j, first + i - 1) else k),
                        (*prev[2], (j, i - 1)),
                        False,
                    )
                )
            table.append(min(options, default=None))
        split = table[n]
        if chain.residual is None:
            return split
        if split is not None and single(chain.residual) > peak:
            split = None
        if whole[chain.first] <= peak:
            fused_all = (extra(chain.first, chain.last, chain.residual), n + 1, (), True)
            return fused_all if split is None else min(split, fused_all)
        return split

    def plan(peak: int) -> list[tuple[ChainSpan, Option]] | None:
        picks = []
        for c in chains:
            option = best(c, peak)
            if option is None:
                return None
            picks.append((c, option))
        return picks

    def cost(picks: list[tuple[ChainSpan, Option]]) -> float:
        return sum(o[0] for _, o in picks)

    in_chains = {k for c in chains for k in c.indices}
    floor = max((single(k) for k in range(len(ops)) if k not in in_chains), default=0)
    sizes = {single(k) for k in in_chains - streams}
    for c in chains:
        sizes |= {step(a, b) for a in c.indices for b in range(a, c.last + 1)}
        if c.residual is not None:
            sizes.add(whole[c.first])
    peaks = sorted(p for p in sizes | {floor} if floor <= p < UNFUSABLE)
    unfused = costs.model(graph)
    budget = math.inf if max_overhead is None else max_overhead * unfused
    # the smallest peak whose cheapest plan fits the budget: feasibility only grows with it
    lo = bisect.bisect_left(peaks, True, key=lambda p: (q := plan(p)) is not None
                            and cost(q) <= budget)  # fmt: skip
    peak = peaks[min(lo, len(peaks) - 1)]
    picks = plan(peak) or []
    chosen: list[ChainSpan] = []
    overheads: list[float] = []
    for c, (_, _, segs, all_fused) in picks:
        if all_fused:
            chosen.append(span(c.first, c.last, c.residual))
            overheads.append(extra(c.first, c.last, c.residual))
            continue
        for j, i in segs:
            a, b = c.first + j, c.first + i
            if not alone(a, b):
                chosen.append(span(a, b, None))
                overheads.append(extra(a, b))
    achieved = max(
        [floor, *(single(c.residual) for c, o in picks if c.residual is not None and not o[3])]
        + [whole[c.first] for c, o in picks if o[3]]
        + [step(c.first + j, c.first + i) for c, o in picks for j, i in o[2]]
    )
    return Choice(tuple(chosen), tuple(overheads), achieved, unfused, max_overhead, costs.board)
