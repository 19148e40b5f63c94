"""Execution strategies: the strategy table, and the plan variant each strategy makes.

A strategy is one entry of ``TABLE``: which in-place candidates its placement problem may
use, the graph transform it plans on (None: the rewritten graph as it is), and the strategy
whose plan its solve starts from.

* ``dual``: nothing aliased; every op's output is disjoint from its inputs.
* ``tinyengine``: only depthwise convolutions in place (channel in-place), the paper's
  baseline (TinyEngine with in-place depthwise enabled); starts from ``dual``'s plan, which
  is feasible for it.
* ``rip``: every in-place candidate of the front end (Appendix I's operator classes).
* ``fused``: ``rip`` on the graph with fused chains: the chains `fusion_choice.choose`
  picks under the instruction budget (the cost model of the board's core), fused by the
  front end's `fuse`; each chain's output over its input at the gap its row schedule needs.

`variant` runs one entry: transform, the transformed graph's requirements, the problem. A
new strategy (a streamed input, a second core) is a new entry with its own transform.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rip.allocator.planning.cost_model import for_core
from rip.allocator.planning.fusion_choice import Choice, choose
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import Pair, Problem, align_up
from rip.allocator.planning.requirements import Requirements, requirements
from rip.allocator.planning.scratch_choice import share, trim
from rip.core.errors import RipError
from rip.core.operators import Op
from rip.core.terms import InPlaceKind, Strategy
from rip.frontend.fusion import fuse
from rip.frontend.ir import Graph
from rip.frontend.liveness import live_bytes


@dataclass(frozen=True)
class Transformed:
    """A strategy's graph, what its transform chose (the fused chains), and that choice
    as text for the plan cache's key ("" when the graph is the rewritten one)."""

    graph: Graph
    fusion: Choice | None = None
    key: str = ""


Transform = Callable[[Graph, Requirements, PlanOptions], Transformed]


@dataclass(frozen=True)
class StrategySpec:
    inplace: frozenset[InPlaceKind]  # the candidate kinds the problem may alias
    transform: Transform | None = None  # the graph planned on (None: the rewritten one)
    warm_from: Strategy | None = None  # whose plan the solve starts from, when planned
    selectable: bool = False  # a candidate of the default plan (selection.select)
    streams: bool = False  # plans a streamed input (--stream-input): its transform fuses it


def fused_chains(graph: Graph, req: Requirements, options: PlanOptions) -> Transformed:
    """``fused``'s graph: the chains chosen under ``options.max_overhead`` (or exactly
    ``options.fuse_chains``), fused."""
    choice = None
    if options.fuse_chains is None:
        costs = for_core(options.board.core)
        choice = choose(graph, req, options.alignment, options.max_overhead, costs)
        chains = list(choice.chains)
    else:
        chains = list(options.fuse_chains)
    fgraph = fuse(graph, chains)
    fused = [
        (
            [m.source_index for m in op.params.ops],
            list(op.params.ring_rows),
            *([op.params.source_rows] if op.params.source is not None else []),  # streamed
        )
        for op in fgraph.operators
        if op.kind == Op.FUSED_CHAIN
    ]
    return Transformed(fgraph, choice, f"fused {fused}" if fused else "")


TABLE: dict[Strategy, StrategySpec] = {
    Strategy.DUAL: StrategySpec(frozenset()),
    Strategy.TINYENGINE: StrategySpec(frozenset({InPlaceKind.CHANNEL}), warm_from=Strategy.DUAL),
    Strategy.RIP: StrategySpec(frozenset(InPlaceKind) - {InPlaceKind.FUSED}, selectable=True),
    Strategy.FUSED: StrategySpec(
        frozenset(InPlaceKind), fused_chains, selectable=True, streams=True
    ),
}
STRATEGIES = tuple(TABLE)
# The strategies that can plan a graph whose input streams in (rip.frontend.streaming).
STREAMING = tuple(s for s, sp in TABLE.items() if sp.streams)
# The default plan's candidates, in the order that breaks a tie (selection.select).
SELECTABLE = tuple(s for s, sp in TABLE.items() if sp.selectable)


