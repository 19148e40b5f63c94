"""The synthetic validation sweep of Sec. 5.2 and Appendix G.2.

Layers come from the twenty generators of Table 5, in the table's shares. Each layer runs
under the five execution configurations of G.2 (RiP padded and dense, taps gathered first or
read from the workspace, and generalized herringbone with workspace taps); every closed form
is compared with the corruption simulator of G.1, which never evaluates a closed form, and
receives one verdict: unsafe (bound < truth), tight (=) or loose (>). On layers inside the
restricted domain of [9], G&M's Eq. 1 and Corollary 1 are checked against the same
herringbone truth.

Everything is deterministic in ``seed``: layer i is drawn from ``default_rng([seed, i])``, so
neither the worker count nor the chunking changes a single layer.
"""

from __future__ import annotations

import csv
import functools
import itertools
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from multiprocessing import Pool
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
from tqdm import tqdm

from rip.allocator.theory.bounds import check_dense, rip_dense_gap, rip_padded_gap
from rip.allocator.theory.geometry import ConvGeometry, make_geometry
from rip.allocator.theory.herringbone import corollary1_gap, gm_eq1_gap, herringbone_gap
from rip.allocator.theory.simulate import simulate_herringbone, simulate_rip
from rip.core.errors import LayerError, RipError
from rip.core.shapes import dilated, same_padding

DEFAULT_MAX_EXTENT = 128
# The largest kernel any generator draws is 7, and the restricted generators need a square
# input at least that wide; below 8 some generators could never produce a layer.
MIN_MAX_EXTENT = 8
MAX_CHANNELS = 64
_MAX_DRAWS = 1000

Generator = Callable[[np.random.Generator, int], ConvGeometry]


class _Redraw(Exception):
    """A draw that missed its generator's defining property; the generator draws again."""


# --------------------------------------------------------------------------------------
# Drawing helpers
# --------------------------------------------------------------------------------------
def _int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """Uniform integer in [lo, hi]."""
    if lo > hi:
        raise _Redraw
    return int(rng.integers(lo, hi + 1))


def _pick(rng: np.random.Generator, options: Sequence[int]) -> int:
    return int(options[int(rng.integers(len(options)))])


def _extent(rng: np.random.Generator, lo: int, hi: int) -> int:
    """Spatial extent in [lo, hi], log-uniform: every downsampling stage halves the feature
    map, so real layers spread evenly over octaves rather than over pixels."""
    if lo > hi:
        raise _Redraw
    return min(hi, int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))


def _channels(rng: np.random.Generator, hi: int = MAX_CHANNELS) -> int:
    return _int(rng, 1, hi)


def _pad_below(rng: np.random.Generator, k_eff: int) -> int:
    """A padding the dense layout admits (Theorem 13 needs p < k_eff), zero half the time
    because most real layers pad nothing on a given side."""
    return 0 if rng.random() < 0.5 else _int(rng, 0, k_eff - 1)


def _input_for_output(rng: np.random.Generator, n_out: int, k_eff: int, s: int, pad: int) -> int:
    """An input extent giving exactly ``n_out`` outputs on one axis: the smallest one, plus
    up to s - 1 trailing pixels no stride reaches."""
    n_in = (n_out - 1) * s + k_eff - pad + _int(rng, 0, s - 1)
    if n_in < 1:
        raise _Redraw
    return n_in


def _tf_same(
    rng: np.random.Generator,
    h: int,
    w: int,
    kh: int,
    kw: int,
    s: tuple[int, int],
    d: tuple[int, int],
) -> tuple[int, int, int, int]:
    """TensorFlow SAME padding half the time, VALID otherwise."""
    if rng.random() < 0.5:
        return (0, 0, 0, 0)
    return (*same_padding(h, kh, s[0], d[0]), *same_padding(w, kw, s[1], d[1]))


def _geom(
    h: int,
    w: int,
    c_in: int,
    c_out: int,
    k: tuple[int, int],
    s: tuple[int, int] = (1, 1),
    d: tuple[int, int] = (1, 1),
    pads: tuple[int, ...] = (0, 0, 0, 0),  # T, B, L, R
) -> ConvGeometry:
    return make_geometry((h, w), c_in, c_out, k, s, d, pads)


