"""The planning stage: the replay-checked plan of every strategy's variant of one model, doing
only the work the command needs, in parallel.

* A variant whose placement problem equals another's (``tinyengine`` on a model without
  depthwise convolutions is ``dual``) is planned once; the MILP is deterministic.
* A strategy the table warm-starts from another (``tinyengine`` from ``dual``: every dual
  plan is feasible for it, and on the deep models it already meets tinyengine's lower
  bound, so no solve is needed) runs after it in the same process; other chains run in
  other processes.
* With a :class:`PlanCache`, a stored plan that passes its checks and the replay is used as
  it is, and a fresh plan is stored once replayed.
* ``options.time_limit`` bounds the whole stage: every solve shares one deadline.
* Ctrl-C stops the stage: the workers ignore SIGINT outside a solve (SCIP catches it during
  one and milp.py raises it), and the parent, on KeyboardInterrupt (SIGTERM and SIGHUP
  included, as ``rip.cli.guarded`` raises them) or any error, kills its workers instead of
  waiting for their solves to end; a worker also dies when its parent does.

Every plan is replayed exactly once, in this process, by ``_replay`` (a cached plan as the
cache's last check, a fresh one when its solve returns); a plan shared by two strategies of
the same graph is replayed once for both.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial

from rip.allocator.planning.cache import PlanCache
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import Plan
from rip.allocator.planning.plan import place
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import Requirements
from rip.allocator.planning.strategies import Transformed, Variant, spec
from rip.core.processes import die_with_parent
from rip.core.terms import Strategy
from rip.frontend.ir import Graph

PARALLEL_MIN_BUFFERS = 150  # below this, planning is too quick to pay for a process

_shared: dict[str, Mapping[Strategy, Variant]] = {}  # the variants a forked worker inherits


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


def _chains(strategies: list[Strategy]) -> list[list[Strategy]]:
    """Strategies grouped into sequences run in one process, each warm-starting the next."""
    warm = {s: spec(s).warm_from for s in strategies}
    bases = {w: s for s, w in warm.items() if w in strategies}
    chains: list[list[Strategy]] = []
    for s in strategies:
        if s in bases:
            chains.append([s, bases[s]])
        elif s not in bases.values():
            chains.append([s])
    # the longest (the chain, or the rip problem with most pairs) first
    return sorted(chains, key=len, reverse=True)


def _run_chain(
    chain: list[Strategy],
    options: PlanOptions,
    known: dict[Strategy, Plan],
    variants: Mapping[Strategy, Variant] | None = None,
) -> dict[Strategy, Plan]:
    """Place ``chain`` in order, each strategy warm-started from the plan of the one the
    table names (planned before it in the chain, or among ``known``, plans at hand)."""
    variants = variants if variants is not None else _shared["variants"]
    plans: dict[Strategy, Plan] = {}
    for s in chain:
        have = {**known, **plans}
        base = spec(s).warm_from
        warm = (have[base],) if base in have else ()
        solve = replace(options, warm_starts=options.warm_starts + warm)
        plans[s] = place(variants[s].problem, solve)
    return plans


def _ignore_sigint(parent: int | None = None) -> None:
    """A worker's initializer: Ctrl-C is the parent's to handle (it kills the workers); an
    idle worker must not die with a traceback of its own. SIGTERM and SIGHUP get their
    default action back (the parent's handler, inherited by fork, would only run after a
    solve), and the worker dies with its parent even if the parent is killed outright."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    die_with_parent(parent)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill every worker now (SIGKILL: a solve in C would defer SIGTERM's handler): their
    solves could run for the rest of the time limit, and nothing they return is used."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for p in workers:
        if p.is_alive():
            p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        p.join(timeout=5)


def _summary(s: str, plan: Plan) -> str:
    verdict = {True: "optimal", False: "not proven optimal", None: "heuristic"}[plan.optimal]
    return f"{s}: {plan.peak:,} B, {verdict}"


def _replay(variant: Variant, plan: Plan) -> None:
    """The independent replay of ``plan`` on its variant's graph (replay.py): the one
    check every plan passes before it is used; a ReplayError (exit 70) otherwise."""
    req = variant.req
    replay(
        variant.graph, plan, variant.problem.alignment, variant.problem.op_buffers,
        req.scratch_in_arena, req.shared,
    )  # fmt: skip


