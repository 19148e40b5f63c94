"""Two cores (issue 27) for the other in-place kinds: depthwise channel in place and
row-streamed, elementwise and reversed nearest resizing (same base, no synchronisation at
all), fused chains (lag 1, the one-core gap and rings; lag 2 breaks the rings), the per-core
scratch, the sweep, and the shared MCUNet-family models."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import MCUNET, shared_path
from test_fused_theory import _model_chains, chain_ops

from rip.allocator.planning.requirements import conv_geometry, requirements
from rip.allocator.planning.scratch import depthwise_ring_rows, kernel_scratch_bytes
from rip.allocator.theory.fused import fused_gap, make_chain, ring_rows
from rip.allocator.theory.geometry import make_geometry
from rip.allocator.theory.simulate import simulate_depthwise_ring
from rip.allocator.theory.sweep_two_core import format_summary, run_two_core_sweep
from rip.allocator.theory.two_core import explore, safe_gap_bound, worst_case
from rip.allocator.theory.two_core_bounds import (
    TWO_CORE_PLANS,
    core_dims,
    fused_two_core_gap,
    fused_two_core_rings,
    two_core_rip_gap,
)
from rip.allocator.theory.two_core_fast import fast_fused, fast_rip_gap
from rip.allocator.theory.two_core_programs import (
    PIXEL_PAIRS,
    RipSchedule,
    default_split,
    depthwise_channel_program,
    depthwise_rows_program,
    elementwise_program,
    fused_program,
    group_split,
    pair_split,
    resize_program,
    shares,
)
from rip.core.errors import LayerError
from rip.core.operators import WINDOW_POOLS as POOLS
from rip.core.operators import Op
from rip.core.shapes import nearest_index_map
from rip.core.terms import InPlaceKind
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


def _depthwise_layers():
    for h, w, k, s, pad, c in itertools.product(
        [1, 3, 5], [2, 4], [1, 3], [1, 2], ["same", "valid"], [2, 3, 5]
    ):
        try:
            g = make_geometry((h, w), c, c, (k, k), (s, s), (1, 1), pad)
        except LayerError:
            continue
        if g.h_out * g.w_out <= h * w:
            yield g


DEPTHWISE = list(_depthwise_layers())


# --------------------------------------------------------------------------------------
# Same-base kinds: no synchronisation, gap 0
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("group", [1, 2])
def test_depthwise_channel_in_place_needs_no_synchronisation(group):
    """Every interleaving of the two unsynchronised cores at gap 0 (exhaustive search) is
    safe: a core stores over channels only it reads."""
    for g in DEPTHWISE:
        e = explore(depthwise_channel_program(g, group=group), None)
        assert e.safe_at(0) and e.deadlocks == 0, g


@pytest.mark.parametrize("group", [1, 4])
def test_row_streamed_depthwise_needs_no_synchronisation_and_its_own_ring(group):
    """Each core's ring holds its own channels of the rows the one-core schedule saves:
    with the one-core ring rows no interleaving corrupts; one row fewer does."""
    for g in DEPTHWISE:
        ring = simulate_depthwise_ring(g, group=group)
        e = explore(depthwise_rows_program(g, ring, group=group), None)
        assert e.safe_at(0), g
        if ring:
            assert not worst_case(depthwise_rows_program(g, ring - 1, group=group), 0, None).safe


def test_elementwise_and_reversed_resize_need_no_synchronisation():
    for n in (1, 2, 7, 16):
        for block in (1, 3, 4):
            assert explore(elementwise_program(n, block), None).safe_at(0)
    for (h, w), (ho, wo), c in itertools.product([(1, 1), (2, 3), (3, 2)], [(2, 3), (4, 6),
                                                  (5, 5)], [1, 2, 3]):  # fmt: skip
        if ho < h or wo < w:
            continue
        ys, xs = nearest_index_map(h, ho, False, False), nearest_index_map(w, wo, False, False)
        assert explore(resize_program(1, (h, w), (ho, wo), c, ys, xs), None).safe_at(0)


def test_the_exhaustive_search_sees_cross_core_conflicts():
    """Not vacuous: the same elementwise halves one byte apart (output one below the input)
    let core B store over the input byte core A reads last, in some interleaving."""
    e = explore(elementwise_program(8, 2), None)
    assert 1 in e.unsafe_gaps(1)
    assert not worst_case(elementwise_program(8, 2), 1, None).safe


# --------------------------------------------------------------------------------------
# Fused chains
# --------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(chain_ops(max_extent=5, max_channels=4, max_ops=3))
def test_fused_chain_at_lag_one_keeps_the_one_core_gap_and_rings(chain):
    """Every interleaving at L = 1: the minimum gap is `fused_gap`, no ring read goes
    wrong, no deadlock; the pixel-level simulator agrees at L = 1 and 2."""
    prog = fused_program(chain)
    e = explore(prog, 1)
    assert e.deadlocks == 0 and e.ring_violations() == 0
    assert e.min_gap() == fused_gap(chain) == fused_two_core_gap(chain)
    assert worst_case(prog, fused_gap(chain), 1).safe
    for lag in (1, 2):
        fast = fast_fused(chain, lag)
        ex = explore(prog, lag)
        assert fast.gap == ex.min_gap()
        assert fast.rings_ok == (ex.ring_violations() == 0)
    assert fused_two_core_rings(chain) == ring_rows(chain)


@settings(max_examples=60, deadline=None)
@given(chain_ops(max_extent=5, max_channels=6, max_ops=3), st.data())
def test_fused_chain_at_lag_one_keeps_the_one_core_gap_at_any_split(chain, data):
    """The kernel's splits (pairs for a convolution, groups of four for a depthwise stage,
    a stage whole on core A where the kernel cannot split it) or any other: at L = 1 the
    gap is still `fused_gap` and the rings hold, every interleaving searched, and the
    pixel-level simulator the replay runs agrees with the search at L = 1 and 2."""
    kernel = [
        pair_split(op.geom.c_out) if op.kind == Op.CONV_2D else group_split(op.geom.c_out)
        for op in chain.ops
    ]
    drawn = [data.draw(st.integers(0, op.geom.c_out)) for op in chain.ops]
    for splits in (kernel, drawn):
        prog = fused_program(chain, splits)
        e = explore(prog, 1)
        assert e.deadlocks == 0 and e.ring_violations() == 0
        assert e.min_gap() == fused_gap(chain)
        for lag in (1, 2):
            fast = fast_fused(chain, lag, splits)
            ex = explore(prog, lag)
            assert fast.gap == ex.min_gap()
            assert fast.rings_ok == (ex.ring_violations() == 0)


@settings(max_examples=25, deadline=None)
@given(chain_ops(max_extent=4, max_channels=3, max_ops=3))
def test_fused_worst_case_by_construction_is_every_interleaving(chain):
    """At L = 1 and 2 and every gap, the leader orders go wrong (input or ring) exactly
    when some interleaving does."""
    prog = fused_program(chain)
    hi = safe_gap_bound(prog)
    for lag in (1, 2):
        e = explore(prog, lag)
        bad = e.unsafe_gaps(hi)
        for gap in range(hi + 1):
            assert worst_case(prog, gap, lag).safe == (gap not in bad and not e.ring_violations())


def test_fused_chain_at_lag_two_reads_rows_the_other_core_has_not_stored():
    """The must-show for chains: one unit more than L = 1 and a ring row is read before the
    other core stored its half (every interleaving searched; the leader order executes
    it), at any gap."""
    g1 = make_geometry((6, 5), 4, 8, (1, 1))
    g2 = make_geometry((6, 5), 8, 8, (3, 3), padding="same")
    g3 = make_geometry((6, 5), 8, 4, (1, 1))
    for chain in (
        make_chain([("CONV_2D", g1), ("CONV_2D", g2.with_channels(8, 4))]),
        make_chain([("CONV_2D", g1), ("DEPTHWISE_CONV_2D", g2), ("CONV_2D", g3)], True),
    ):
        prog = fused_program(chain)
        assert explore(prog, 1).ring_violations() == 0
        assert explore(prog, 2).ring_violations() > 0
        assert not fast_fused(chain, 2).rings_ok
        assert worst_case(prog, 10 * chain.n_out, 2).corrupted > 0
        with pytest.raises(LayerError):
            fused_two_core_gap(chain, 2)


def test_the_residual_store_needs_its_own_unit():
    """Without the split-off store, the other core may still read its channels of X's row r
    for the ADD while this core stores Y's row r: the gap grows to a whole output row."""
    g = make_geometry((5, 4), 4, 4, (3, 3), padding="same")
    chain = make_chain([("DEPTHWISE_CONV_2D", g), ("CONV_2D", g.with_channels(4, 4))], True)
    _, w, c = chain.output_hwc
    assert explore(fused_program(chain), 1).min_gap() == fused_gap(chain) < w * c
    assert explore(fused_program(chain, split_store=False), 1).min_gap() == max(
        fused_gap(chain), w * c
    )


