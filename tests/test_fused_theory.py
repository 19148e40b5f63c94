"""Fused, row-streamed chains (issue 12): the schedule, rings, composite geometry and
closed-form gap of allocator/theory/fused.py against the simulator that executes the
schedule (allocator/theory/simulate_fused.py) and against brute-force tracing."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from paths import MCUNET, shared_path

from rip.allocator.planning.requirements import conv_geometry
from rip.allocator.theory import fused
from rip.allocator.theory.bounds import rip_dense_gap, rip_padded_gap
from rip.allocator.theory.fused import (
    CHAIN_KINDS,
    CONV,
    DEPTHWISE,
    POOL_KINDS,
    Chain,
    ChainOp,
    composite_geometry,
    fused_bound,
    fused_gap,
    fused_gap_fold,
    fused_schedule,
    in_slot,
    make_chain,
    planned_rows,
    ring_bytes,
    ring_rows,
)
from rip.allocator.theory.geometry import ConvGeometry, make_geometry
from rip.allocator.theory.simulate import simulate_rip
from rip.allocator.theory.simulate_fused import (
    chain_evictions,
    ring_evictions,
    run_fused,
    simulate_fused,
    simulate_ring_rows,
    simulate_slots,
    slot_corruption,
)
from rip.allocator.theory.sweep_fused import make_chain_at, run_fused_sweep
from rip.cli.sweep import main as sweep_main
from rip.core.errors import LayerError
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

ALIGN = 4  # V of Sec. 4.3: every planned gap is a multiple of it


@st.composite
def chain_ops(draw, max_extent: int = 9, max_channels: int = 4, max_ops: int = 4) -> Chain:
    """A valid chain: any padding below the dilated kernel on each side (Theorem 13's
    domain), strides 1-2, dilation 1-2, kernels 1-4; with the residual ADD the ops keep
    the shape (stride 1, padding summing to k_eff - 1) and the last restores C."""
    residual = draw(st.booleans())
    h = draw(st.integers(1, max_extent))
    w = draw(st.integers(1, max_extent))
    c0 = c = draw(st.integers(1, max_channels))
    n = draw(st.integers(1, max_ops))
    ops = []
    for i in range(n):
        kind = draw(st.sampled_from(CHAIN_KINDS))
        last = i == n - 1
        if residual and last and c != c0:
            kind = CONV
        pool = kind in POOL_KINDS
        kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        dh, dw = (1, 1) if pool else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        keh, kew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        if residual:
            sh = sw = 1
            pt, pl = draw(st.integers(0, keh - 1)), draw(st.integers(0, kew - 1))
            pads = (pt, keh - 1 - pt, pl, kew - 1 - pl)
        else:
            sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
            pads = tuple(draw(st.integers(0, k - 1)) for k in (keh, keh, kew, kew))
        if kind == CONV:
            c_out = c0 if residual and last else draw(st.integers(1, max_channels))
        elif kind == DEPTHWISE:
            c_out = c * (1 if residual else draw(st.integers(1, 2)))
        else:
            c_out = c
        try:
            geom = ConvGeometry(h, w, c, c_out, kh, kw, sh, sw, dh, dw, *pads)
        except LayerError:
            assume(False)
        ops.append(ChainOp(kind, geom))
        h, w, c = geom.h_out, geom.w_out, c_out
    return Chain(tuple(ops), residual)


def bottleneck(h: int, w: int, c: int, t: int, k: int, s: int, c_out: int) -> Chain:
    e = make_geometry((h, w), c, t * c)
    d = make_geometry((h, w), t * c, t * c, (k, k), (s, s), padding="same")
    p = make_geometry((d.h_out, d.w_out), t * c, c_out)
    return make_chain(
        [(CONV, e), (DEPTHWISE, d), (CONV, p)], residual=(d.h_out, d.w_out, c_out) == (h, w, c)
    )


# --------------------------------------------------------------------------------------
# The closed form against the simulator
# --------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(chain_ops())
def test_closed_forms_against_simulator(chain: Chain) -> None:
    """The exact form is the simulator's minimum; the fold form is never below it."""
    truth = simulate_fused(chain, "fast")
    assert fused_gap(chain) == truth, chain.describe()
    assert fused_gap_fold(chain) >= truth, chain.describe()
    assert run_fused(chain, fused_gap_fold(chain)).ok


