"""The interval replay against a byte map kept here as the reference (not in the product).

The product's replay keeps runs of owned bytes per live tensor; the reference below is the
byte map it replaced, one owner per arena byte. On the plans the placers make, and on the
same plans corrupted at random (moved, merged, misaligned, unaliased, shifted, wrong peak),
both give the same verdict: the same peak, or the same error message.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import REPO, SHARED
from tflite_writer import example_model

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.placement import Plan, first_fit
from rip.allocator.planning.replay import ReplayError, _check_upsample, _min_gap, replay
from rip.allocator.planning.requirements import op_buffers, requirements
from rip.allocator.planning.strategies import STRATEGIES, build_problem
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

FREE = -1


def byte_map_replay(graph: Graph, plan: Plan, alignment: int) -> int:
    """The previous replay, verbatim but for the op-level helpers: an owner per byte; each
    kernel's scratch (`op_buffers`) owns its bytes while its op runs."""
    off = plan.offsets
    storage = {t: graph.storage(t) for t in graph.tensors}
    size = {s: graph.tensors[s].nbytes for s in set(storage.values())}
    scratch = {b.op: b.id for b in op_buffers(graph)}
    size.update({b.id: b.size for b in op_buffers(graph)})
    for s, x in off.items():
        if x % alignment:
            raise ReplayError(f"tensor {s} at offset {x} is not aligned to {alignment} bytes")
        if x < 0:
            raise ReplayError(f"tensor {s} at negative offset {x}")
    needed = [s for s in size if s in off]
    peak = max((off[s] + size[s] for s in needed), default=0)
    peak = max([peak] + [off[p.input] + p.gap + size[p.input] for p in plan.shifts])
    owner = np.full(peak, FREE, dtype=np.int64)
    last: dict[int, int] = {}
    for i, op in enumerate(graph.operators):
        for t in op.inputs:
            if t >= 0 and not graph.tensors[t].is_constant:
                last[storage[t]] = i
    for t in graph.outputs:
        last[storage[t]] = len(graph.operators)
    home = dict(off)

    def paint(s: int, allowed: set[int], what: str) -> None:
        lo, hi = home[s], home[s] + size[s]
        region = owner[lo:hi]
        bad = region[(region != FREE) & (region != s) & ~np.isin(region, list(allowed))]
        if bad.size:
            raise ReplayError(
                f"{what}: writing tensor {s} at [{lo}, {hi}) overwrites live tensor {int(bad[0])}"
            )
        region[:] = s

    def intact(s: int, what: str) -> None:
        if not (owner[home[s] : home[s] + size[s]] == s).all():
            raise ReplayError(f"{what}: input tensor {s} was overwritten before it was read")

    for t in graph.inputs:
        paint(storage[t], set(), "graph input")
    aliased = {p.op: p for p in plan.aliased}
    shifted = {p.op for p in plan.shifts}
    for i, op in enumerate(graph.operators):
        what = op.describe(graph, i)
        reads = {storage[t] for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant}
        for s in reads:
            intact(s, what)
        if i in scratch:
            paint(scratch[i], set(), f"{what} scratch")
        allowed: set[int] = set()
        pair = aliased.get(i)
        if pair is not None:
            if pair.input not in reads or pair.output != storage[op.outputs[0]]:
                raise ReplayError(f"{what}: plan aliases tensors the op does not connect")
            if i in shifted:
                owner[owner == pair.input] = FREE
                home[pair.input] = off[pair.input] + pair.gap
                paint(pair.input, set(), f"{what} right shift")
            gap = home[pair.input] - off[pair.output]
            if pair.exact:
                if gap != 0:
                    raise ReplayError(
                        f"{what}: in place needs the output at its input, gap is {gap}"
                    )
                if op.kind == "RESIZE_NEAREST_NEIGHBOR":
                    _check_upsample(graph, i)
            else:
                need = _min_gap(graph, i, pair.order)
                if gap < need:
                    raise ReplayError(
                        f"{what}: gap {gap} B is below the simulated minimum {need} B"
                    )
            allowed.add(pair.input)
        for t in op.outputs:
            paint(storage[t], allowed, what)
        for s in reads:
            if last.get(s) == i and s not in allowed:
                owner[owner == s] = FREE
        if i in scratch:
            owner[owner == scratch[i]] = FREE
        if pair is not None:
            owner[owner == pair.input] = FREE
            paint(pair.output, set(), what)
    if peak != plan.peak:
        raise ReplayError(f"measured peak {peak} B differs from the plan's {plan.peak} B")
    return peak


def verdict(check, graph: Graph, plan: Plan, alignment: int) -> str:
    try:
        return f"peak {check(graph, plan, alignment)}"
    except ReplayError as e:
        return str(e)