# --------------------------------------------------------------------------------------
# Scratch per core
# --------------------------------------------------------------------------------------
def test_per_core_scratch():
    """Each core's scratch is the one-core formula on its share: a CONV_2D core gathers
    the same receptive fields as one core (twice the scratch in all); a row-streamed
    depthwise core's ring holds the one-core ring rows over its channels (the rings add
    up to the one-core ring); a pool core stages its own channels."""
    x, f, y = (1, 8, 8, 16), (32, 3, 3, 16), (1, 8, 8, 32)
    one = kernel_scratch_bytes("CONV_2D", x, f, y)
    assert all(kernel_scratch_bytes("CONV_2D", *core_dims("CONV_2D", x, f, y, c)) == one
               for c in (0, 1))  # fmt: skip
    g = make_geometry((8, 8), 6, 6, (3, 3), padding="same")
    dims = ((1, 8, 8, 6), (1, 3, 3, 6), (1, 8, 8, 6))
    kw = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1))
    rows = depthwise_ring_rows(8, 8, 8, 8, 3, 1, 1, 1, (3, 1, 1, 1))
    per_core = [
        kernel_scratch_bytes("DEPTHWISE_CONV_2D", *core_dims("DEPTHWISE_CONV_2D", *dims, c), **kw)
        for c in (0, 1)
    ]
    assert per_core == [max(64, rows * 8 * (hi - lo)) for lo, hi in shares(6, None)]
    assert rows == simulate_depthwise_ring(g, channels=3)  # the same ring on 3 channels a core
    pool = [kernel_scratch_bytes("MAX_POOL_2D", *core_dims("MAX_POOL_2D", *dims, c))
            for c in (0, 1)]  # fmt: skip
    assert sum(pool) == kernel_scratch_bytes("MAX_POOL_2D", *dims)


