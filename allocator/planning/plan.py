"""Planning a model's activation arena: strategy, placer, fallback and replay in one call."""

from __future__ import annotations

from dataclasses import replace

from rip.allocator.planning.milp import MilpOptions, milp
from rip.allocator.planning.placement import PlacementError, Plan, first_fit
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import Requirements
from rip.allocator.planning.strategies import build_problem
from rip.errors import RipError
from rip.frontend.ir import Graph

PLACERS = ("milp", "firstfit")


def plan_model(
    graph: Graph,
    req: Requirements,
    strategy: str = "rip",
    placer: str = "milp",
    alignment: int = 4,
    time_limit: float = 60.0,
    progress: bool = False,
    warm_starts: tuple[Plan, ...] = (),
) -> Plan:
    """Place every activation of ``graph`` under ``strategy``; the plan is replayed
    independently before it is returned. A MILP that cannot run falls back to first fit,
    and the plan's notes say so. ``warm_starts``: plans of the same buffers under other
    strategies, which the MILP starts from when they are feasible for this one."""
    problem = build_problem(req, strategy, alignment)
    if placer == "firstfit":
        plan = first_fit(problem)
    elif placer == "milp":
        try:
            options = MilpOptions(time_limit=time_limit, progress=progress, warm_starts=warm_starts)
            plan = milp(problem, options)
        except PlacementError as e:
            plan = first_fit(problem)
            plan = replace(plan, notes=(*plan.notes, f"{e}; fell back to the first-fit plan"))
    else:
        raise RipError(f"placer must be one of {', '.join(PLACERS)}, got {placer!r}")
    replay(graph, plan, alignment)
    return plan
