"""Which chains the ``fused`` strategy fuses: per maximal candidate chain, the split into
fused sub-chains (and ops left alone) that minimises the bytes live at its worst step.

Fusing a whole chain is not always best: a long chain holds its input, its output and every
ring at once, while two shorter ones each hold less (MCUNet-in3's stem: 176x176x3 in, then
two MBConv blocks, peaks lower as two fused ops than as one). The cost of a step is the
layer-by-layer limit the MILP meets on these models (`Problem.lower_bound`'s formula): the
bytes alive at the step, less what the op's in-place pair saves. A fused segment's step is
every step it replaces: the buffers alive at any of them, less its intermediates, plus its
rings, less its own in-place saving (`simulate_gap`). The peak over a chain's steps is a
maximum over segments, so a dynamic program over split points finds the best split
exactly; among equal peaks it takes fewer fused members (less loop overhead).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from rip.allocator.planning.placement import align_up
from rip.allocator.planning.requirements import Requirements, fused_chain
from rip.allocator.theory.fused import fused_gap, ring_bytes, ring_rows
from rip.errors import LayerError
from rip.frontend.fusion import Chain, candidates
from rip.frontend.ir import Graph

UNFUSABLE = 1 << 62  # the cost of a segment the theory refuses (Theorem 13's domain)


def choose(graph: Graph, req: Requirements, alignment: int = 4) -> list[Chain]:
    """The chains to fuse (sub-chains of the candidates), in schedule order."""
    buffers = list(req.lifetimes.values())
    outputs = {graph.storage(t) for t in graph.outputs}
    size = {b.id: b.size for b in buffers}
    last = {b.id: b.last for b in buffers}

    def live(a: int, b: int) -> set[int]:
        return {x.id for x in buffers if x.first <= b and x.last >= a}

    def single(k: int) -> int:
        saving = max(
            (
                size[c.input] + size[c.output]
                - max(size[c.output], align_up(c.gap, alignment) + size[c.input])
                for c in req.ops[k].candidates
            ),
            default=0,
        )  # fmt: skip
        return sum(size[s] for s in live(k, k)) - saving

    def fused(a: int, b: int, residual: int | None) -> int:
        ops = graph.operators
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
        if last.get(si, end) <= end and si not in outputs:
            gap = align_up(fused_gap(chain), alignment)
            total -= size[si] + size[so] - max(size[so], gap + size[si])
        return total

    def rings(a: int, b: int, residual: int | None) -> tuple[int, ...]:
        return ring_rows(fused_chain(graph, graph.operators[a : b + 1], residual is not None))

    @cache
    def cost(a: int, b: int) -> int:
        """Ops a..b of the schedule as one step: fused, or the op alone."""
        return single(a) if a == b else fused(a, b, None)

    chosen: list[Chain] = []
    for chain in candidates(graph):
        first, n = chain.first, chain.last - chain.first + 1

        # best[i]: (peak, fused members) of the first i members split optimally
        best: list[tuple[int, int, tuple[tuple[int, int], ...]]] = [(0, 0, ())]
        for i in range(1, n + 1):
            options = []
            for j in range(i):
                peak, members, segs = best[j]
                seg_members = 0 if i - j == 1 else i - j
                options.append(
                    (
                        max(peak, cost(first + j, first + i - 1)),
                        members + seg_members,
                        (*segs, (j, i - 1)),
                    )
                )
            best.append(min(options))
        peak, members, segs = best[n]
        if chain.residual is not None:
            peak = max(peak, single(chain.residual))
            whole = fused(chain.first, chain.last, chain.residual)
            if whole < UNFUSABLE and (whole, n + 1) <= (peak, members):
                chosen.append(replace(chain, rings=rings(chain.first, chain.last, chain.residual)))
                continue
        chosen += [
            Chain(first + i, first + j, rings=rings(first + i, first + j, None))
            for i, j in segs
            if j > i
        ]
    return chosen
