"""Planning several strategies of one model: only the work the command needs, in parallel.

* A strategy whose placement problem equals another's (``tinyengine`` on a model without
  depthwise convolutions is ``dual``) is planned once; the MILP is deterministic.
* ``tinyengine`` starts from the ``dual`` plan (every dual plan is feasible for it, and on
  the deep models it already meets tinyengine's lower bound, so no solve is needed); the
  two run one after the other in one process while ``rip`` runs in another.
* With a :class:`PlanCache`, a stored plan that passes the replay is used as it is, and a
  fresh plan is stored.
* ``time_limit`` bounds the whole stage: every solve shares one deadline.
* Ctrl-C stops the stage: the workers ignore SIGINT outside a solve (SCIP catches it during
  one and milp.py raises it), and the parent, on KeyboardInterrupt or any error, terminates
  its workers instead of waiting for their solves to end.

Every plan returned has passed the independent replay (plan_model replays it; the cache
replays what it reads back).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import cast

from rip.allocator.planning.cache import PlanCache
from rip.allocator.planning.placement import Plan, Problem
from rip.allocator.planning.plan import plan_model
from rip.allocator.planning.requirements import Requirements
from rip.allocator.planning.strategies import STRATEGIES, build_problem
from rip.frontend.ir import Graph

WARM_FROM = {"tinyengine": "dual"}  # a strategy, and the one whose plan it starts from
PARALLEL_MIN_BUFFERS = 150  # below this, planning is too quick to pay for a process

_shared: dict[str, object] = {}  # the graph and requirements a forked worker inherits


def default_jobs() -> int:
    """Worker processes: ``$RIP_JOBS``, else the cores this process may use."""
    if os.environ.get("RIP_JOBS"):
        return max(1, int(os.environ["RIP_JOBS"]))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Stages:
    """Stage names with their wall time on one stderr line, when ``enabled`` (a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def say(self, text: str, end: str = "") -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K[{time.perf_counter() - self.t0:5.1f} s] {text}{end}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _chains(strategies: list[str]) -> list[list[str]]:
    """Strategies grouped into sequences run in one process, each warm-starting the next."""
    bases = {WARM_FROM[s]: s for s in strategies if WARM_FROM.get(s) in strategies}
    chains: list[list[str]] = []
    for s in strategies:
        if s in bases:
            chains.append([s, bases[s]])
        elif s not in bases.values():
            chains.append([s])
    # the longest (the chain, or the rip problem with most pairs) first
    return sorted(chains, key=len, reverse=True)


def _run_chain(
    chain: list[str],
    placer: str,
    alignment: int,
    time_limit: float,
    progress: bool,
    known: dict[str, Plan],
    graph: Graph | None = None,
    req: Requirements | None = None,
    deadline: float | None = None,
) -> dict[str, Plan]:
    """Plan ``chain`` in order, each strategy warm-started from its predecessor's plan (or
    from ``known``, plans already at hand)."""
    graph = graph if graph is not None else cast(Graph, _shared["graph"])
    req = req if req is not None else cast(Requirements, _shared["req"])
    plans: dict[str, Plan] = {}
    for s in chain:
        have = {**known, **plans}
        warm = tuple(have[b] for b in (WARM_FROM.get(s),) if b in have)
        plans[s] = plan_model(
            graph, req, s, placer, alignment, time_limit, progress, warm, deadline
        )
    return plans


def _ignore_sigint() -> None:
    """A worker's initializer: Ctrl-C is the parent's to handle (it terminates the
    workers); an idle worker must not die with a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate every worker now: their solves could run for the rest of the time limit,
    and nothing they return would be used."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for p in workers:
        if p.is_alive():
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        p.join(timeout=5)


def _summary(s: str, plan: Plan) -> str:
    verdict = {True: "optimal", False: "not proven optimal", None: "heuristic"}[plan.optimal]
    return f"{s}: {plan.peak:,} B, {verdict}"


def plan_strategies(
    graph: Graph,
    req: Requirements,
    strategies: tuple[str, ...] = STRATEGIES,
    placer: str = "milp",
    alignment: int = 4,
    time_limit: float = 60.0,
    progress: bool = False,
    cache: PlanCache | None = None,
    jobs: int | None = None,
) -> dict[str, Plan]:
    """The replay-checked plan of every strategy in ``strategies`` (in that order).

    Equal problems are planned once, cached plans are reused after their replay, and what
    is left runs in up to ``jobs`` processes (default: the usable cores). ``progress``
    shows stage names and the solver's incumbent and bound on stderr. ``time_limit``
    bounds the whole stage (one deadline for every solve)."""
    deadline = time.monotonic() + time_limit
    jobs = default_jobs() if jobs is None else jobs
    stages = Stages(progress)
    problems: dict[str, Problem] = {s: build_problem(req, s, alignment) for s in strategies}
    plans: dict[str, Plan] = {}
    if cache is not None:
        for s in strategies:
            hit = cache.get(graph, problems[s], s, placer, time_limit)
            if hit is not None:
                plans[s] = hit
    same_as: dict[str, str] = {}  # a strategy and the one with an equal problem
    todo: list[str] = []
    for s in strategies:
        if s in plans:
            continue
        twin = next((t for t in todo if problems[t] == problems[s]), None)
        if twin is None:
            todo.append(s)
        else:
            same_as[s] = twin
    chains = _chains(todo)
    big = max((len(problems[s].buffers) for s in todo), default=0) >= PARALLEL_MIN_BUFFERS
    fresh: dict[str, Plan] = {}
    if jobs > 1 and len(chains) > 1 and big and "fork" in multiprocessing.get_all_start_methods():
        stages.say(f"planning {', '.join(todo)} ({placer}) in {min(jobs, len(chains))} processes")
        _shared.update(graph=graph, req=req)
        ctx = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(
            min(jobs, len(chains)), mp_context=ctx, initializer=_ignore_sigint
        )
        try:
            futures = [
                pool.submit(
                    _run_chain,
                    c,
                    placer,
                    alignment,
                    time_limit,
                    progress,
                    plans,
                    None,
                    None,
                    deadline,
                )
                for c in chains
            ]
            for f in futures:
                fresh.update(f.result())
                stages.say(", ".join(_summary(s, fresh[s]) for s in fresh))
        except BaseException:
            _stop(pool)
            stages.close()
            raise
        else:
            pool.shutdown()
        finally:
            _shared.clear()
    else:
        for c in chains:
            stages.say(f"planning {', '.join(c)} ({placer})")
            fresh.update(
                _run_chain(c, placer, alignment, time_limit, progress, plans, graph, req, deadline)
            )
    for s, twin in same_as.items():
        fresh[s] = fresh[twin]
    if cache is not None:
        for s, plan in fresh.items():
            cache.put(plan, s, placer, alignment, time_limit)
    stages.close()
    plans.update(fresh)
    return {s: plans[s] for s in strategies}
