"""RiP closed forms (Theorems 4 and 13, column order, best order) against the simulator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_strategies import layers

from rip.allocator.theory.bounds import (
    check_dense,
    pool_bound,
    rip_bound,
    rip_dense_gap,
    rip_padded_gap,
    upsample_bound,
)
from rip.allocator.theory.geometry import ConvGeometry, make_geometry
from rip.allocator.theory.simulate import simulate_rip, simulate_upsample
from rip.core.errors import LayerError

TAPS = ("gather", "workspace")


def dense_ok(geom: ConvGeometry) -> bool:
    try:
        check_dense(geom)
    except LayerError:
        return False
    return True


# --- the paper's worked figures ------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "hw", "c_in", "c_out"),
    [("vgg16_conv1_2", 224, 64, 64), ("inception_v3_stem", 147, 32, 64)],
)
def test_appendix_i_workspaces(paper_tables, name, hw, c_in, c_out):
    """Appendix I: dense layout, receptive field gathered first, same padding, 3x3."""
    want = paper_tables["appendix_i_examples"][name]["workspace"]
    geom = make_geometry((hw, hw), c_in, c_out, (3, 3), padding="same")
    bound = rip_bound(geom, "dense", "gather", "row")
    assert bound.workspace == want
    assert simulate_rip(geom, "dense", "gather", "row") == bound.gap


def test_appendix_f4_loose_example(paper_tables):
    """Sec. F.4: the single real column is never read, so the true gap is 0; Theorem 13 as
    published keeps the full headroom sigma = C_out = 2, our first-pixel term does not."""
    ex = paper_tables["appendix_f4_loose_example"]
    ph, pw = ex["padding_hw"]
    geom = make_geometry(
        tuple(ex["input_hw"]),
        ex["c_in"],
        ex["c_out"],
        tuple(ex["kernel_hw"]),
        tuple(ex["stride"]),
        tuple(ex["dilation"]),
        (ph, ph, pw, pw),
    )
    assert rip_dense_gap(geom, "workspace", published=True) == ex["theorem13_gap"]
    assert rip_dense_gap(geom, "workspace") == ex["true_gap"]
    for mode in ("fast", "literal"):
        assert simulate_rip(geom, "dense", "workspace", mode=mode) == ex["true_gap"]


def test_channel_preserving_layer_needs_only_headroom():
    """Theorem 4 corollary: alpha <= 0 and beta <= 0 give gap = sigma."""
    geom = ConvGeometry(12, 12, 16, 16, 3, 3)
    assert rip_padded_gap(geom, "gather") == 0
    assert rip_padded_gap(geom, "workspace") == 16


# --- property tests: closed form vs simulator ----------------------------------------
@settings(max_examples=300, deadline=None)
@given(layers(), st.sampled_from(TAPS), st.sampled_from(("row", "col")))
def test_padded_bound_is_exact(geom, taps, order):
    """Theorem 4 is tight in both tap orders and both traversal orders."""
    assert rip_bound(geom, "padded", taps, order).gap == simulate_rip(geom, "padded", taps, order)


@settings(max_examples=300, deadline=None)
@given(layers(), st.sampled_from(("row", "col")))
def test_dense_gather_bound_is_exact(geom, order):
    """Theorem 13 with the receptive field gathered first is tight (Sec. 5.2)."""
    if dense_ok(geom):
        got = rip_bound(geom, "dense", "gather", order).gap
        assert got == simulate_rip(geom, "dense", "gather", order)


@settings(max_examples=300, deadline=None)
@given(layers(), st.sampled_from(("row", "col")))
def test_dense_workspace_bound_is_exact(geom, order):
    """Theorem 13 with workspace taps and the exact first-pixel term is tight."""
    if dense_ok(geom):
        got = rip_bound(geom, "dense", "workspace", order).gap
        assert got == simulate_rip(geom, "dense", "workspace", order)


@settings(max_examples=300, deadline=None)
@given(layers())
def test_published_theorem13_is_safe_within_sigma(geom):
    """As published (sigma for the first pixel) Theorem 13 is never unsafe and overshoots by
    at most sigma (Sec. F.4: only the first pixel's headroom can be loose)."""
    if dense_ok(geom):
        bound = rip_dense_gap(geom, "workspace", published=True)
        truth = simulate_rip(geom, "dense", "workspace")
        assert truth <= bound <= truth + geom.c_out


@settings(max_examples=200, deadline=None)
@given(layers(), st.sampled_from(("padded", "dense")), st.sampled_from(TAPS))
def test_best_order_picks_smaller_workspace(geom, layout, taps):
    if layout == "dense" and not dense_ok(geom):
        return
    row = rip_bound(geom, layout, taps, "row")
    col = rip_bound(geom, layout, taps, "col")
    best = rip_bound(geom, layout, taps, "best")
    assert best.workspace == min(row.workspace, col.workspace)
    assert best.order == ("col" if col.workspace < row.workspace else "row")


@settings(max_examples=200, deadline=None)
@given(layers(), st.sampled_from(("padded", "dense")))
def test_dense_workspace_never_exceeds_padded(geom, layout):
    """Eq. 42: not materializing padding never costs workspace (gather-first)."""
    if dense_ok(geom):
        dense = rip_bound(geom, "dense", "gather", "row").workspace
        assert dense <= rip_bound(geom, "padded", "gather", "row").workspace


def test_inception_7x1_branch_prefers_column_order():
    """Sec. 5.3: on a maximally anisotropic layer column order can win."""
    geom = make_geometry((17, 17), 128, 192, (7, 1), padding="same")
    row = rip_bound(geom, "padded", "workspace", "row")
    col = rip_bound(geom, "padded", "workspace", "col")
    assert rip_bound(geom, "padded", "workspace", "best").workspace == min(
        row.workspace, col.workspace
    )
    assert row.workspace != col.workspace


# --- other operator classes ----------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(1, 4))
def test_theorem14_reverse_upsampling_needs_no_gap(h, w, c, scale):
    """Theorem 14: reverse traversal, zero gap, workspace N_out, for S = 1..4."""
    assert simulate_upsample(h, w, c, scale, reverse=True) == 0
    assert upsample_bound(h, w, c, scale).workspace == h * scale * w * scale * c


@pytest.mark.parametrize("scale", [2, 3, 4])
def test_forward_upsampling_would_corrupt(scale):
    """Sec. I.1: the forward traversal overwrites input (0, 0) that later outputs need."""
    assert simulate_upsample(3, 3, 2, scale, reverse=False) > 0


@pytest.mark.parametrize(
    ("k", "s", "padding"), [(2, 2, "valid"), (3, 2, "valid"), (3, 1, "valid"), (3, 2, "same")]
)
def test_pooling_fits_in_its_input_when_padded_layout(k, s, padding):
    """Sec. I.1: pooling is the alpha <= 0, beta <= 0 case, W* = N_in (padded layout)."""
    geom = make_geometry((16, 16), 8, 8, (k, k), (s, s), padding=padding)
    bound = pool_bound(geom, "padded")
    assert bound.workspace == geom.n_in_padded
    assert bound.gap == simulate_rip(geom, "padded", "gather")


def test_pooling_dense_same_padding_has_border_debt():
    """Under the dense layout a same-padded pool cannot write output (0,0) over input (0,0):
    it is still read by outputs (0,1), (1,0), (1,1). Theorem 13 says so, and so does the
    simulator, where the padded-layout identity W* = N_in would under-allocate."""
    geom = make_geometry((16, 16), 8, 8, (3, 3), (1, 1), padding="same")
    bound = pool_bound(geom, "dense")
    assert bound.gap > 0
    assert bound.gap == simulate_rip(geom, "dense", "gather")


# --- input validation ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        (dict(h_in=0, w_in=4, c_in=1, c_out=1), "h_in"),
        (dict(h_in=4, w_in=4, c_in=1, c_out=-1), "c_out"),
        (dict(h_in=4, w_in=4, c_in=1, c_out=1, kh=6), "kernel"),
        (dict(h_in=4, w_in=4, c_in=1, c_out=1, pad_left=-1), "pad_left"),
    ],
)
def test_bad_geometry_names_the_field(kwargs, field):
    with pytest.raises(LayerError, match=field):
        ConvGeometry(**kwargs)


def test_dense_rejects_padding_as_wide_as_the_kernel():
    geom = ConvGeometry(5, 5, 1, 1, 3, 3, pad_top=3)
    with pytest.raises(LayerError, match="padding"):
        rip_dense_gap(geom)
    assert rip_padded_gap(geom) >= 0  # the padded layout stores the padding: still defined