def in_restricted_domain(geom: ConvGeometry) -> bool:
    """The parameter range of [9] (Sec. 3): valid padding, unit stride and dilation, odd
    square kernel, square input. Eq. 1 and Corollary 1 are defined only here."""
    return (
        not geom.has_padding
        and (geom.sh, geom.sw, geom.dh, geom.dw) == (1, 1, 1, 1)
        and geom.kh == geom.kw
        and geom.kh % 2 == 1
        and geom.h_in == geom.w_in
    )


def first_real_taps(n_in: int, n_out: int, k: int, s: int, d: int, pad: int) -> list[int]:
    """Per output index on one axis, the lowest real input coordinate it reads (outputs
    that read only padding are left out)."""
    firsts = []
    for o in range(n_out):
        real = [o * s + j * d - pad for j in range(k) if 0 <= o * s + j * d - pad < n_in]
        if real:
            firsts.append(min(real))
    return firsts


def _non_monotone(firsts: Sequence[int]) -> bool:
    return any(b < a for a, b in itertools.pairwise(firsts))


def _restricted(
    rng: np.random.Generator, max_extent: int, c_in: int, c_out: int, k: int
) -> ConvGeometry:
    n = _extent(rng, k, max_extent)
    return _geom(n, n, c_in, c_out, (k, k))


def _redrawing(fn: Callable[[np.random.Generator, int], ConvGeometry]) -> Generator:
    """Draw until the geometry is valid (LayerError) and has the generator's property
    (_Redraw). Redraws continue the same stream, so they stay deterministic."""

    @functools.wraps(fn)
    def draw(rng: np.random.Generator, max_extent: int = DEFAULT_MAX_EXTENT) -> ConvGeometry:
        for _ in range(_MAX_DRAWS):
            try:
                geom = fn(rng, max_extent)
            except (LayerError, _Redraw):
                continue
            if max(geom.h_in, geom.w_in) <= max_extent:
                return geom
        raise RipError(
            f"max-extent: generator {fn.__name__} found no valid layer in {_MAX_DRAWS} draws "
            f"with input extent up to {max_extent}"
        )

    return draw


# --------------------------------------------------------------------------------------
# The twenty generators of Table 5
# --------------------------------------------------------------------------------------
# Tier 1: the geometry shipping models are built from.
@_redrawing
def plain_convolution(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Valid padding, unit stride and dilation, square k in [1, 7]."""
    k = _int(rng, 1, 7)
    h, w = _extent(rng, k, max_extent), _extent(rng, k, max_extent)
    return _geom(h, w, _channels(rng), _channels(rng), (k, k))


@_redrawing
def same_padding_conv(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Odd square k in {3, 5, 7}, p = floor(k/2) on every side, unit stride: output = input.
    (k = 1 is left to plain convolution, where p = 0.)"""
    k = _pick(rng, (3, 5, 7))
    p = k // 2
    h, w = _extent(rng, 1, max_extent), _extent(rng, 1, max_extent)
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), pads=(p, p, p, p))


