"""The corruption simulator: literal scalar-level mode against the fast exact mode."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_strategies import layers

from rip.allocator.theory.bounds import check_dense
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import herringbone_order, simulate_herringbone, simulate_rip
from rip.core import kernel_variants as kv
from rip.core.errors import LayerError

SMALL = layers(max_extent=6, max_channels=4, max_kernel=3, max_stride=3, max_dilation=2, max_pad=2)


@settings(max_examples=150, deadline=None)
@given(
    SMALL,
    st.sampled_from(("padded", "dense")),
    st.sampled_from(("gather", "workspace")),
    st.sampled_from(("row", "col")),
)
def test_literal_and_fast_modes_agree_rip(geom, layout, taps, order):
    """The literal mode enumerates every tap and writes scalar by scalar, in column order
    over a column-major layout rather than by transposing; the fast mode must agree."""
    if layout == "dense":
        try:
            check_dense(geom)
        except LayerError:
            return
    fast = simulate_rip(geom, layout, taps, order, mode="fast")
    assert simulate_rip(geom, layout, taps, order, mode="literal") == fast


@settings(max_examples=100, deadline=None)
@given(SMALL)
def test_literal_and_fast_modes_agree_herringbone(geom):
    assert simulate_herringbone(geom, mode="literal") == simulate_herringbone(geom, mode="fast")


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9))
def test_herringbone_order_visits_every_pixel_once(h, w):
    """Lemma 10: the leg sequence of Eq. 25 covers the M x n grid exactly once."""
    order = herringbone_order(h, w)
    assert len(order) == h * w
    assert set(order) == {(r, c) for r in range(h) for c in range(w)}


def test_herringbone_order_matches_fig3b():
    """Fig. 3(b): a 5 x 3 output walks col(5), row(2), col(4), row(1), col(3)."""
    col = [(r, 0) for r in range(5)]
    row = [(0, 1), (0, 2)]
    col2 = [(r, 1) for r in range(1, 5)]
    row2 = [(1, 2)]
    col3 = [(r, 2) for r in range(2, 5)]
    assert herringbone_order(5, 3) == col + row + col2 + row2 + col3


def test_one_gap_less_corrupts():
    """The simulator returns a minimum: one scalar less is caught as a corruption."""
    geom = ConvGeometry(6, 6, 3, 8, 3, 3, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1)
    gap = simulate_rip(geom, "padded", "gather", mode="literal")
    assert gap > 0
    from rip.allocator.theory import simulate

    sy, sx = simulate._stored_axes(geom, "padded")
    trav = simulate.raster(geom.h_out, geom.w_out, "row")
    counts, taps_of = simulate._literal_refcounts(geom, sy, sx, trav, lambda y, x: y * sx.n + x)

    def out_addr(r, c):
        return (r * geom.w_out + c) * geom.c_out

    run = simulate._literal_rip_safe
    assert run(geom, counts, taps_of, out_addr, trav, gap, "gather")
    assert not run(geom, counts, taps_of, out_addr, trav, gap - 1, "gather")


@settings(max_examples=150, deadline=None)
@given(
    SMALL,
    st.sampled_from(["dense", "padded"]),
    st.sampled_from(["row", "col"]),
    st.sampled_from([2, 3]),
)
def test_pixel_pair_tiles_agree_and_never_need_more_gap(geom, layout, order, tile):
    """rip_conv2d_fast_s8's traversal (two pixels gathered, then both written; on DSP cores
    a pointwise rip_conv2d_fast_rq_s8 takes three, the last tile shorter): the literal and
    fast simulators agree on its gap, and it never exceeds the per-pixel gather gap the
    planner uses (Theorem 13), so the tiled kernel runs at every planned gap."""
    if layout == "dense":
        try:
            check_dense(geom)
        except LayerError:
            return
    tiled = simulate_rip(geom, layout, "gather", order, mode="literal", tile=tile)
    assert tiled == simulate_rip(geom, layout, "gather", order, mode="fast", tile=tile)
    assert tiled <= simulate_rip(geom, layout, "gather", order, mode="fast")


@settings(max_examples=150, deadline=None)
@given(
    SMALL,
    st.sampled_from(["dense", "padded"]),
    st.sampled_from(["row", "col"]),
    st.integers(3, 9),
)
def test_flash_sweep_tiles_agree_and_never_need_more_gap(geom, layout, order, per_sweep):
    """A pointwise rip_conv2d_fast_rq_s8 whose filter outgrows the flash cache takes as many
    pixels a sweep as its scratch holds, in balanced tiles of different sizes
    (kernel_variants.conv_sweep_tiles): literal and fast simulators agree on that order's
    gap, and it never exceeds the per-pixel gather gap the planner uses."""
    if layout == "dense":
        try:
            check_dense(geom)
        except LayerError:
            return
    tiles = kv.conv_sweep_tiles(geom.h_out * geom.w_out, per_sweep)
    assert sum(tiles) == geom.h_out * geom.w_out and max(tiles) <= max(per_sweep, 3)
    assert 1 not in tiles[:-1]
    tiled = simulate_rip(geom, layout, "gather", order, mode="literal", tile=tiles)
    assert tiled == simulate_rip(geom, layout, "gather", order, mode="fast", tile=tiles)
    assert tiled <= simulate_rip(geom, layout, "gather", order, mode="fast")


def test_flash_sweep_tiles_by_hand():
    """rip_rq_run's sweeps, worked out by hand: the fewest sweeps, balanced, no lone pixel
    but for a one-pixel map; triples then the rest where a sweep takes three."""
    assert kv.conv_sweep_tiles(25, 5) == (5, 5, 5, 5, 5)
    assert kv.conv_sweep_tiles(36, 5) == (5, 5, 5, 5, 4, 4, 4, 4)
    assert kv.conv_sweep_tiles(6, 5) == (3, 3)
    assert kv.conv_sweep_tiles(4, 4) == (4,)
    assert kv.conv_sweep_tiles(1, 5) == (1,)
    assert kv.conv_sweep_tiles(16, 3) == (3, 3, 3, 3, 3, 1)
    assert kv.conv_sweep_tiles(8, 3) == (3, 3, 2)