def _graphs() -> list[tuple[str, Graph]]:
    out = [("example0", rewrite(read_model(example_model(0), name="example")))]
    out.append(("example-cnn", rewrite(read_model(REPO / "examples" / "example-cnn.tflite"))))
    for name in ("mcunet-in2", "mcunet-vww0"):  # branched and plain, when ../shared is here
        path = SHARED / "models" / "mcunet" / f"{name}.tflite"
        if path.is_file():
            out.append((name, rewrite(read_model(path))))
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[Graph, Plan]]:
    """Every graph under every strategy, planned by the MILP and by first fit."""
    out = []
    for _, g in _graphs():
        req = requirements(g)
        for s in STRATEGIES:
            out.append((g, plan_model(g, req, s, PlanOptions(time_limit=20))))
            out.append((g, first_fit(build_problem(req, s, 4))))
    return out


def test_both_accept_every_placer_plan(cases):
    for g, plan in cases:
        want = verdict(byte_map_replay, g, plan, 4)
        assert verdict(replay, g, plan, 4) == want


def _peak_of(graph: Graph, plan: Plan) -> int:
    size = {s: graph.tensors[s].nbytes for s in {graph.storage(t) for t in graph.tensors}}
    size.update({b.id: b.size for b in op_buffers(graph)})
    tops = [plan.offsets[s] + size[s] for s in size if s in plan.offsets]
    tops += [plan.offsets[p.input] + p.gap + size[p.input] for p in plan.shifts]
    return max(tops, default=0)


@st.composite
def corrupted(draw, cases):
    g, plan = cases[draw(st.integers(0, len(cases) - 1))]
    offsets = dict(plan.offsets)
    aliased, shifts = list(plan.aliased), list(plan.shifts)
    ids = sorted(offsets)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["move", "merge", "nudge", "unalias", "shift", "gap"]))
        t = draw(st.sampled_from(ids))
        if kind == "move":  # anywhere in (a little past) the arena
            offsets[t] = 4 * draw(st.integers(0, plan.peak // 4 + 8))
        elif kind == "merge":  # onto another tensor
            offsets[t] = offsets[draw(st.sampled_from(ids))]
        elif kind == "nudge":  # a few bytes either way, sometimes misaligned
            offsets[t] = max(0, offsets[t] + draw(st.integers(-12, 12)))
        elif kind == "unalias" and aliased:
            aliased.pop(draw(st.integers(0, len(aliased) - 1)))
        elif kind == "shift" and aliased:  # move an input instead of placing below it
            p = aliased.pop(draw(st.integers(0, len(aliased) - 1)))
            q = replace(p, shiftable=True, gap=max(p.gap, 4))
            aliased.append(q)
            shifts.append(q)
            offsets[q.output] = offsets[q.input]
        elif kind == "gap" and aliased:  # the output a byte or a word short of its gap
            p = draw(st.sampled_from(aliased))
            offsets[p.output] = max(0, offsets[p.input] - p.gap + draw(st.sampled_from([1, 4])))
    bad = replace(plan, offsets=offsets, aliased=tuple(aliased), shifts=tuple(shifts))
    peak = _peak_of(g, bad)
    peak = draw(st.sampled_from([peak, peak, peak, peak + 4, max(0, peak - 1)]))
    alignment = draw(st.sampled_from([4, 4, 4, 1]))
    return g, replace(bad, peak=peak), alignment


def test_same_verdicts_on_corrupted_plans(cases):
    seen: dict[bool, int] = {True: 0, False: 0}

    @settings(
        max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(corrupted(cases))
    def check(case):
        g, plan, alignment = case
        want = verdict(byte_map_replay, g, plan, alignment)
        assert verdict(replay, g, plan, alignment) == want
        seen[want.startswith("peak ")] += 1

    check()
    assert seen[True] and seen[False]  # both verdicts were exercised


def test_rejects_what_the_byte_map_rejects(cases):
    """The four corruptions of tests/test_placement.py, on the interval replay directly."""
    g, plan = next((g, p) for g, p in cases if any(q.gap > 0 and not q.exact for q in p.aliased))
    a, b = sorted(plan.offsets)[:2]
    with pytest.raises(ReplayError):
        replay(g, replace(plan, offsets={**plan.offsets, b: plan.offsets[a]}), 4)
    conv = next(q for q in plan.aliased if q.gap > 0 and not q.exact)
    need = _min_gap(g, conv.op, conv.order)
    short = {**plan.offsets, conv.output: plan.offsets[conv.input] - (need - 1)}
    with pytest.raises(ReplayError, match="below the simulated minimum"):
        replay(g, replace(plan, offsets=short), 1)
    t = next(iter(plan.offsets))
    with pytest.raises(ReplayError, match="aligned"):
        replay(g, replace(plan, offsets={**plan.offsets, t: plan.offsets[t] + 2}), 4)
    with pytest.raises(ReplayError, match="peak"):
        replay(g, replace(plan, peak=plan.peak + 4), 4)


def test_a_missing_offset_is_a_replay_error(cases):
    g, plan = cases[0]
    t = next(iter(plan.offsets))
    offsets = {k: v for k, v in plan.offsets.items() if k != t}
    with pytest.raises(ReplayError):
        replay(g, replace(plan, offsets=offsets), 4)