@_redrawing
def strided_downsampling(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Equal stride 2 (mostly), 3 or 4; k from 1x1 shortcuts to 7x7 stems, including
    patchify k = s; SAME or VALID padding. Both axes shrink."""
    s = _pick(rng, (2, 2, 2, 2, 3, 4))
    k = _pick(rng, (1, 2, 3, 3, 3, 4, 5, 7))
    h, w = _extent(rng, max(k, 2), max_extent), _extent(rng, max(k, 2), max_extent)
    pads = _tf_same(rng, h, w, k, k, (s, s), (1, 1))
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), (s, s), pads=pads)


@_redrawing
def inverted_bottleneck_expansion(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """MobileNetV2's 1x1 expansion: C_out = t C_in with t in {2, 3, 4, 6}."""
    c_in, t = _int(rng, 1, 32), _pick(rng, (2, 3, 4, 6))
    h, w = _extent(rng, 1, max_extent), _extent(rng, 1, max_extent)
    return _geom(h, w, c_in, t * c_in, (1, 1))


@_redrawing
def projection(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """1x1 projection, C_out <= C_in."""
    c_in = _channels(rng)
    h, w = _extent(rng, 1, max_extent), _extent(rng, 1, max_extent)
    return _geom(h, w, c_in, _int(rng, 1, c_in), (1, 1))


# Tier 2: small-grid and near-degenerate geometry.
@_redrawing
def collapsed_minor_axis(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """n = min(H_out, W_out) in {1, 2, 3}: the minor axis is sized to give exactly n
    outputs, the other is a full feature map. Square kernel and stride, either axis minor."""
    n, k, s = _int(rng, 1, 3), _int(rng, 1, 7), _pick(rng, (1, 1, 2))
    pt, pb, pl, pr = (_pad_below(rng, k) for _ in range(4))
    minor = _input_for_output(rng, n, k, s, pt + pb)
    major = _extent(rng, max(1, k - pl - pr), max_extent)
    geom = _geom(
        minor, major, _channels(rng), _channels(rng), (k, k), (s, s), pads=(pt, pb, pl, pr)
    )
    if min(geom.h_out, geom.w_out) != n:  # the major axis came out shorter still
        raise _Redraw
    return geom.transposed() if rng.random() < 0.5 else geom


@_redrawing
def small_herringbone_grid(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Restricted domain with an n x n output, n <= 6: where the herringbone leg sequence
    degenerates (Sec. E.3) and Eq. 1's critical leg leaves the grid (Limitation 2)."""
    k, n = _pick(rng, (1, 3, 5, 7)), _int(rng, 1, 6)
    return _geom(n + k - 1, n + k - 1, _channels(rng), _channels(rng), (k, k))


def _window(
    rng: np.random.Generator, kh: int, kw: int
) -> tuple[int, int, int, int, int, int, tuple[int, int, int, int]]:
    """Stride 1-3, dilation 1-2 on a non-trivial kernel axis, and padding below the dilated
    kernel on every side: (sh, sw, dh, dw, kh_eff, kw_eff, pads)."""
    sh, sw = _int(rng, 1, 3), _int(rng, 1, 3)
    dh = _int(rng, 1, 2) if kh > 1 else 1
    dw = _int(rng, 1, 2) if kw > 1 else 1
    kh_eff, kw_eff = dilated(kh, dh), dilated(kw, dw)
    pads = (
        _pad_below(rng, kh_eff),
        _pad_below(rng, kh_eff),
        _pad_below(rng, kw_eff),
        _pad_below(rng, kw_eff),
    )
    return sh, sw, dh, dw, kh_eff, kw_eff, pads


@_redrawing
def small_output_grid(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """H_out, W_out <= 8 under arbitrary kernel, stride, dilation and padding."""
    kh, kw = _int(rng, 1, 5), _int(rng, 1, 5)
    sh, sw, dh, dw, kh_eff, kw_eff, pads = _window(rng, kh, kw)
    h = _input_for_output(rng, _int(rng, 1, 8), kh_eff, sh, pads[0] + pads[1])
    w = _input_for_output(rng, _int(rng, 1, 8), kw_eff, sw, pads[2] + pads[3])
    return _geom(h, w, _channels(rng), _channels(rng), (kh, kw), (sh, sw), (dh, dw), pads)


@_redrawing
def thin_axis(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Exactly one output axis of 1 (the other at least 2), arbitrary other parameters:
    the single-row case of Sec. E.3."""
    kh, kw = _int(rng, 1, 7), _int(rng, 1, 7)
    sh, sw, dh, dw, kh_eff, kw_eff, pads = _window(rng, kh, kw)
    h = _input_for_output(rng, 1, kh_eff, sh, pads[0] + pads[1])
    w = _extent(rng, max(1, kw_eff - pads[2] - pads[3]), max_extent)
    geom = _geom(h, w, _channels(rng), _channels(rng), (kh, kw), (sh, sw), (dh, dw), pads)
    if geom.w_out < 2:
        raise _Redraw
    return geom.transposed() if rng.random() < 0.5 else geom


@_redrawing
def restricted_integer_x(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Restricted domain, C_out > C_in, x* = (k-1) C_in / (C_out - C_in) an integer: the
    case Eq. 1 gets right when x* lies inside the grid (Limitation 1)."""
    k, c_in = _pick(rng, (3, 5, 7)), _channels(rng)
    rho = (k - 1) * c_in
    alphas = [a for a in range(1, MAX_CHANNELS + 1) if rho % a == 0]
    return _restricted(rng, max_extent, c_in, c_in + _pick(rng, alphas), k)


@_redrawing
def random_symmetric_axes(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Random kernel, stride, dilation and padding, identical on both axes and on both
    sides of each axis (the layer equals its transpose)."""
    k, s = _int(rng, 1, 7), _int(rng, 1, 3)
    d = _int(rng, 1, 3) if k > 1 else 1
    k_eff = dilated(k, d)
    p = _pad_below(rng, k_eff)
    n = _extent(rng, max(1, k_eff - 2 * p), max_extent)
    return _geom(n, n, _channels(rng), _channels(rng), (k, k), (s, s), (d, d), (p, p, p, p))


@_redrawing
def non_integer_x(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Restricted domain, C_out > C_in, x* not an integer: Limitation 1, where Eq. 1
    omits the partial leg (Lemma 9)."""
    k, c_in = _pick(rng, (3, 5, 7)), _channels(rng)
    alpha = _int(rng, 1, MAX_CHANNELS)
    if (k - 1) * c_in % alpha == 0:
        raise _Redraw
    return _restricted(rng, max_extent, c_in, c_in + alpha, k)


# Tier 3: correctness corners.
@_redrawing
def non_monotone_tap_order(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Dilation above stride with leading padding: the first real tap of consecutive
    outputs steps back by a dilation (e.g. k=3, d=2, p=2 reads 0, 1, 0, ...), which the
    dense bound's suffix minimum (Eq. 40) must handle. Redrawn until some axis shows it."""
    axes = []
    for _ in range(2):
        s = _int(rng, 1, 2)
        k, d = _int(rng, 2, 5), _int(rng, s + 1, 4)
        k_eff = dilated(k, d)
        lo, hi = _int(rng, 1, k_eff - 1), _pad_below(rng, k_eff)
        axes.append((k, s, d, lo, hi, _extent(rng, max(1, k_eff - lo - hi), max_extent)))
    (kh, sh, dh, pt, pb, h), (kw, sw, dw, pl, pr, w) = axes
    geom = _geom(
        h, w, _channels(rng), _channels(rng), (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr)
    )
    rows = first_real_taps(h, geom.h_out, kh, sh, dh, pt)
    cols = first_real_taps(w, geom.w_out, kw, sw, dw, pl)
    if not (_non_monotone(rows) or _non_monotone(cols)):
        raise _Redraw
    return geom


@_redrawing
def rectangular_kernel(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """kh != kw (1x7 and 7x1 Inception branches and the like), SAME or VALID."""
    kh, kw = _int(rng, 1, 7), _int(rng, 1, 7)
    if kh == kw:
        raise _Redraw
    h, w = _extent(rng, kh, max_extent), _extent(rng, kw, max_extent)
    pads = _tf_same(rng, h, w, kh, kw, (1, 1), (1, 1))
    return _geom(h, w, _channels(rng), _channels(rng), (kh, kw), pads=pads)


@_redrawing
def dilation(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Equal dilation d in [2, 4] on a square kernel k in [2, 5], SAME or VALID."""
    k, d = _int(rng, 2, 5), _int(rng, 2, 4)
    h, w = _extent(rng, 1, max_extent), _extent(rng, 1, max_extent)
    pads = _tf_same(rng, h, w, k, k, (1, 1), (d, d))
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), d=(d, d), pads=pads)


@_redrawing
def asymmetric_stride(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """sh != sw, each in [1, 4], square kernel, SAME or VALID."""
    sh, sw, k = _int(rng, 1, 4), _int(rng, 1, 4), _int(rng, 1, 5)
    if sh == sw:
        raise _Redraw
    h, w = _extent(rng, k, max_extent), _extent(rng, k, max_extent)
    pads = _tf_same(rng, h, w, k, k, (sh, sw), (1, 1))
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), (sh, sw), pads=pads)


@_redrawing
def asymmetric_dilation(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """dh != dw, each in [1, 4], on a square kernel of at least 2 so both dilations act."""
    dh, dw, k = _int(rng, 1, 4), _int(rng, 1, 4), _int(rng, 2, 5)
    if dh == dw:
        raise _Redraw
    h, w = _extent(rng, 1, max_extent), _extent(rng, 1, max_extent)
    pads = _tf_same(rng, h, w, k, k, (1, 1), (dh, dw))
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), d=(dh, dw), pads=pads)


@_redrawing
def asymmetric_padding(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Independent padding per side, below the dilated kernel, with top != bottom or
    left != right (TF SAME at stride 2 is the common source)."""
    k, s = _int(rng, 2, 7), _int(rng, 1, 2)
    pads = tuple(_int(rng, 0, k - 1) for _ in range(4))
    if pads[0] == pads[1] and pads[2] == pads[3]:
        raise _Redraw
    h = _extent(rng, max(1, k - pads[0] - pads[1]), max_extent)
    w = _extent(rng, max(1, k - pads[2] - pads[3]), max_extent)
    return _geom(h, w, _channels(rng), _channels(rng), (k, k), (s, s), pads=pads)


@_redrawing
def fully_asymmetric(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Every pair differs: H_in != W_in, kh != kw, sh != sw, dh != dw, top != bottom and
    left != right (kernels of at least 2 so dilation and padding act)."""
    kh, kw = _int(rng, 2, 5), _int(rng, 2, 5)
    sh, sw = _int(rng, 1, 3), _int(rng, 1, 3)
    dh, dw = _int(rng, 1, 3), _int(rng, 1, 3)
    if kh == kw or sh == sw or dh == dw:
        raise _Redraw
    kh_eff, kw_eff = dilated(kh, dh), dilated(kw, dw)
    pt, pb = _int(rng, 0, kh_eff - 1), _int(rng, 0, kh_eff - 1)
    pl, pr = _int(rng, 0, kw_eff - 1), _int(rng, 0, kw_eff - 1)
    h = _extent(rng, max(1, kh_eff - pt - pb), max_extent)
    w = _extent(rng, max(1, kw_eff - pl - pr), max_extent)
    if pt == pb or pl == pr or h == w:
        raise _Redraw
    return _geom(
        h, w, _channels(rng), _channels(rng), (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr)
    )


@_redrawing
def maximal_padding(rng: np.random.Generator, max_extent: int) -> ConvGeometry:
    """Padding k_eff - 1 on at least one side, the most Theorem 13 admits, so the corner
    outputs read a single real row or column."""
    kh, kw = _int(rng, 2, 7), _int(rng, 2, 7)
    sh, sw = _int(rng, 1, 3), _int(rng, 1, 3)
    dh, dw = _int(rng, 1, 2), _int(rng, 1, 2)
    kh_eff, kw_eff = dilated(kh, dh), dilated(kw, dw)
    pads = tuple(
        k_eff - 1 if rng.random() < 0.5 else _int(rng, 0, k_eff - 1)
        for k_eff in (kh_eff, kh_eff, kw_eff, kw_eff)
    )
    if pads[:2].count(kh_eff - 1) + pads[2:].count(kw_eff - 1) == 0:
        raise _Redraw
    h = _extent(rng, max(1, kh_eff - pads[0] - pads[1]), max_extent)
    w = _extent(rng, max(1, kw_eff - pads[2] - pads[3]), max_extent)
    return _geom(h, w, _channels(rng), _channels(rng), (kh, kw), (sh, sw), (dh, dw), pads)


# Table 5, in the table's order: (name, share in percent, generator). The names are the
# paper's, as transcribed in paper-tables.json; the shares sum to 100.
TABLE5: tuple[tuple[str, int, Generator], ...] = (
    ("plain convolution, k in [1,7]", 11, plain_convolution),
    ("same padding, p = floor(k/2)", 8, same_padding_conv),
    ("strided downsampling", 6, strided_downsampling),
    ("inverted-bottleneck expansion", 5, inverted_bottleneck_expansion),
    ("projection, c_out <= c_in", 5, projection),
    ("collapsed minor axis, n in {1,2,3}", 9, collapsed_minor_axis),
    ("small herringbone grid, n <= 6", 7, small_herringbone_grid),
    ("small output grid", 6, small_output_grid),
    ("thin axis, one output axis of 1", 6, thin_axis),
    ("restricted regime, integer x*", 6, restricted_integer_x),
    ("random symmetric axes", 6, random_symmetric_axes),
    ("non-integer x*", 5, non_integer_x),
    ("non-monotone tap order", 4, non_monotone_tap_order),
    ("rectangular kernel", 3, rectangular_kernel),
    ("dilation", 3, dilation),
    ("asymmetric stride", 2, asymmetric_stride),
    ("asymmetric dilation", 2, asymmetric_dilation),
    ("asymmetric padding", 2, asymmetric_padding),
    ("fully asymmetric", 2, fully_asymmetric),
    ("maximal padding", 2, maximal_padding),
)
SHARES: dict[str, int] = {name: share for name, share, _ in TABLE5}
GENERATORS: dict[str, Generator] = {name: fn for name, _, fn in TABLE5}


# --------------------------------------------------------------------------------------
# The layer set
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layer:
    index: int
    generator: str
    geom: ConvGeometry


def _check_args(n_layers: int, seed: int, max_extent: int) -> None:
    if not isinstance(n_layers, int) or n_layers < 1:
        raise RipError(f"layers must be a positive integer, got {n_layers!r}")
    if not isinstance(seed, int) or seed < 0:
        raise RipError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(max_extent, int) or max_extent < MIN_MAX_EXTENT:
        raise RipError(f"max-extent must be an integer >= {MIN_MAX_EXTENT}, got {max_extent!r}")


def generator_counts(n_layers: int) -> dict[str, int]:
    """Layers per generator: Table 5's shares of ``n_layers`` by largest remainder, ties
    going to the earlier row, so the counts always sum to ``n_layers``."""
    floors = {name: n_layers * share // 100 for name, share in SHARES.items()}
    order = sorted(SHARES, key=lambda name: -(n_layers * SHARES[name] % 100))  # stable
    for name in order[: n_layers - sum(floors.values())]:
        floors[name] += 1
    return floors


def make_layer(index: int, generator: str, seed: int, max_extent: int) -> Layer:
    """Layer ``index`` of the sweep, from its own stream, so no other layer affects it."""
    rng = np.random.default_rng([seed, index])
    return Layer(index, generator, GENERATORS[generator](rng, max_extent))


def make_layers(n_layers: int, seed: int = 0, max_extent: int = DEFAULT_MAX_EXTENT) -> list[Layer]:
    """The deterministic layer set of Appendix G.2: generators in Table 5's order, each
    taking a contiguous block of indices sized by :func:`generator_counts`."""
    _check_args(n_layers, seed, max_extent)
    names = [name for name, count in generator_counts(n_layers).items() for _ in range(count)]
    return [make_layer(i, name, seed, max_extent) for i, name in enumerate(names)]


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------
# (closed form, execution configuration): the five configurations of G.2, then Eq. 1 and
# Corollary 1 against the herringbone truth on restricted layers.
RIP_CONFIGS: tuple[tuple[str, str, str, str], ...] = (
    ("theorem4", "rip-padded-gather", "padded", "gather"),
    ("theorem4", "rip-padded-workspace", "padded", "workspace"),
    ("theorem13", "rip-dense-gather", "dense", "gather"),
    ("theorem13", "rip-dense-workspace", "dense", "workspace"),
    # As published: sigma for the first pixel (Sec. F.4 explains why that is loose).
    ("theorem13-published", "rip-dense-gather", "dense", "gather"),
    ("theorem13-published", "rip-dense-workspace", "dense", "workspace"),
)
HERRINGBONE = "herringbone-workspace"
ROWS: tuple[tuple[str, str], ...] = (
    *((form, config) for form, config, _, _ in RIP_CONFIGS),
    ("theorem11", HERRINGBONE),
    ("gm-eq1", HERRINGBONE),
    ("corollary1", HERRINGBONE),
)
CLOSED_FORM_LABELS: dict[str, str] = {
    "theorem4": "Theorem 4 (padded)",
    "theorem13": "Theorem 13 (dense, first pixel exact)",
    "theorem13-published": "Theorem 13 as published (dense, sigma)",
    "theorem11": "Theorem 11 (generalized herringbone)",
    "gm-eq1": "G&M Eq. 1 (restricted domain)",
    "corollary1": "Corollary 1 (restricted domain)",
}
VERDICTS = ("unsafe", "tight", "loose")
NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class Record:
    """One (layer, closed form, configuration) comparison; bound and truth are None when
    the configuration does not apply to the layer."""

    index: int
    generator: str
    geom: ConvGeometry
    closed_form: str
    configuration: str
    bound: int | None
    truth: int | None

    @property
    def verdict(self) -> str:
        """Appendix G.1: unsafe if the formula falls below truth, tight if equal, else
        loose."""
        if self.bound is None or self.truth is None:
            return NOT_APPLICABLE
        return verdict(self.bound, self.truth)


def verdict(bound: int, truth: int) -> str:
    """Appendix G.1's verdict of a bound against the simulator's truth."""
    if bound < truth:
        return "unsafe"
    return "tight" if bound == truth else "loose"


def _dense_applies(geom: ConvGeometry) -> bool:
    try:
        check_dense(geom)
    except LayerError:
        return False
    return True


def evaluate_layer(layer: Layer) -> list[Record]:
    """Every row of :data:`ROWS` for one layer: closed form against simulated truth."""
    g = layer.geom

    def record(form: str, config: str, bound: int | None, truth: int | None) -> Record:
        return Record(layer.index, layer.generator, g, form, config, bound, truth)

    out = []
    dense_ok = _dense_applies(g)
    truths: dict[str, int] = {}  # one simulation per execution configuration
    for form, config, layout, taps in RIP_CONFIGS:
        if layout == "dense" and not dense_ok:
            out.append(record(form, config, None, None))
            continue
        if layout == "padded":
            bound = rip_padded_gap(g, taps)
        else:
            bound = rip_dense_gap(g, taps, published=form == "theorem13-published")
        if config not in truths:
            truths[config] = simulate_rip(g, layout, taps, "row", "fast")
        out.append(record(form, config, bound, truths[config]))
    truth = simulate_herringbone(g, "fast")
    out.append(record("theorem11", HERRINGBONE, herringbone_gap(g), truth))
    restricted = in_restricted_domain(g)
    for form, fn in (("gm-eq1", gm_eq1_gap), ("corollary1", corollary1_gap)):
        out.append(
            record(form, HERRINGBONE, fn(g) if restricted else None, truth if restricted else None)
        )
    return out


def _evaluate_chunk(layers: Sequence[Layer]) -> list[Record]:
    return [r for layer in layers for r in evaluate_layer(layer)]


def summarize(records: Iterable[Record], layers: Sequence[Layer]) -> dict[str, Any]:
    """Verdict counts per closed form and configuration (Sec. 5.2), JSON-ready.

    ``mean_overshoot`` is the mean of bound - truth over loose layers (None when none is
    loose), ``tight_pct`` is over the layers the configuration applies to.
    """
    counts: dict[tuple[str, str], Counter[str]] = {row: Counter() for row in ROWS}
    overshoot: dict[tuple[str, str], list[int]] = {row: [] for row in ROWS}
    unsafe_at: dict[tuple[str, str], list[int]] = {row: [] for row in ROWS}
    for r in records:
        key, verdict = (r.closed_form, r.configuration), r.verdict
        counts[key][verdict] += 1
        if verdict == "loose":
            overshoot[key].append(r.bound - r.truth)  # type: ignore[operator]
        elif verdict == "unsafe":
            unsafe_at[key].append(r.index)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for form, config in ROWS:
        c, over = counts[(form, config)], overshoot[(form, config)]
        applicable = sum(c[v] for v in VERDICTS)
        results.setdefault(form, {})[config] = {
            "layers": applicable + c[NOT_APPLICABLE],
            "not_applicable": c[NOT_APPLICABLE],
            **{v: c[v] for v in VERDICTS},
            "tight_pct": round(100.0 * c["tight"] / applicable, 2) if applicable else None,
            "mean_overshoot": round(sum(over) / len(over), 2) if over else None,
            "max_overshoot": max(over, default=0),
            "unsafe_layers": sorted(unsafe_at[(form, config)])[:10],
        }
    restricted = sum(in_restricted_domain(layer.geom) for layer in layers)
    return {
        "layers": len(layers),
        "restricted_layers": restricted,
        "restricted_pct": round(100.0 * restricted / len(layers), 2) if layers else None,
        "generators": dict(Counter(layer.generator for layer in layers)),
        "results": results,
    }


@dataclass
class SweepResult:
    layers: list[Layer]
    records: list[Record]
    summary: dict[str, Any]
    wall_seconds: float
    jobs: int


_T = TypeVar("_T")


def chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_sweep(
    n_layers: int = 10_000,
    seed: int = 0,
    max_extent: int = DEFAULT_MAX_EXTENT,
    jobs: int | None = None,
    progress: bool = True,
    chunk_size: int = 20,
) -> SweepResult:
    """Draw the layer set and run every layer through every configuration (Sec. 5.2).

    ``jobs`` worker processes (default ``os.cpu_count()``; 1 runs in-process) take chunks of
    ``chunk_size`` layers; results come back in index order whatever the worker count.
    """
    start = time.perf_counter()
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if not isinstance(jobs, int) or jobs < 1:
        raise RipError(f"jobs must be a positive integer, got {jobs!r}")
    if chunk_size < 1:
        raise RipError(f"chunk size must be positive, got {chunk_size!r}")
    layers = make_layers(n_layers, seed, max_extent)
    batches = list(chunks(layers, chunk_size))
    records: list[Record] = []
    with tqdm(total=len(layers), unit="layer", disable=not progress, file=sys.stderr) as bar:
        if jobs == 1 or len(batches) == 1:
            results: Iterable[list[Record]] = map(_evaluate_chunk, batches)
            pool = None
        else:
            pool = Pool(min(jobs, len(batches)))
            results = pool.imap(_evaluate_chunk, batches)
        try:
            for chunk, chunk_records in zip(batches, results, strict=True):
                records.extend(chunk_records)
                bar.update(len(chunk))
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    summary = summarize(records, layers)
    return SweepResult(layers, records, summary, time.perf_counter() - start, jobs)


# --------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------
GEOMETRY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ConvGeometry))
CSV_HEADER: tuple[str, ...] = (
    "index",
    "generator",
    *GEOMETRY_FIELDS,
    "configuration",
    "closed_form",
    "bound",
    "truth",
    "verdict",
)


def write_csv(records: Iterable[Record], dest: str | os.PathLike[str] | IO[str]) -> None:
    """One row per (layer, closed form, configuration); bound and truth are empty where
    the configuration does not apply."""
    if isinstance(dest, (str, os.PathLike)):
        with Path(dest).open("w", newline="", encoding="utf-8") as fh:
            write_csv(records, fh)
        return
    writer = csv.writer(dest)
    writer.writerow(CSV_HEADER)
    for r in records:
        writer.writerow(
            (
                r.index,
                r.generator,
                *(getattr(r.geom, f) for f in GEOMETRY_FIELDS),
                r.configuration,
                r.closed_form,
                "" if r.bound is None else r.bound,
                "" if r.truth is None else r.truth,
                r.verdict,
            )
        )