def spec(strategy: Strategy | str) -> StrategySpec:
    """The table's entry; a RipError naming the strategies for anything else."""
    try:
        return TABLE[Strategy(strategy)]
    except (ValueError, KeyError):
        raise RipError(
            f"strategy must be one of {', '.join(Strategy.values())}, got {strategy!r}"
        ) from None


def build_problem(req: Requirements, strategy: Strategy | str, alignment: int) -> Problem:
    """The placement problem of a model under a strategy: gaps rounded up to the board's
    alignment V (Sec. 4.3), so that aligned offsets keep SIMD loads legal. The buffers are
    the activations and every kernel's scratch, live for its op (`Requirements.buffers`)."""
    allowed = spec(strategy).inplace
    buffers = req.buffers
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
        if c.kind in allowed
    )
    return Problem(buffers, pairs, alignment, req.op_buffers)


@dataclass(frozen=True)
class Variant:
    """One strategy's plan variant: the graph it plans on, that graph's requirements, its
    placement problem, and what its transform chose (``fused``: the chains; ``key`` names
    them in the plan cache)."""

    strategy: Strategy
    graph: Graph
    req: Requirements
    problem: Problem
    fusion: Choice | None = None
    key: str = ""

    @classmethod
    def of(
        cls,
        strategy: Strategy | str,
        made: Transformed,
        req: Requirements,
        alignment: int,
        scratch_budget: float | None = 0.0,
        core: str = "",
        floor: int | None = None,
        share_slack: float = 0.0,
    ) -> Variant:
        """The variant of ``made.graph`` with requirements ``req``: the one place a
        placement problem is built. Where an op's scratch sets the problem's floor it is cut
        to its leanest kernel's (`scratch_choice.trim`; the variant's ``req`` says so, and
        code is emitted from it) when those ops' estimated instructions (``core``'s cost
        model) are at most ``scratch_budget`` of the model's (None: any; 0: no cut, the
        problem exactly as ``req`` gives it), and past that budget while the floor is above
        ``floor`` (the largest live set of the model's tensors: what a planner that never
        works in place, TFLite Micro's, needs at least). On two cores the ops both share are
        picked first (`scratch_choice.share`: a scratch per core where that raises the floor
        by ``share_slack`` at most)."""
        problem = build_problem(req, strategy, alignment)
        req, problem = share(req, problem, made.graph, share_slack)
        if scratch_budget is None or scratch_budget > 0:
            costs = for_core(core)
            budget = None if scratch_budget is None else scratch_budget * costs.model(made.graph)

            def cost(k: int) -> float:
                return costs.op(made.graph, made.graph.operators[k])

            req, problem = trim(req, problem, cost, budget, floor)
        key = made.key if req.cores == 1 else f"{made.key};cores={req.cores};{share_slack}"
        return cls(Strategy(strategy), made.graph, req, problem, made.fusion, key)


def variant(
    strategy: Strategy | str, graph: Graph, req: Requirements, options: PlanOptions
) -> Variant:
    """``strategy``'s variant of the rewritten ``graph`` (requirements ``req``): the table's
    transform, the requirements of the graph it makes, the problem."""
    transform = spec(strategy).transform
    made = Transformed(graph) if transform is None else transform(graph, req, options)
    made_req = (
        req if made.graph is graph else requirements(made.graph, req.scratch_in_arena, req.cores)
    )
    # the default plan's candidates are never above a planner without in-place reuse for
    # their scratch's sake; the baselines (dual, tinyengine) keep the budget alone, so that
    # they run the same kernels as rip (rip / dual compares layouts, not kernels)
    floor = max(live_bytes(graph), default=0) if spec(strategy).selectable else None
    return Variant.of(
        strategy,
        made,
        made_req,
        options.alignment,
        options.max_overhead,
        options.board.core,
        floor,
        options.share_slack,
    )


def variants(
    graph: Graph, req: Requirements, strategies: tuple[Strategy, ...], options: PlanOptions
) -> dict[Strategy, Variant]:
    """Every strategy's variant, in the order given."""
    return {Strategy(s): variant(s, graph, req, options) for s in strategies}