def test_every_in_place_kind_has_a_two_core_plan():
    assert set(TWO_CORE_PLANS) == set(InPlaceKind)
    assert {k for k, p in TWO_CORE_PLANS.items() if p.min_lag is None} == {
        InPlaceKind.CHANNEL, InPlaceKind.ELEMENTWISE, InPlaceKind.REVERSE
    }  # fmt: skip


# --------------------------------------------------------------------------------------
# The sweep and the real models
# --------------------------------------------------------------------------------------
def test_sweep_finds_no_unsafe_bound_and_is_deterministic():
    one = run_two_core_sweep(30, 20, seed=3, jobs=1, progress=False)
    two = run_two_core_sweep(30, 20, seed=3, jobs=2, progress=False)
    assert one.summary == two.summary
    layers = one.summary["layers"]["results"]
    for lags in layers.values():
        for entry in lags.values():
            assert entry["exact"]["unsafe"] == entry["exact"]["loose"] == 0
            assert entry["simple"]["unsafe"] == 0
    assert layers["conv-pair"]["1"]["lag_matters"] > 0
    fused = one.summary["fused"]
    assert fused["gap_l1"]["tight"] == fused["rings_ok_l1"] == 20
    assert fused["broken_l2"] > 0
    assert "fused chains 20" in format_summary(one.summary)


@pytest.mark.parametrize("name", MCUNET)
def test_real_layers_and_chains(name):
    """Every CONV_2D and pool that may run in place in the shared models: the closed form
    equals the simulator at lags 0-2 (the pixel pair for CONV_2D), and lag 0 never needs
    more than the gap the planner plans today; every fusable sub-chain keeps its one-core
    gap and rings at L = 1."""
    graph = rewrite(read_model(shared_path("models", "mcunet", f"{name}.tflite")))
    seen = 0
    for c in requirements(graph).candidates():
        op = graph.operators[c.op]
        if op.kind != Op.CONV_2D and op.kind not in POOLS:
            continue
        geom = conv_geometry(graph, op)
        sched = RipSchedule(per_channel=True) if op.kind in POOLS else PIXEL_PAIRS
        for lag in (0, 1, 2):
            gap = two_core_rip_gap(geom, lag, sched)
            assert gap == fast_rip_gap(geom, lag, sched)
            assert lag or gap <= c.gap
        seen += 1
    assert seen >= 20
    for chain in _model_chains(graph):
        fast = fast_fused(chain, 1)
        assert fast.gap == fused_gap(chain) and fast.rings_ok, chain.describe()


def test_default_split_is_what_the_programs_use():
    assert shares(6, None) == ((0, default_split(6)), (default_split(6), 6))
