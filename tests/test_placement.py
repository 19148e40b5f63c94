"""Placers behind the narrow interface, and the independent replay."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

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
from rip.allocator.planning.strategies import build_problem
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


# A solve that prints a line per branch-and-bound node: SCIP's default verbosity wrote about
# 64 KiB (a pipe's capacity) in 20 s of it and then blocked on the next line for good.
_LOUD_SOLVE = """
import sys
sys.path.insert(0, {tests!r})
from adversarial_models import hard_packing
from rip.allocator.planning import milp
from rip.allocator.planning.requirements import requirements
from rip.allocator.planning.strategies import build_problem
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

milp.SCIP_OPTIONS["display/freq"] = 1
graph = rewrite(read_model(hard_packing(), name="hard-packing"))
plan = milp.milp(build_problem(requirements(graph), "rip", 4), milp.MilpOptions(time_limit=20))
print("planned", plan.peak)
"""


def test_a_long_solve_cannot_block_on_its_own_output():
    """Pyomo drains SCIP's output through a pipe in a Python thread, while pyscipopt's
    optimize() holds the GIL for the whole solve: SCIP must stay silent, or a long solve
    (an MLPerf-sized model's, in CI) stops for good once it has filled the pipe."""
    script = textwrap.dedent(_LOUD_SOLVE.format(tests=str(Path(__file__).parent)))
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a 20 s solve had not returned after 120 s: SCIP blocked on its output")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("planned ")


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
    # a convolution the problem lets run in place at a gap (the plan need not use it: with
    # its scratch in the arena the optimal plan may run it out of place)
    conv = next(p for p in build_problem(requirements(g), "rip", 4).pairs
                if p.kind == "rip" and p.gap > 0)  # fmt: skip
    # measured at byte granularity (alignment 1): one byte less than the planned gap that
    # the simulator says is needed; every offset moved up so that none is negative
    minimum = _min_gap(g, conv.op, conv.order)
    assert conv.gap >= minimum > 0
    offsets = {t: x + minimum for t, x in plan.offsets.items()}
    offsets[conv.output] = offsets[conv.input] - (minimum - 1)
    aliased = (*(p for p in plan.aliased if p.op != conv.op), conv)
    bad = replace(plan, offsets=offsets, aliased=aliased, shifts=())
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


# --- kernel scratch: a buffer of the plan, live for its op alone (issue 25) ----------------
def test_each_kernels_scratch_is_a_buffer_of_the_problem_live_for_its_op(planned):
    g, _ = planned
    req = requirements(g)
    problem = build_problem(req, "rip", 4)
    ids = {b.id: b for b in problem.buffers}
    need = {i: r.scratch_bytes for i, r in enumerate(req.ops) if r.scratch_bytes}
    assert need and {b.op: b.size for b in req.op_buffers} == need
    for b in req.op_buffers:
        assert b.id not in g.tensors and ids[b.id] == Buffer(b.id, b.size, b.op, b.op)
    assert not requirements(g, scratch_in_arena=False).op_buffers


def test_replay_rejects_scratch_over_a_live_input(planned):
    g, plan = planned
    b = requirements(g).op_buffers[0]
    x = g.storage(g.operators[b.op].inputs[0])
    bad = replace(plan, offsets={**plan.offsets, b.id: plan.offsets[x]})
    with pytest.raises(ReplayError, match=f"writing tensor {b.id} .* overwrites live tensor {x}"):
        replay(g, bad, 4)


def test_replay_rejects_scratch_below_the_kernels_need(planned):
    g, plan = planned
    req = requirements(g)
    buffers = req.op_buffers
    # below the least any kernel of the op needs (a CONV_2D may run on its leaner kernel)
    least = req.ops[buffers[0].op].least_scratch_bytes
    short = (replace(buffers[0], size=least - 4), *buffers[1:])
    with pytest.raises(ReplayError, match=r"its kernel needs \d+ B of scratch"):
        replay(g, plan, 4, short)
    with pytest.raises(ReplayError, match="has no offset"):  # a scratch the plan never placed
        replay(
            g, replace(plan, offsets={k: v for k, v in plan.offsets.items() if k in g.tensors}), 4
        )