@st.composite
def tall_chains(draw) -> Chain:
    """Chains on tall, narrow inputs, so the exact form's border strips leave an interior."""
    chain = draw(chain_ops(max_extent=3, max_channels=3))
    h = draw(st.integers(40, 90))
    ops, rows = [], h
    for op in chain.ops:
        g = op.geom
        try:
            g = ConvGeometry(rows, g.w_in, g.c_in, g.c_out, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw,
                             g.pad_top, g.pad_bottom, g.pad_left, g.pad_right)  # fmt: skip
        except LayerError:
            assume(False)
        ops.append(ChainOp(op.kind, g))
        rows = g.h_out
    try:
        return Chain(tuple(ops), chain.residual)
    except LayerError:
        assume(False)
        raise  # unreachable


@settings(max_examples=150, deadline=None)
@given(tall_chains())
def test_exact_form_strips_on_tall_chains(chain: Chain) -> None:
    """Between the border strips D is affine: the strips find the maximum over every step,
    and that maximum is the simulator's."""
    exact = fused._Exact(chain)
    every = max((exact(q) for q in range(1, chain.output_hwc[0])), default=-math.inf)
    assert fused_gap(chain) == int(max(0, chain.n_out - chain.n_in, every))
    assert fused_gap(chain) == simulate_fused(chain, "fast")


@settings(max_examples=120, deadline=None)
@given(chain_ops(max_extent=6, max_channels=3))
def test_literal_and_fast_simulators_agree(chain: Chain) -> None:
    """Byte-level execution (binary search) and the pixel-level last-reader account."""
    assert simulate_fused(chain, "literal") == simulate_fused(chain, "fast")


