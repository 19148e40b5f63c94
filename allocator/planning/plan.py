"""Planning a model's activation arena: build the strategy's problem, place it (with the
first-fit fallback when the MILP cannot run), replay the plan. ``place`` sees only a
``Problem``; ``plan_model`` is the three steps in one call, as the compiler driver runs
them (``rip.compiler``)."""

from __future__ import annotations

from dataclasses import replace

from rip.allocator.planning.milp import MilpOptions, milp
from rip.allocator.planning.placement import PlacementError, Plan, Problem, first_fit
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import Requirements
from rip.allocator.planning.strategies import build_problem
from rip.core.errors import RipError
from rip.core.terms import Placer, Strategy
from rip.frontend.ir import Graph

PLACERS = tuple(Placer)


def place(
    problem: Problem,
    placer: str = Placer.MILP,
    time_limit: float = 60.0,
    progress: bool = False,
    warm_starts: tuple[Plan, ...] = (),
    deadline: float | None = None,
) -> Plan:
    """Every buffer of ``problem`` placed by ``placer``. A MILP that cannot run falls back
    to first fit, and the plan's notes say so. Interchangeable placers behind one
    signature, as Vela's tensor allocators. ``deadline`` (time.monotonic()) bounds the
    whole planning stage, not just this solve."""
    if placer == Placer.FIRSTFIT:
        return first_fit(problem)
    if placer == Placer.MILP:
        try:
            options = MilpOptions(
                time_limit=time_limit, progress=progress, warm_starts=warm_starts, deadline=deadline
            )
            return milp(problem, options)
        except PlacementError as e:
            plan = first_fit(problem)
            return replace(plan, notes=(*plan.notes, f"{e}; fell back to the first-fit plan"))
    raise RipError(f"placer must be one of {', '.join(Placer.values())}, got {placer!r}")


def plan_model(
    graph: Graph,
    req: Requirements,
    strategy: str = Strategy.RIP,
    placer: str = Placer.MILP,
    alignment: int = 4,
    time_limit: float = 60.0,
    progress: bool = False,
    warm_starts: tuple[Plan, ...] = (),
    deadline: float | None = None,
) -> Plan:
    """Place every activation of ``graph`` under ``strategy``; the plan is replayed
    independently before it is returned. ``warm_starts``: plans of the same buffers under
    other strategies, which the MILP starts from when they are feasible for this one."""
    problem = build_problem(req, strategy, alignment)
    plan = place(problem, placer, time_limit, progress, warm_starts, deadline)
    replay(graph, plan, alignment)
    return plan
