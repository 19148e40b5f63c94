"""Tensor lifetimes over the schedule (the operator order is the schedule).

Steps are operator indices. A tensor produced by op p is live over [p, last reader]; graph
inputs are live from step 0 and graph outputs to the last step. Aliases (RESHAPE, SQUEEZE)
share their storage tensor's lifetime, which is extended to cover every alias's readers.

``Buffer`` is the one type for "a sized interval of schedule steps": liveness makes them and
the planner (``rip.allocator.planning``) places them, as TFLite Micro's GreedyMemoryPlanner
takes "a buffer of this size alive from step a to step b". It lives here, at the start of
the one-way flow (frontend -> allocator), so the front end never imports the planner; the
planner re-exports it (``rip.allocator.planning.placement.Buffer``). It knows nothing of
tensors beyond an id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

from rip.frontend.ir import Graph


@dataclass(frozen=True)
class Buffer:
    """A buffer of ``size`` bytes live over steps [first, last] (inclusive); for a model,
    ``id`` is the activation's storage tensor id and the steps are op indices."""

    id: int
    size: int
    first: int
    last: int

    def overlaps(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last

    def live_at(self, step: int) -> bool:
        return self.first <= step <= self.last


def lifetimes(graph: Graph) -> dict[int, Buffer]:
    """The buffer of every activation storage tensor, keyed by storage id, in order of
    first step; a streamed input (``Graph.streamed``) and a state tensor (``Graph.state``)
    have none."""
    n = len(graph.operators)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for t in graph.inputs:
        s = graph.storage(t)
        first[s] = 0
        last[s] = 0
    for i, op in enumerate(graph.operators):
        for t in op.outputs:
            s = graph.storage(t)
            first.setdefault(s, i)
            last[s] = max(last.get(s, i), i)
        for t in op.inputs:
            if t < 0 or graph.tensors[t].is_constant:
                continue
            s = graph.storage(t)
            last[s] = max(last.get(s, i), i)
    for t in graph.outputs:
        last[graph.storage(t)] = max(n - 1, 0)
    return {
        s: Buffer(s, graph.tensors[s].nbytes, first[s], last[s])
        for s in sorted(first, key=lambda s: (first[s], s))
        # a streamed input's rows are in its reader's ring, never whole in the arena; a
        # state tensor (a resource variable) is in the persistent region
        if s not in graph.streamed and s not in graph.state
    }


def last_reader(graph: Graph) -> dict[int, int]:
    """Storage id -> index of the last op that reads it (through any alias)."""
    out: dict[int, int] = {}
    for i, op in enumerate(graph.operators):
        for t in op.inputs:
            if t >= 0 and not graph.tensors[t].is_constant:
                out[graph.storage(t)] = i
    return out


def live_totals(buffers: Iterable[Buffer], steps: int) -> list[int]:
    """Bytes alive at each of ``steps`` steps, in one sweep (linear in buffers + steps)."""
    delta = [0] * (steps + 1)
    for b in buffers:
        lo, hi = max(b.first, 0), min(b.last, steps - 1)
        if lo <= hi:
            delta[lo] += b.size
            delta[hi + 1] -= b.size
    return list(accumulate(delta[:steps]))


def live_bytes(graph: Graph) -> list[int]:
    """Bytes alive at each step: a lower bound on any dual-buffer plan's peak when maxed."""
    return live_totals(lifetimes(graph).values(), len(graph.operators))
