"""The MILP placer of Sec. 4.3: Pyomo model, solved by SCIP through pyscipopt.

Variables: an aligned offset per buffer (x_t = V u_t with integer u_t), the peak P, and for
each in-place pair two binaries, d (the op overwrites this input) and r (separated by a
right shift instead of placing the output gap bytes below the input), r <= d. Objective:
P + C * sum(size_i * r_i).

Where it improves on the paper's formulation:
* one ordering binary per pair of buffers whose lifetimes overlap, and none for pairs that
  are never alive together (the paper puts three binaries on all n(n-1)/2 pairs;
  ``all_pairs=True`` builds that formulation, for the benchmark);
* symmetry breaking between interchangeable buffers (same size and lifetime, no pair);
* the layer-by-layer limit as a valid lower bound on P, so optimality is often proven at
  the root;
* a warm start from first fit, whose peak also bounds every offset (tight big-M);
* a time limit after which the best plan found is used, never worse than first fit;
* bounds on the whole planning stage: a ``deadline`` shared by every solve, and a cap on
  the model's binaries, above which the MILP is not built at all (1,000 ADDs alive together
  would need ~500,000 ordering binaries, minutes and gigabytes of Pyomo model) and the
  first-fit plan is used with a note saying why;
* Ctrl-C: SCIP catches SIGINT itself and returns 'userinterrupt'; that becomes a
  KeyboardInterrupt here, so an interrupted solve stops the compile instead of passing
  for a time limit.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass

import pyomo.environ as pe
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import TerminationCondition

from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.allocator.planning.placement import (
    Pair,
    PlacementError,
    Plan,
    Problem,
    first_fit,
    greedy_by_size,
    measure_peak,
)

SHIFT_PENALTY = 1e-4  # C: a move of the largest tensor in the suite prices at ~30 B of peak
# Deterministic, single-threaded SCIP (the same plan on every run and machine), and silent:
# Pyomo's scip_direct sends SCIP's output through a pipe that a Python thread drains, but
# pyscipopt's optimize() holds the GIL for the whole solve, so once a long solve had written
# a pipe's capacity (64 KiB) its next line blocked forever (an MLPerf-sized model hung CI).
SCIP_OPTIONS = {
    "randomization/randomseedshift": 0,
    "parallel/maxnthreads": 1,
    "display/verblevel": 0,
}
# Binaries above which the model is not built: 4x the largest real model (EfficientNetV2L
# under dual: 2,433 conflicts; under rip: 1,491 conflicts and 942 pairs, 4,317 binaries).
MAX_BINARIES = 20_000
NOT_PROVEN = "best plan found, not proven optimal"
MIN_SOLVE_SECONDS = 0.2  # less left before the deadline: the warm start is the plan


@dataclass(frozen=True)
class MilpOptions:
    time_limit: float = DEFAULT_TIME_LIMIT
    shift_penalty: float = SHIFT_PENALTY
    all_pairs: bool = False
    # Skip the solve when a warm start already meets the lower bound (it is then optimal).
    # bench-alloc turns this off to time the formulation itself.
    shortcut: bool = True
    # Further warm starts, e.g. another strategy's plan of the same buffers: used when every
    # pair they alias is one of this problem's and they are feasible, checked exactly.
    warm_starts: tuple[Plan, ...] = ()
    # time.monotonic() past which no solve may run: the whole planning stage's limit,
    # shared by every strategy's solve (None: only ``time_limit`` per solve).
    deadline: float | None = None
    max_binaries: int = MAX_BINARIES


def build_model(problem: Problem, ub: int, options: MilpOptions) -> pe.ConcreteModel:
    """The Pyomo model; ``ub`` (a known plan's peak) bounds every offset and P.

    Placement constraints are written in units of the alignment V: offsets are multiples
    of V, so a buffer may be rounded up to whole units without changing which placements
    are feasible, and the big-M constants shrink V-fold. The peak stays in bytes.
    """
    v = problem.alignment
    size = {b.id: b.size for b in problem.buffers}
    units = {t: -(-s // v) for t, s in size.items()}
    pairs = list(problem.pairs)
    shift_of = {p.input: i for i, p in enumerate(pairs) if p.shiftable}
    big_m = -(-ub // v) + max((p.gap // v for p in pairs), default=0)

    m = pe.ConcreteModel("rip_placement")
    m.B = pe.Set(initialize=[b.id for b in problem.buffers])
    m.u = pe.Var(
        m.B, within=pe.NonNegativeIntegers, bounds=lambda _, t: (0, max(0, (ub - size[t]) // v))
    )
    m.peak = pe.Var(bounds=(problem.lower_bound(), ub))
    m.P = pe.Set(initialize=range(len(pairs)))
    m.d = pe.Var(m.P, within=pe.Binary)
    m.r = pe.Var(m.P, within=pe.Binary)
    m.z = pe.Var(m.P, within=pe.Binary)  # disjoint case: input below output

    def shift(t):  # a shifted input reaches gap bytes further (gap is a multiple of V)
        i = shift_of.get(t)
        return (pairs[i].gap // v) * m.r[i] if i is not None else 0

    def end(t):  # first unit past buffer t
        return m.u[t] + units[t] + shift(t)

    m.top = pe.Constraint(m.B, rule=lambda _, t: v * m.u[t] + size[t] + v * shift(t) <= m.peak)

    # No overlap between buffers alive together, one ordering binary per conflict.
    conflicts = _all_pairs(problem) if options.all_pairs else problem.conflicts()
    m.C = pe.Set(initialize=range(len(conflicts)))
    m.o = pe.Var(m.C, within=pe.Binary)
    if options.all_pairs:  # the paper's form: three binaries, one of three cases holds
        m.o2 = pe.Var(m.C, within=pe.Binary)
        m.o3 = pe.Var(m.C, within=pe.Binary)
        m.one_case = pe.Constraint(m.C, rule=lambda _, c: m.o[c] + m.o2[c] + m.o3[c] == 1)
        timeline = {b.id: b for b in problem.buffers}

        def apart(_, c, side):
            a, b = conflicts[c]
            if side == 0:
                return end(a) <= m.u[b] + big_m * (1 - m.o[c])
            if side == 1:
                return end(b) <= m.u[a] + big_m * (1 - m.o2[c])
            # third case: never alive together (free when lifetimes are disjoint)
            return m.o3[c] <= (0 if timeline[a].overlaps(timeline[b]) else 1)

        m.apart = pe.Constraint(m.C, [0, 1, 2], rule=apart)
    else:
        m.below = pe.Constraint(
            m.C, rule=lambda _, c: end(conflicts[c][0]) <= m.u[conflicts[c][1]] + big_m * m.o[c]
        )
        m.above = pe.Constraint(
            m.C,
            rule=lambda _, c: end(conflicts[c][1]) <= m.u[conflicts[c][0]] + big_m * (1 - m.o[c]),
        )
        for c in _interchangeable(problem, conflicts):
            m.o[c].fix(0)

    # In-place pairs.
    def pair_rules(_, k, rule):
        p = pairs[k]
        i, o = p.input, p.output
        d, r, z = m.d[k], m.r[k], m.z[k]
        gap = p.gap // v
        if rule == "disjoint_below":  # not aliased: input entirely below output, or ...
            return end(i) <= m.u[o] + big_m * (z + d)
        if rule == "disjoint_above":  # ... output entirely below input
            return end(o) <= m.u[i] + big_m * (1 - z + d)
        if rule == "gap":  # aliased without a shift: output at least gap below the input
            return m.u[o] <= m.u[i] - gap + big_m * (1 - d + r)
        if rule == "gap_exact":
            return (m.u[o] >= m.u[i] - gap - big_m * (1 - d)) if p.exact else pe.Constraint.Skip
        if rule == "shift_low":  # shifted: output shares the input's original base
            return m.u[o] >= m.u[i] - big_m * (1 - r)
        if rule == "shift_high":
            return m.u[o] <= m.u[i] + big_m * (1 - r)
        return r <= (d if p.shiftable else 0)

    rules = [
        "disjoint_below",
        "disjoint_above",
        "gap",
        "gap_exact",
        "shift_low",
        "shift_high",
        "r_le_d",
    ]
    m.pair = pe.Constraint(m.P, rules, rule=pair_rules)
    outputs = sorted({p.output for p in pairs})
    m.one_input = pe.Constraint(
        outputs, rule=lambda _, o: sum(m.d[k] for k in m.P if pairs[k].output == o) <= 1
    )

    m.obj = pe.Objective(
        expr=m.peak + options.shift_penalty * sum(size[pairs[k].input] * m.r[k] for k in m.P),
        sense=pe.minimize,
    )
    return m


def _all_pairs(problem: Problem) -> list[tuple[int, int]]:
    related = {frozenset((p.input, p.output)) for p in problem.pairs}
    ids = [b.id for b in problem.buffers]
    return [
        (a, b) for i, a in enumerate(ids) for b in ids[i + 1 :] if frozenset((a, b)) not in related
    ]


def _interchangeable(problem: Problem, conflicts: list[tuple[int, int]]) -> list[int]:
    """Conflicts between two buffers of equal size and lifetime that no pair mentions:
    swapping them maps a plan onto another of equal cost, so fix their order."""
    in_pairs = {t for p in problem.pairs for t in (p.input, p.output)}
    key = {b.id: (b.size, b.first, b.last) for b in problem.buffers}
    return [
        c
        for c, (a, b) in enumerate(conflicts)
        if a not in in_pairs and b not in in_pairs and key[a] == key[b]
    ]


def _warm_start(m: pe.ConcreteModel, problem: Problem, plan: Plan) -> None:
    v = problem.alignment
    for t, off in plan.offsets.items():
        m.u[t].value = off // v
    aliased, shifted = set(plan.aliased), set(plan.shifts)
    for k, p in enumerate(problem.pairs):
        on = p in aliased
        m.d[k].value, m.r[k].value = int(on), int(p in shifted)
        m.z[k].value = int(not on and plan.offsets[p.input] < plan.offsets[p.output])
    if not hasattr(m, "below"):
        return
    conflicts = problem.conflicts()
    for c, (a, b) in enumerate(conflicts):
        if not m.o[c].fixed:
            m.o[c].value = int(plan.offsets[a] >= plan.offsets[b])
    m.peak.value = plan.peak


def binaries(problem: Problem, all_pairs: bool = False, limit: int | None = None) -> int:
    """The model's binaries (an ordering binary per conflict, three per in-place pair),
    counted only up to just past ``limit`` so that an adversarial model costs no more
    than the cap."""
    n = len(problem.buffers)
    conflicts = 3 * n * (n - 1) // 2 if all_pairs else len(problem.conflicts(limit))
    return conflicts + 3 * len(problem.pairs)


def _interrupted(result) -> None:
    """SCIP stopped by Ctrl-C (its own SIGINT handler) is the user's Ctrl-C, not a time
    limit: raise it, so that nothing is written."""
    if result.termination_condition == TerminationCondition.interrupted:
        raise KeyboardInterrupt


def milp(problem: Problem, options: MilpOptions | None = None) -> Plan:
    """Optimal (or, past the time limit, best found) placement; never worse than first fit.
    Raises PlacementError when SCIP is unavailable; callers fall back to first fit. A model
    above ``max_binaries``, or no time left before ``deadline``, gives the warm start with
    a note; Ctrl-C during the solve raises KeyboardInterrupt."""
    options = options or MilpOptions()
    solver = SolverFactory("scip_direct")
    if not solver.available():
        raise PlacementError("SCIP (pyscipopt) is not available")
    t0 = time.perf_counter()
    candidates = [first_fit(problem), greedy_by_size(problem)]
    candidates += [p for p in (_adopt(problem, w) for w in options.warm_starts) if p is not None]
    warm = min(candidates, key=lambda p: p.peak)
    if options.shortcut and warm.peak == warm.lower_bound:
        return Plan(
            offsets=warm.offsets,
            aliased=warm.aliased,
            shifts=warm.shifts,
            peak=warm.peak,
            placer="milp",
            optimal=True,
            solve_seconds=time.perf_counter() - t0,
            lower_bound=warm.lower_bound,
            stats={"solved": False},
            notes=(f"{warm.placer} warm start meets the lower bound: optimal without a solve",),
        )
    count = binaries(problem, options.all_pairs, options.max_binaries)
    if count > options.max_binaries:
        return _from_warm(
            warm,
            time.perf_counter() - t0,
            {"binaries": f"> {options.max_binaries}"},
            f"not built: {len(problem.buffers):,} buffers and {len(problem.pairs):,} "
            f"in-place pairs need more than {options.max_binaries:,} binaries, the cap "
            "that keeps planning within bounded time and memory",
        )
    time_limit = options.time_limit
    if options.deadline is not None:
        time_limit = min(time_limit, options.deadline - time.monotonic())
        if time_limit < MIN_SOLVE_SECONDS:
            return _from_warm(
                warm, time.perf_counter() - t0, {}, "the planning time limit was spent; not solved"
            )
    m = build_model(problem, warm.peak, options)
    build_seconds = time.perf_counter() - t0
    if options.deadline is not None:  # building took part of it
        time_limit = max(MIN_SOLVE_SECONDS, min(time_limit, options.deadline - time.monotonic()))
    if not options.all_pairs:
        _warm_start(m, problem, warm)
    try:
        result = solver.solve(
            m,
            tee=[io.StringIO()],
            time_limit=time_limit,
            warmstart_discrete_vars=not options.all_pairs,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            solver_options=SCIP_OPTIONS,
        )
    except Exception as e:  # the solver's own failure: let the caller fall back
        raise PlacementError(f"SCIP failed: {e}") from None
    _interrupted(result)
    solve_seconds = time.perf_counter() - t0
    stats = {
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
        "binaries": sum(1 for v in m.component_data_objects(pe.Var) if v.is_binary()),
        "build_seconds": round(build_seconds, 3),
    }
    status = str(result.solution_status)
    if "optimal" not in status and "feasible" not in status:
        return _from_warm(warm, solve_seconds, stats, f"solver returned {status}")
    result.solution_loader.load_vars()
    offsets, aliased, shifts = _rounded(m, problem)
    if not _feasible(problem, offsets, aliased, shifts):
        # rounding moved a near-integral binary: re-solve the offsets with binaries fixed
        if not _polish(m, solver, time_limit):
            return _from_warm(warm, solve_seconds, stats, "rounded solution infeasible")
        offsets, aliased, shifts = _rounded(m, problem)
        stats["polished"] = True
    solve_seconds = time.perf_counter() - t0
    peak = measure_peak(problem, offsets, shifts)
    optimal = "optimal" in status
    plan = Plan(
        offsets=offsets,
        aliased=aliased,
        shifts=shifts,
        peak=peak,
        placer="milp",
        optimal=optimal,
        solve_seconds=solve_seconds,
        lower_bound=problem.lower_bound(),
        stats=stats,
    )
    if peak > warm.peak:  # numerical trouble: the first-fit plan is at hand and better
        return _from_warm(warm, solve_seconds, stats, "solver plan worse than first fit")
    if not optimal:
        plan = Plan(
            offsets=plan.offsets,
            aliased=plan.aliased,
            shifts=plan.shifts,
            peak=plan.peak,
            placer=plan.placer,
            optimal=False,
            solve_seconds=plan.solve_seconds,
            lower_bound=plan.lower_bound,
            stats=plan.stats,
            notes=(f"time limit {round(time_limit, 1):g} s reached: {NOT_PROVEN}",),
        )
    return plan


def _rounded(
    m: pe.ConcreteModel, problem: Problem
) -> tuple[dict[int, int], tuple[Pair, ...], tuple[Pair, ...]]:
    """The solver's values rounded: byte offsets, aliased pairs, shifted pairs."""
    v = problem.alignment
    offsets = {t: round(m.u[t].value) * v for t in m.B}
    aliased = tuple(p for k, p in enumerate(problem.pairs) if round(m.d[k].value) == 1)
    shifts = tuple(p for k, p in enumerate(problem.pairs) if round(m.r[k].value) == 1)
    return offsets, aliased, shifts


def _feasible(
    problem: Problem,
    offsets: dict[int, int],
    aliased: tuple[Pair, ...],
    shifts: tuple[Pair, ...],
) -> bool:
    """Whether integer offsets satisfy the model's constraints exactly (Sec. 4.3): aligned
    and non-negative; conflicting buffers disjoint (a shifted input reaching ``gap`` bytes
    further); an aliased pair's output ``gap`` below its input (exactly, for ``exact``) or,
    shifted, at its input's base; an unused pair's buffers disjoint; one input per output."""
    v = problem.alignment
    size = {b.id: b.size for b in problem.buffers}
    if set(offsets) != set(size) or any(x < 0 or x % v for x in offsets.values()):
        return False
    pairs = set(problem.pairs)
    used = set(aliased)
    if not used <= pairs or not set(shifts) <= used or any(not p.shiftable for p in shifts):
        return False
    if len({p.output for p in aliased}) != len(aliased):
        return False
    reach = {p.input: p.gap for p in shifts}
    shifted = set(shifts)

    def end(t: int) -> int:
        return offsets[t] + size[t] + reach.get(t, 0)

    def apart(a: int, b: int) -> bool:
        return end(a) <= offsets[b] or end(b) <= offsets[a]

    if not all(apart(a, b) for a, b in problem.conflicts()):
        return False
    for p in problem.pairs:
        gap = offsets[p.input] - offsets[p.output]
        if p not in used:
            ok = apart(p.input, p.output)
        elif p in shifted:  # the output takes the input's base; the input moves up
            ok = gap == 0
        else:
            ok = gap == p.gap if p.exact else gap >= p.gap
        if not ok:
            return False
    return True


def _adopt(problem: Problem, plan: Plan) -> Plan | None:
    """Another plan of the same buffers as a warm start for ``problem``, or None when it
    aliases a pair this problem does not allow or breaks one of its constraints."""
    if not _feasible(problem, plan.offsets, plan.aliased, plan.shifts):
        return None
    peak = measure_peak(problem, plan.offsets, plan.shifts)
    return Plan(
        offsets=dict(plan.offsets),
        aliased=plan.aliased,
        shifts=plan.shifts,
        peak=peak,
        placer=f"{plan.placer} plan of another strategy",
        optimal=None,
        solve_seconds=0.0,
        lower_bound=problem.lower_bound(),
    )


def _polish(m: pe.ConcreteModel, solver, time_limit: float) -> bool:
    """Fix every binary to its rounded value and solve again for the offsets alone.

    A binary within SCIP's integrality tolerance of 0 (1e-6) still multiplies big-M, which
    can let two buffers overlap by a few bytes. With the binaries fixed no big-M term is
    active, and integer offsets satisfy the remaining difference constraints exactly."""
    for var in m.component_data_objects(pe.Var):
        if var.is_binary() and not var.fixed:
            var.fix(round(var.value or 0))
    result = solver.solve(
        m,
        tee=[io.StringIO()],
        time_limit=time_limit,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
        solver_options=SCIP_OPTIONS,
    )
    _interrupted(result)
    status = str(result.solution_status)
    if "optimal" not in status and "feasible" not in status:
        return False
    result.solution_loader.load_vars()
    return True


# How a fallback note names the warm start it keeps (its Plan.placer says which it was).
_WARM_NAMES = {"firstfit": "first-fit", "greedy": "greedy-by-size"}


def _from_warm(warm: Plan, seconds: float, stats: dict, why: str) -> Plan:
    return Plan(
        offsets=warm.offsets,
        aliased=warm.aliased,
        shifts=warm.shifts,
        peak=warm.peak,
        placer=warm.placer,
        optimal=None,
        solve_seconds=seconds,
        lower_bound=warm.lower_bound,
        stats=stats,
        notes=(f"MILP: {why}; using the {_WARM_NAMES.get(warm.placer, warm.placer)} plan",),
    )