@settings(max_examples=150, deadline=None)
@given(chain_ops(max_extent=7, max_channels=3))
def test_one_alignment_unit_below_the_minimum_corrupts(chain: Chain) -> None:
    truth = simulate_fused(chain, "fast")
    assert run_fused(chain, truth).ok
    aligned = -(-truth // ALIGN) * ALIGN
    assert run_fused(chain, aligned).ok
    if truth > 0:
        assert not run_fused(chain, truth - 1).safe
        assert not run_fused(chain, aligned - ALIGN).safe


@settings(max_examples=200, deadline=None)
@given(chain_ops())
def test_breakpoints_find_the_maximum_debt(chain: Chain) -> None:
    """Fold form: evaluating D at the breakpoints equals evaluating it at every step (the
    form itself; fused_gap_fold takes the exact form where a tail row reads only padding)."""
    debt = fused._debt(chain)
    every = max((debt(q) for q in range(1, chain.output_hwc[0])), default=-math.inf)
    assert fused._fold_form(chain) == int(max(0, chain.n_out - chain.n_in, every))


def test_bottleneck_blocks_are_tight() -> None:
    """MobileNetV2 / MCUNet blocks: the closed form is the simulator's minimum."""
    for args in [(20, 20, 16, 6, 3, 1, 16), (20, 20, 16, 6, 3, 2, 24), (9, 7, 8, 3, 5, 1, 16),
                 (12, 12, 24, 6, 7, 2, 32), (5, 5, 40, 6, 3, 1, 48)]:  # fmt: skip
        chain = bottleneck(*args)
        assert fused_gap(chain) == simulate_fused(chain, "fast"), chain.describe()
        assert fused_gap_fold(chain) == fused_gap(chain)


# --------------------------------------------------------------------------------------
# The schedule and its rings
# --------------------------------------------------------------------------------------
def _needed_by_tracing(chain: Chain) -> list[set[int]]:
    """Rows each layer must produce, traced tap by tap from every output row."""
    need = [set() for _ in chain.ops]
    need[-1] = set(range(chain.output_hwc[0]))
    for layer in range(chain.length - 1, 0, -1):
        g = chain.ops[layer].geom
        for v in need[layer]:
            for j in range(g.kh):
                y = v * g.sh + j * g.dh - g.pad_top
                if 0 <= y < g.h_in:
                    need[layer - 1].add(y)
    return need


@settings(max_examples=250, deadline=None)
@given(chain_ops())
def test_schedule_computes_each_needed_row_once_before_its_reader(chain: Chain) -> None:
    sched = fused_schedule(chain)
    need = _needed_by_tracing(chain)
    for layer in range(chain.length):
        rows = sched.computed_rows(layer)
        assert sorted(rows) == sorted(need[layer]) and len(set(rows)) == len(rows)
        assert list(rows) == sorted(rows)  # in increasing order
    done: set[tuple[int, int]] = set()
    for r, step in enumerate(sched.steps):
        assert step.row == r and step.computes[-1].layer == chain.length - 1
        assert step.computes[-1].row == r
        for comp in step.computes:
            if comp.layer > 0:
                assert all((comp.layer - 1, y) in done for y in comp.reads)
            done.add((comp.layer, comp.row))
    run = run_fused(chain, simulate_fused(chain))
    assert (run.evicted, run.recomputed, run.misread) == (0, 0, 0)


@settings(max_examples=250, deadline=None)
@given(chain_ops())
def test_ring_formula_is_the_fewest_rows_without_eviction(chain: Chain) -> None:
    """R_l never lets a read find another row, and one row less does: the oldest row
    some reader needs would share a slot with the newest computed by then."""
    sched = fused_schedule(chain)
    rings = ring_rows(chain)
    assert simulate_ring_rows(chain) == rings
    for layer, formula in enumerate(rings):
        assert ring_evictions(chain, layer, formula, sched) == 0
        if formula > 1:
            assert ring_evictions(chain, layer, formula - 1, sched) > 0
    for formula, (_, w, c), nbytes in zip(
        rings, chain.intermediates_hwc, fused_bound(chain).ring_bytes, strict=True
    ):
        assert nbytes == formula * w * c


# --------------------------------------------------------------------------------------
# Rows stored in their input's ring slot (issue 25)
# --------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(chain_ops())
def test_rows_in_their_input_slot_are_the_simulators_choice(chain: Chain) -> None:
    """The rule the planner uses (`in_slot`) is what the simulator finds safe, each case
    executed (the store byte by byte in the row engine's order, the schedule over tagged
    slots), and the planned rings, their zeros included, lose no read."""
    assert in_slot(chain) == simulate_slots(chain)
    assert chain_evictions(chain, planned_rows(chain)) == 0


def test_rows_in_their_input_slot_over_the_sweep() -> None:
    """Over 1,500 sweep chains the rule and the simulator agree on every intermediate, both
    ways occur (some stored in their input's slot, some depthwise ones refused), and the
    bytes they save are their rings'."""
    stored = refused = 0
    for index in range(1500):
        chain = make_chain_at(index, seed=13)
        rule = in_slot(chain)
        assert rule == simulate_slots(chain), chain.describe()
        assert chain_evictions(chain, planned_rows(chain)) == 0, chain.describe()
        own = ring_bytes(chain, ring_rows(chain))
        assert sum(ring_bytes(chain)) == sum(b for b, s in zip(own, rule, strict=True) if not s)
        stored += sum(rule)
        refused += sum(
            op.kind == DEPTHWISE and not s for op, s in zip(chain.ops[1:-1], rule[1:], strict=False)
        )
    assert stored > 0 and refused > 0, (stored, refused)


def _slot_chain(sw: int, pad_left: int, pad_top: int = 0) -> Chain:
    """1x1 -> 3x3 depthwise (stride 2 down, ``sw`` across) -> 1x1 over 6 channels."""
    e = ConvGeometry(10, 11, 3, 6)
    pr = 2 - pad_left if sw == 1 else max(0, 2 - pad_left - (11 - 1) % sw)
    d = ConvGeometry(10, 11, 6, 6, 3, 3, 2, sw, pad_top=pad_top, pad_bottom=1,
                     pad_left=pad_left, pad_right=pr)  # fmt: skip
    p = ConvGeometry(d.h_out, d.w_out, 6, 4)
    return make_chain([(CONV, e), (DEPTHWISE, d), (CONV, p)])


@pytest.mark.parametrize(
    ("sw", "pad_left", "corrupts"),
    [(2, 0, False), (2, 1, False), (1, 0, False), (1, 1, True), (2, 2, True)],
)
def test_a_store_over_a_column_still_to_be_read_is_found(sw, pad_left, corrupts) -> None:
    """The rule's edge, executed: the row engine's left-to-right stores over the row read
    are safe while the horizontal stride exceeds the left padding; at a stride equal to it
    (a SAME stride-1 depthwise, or stride 2 padded by 2) a store reaches a column the next
    pixel still reads, which the simulator finds and the rule refuses."""
    chain = _slot_chain(sw, pad_left)
    assert (slot_corruption(chain, 1) > 0) == corrupts
    assert in_slot(chain)[1] == (not corrupts) == simulate_slots(chain)[1]


def test_a_window_padded_past_its_reach_stores_safely_at_stride_one() -> None:
    """Stride 1 padded by 2 is not always a corrupting store: a 1x2 window dilated by 2 over
    a row of two reads columns -2, 0 (pixel 0) and -1, 1 (pixel 1), so pixel 0's store over
    column 0 is read by no later pixel. The rule counts the columns each pixel reads (the
    stride-over-padding shortcut refused it; the simulator, executing it, had not)."""
    one = ConvGeometry(1, 2, 1, 1)
    d = ConvGeometry(1, 2, 1, 1, 1, 2, 1, 1, 1, 2, pad_left=2)
    chain = make_chain([(DEPTHWISE, one), (DEPTHWISE, d), (CONV, one)])
    assert slot_corruption(chain, 1) == 0
    assert in_slot(chain) == simulate_slots(chain) == (False, True)
    shifted = make_chain([(DEPTHWISE, one), (DEPTHWISE, replace(d, pad_left=1, pad_right=1)),
                          (CONV, one)])  # fmt: skip
    assert slot_corruption(shifted, 1) > 0  # pixel 1 reads column 0 (1 - 1 + 0 * 2)
    assert in_slot(shifted)[1] is False


def test_a_row_still_to_be_read_is_not_overwritten() -> None:
    """Vertically: a depthwise whose next row reads the lowest row this one read (a stride
    of 1 padded above: row 0 is read by output rows 0 and 1) cannot store over it; forced
    to, the replayed schedule finds the lost read, one row of padding fewer it does not."""
    e = ConvGeometry(8, 8, 4, 4)
    for pad_top, lost in ((1, True), (0, False)):
        d = ConvGeometry(8, 8, 4, 4, 3, 3, 1, 1, pad_top=pad_top, pad_bottom=2 - pad_top,
                         pad_right=2)  # fmt: skip
        chain = make_chain([(CONV, e), (DEPTHWISE, d), (CONV, ConvGeometry(8, 8, 4, 4))])
        assert (chain_evictions(chain, (3, 0)) > 0) == lost
        assert in_slot(chain)[1] == (not lost)


def test_ring_is_the_dilated_kernel_height() -> None:
    chain = bottleneck(20, 20, 16, 6, 3, 2, 24)
    assert ring_rows(chain) == (3, 1)
    assert fused_bound(chain).ring_bytes == (3 * 20 * 96, 1 * 10 * 96)
    g = make_geometry((20, 20), 8, 8, (3, 3), (1, 1), (2, 2), "same")
    chain = make_chain([(CONV, make_geometry((20, 20), 4, 8)), (DEPTHWISE, g)])
    assert ring_rows(chain) == (5,)
    # dilation 2, stride 2: only even rows are read, so three of the five in the window
    g = make_geometry((20, 20), 8, 8, (3, 3), (2, 2), (2, 2), "valid")
    chain = make_chain([(CONV, make_geometry((20, 20), 4, 8)), (DEPTHWISE, g)])
    sched = fused_schedule(chain)
    assert ring_rows(chain) == (3,) and sched.computed_rows(0) == tuple(range(0, 20, 2))
    assert [sched.slot(0, u) for u in (0, 2, 4, 6)] == [0, 1, 2, 0]


# --------------------------------------------------------------------------------------
# Composite geometry
# --------------------------------------------------------------------------------------
def _trace(chain: Chain, axis: str, o: int, clip: bool) -> set[int]:
    """Input positions output o of the last layer depends on, through every layer's taps;
    ``clip`` drops positions outside each tensor (they are padding)."""
    frontier = {o}
    for op in reversed(chain.ops):
        g = op.geom
        k, s, d, p, n = (
            (g.kh, g.sh, g.dh, g.pad_top, g.h_in)
            if axis == "h"
            else (g.kw, g.sw, g.dw, g.pad_left, g.w_in)
        )
        frontier = {v * s + j * d - p for v in frontier for j in range(k)}
        if clip:
            frontier = {y for y in frontier if 0 <= y < n}
    return frontier


@settings(max_examples=250, deadline=None)
@given(chain_ops())
def test_composite_geometry_equals_receptive_field_tracing(chain: Chain) -> None:
    comp = composite_geometry(chain)
    for axis, a in (("h", comp.rows), ("w", comp.cols)):
        for o in range(a.n_out):
            lo, hi = a.window(o)
            assert _trace(chain, axis, o, clip=False) == {lo + t for t in a.taps}
            real = _trace(chain, axis, o, clip=True)
            assert all(lo <= y <= hi for y in real)
        assert -(a.stride - 1) <= a.pad_after < a.extent
    env = comp.as_conv(chain.input_hwc[2], chain.output_hwc[2])
    assert (env.h_out, env.w_out) == chain.output_hwc[:2]


def test_composite_of_a_bottleneck() -> None:
    rows = composite_geometry(bottleneck(20, 20, 16, 6, 3, 1, 16)).rows
    assert (rows.stride, rows.pad, rows.extent, rows.dilation) == (1, 1, 3, 1)
    g1 = make_geometry((32, 32), 3, 8, (3, 3), (2, 2), padding="same")
    g2 = make_geometry((16, 16), 8, 8, (3, 3), (1, 1), (2, 2), "same")
    rows = composite_geometry(make_chain([(CONV, g1), (DEPTHWISE, g2)])).rows
    # S = 2, P = 0 + 2 * 2, K = 1 + 2 + 4 * 2
    assert (rows.stride, rows.pad, rows.extent) == (2, 4, 11)


# --------------------------------------------------------------------------------------
# One op: the per-layer theory
# --------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(chain_ops(max_ops=1))
def test_single_op_matches_row_tiled_per_layer_simulator(chain: Chain) -> None:
    """A one-op chain gathers a whole output row before writing it: the per-layer
    simulator with a tile of W_out pixels (Appendix G.1) measures the same minimum, and the
    closed form is tight."""
    (op,) = chain.ops
    g = op.geom
    truth = simulate_rip(g, "dense", "gather", "row", "fast", tile=g.w_out)
    assert simulate_fused(chain, "fast") == truth
    assert fused_gap(chain) == fused_gap_fold(chain) == truth


@st.composite
def one_column_layers(draw) -> ConvGeometry:
    """A layer with a single output column and any row geometry (Theorem 13's domain)."""
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    keh, kew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    pt, pb = draw(st.integers(0, keh - 1)), draw(st.integers(0, keh - 1))
    pl, pr = draw(st.integers(0, kew - 1)), draw(st.integers(0, kew - 1))
    h = draw(st.integers(max(1, keh - pt - pb), 12))
    lo, hi = max(1, kew - pl - pr), kew - pl - pr + sw - 1  # one output column
    assume(lo <= hi)
    w = draw(st.integers(lo, hi))
    c_in, c_out = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    geom = ConvGeometry(h, w, c_in, c_out, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr)
    assert geom.w_out == 1
    return geom


@settings(max_examples=300, deadline=None)
@given(one_column_layers())
def test_single_op_with_one_output_column_is_theorem_13(geom: ConvGeometry) -> None:
    """With W_out = 1 a row is a pixel, so the row schedule is Theorem 13's traversal and
    the fused closed form is ``rip_dense_gap`` (gathered taps)."""
    chain = make_chain([(CONV, geom)])
    assert fused_gap(chain) == fused_gap_fold(chain) == rip_dense_gap(geom, "gather")
    if not geom.has_padding:  # nothing to materialise: Theorem 4 is the same bound
        assert fused_gap(chain) == rip_padded_gap(geom, "gather")
    assert simulate_fused(chain) == simulate_rip(geom, "dense", "gather", "row", "fast")


def test_chain_validation() -> None:
    g = make_geometry((8, 8), 4, 8)
    with pytest.raises(LayerError, match="reads"):
        make_chain([(CONV, g), (CONV, make_geometry((8, 8), 4, 4))])
    with pytest.raises(LayerError, match="residual"):
        make_chain([(CONV, g)], residual=True)
    with pytest.raises(LayerError, match="keeps channels"):
        make_chain([("MAX_POOL_2D", g)])
    with pytest.raises(LayerError, match="cannot be fused"):
        make_chain([("ADD", g)])


# --------------------------------------------------------------------------------------
# The sweep and rip-sweep's fused section
# --------------------------------------------------------------------------------------
def test_fused_sweep_is_safe_and_deterministic() -> None:
    one = run_fused_sweep(120, seed=3, jobs=1, progress=False)
    two = run_fused_sweep(120, seed=3, jobs=2, progress=False, chunk_size=16)
    assert [(r.chain, r.bound, r.truth) for r in one.records] == [
        (r.chain, r.bound, r.truth) for r in two.records
    ]
    s = one.summary
    assert s["gap"]["unsafe"] == 0 and s["rings"]["unsafe"] == 0
    assert s["gap"]["tight"] == 120 and s["gap_fold"]["unsafe"] == 0
    assert s["gap"]["tight"] + s["gap"]["loose"] == s["chains"] == 120
    assert sum(s["lengths"].values()) == 120 and set(s["lengths"]) <= {1, 2, 3, 4}
    assert 0 < s["residual"] < 120
    for r in one.records:  # the records are what the closed form and simulator say
        assert r.bound == fused_gap(r.chain) and r.truth == simulate_fused(r.chain)
        assert r.fold == fused_gap_fold(r.chain)


def test_rip_sweep_prints_the_fused_section(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--layers", "10", "--chains", "40", "--jobs", "1", "--no-progress", "--csv", "-"]
    assert sweep_main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["fused"]["chains"] == 40 and payload["fused"]["gap"]["unsafe"] == 0
    assert sweep_main(argv) == 0
    out = capsys.readouterr().out
    assert "fused chains (issue 12)" in out and "ring rows" in out
    assert sweep_main(["--layers", "10", "--chains", "0", "--jobs", "1", "--csv", "-",
                       "--no-progress", "--json"]) == 0  # fmt: skip
    assert "fused" not in json.loads(capsys.readouterr().out)
    with pytest.raises(LayerError, match="padding"):
        make_chain([(CONV, ConvGeometry(8, 8, 4, 4, 3, 3, pad_top=3))])


# --------------------------------------------------------------------------------------
# Real chains: every fusable sub-chain of the shared MCUNet-family models
# --------------------------------------------------------------------------------------


def _model_chains(graph) -> list[Chain]:
    """Every path of 2-4 consecutive chain ops whose intermediates have one reader (the
    next op), with the residual ADD when the next op adds the path's input to its output."""
    ops = graph.operators
    readers: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        for t in op.inputs:
            if t >= 0:
                readers.setdefault(t, []).append(i)

    def links(i: int) -> bool:
        a, b = ops[i], ops[i + 1]
        return b.kind in CHAIN_KINDS and readers.get(a.outputs[0]) == [i + 1]

    chains = []
    for i, op in enumerate(ops):
        if op.kind not in CHAIN_KINDS:
            continue
        j = i
        while j - i < 3 and j + 1 < len(ops) and links(j):
            j += 1
            pairs = [(ops[k].kind, conv_geometry(graph, ops[k])) for k in range(i, j + 1)]
            nxt = ops[j + 1] if j + 1 < len(ops) else None
            residual = (
                nxt is not None
                and nxt.kind == "ADD"
                and set(nxt.inputs) == {ops[i].inputs[0], ops[j].outputs[0]}
            )
            chains.append(make_chain(pairs))
            if residual:
                chains.append(make_chain(pairs, residual=True))
    return chains


@pytest.mark.parametrize("name", MCUNET)
def test_real_chains_are_tight(name: str) -> None:
    """Closed-form gap and rings equal the simulator's minimum on every real sub-chain."""
    graph = rewrite(read_model(shared_path("models", "mcunet", f"{name}.tflite")))
    chains = _model_chains(graph)
    assert len(chains) >= 20 and any(c.residual for c in chains)
    for chain in chains:
        assert fused_gap(chain) == fused_gap_fold(chain) == simulate_fused(chain)
        assert ring_rows(chain) == simulate_ring_rows(chain), chain.describe()