def _placed(
    todo: list[Strategy],
    variants: Mapping[Strategy, Variant],
    options: PlanOptions,
    known: dict[Strategy, Plan],
    jobs: int,
    stages: Stages,
) -> dict[Strategy, Plan]:
    """The fresh plans of ``todo``: chains in up to ``jobs`` forked processes when the
    problems are big enough to pay for them, else one after the other here."""
    chains = _chains(todo)
    placer = options.placer
    big = max((len(variants[s].problem.buffers) for s in todo), default=0) >= PARALLEL_MIN_BUFFERS
    fresh: dict[Strategy, Plan] = {}
    if jobs > 1 and len(chains) > 1 and big and "fork" in multiprocessing.get_all_start_methods():
        stages.say(f"planning {', '.join(todo)} ({placer}) in {min(jobs, len(chains))} processes")
        _shared.update(variants=variants)
        ctx = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(
            min(jobs, len(chains)),
            mp_context=ctx,
            initializer=_ignore_sigint,
            initargs=(os.getpid(),),
        )
        try:
            futures = [pool.submit(_run_chain, c, options, known) for c in chains]
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
            fresh.update(_run_chain(c, options, known, variants))
    return fresh


def plan_strategies(
    variants: Mapping[Strategy, Variant],
    options: PlanOptions,
    cache: PlanCache | None = None,
    jobs: int | None = None,
) -> dict[Strategy, Plan]:
    """The replay-checked plan of every variant (in the order given).

    Equal problems are planned once, cached plans are reused after their checks and the
    replay, and what is left runs in up to ``jobs`` processes (default: the usable cores).
    ``options.progress`` shows the stage names and their wall time on stderr.
    ``options.time_limit`` bounds the whole stage (one deadline for every solve)."""
    if options.deadline is None:
        options = replace(options, deadline=time.monotonic() + options.time_limit)
    jobs = default_jobs() if jobs is None else jobs
    stages = Stages(options.progress)
    plans: dict[Strategy, Plan] = {}
    if cache is not None:
        for s, v in variants.items():
            hit = cache.get(v, options, partial(_replay, v))
            if hit is not None:
                plans[s] = hit
    same_as: dict[Strategy, Strategy] = {}  # a strategy and the one with an equal problem
    todo: list[Strategy] = []
    for s, v in variants.items():
        if s in plans:
            continue
        twin = next((t for t in todo if variants[t].problem == v.problem), None)
        if twin is None:
            todo.append(s)
        else:
            same_as[s] = twin
    try:  # the stage line is cleared even when a solve is interrupted (the error replaces it)
        fresh = _placed(todo, variants, options, plans, jobs, stages)
        for s, plan in fresh.items():
            _replay(variants[s], plan)
        for s, twin in same_as.items():
            fresh[s] = fresh[twin]
            if variants[s].graph is not variants[twin].graph:
                _replay(variants[s], fresh[s])
        if cache is not None:
            for s, plan in fresh.items():
                cache.put(variants[s], plan, options)
    finally:
        stages.close()
    plans.update(fresh)
    return {s: plans[s] for s in variants}


def plan_graph(
    graph: Graph,
    req: Requirements,
    strategies: tuple[Strategy | str, ...],
    options: PlanOptions | None = None,
    cache: PlanCache | None = None,
    jobs: int | None = None,
) -> dict[Strategy, Plan]:
    """`plan_strategies` on ``graph`` as it is (no strategy's graph transform): each
    strategy's problem is built from ``req`` with only its in-place candidates, and its
    scratch buffers exactly as ``req`` has them (the caller emits the plan with ``req``)."""
    options = PlanOptions() if options is None else options
    as_is = Transformed(graph)
    made = {Strategy(s): Variant.of(s, as_is, req, options.alignment) for s in strategies}
    return plan_strategies(made, options, cache, jobs)


def plan_model(
    graph: Graph,
    req: Requirements,
    strategy: Strategy | str = Strategy.RIP,
    options: PlanOptions | None = None,
) -> Plan:
    """The replay-checked plan of ``graph`` as it is under ``strategy``, in this process,
    without the cache."""
    return plan_graph(graph, req, (strategy,), options, jobs=1)[Strategy(strategy)]
