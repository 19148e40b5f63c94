"""Placing one problem: the placer the options name, with the first-fit fallback when the
MILP cannot run. ``place`` sees only a ``Problem``; the planning stage that builds the
problems, runs ``place`` for each and replays every plan is ``parallel.plan_strategies``."""

from __future__ import annotations

from dataclasses import replace

from rip.allocator.planning.milp import MilpOptions, milp
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import PlacementError, Plan, Problem, first_fit
from rip.core.errors import RipError
from rip.core.terms import Placer

PLACERS = tuple(Placer)


def place(problem: Problem, options: PlanOptions) -> Plan:
    """Every buffer of ``problem`` placed by ``options.placer``. A MILP that cannot run
    falls back to first fit, and the plan's notes say so. Interchangeable placers behind
    one signature, as Vela's tensor allocators. ``options.deadline`` (time.monotonic())
    bounds the whole planning stage, not just this solve; ``options.warm_starts`` are the
    plans the MILP may start from."""
    if options.placer == Placer.FIRSTFIT:
        return first_fit(problem)
    if options.placer == Placer.MILP:
        try:
            milp_options = MilpOptions(
                time_limit=options.time_limit,
                warm_starts=options.warm_starts,
                deadline=options.deadline,
            )
            return milp(problem, milp_options)
        except PlacementError as e:
            plan = first_fit(problem)
            return replace(plan, notes=(*plan.notes, f"{e}; fell back to the first-fit plan"))
    raise RipError(f"placer must be one of {', '.join(Placer.values())}, got {options.placer!r}")
