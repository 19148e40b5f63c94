"""Execution strategies: which in-place candidates a placement problem may use.

* ``dual``: nothing aliased; every op's output is disjoint from its inputs.
* ``tinyengine``: only depthwise convolutions in place (channel in-place), the paper's
  baseline (TinyEngine with in-place depthwise enabled).
* ``rip``: every in-place candidate of the front end (Appendix I's operator classes).
* ``fused``: ``rip`` on the graph with fused chains (rip.frontend.fusion), each chain's
  output over its input at the gap its row schedule needs.
"""

from __future__ import annotations

from rip.allocator.planning.placement import Pair, Problem, align_up
from rip.allocator.planning.requirements import InPlace, Requirements
from rip.core.errors import RipError
from rip.core.terms import InPlaceKind, Strategy

STRATEGIES = tuple(Strategy)


def _allowed(candidate: InPlace, strategy: Strategy | str) -> bool:
    if strategy == Strategy.DUAL:
        return False
    if strategy == Strategy.TINYENGINE:
        return candidate.kind == InPlaceKind.CHANNEL
    if strategy == Strategy.RIP:
        return candidate.kind != InPlaceKind.FUSED
    if strategy == Strategy.FUSED:
        return True
    raise RipError(f"strategy must be one of {', '.join(Strategy.values())}, got {strategy!r}")


def build_problem(req: Requirements, strategy: Strategy | str, alignment: int) -> Problem:
    """The placement problem of a model under a strategy: gaps rounded up to the board's
    alignment V (Sec. 4.3), so that aligned offsets keep SIMD loads legal."""
    buffers = tuple(req.lifetimes.values())
    pairs = tuple(
        Pair(
            c.op,
            c.input,
            c.output,
            align_up(c.gap, alignment),
            exact=c.kind.exact,
            shiftable=not c.kind.exact and c.gap > 0,
            kind=c.kind,
            order=c.order,
        )
        for c in req.candidates()
        if _allowed(c, strategy)
    )
    return Problem(buffers, pairs, alignment)
