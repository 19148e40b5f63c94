"""Placers behind the narrow interface, and the independent replay."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tflite_writer import example_model

from rip.allocator.planning.check import verify
from rip.allocator.planning.milp import MilpOptions, milp
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.placement import Buffer, Pair, Problem, first_fit, measure_peak
from rip.allocator.planning.replay import ReplayError, _min_gap, replay
from rip.allocator.planning.requirements import requirements
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


def check_plan(problem: Problem, plan) -> None:
    """An independent check of a plan against the problem's own rules (check.verify raises
    PlanError on the first one broken)."""
    verify(problem, plan)
    assert plan.peak == measure_peak(problem, plan.offsets, plan.shifts)
    assert plan.peak >= problem.lower_bound()


@st.composite
def problems(draw):
    """A schedule as graphs make them: op k writes buffer k (plus graph inputs before op 0);
    a buffer whose last reader is op k may be op k's in-place input."""
    n = draw(st.integers(2, 9))
    buffers = []
    for k in range(n):
        size = draw(st.integers(1, 64)) * 4 - draw(st.integers(0, 3))
        buffers.append(Buffer(k, size, max(k - 1, 0), k + draw(st.integers(0, 3))))
    pairs = []
    for o in buffers[1:]:
        for i in buffers:
            if i.id != o.id and i.last == o.first and i.first < o.first and draw(st.booleans()):
                exact = draw(st.booleans())
                gap = 0 if exact else draw(st.integers(0, 20)) * 4
                pairs.append(Pair(o.first, i.id, o.id, gap, exact, not exact and gap > 0))
    return Problem(tuple(buffers), tuple(pairs), 4)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_milp_is_valid_and_never_worse_than_first_fit(problem):
    ff = first_fit(problem)
    check_plan(problem, ff)
    opt = milp(problem, MilpOptions(time_limit=20))
    check_plan(problem, opt)
    assert opt.peak <= ff.peak


def test_milp_reaches_the_layer_by_layer_limit_where_first_fit_strands_memory():
    # t0 -> op0 -> t1 (in place, gap 60) ; t2 lives across op0..op1 beside them
    p = Problem(
        (Buffer(0, 100, 0, 0), Buffer(1, 150, 0, 1), Buffer(2, 100, 1, 2), Buffer(3, 48, 2, 2)),
        (Pair(0, 0, 1, 60, shiftable=True), Pair(1, 1, 2, 0)),
        4,
    )
    ff, opt = first_fit(p), milp(p, MilpOptions(time_limit=10))
    assert opt.peak == p.lower_bound() == 160
    assert opt.optimal is True
    assert ff.peak > opt.peak


def test_no_shift_when_placing_below_is_as_good():
    """Sec. 4.3: the shift penalty keeps memmoves out unless they buy peak. Here the output
    can sit 32 B below its input (the chain moves up) at the same 96 B a shift would give."""
    p = Problem(
        (Buffer(0, 64, 0, 0), Buffer(1, 64, 0, 1), Buffer(2, 96, 1, 1)),
        (Pair(0, 0, 1, 0, exact=True), Pair(1, 1, 2, 32, shiftable=True)),
        4,
    )
    plan = milp(p, MilpOptions(time_limit=10))
    check_plan(p, plan)
    assert plan.peak == p.lower_bound() == 96
    assert plan.shifts == ()


def test_deterministic():
    p = Problem(tuple(Buffer(i, 40 + 8 * (i % 3), i // 2, i // 2 + 2) for i in range(12)), (), 4)
    a, b = milp(p, MilpOptions(time_limit=10)), milp(p, MilpOptions(time_limit=10))
    assert a.offsets == b.offsets


# --- the replay -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planned():
    g = rewrite(read_model(example_model(0), name="example"))
    req = requirements(g)
    plan = plan_model(g, req, "rip", PlanOptions(time_limit=20))
    return g, plan


def test_replay_accepts_the_plan_and_measures_its_peak(planned):
    g, plan = planned
    assert replay(g, plan, 4) == plan.peak
    assert plan.aliased  # the example really runs ops in place


def test_replay_rejects_overlap(planned):
    g, plan = planned
    lives = {t for t in plan.offsets}
    a, b = sorted(lives)[:2]
    bad = replace(plan, offsets={**plan.offsets, b: plan.offsets[a]})
    with pytest.raises(ReplayError):
        replay(g, bad, 4)


def test_replay_rejects_gap_one_byte_short(planned):
    g, plan = planned
    conv = next(p for p in plan.aliased if p.kind == "rip" and p.gap > 0)
    need = plan.offsets[conv.input] - plan.offsets[conv.output]
    # measured at byte granularity (alignment 1): one byte less than the planned gap that
    # the simulator says is needed
    minimum = _min_gap(g, conv.op, conv.order)
    assert need >= minimum > 0
    bad = replace(
        plan, offsets={**plan.offsets, conv.output: plan.offsets[conv.input] - (minimum - 1)}
    )
    with pytest.raises(ReplayError, match="below the simulated minimum"):
        replay(g, bad, 1)


def test_replay_rejects_misalignment(planned):
    g, plan = planned
    t = next(iter(plan.offsets))
    bad = replace(plan, offsets={**plan.offsets, t: plan.offsets[t] + 2})
    with pytest.raises(ReplayError, match="aligned"):
        replay(g, bad, 4)


def test_replay_rejects_a_wrong_peak(planned):
    g, plan = planned
    with pytest.raises(ReplayError, match="peak"):
        replay(g, replace(plan, peak=plan.peak + 4), 4)
