"""Herringbone closed forms: Table 2, Corollary 1 and Theorem 11 against the simulator.

See docs/herringbone-theorem11.md for where Theorem 11 is loose (never unsafe)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis_strategies import layers, restricted_layers

from rip.allocator.theory.geometry import ConvGeometry, make_geometry
from rip.allocator.theory.herringbone import corollary1_gap, gm_eq1_gap, herringbone_gap
from rip.allocator.theory.simulate import simulate_herringbone
from rip.core.errors import LayerError


def table2(paper_tables):
    return paper_tables["table2_herringbone"]["rows"]


def test_table2_all_rows(paper_tables):
    """Table 2: Eq. 1 reproduces the G&M column and the simulator the Truth column exactly;
    Corollary 1 equals Truth on every row; Err. = G&M - Truth."""
    for c_in, c_out, k, hw, _x_star, gm, truth in table2(paper_tables):
        geom = make_geometry((hw, hw), c_in, c_out, (k, k))
        assert gm_eq1_gap(geom) == gm
        assert simulate_herringbone(geom) == truth
        if hw <= 12:
            assert simulate_herringbone(geom, mode="literal") == truth
        assert corollary1_gap(geom) == truth
        assert herringbone_gap(geom) == truth


def test_lemma9_shortfall_is_the_modular_remainder(paper_tables):
    """Lemma 9: when x* is not an integer and inside the grid, Eq. 1 falls short by
    (k-1) C_in mod (C_out - C_in)."""
    for c_in, c_out, k, hw, x_star, gm, truth in table2(paper_tables):
        if x_star != int(x_star) and int(x_star) <= hw - k:
            assert truth - gm == ((k - 1) * c_in) % (c_out - c_in)


@settings(max_examples=200, deadline=None)
@given(restricted_layers())
def test_corollary1_is_exact_and_theorem11_specializes_to_it(geom):
    truth = simulate_herringbone(geom)
    assert corollary1_gap(geom) == truth
    assert herringbone_gap(geom) == truth


@settings(max_examples=300, deadline=None)
@given(layers(max_extent=12, max_kernel=5))
def test_theorem11_is_never_unsafe(geom):
    assert herringbone_gap(geom) >= simulate_herringbone(geom)


def _all_input_read(geom: ConvGeometry) -> bool:
    def axis(n_p, n_out, k, s, d):
        read = np.zeros(n_p, dtype=bool)
        for o in range(n_out):
            read[[o * s + j * d for j in range(k)]] = True
        return read.all()

    return axis(geom.h_p, geom.h_out, geom.kh, geom.sh, geom.dh) and axis(
        geom.w_p, geom.w_out, geom.kw, geom.sw, geom.dw
    )


@settings(max_examples=300, deadline=None)
@given(layers(max_extent=12, max_kernel=5, max_dilation=1))
def test_theorem11_tight_without_dilation_or_unread_input(geom):
    """Where every stored input is read and dilation is 1, Theorem 11 is exact."""
    if _all_input_read(geom):
        assert herringbone_gap(geom) == simulate_herringbone(geom)


@pytest.mark.parametrize(
    ("geom", "formula", "truth"),
    [
        (ConvGeometry(1, 1, 1, 1, 1, 1, 1, 2, pad_right=1), 1, 0),
        (ConvGeometry(1, 2, 1, 2, 1, 2, 1, 1, 1, 2, pad_left=1, pad_right=1), 3, 2),
    ],
)
def test_documented_counterexamples(geom, formula, truth):
    """The two minimal counterexamples recorded in docs/herringbone-theorem11.md."""
    assert herringbone_gap(geom) == formula
    assert simulate_herringbone(geom, mode="literal") == truth


def test_single_row_output_uses_only_the_last_leg():
    """Sec. E.3: with n = 1 only the last major leg exists; the formula must not sum
    minor legs that do not exist."""
    for w in range(1, 12):
        geom = ConvGeometry(3, w + 2, 4, 9, 3, 3)
        assert geom.h_out == 1
        assert herringbone_gap(geom) == simulate_herringbone(geom)


@pytest.mark.parametrize("fn", [gm_eq1_gap, corollary1_gap])
@pytest.mark.parametrize(
    ("geom", "problem"),
    [
        (ConvGeometry(9, 9, 2, 4, 3, 3, 2, 2), "stride 1"),
        (ConvGeometry(9, 9, 2, 4, 3, 3, dh=2, dw=2), "dilation 1"),
        (ConvGeometry(9, 9, 2, 4, 3, 3, pad_top=1), "valid padding"),
        (ConvGeometry(9, 9, 2, 4, 2, 2), "odd square kernel"),
        (ConvGeometry(9, 8, 2, 4, 3, 3), "square input"),
    ],
)
def test_restricted_forms_refuse_outside_their_domain(fn, geom, problem):
    with pytest.raises(LayerError, match=problem):
        fn(geom)
