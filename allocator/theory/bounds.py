"""Closed-form minimum gaps for in-place execution (Sec. 4, Appendices F and I.1).

Every function returns a :class:`Bound`: the gap (scalars of slack below the input), the
workspace it implies, and the traversal it assumes. None of them runs a traversal; the
simulator in :mod:`rip.allocator.theory.simulate` is what checks them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rip.allocator.theory.geometry import ConvGeometry
from rip.core.errors import LayerError

INF = float("inf")


@dataclass(frozen=True)
class Bound:
    """A per-layer in-place requirement.

    ``gap`` is the slack (in scalars, bytes for int8) between where the output starts and
    where the input starts; ``workspace`` is the total the op needs, output and input
    overlapped. ``order`` is the traversal the gap is valid for.
    """

    scheme: str
    layout: str
    taps: str
    order: str
    gap: int
    workspace: int
    output_hw: tuple[int, int]
    theorem: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["output_hw"] = list(self.output_hw)
        return d


def sigma(geom: ConvGeometry, taps: str) -> int:
    """Production-order headroom, Eq. 6: 0 when the receptive field is gathered first,
    C_out when taps are read from the workspace."""
    if taps == "gather":
        return 0
    if taps == "workspace":
        return geom.c_out
    raise LayerError(f"taps must be 'gather' or 'workspace', got {taps!r}")


# --------------------------------------------------------------------------------------
# Theorem 4: padded layout
# --------------------------------------------------------------------------------------
def rip_padded_gap(geom: ConvGeometry, taps: str = "gather") -> int:
    """Theorem 4 (minimum sequential gap), Eq. 8-10, row-major traversal.

    D(r, c) = beta r + alpha (c + 1) + sigma inside a row, beta (r + 1) + sigma at a row
    end and sigma at the last pixel (Lemma 3, Eq. 8), maximised over the nine breakpoints
    R_s x C_s of Eq. 9, and at least N_out - H_p W_p C_in (Eq. 10).
    """
    s = sigma(geom, taps)
    h_out, w_out = geom.h_out, geom.w_out
    alpha = geom.c_out - geom.sw * geom.c_in
    beta = geom.c_out * w_out - geom.sh * geom.w_p * geom.c_in

    def debt(r: int, c: int) -> int:
        if c + 1 < w_out:
            return beta * r + alpha * (c + 1) + s
        if r + 1 < h_out:
            return beta * (r + 1) + s
        return s

    rows = {max(v, 0) for v in (0, h_out - 2, h_out - 1)}
    cols = {max(v, 0) for v in (0, w_out - 2, w_out - 1)}
    worst = max(debt(r, c) for r in rows for c in cols)
    return max(worst, geom.n_out - geom.n_in_padded)


# --------------------------------------------------------------------------------------
# Theorem 13: dense layout (padding not materialized)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Axis:
    """One spatial axis under the dense layout: which real coordinates output o reads.

    Tap i of output o sits at o*s + i*d - pad and is real on o in [enter_i, leave_i]
    (Lemma 12's crossing indices). Every query is O(k).
    """

    n: int  # real input extent
    n_out: int
    k: int
    s: int
    d: int
    pad: int

    def _window(self, i: int) -> tuple[int, int]:
        lo = -((i * self.d - self.pad) // self.s)  # ceil((pad - i d) / s)
        hi = (self.pad - i * self.d + self.n - 1) // self.s  # floor(...)
        return max(lo, 0), min(hi, self.n_out - 1)

    def first_read(self, o: int, onwards: bool) -> float:
        """Lowest real coordinate read by output o (``onwards``: by any output >= o)."""
        best = INF
        for i in range(self.k):
            lo, hi = self._window(i)
            at = max(o, lo) if onwards else o
            if lo <= at <= hi:
                best = min(best, at * self.s + i * self.d - self.pad)
        return best

    def breakpoints(self) -> set[int]:
        """Every index at which a tap enters or leaves the real region, with the two below
        it (the debt reads the axis at o + 1 through a suffix minimum, so each crossing
        bounds a cell one and two indices lower), plus Theorem 4's extremes."""
        points = {0, self.n_out - 2, self.n_out - 1}
        for i in range(self.k):
            lo = -((i * self.d - self.pad) // self.s)
            hi = (self.pad - i * self.d + self.n - 1) // self.s
            for x in (lo, hi + 1):
                points.update((x - 2, x - 1, x))
        return {p for p in points if 0 <= p < self.n_out}


def check_dense(geom: ConvGeometry) -> None:
    """Theorem 13's precondition: padding narrower than the dilated kernel on every side."""
    if max(geom.pad_top, geom.pad_bottom) >= geom.kh_eff:
        raise LayerError(
            f"padding: dense layout needs vertical padding < dilated kernel height "
            f"{geom.kh_eff}, got top={geom.pad_top} bottom={geom.pad_bottom}"
        )
    if max(geom.pad_left, geom.pad_right) >= geom.kw_eff:
        raise LayerError(
            f"padding: dense layout needs horizontal padding < dilated kernel width "
            f"{geom.kw_eff}, got left={geom.pad_left} right={geom.pad_right}"
        )


def rip_dense_gap(geom: ConvGeometry, taps: str = "gather", published: bool = False) -> int:
    """Theorem 13 (minimum gap, dense layout), Appendix F, Eq. 40-41.

    The next live input is the first real pixel any unprocessed output still reads (Eq. 40):
    the current output row's suffix and every later row, each a minimum of O(k) tap
    positions. D is convex between crossings (Lemma 12), so its maximum is at the extended
    breakpoints, O(k_h k_w) of them.

    As published, sigma stands in for the first output pixel's own taps (the last-pixel
    branch of Eq. 8). That is exact in the padded layout, whose first tap is always at
    address 0, but not here: when the first real input read lies further in (a dead leading
    run, Sec. F.4) the first pixel needs only C_out - C_in NLI_all. We use that exact term,
    which makes the bound tight in every configuration of the sweep; ``published=True``
    keeps sigma, for comparison with the paper.
    """
    check_dense(geom)
    s = sigma(geom, taps)
    h_out, w_out, c_in, c_out = geom.h_out, geom.w_out, geom.c_in, geom.c_out
    rows = _Axis(geom.h_in, h_out, geom.kh, geom.sh, geom.dh, geom.pad_top)
    cols = _Axis(geom.w_in, w_out, geom.kw, geom.sw, geom.dw, geom.pad_left)
    all_cols = cols.first_read(0, onwards=True)

    def debt(r: int, c: int) -> float:
        nli = INF
        if c + 1 < w_out:  # rest of this output row
            nli = rows.first_read(r, onwards=False) * geom.w_in + cols.first_read(c + 1, True)
        if r + 1 < h_out:  # every later output row
            nli = min(nli, rows.first_read(r + 1, onwards=True) * geom.w_in + all_cols)
        if nli == INF:  # nothing left to read: no write can corrupt
            return -INF
        return (r * w_out + c + 1) * c_out - c_in * nli + s

    worst = max(debt(r, c) for r in rows.breakpoints() for c in cols.breakpoints())
    first_pixel: float  # first_read is INF past the last row read
    if published:
        first_pixel = s
    else:  # pixel (0, 0) writes [0, C_out) while every input any output reads is live
        nli_all = rows.first_read(0, onwards=True) * geom.w_in + all_cols
        first_pixel = s - c_in * nli_all if s else 0
    return int(max(worst, first_pixel, 0, geom.n_out - geom.n_in_dense))


# --------------------------------------------------------------------------------------
# Row, column and best order
# --------------------------------------------------------------------------------------
def rip_bound(
    geom: ConvGeometry, layout: str = "dense", taps: str = "gather", order: str = "best"
) -> Bound:
    """RiP gap and workspace for one convolution.

    ``order="col"`` is the same bound on the transposed layer (Sec. 5.3: transpose input and
    kernels to traverse in column order); ``order="best"`` returns whichever of the two has
    the smaller workspace, row order on a tie.
    """
    if order == "best":
        row = rip_bound(geom, layout, taps, "row")
        col = rip_bound(geom, layout, taps, "col")
        return col if col.workspace < row.workspace else row
    if order not in ("row", "col"):
        raise LayerError(f"order must be 'row', 'col' or 'best', got {order!r}")
    g = geom.transposed() if order == "col" else geom
    if layout == "padded":
        gap, n_in, theorem = rip_padded_gap(g, taps), g.n_in_padded, "Theorem 4 (Eq. 10)"
    elif layout == "dense":
        gap, n_in, theorem = rip_dense_gap(g, taps), g.n_in_dense, "Theorem 13 (Appendix F)"
    else:
        raise LayerError(f"layout must be 'padded' or 'dense', got {layout!r}")
    return Bound("rip", layout, taps, order, gap, gap + n_in, (geom.h_out, geom.w_out), theorem)


# --------------------------------------------------------------------------------------
# Other operator classes (Appendix I)
# --------------------------------------------------------------------------------------
def upsample_bound(h_in: int, w_in: int, c: int, scale: int) -> Bound:
    """Theorem 14 (zero-gap in-place upsampling): reverse row-major traversal, input and
    output both left-aligned, workspace N_out."""
    if min(h_in, w_in, c, scale) < 1:
        raise LayerError("upsampling needs positive input extent, channels and scale")
    n_out = h_in * scale * w_in * scale * c
    return Bound(
        "upsample",
        "dense",
        "gather",
        "reverse",
        0,
        n_out,
        (h_in * scale, w_in * scale),
        "Theorem 14 (Sec. I.1)",
    )


def pool_bound(geom: ConvGeometry, layout: str = "dense") -> Bound:
    """Pooling as the alpha <= 0, beta <= 0 case of Theorem 4 (C_out = C_in): forward
    row-major, W* = N_in under the padded layout. Each output channel reads only its own
    input channel, so the gathered-window bound applies. Under the dense layout a padded
    pool keeps its border debt, which Theorem 13 measures rather than assumes away."""
    if geom.c_out != geom.c_in:
        raise LayerError(f"pooling keeps channels: c_in={geom.c_in}, c_out={geom.c_out}")
    bound = rip_bound(geom, layout, "gather", "row")
    return Bound(
        "pool",
        layout,
        "gather",
        "row",
        bound.gap,
        bound.workspace,
        bound.output_hw,
        f"{bound.theorem}, alpha <= 0 and beta <= 0",
    )


def depthwise_bound(geom: ConvGeometry) -> Bound:
    """Channel in-place depthwise convolution (TinyEngine's scheme, Sec. 2): each output
    channel is computed into a per-channel buffer outside the arena, then stored over its
    own, now dead, input channel. Output and input share a base (gap 0)."""
    if geom.c_out != geom.c_in:
        raise LayerError(
            f"channel in-place depthwise needs depth multiplier 1: c_in={geom.c_in}, "
            f"c_out={geom.c_out}"
        )
    if geom.h_out * geom.w_out > geom.h_in * geom.w_in:
        raise LayerError("channel in-place depthwise needs an output no larger than its input")
    return Bound(
        "depthwise",
        "dense",
        "gather",
        "channel",
        0,
        max(geom.n_in_dense, geom.n_out),
        (geom.h_out, geom.w_out),
        "channel in-place (Sec. 2)",
    )


def elementwise_bound(n_in: int, n_out: int) -> Bound:
    """Elementwise ops (add, mul, activations) read and write the same index: gap 0 when
    the overwritten input is at least as large as the output."""
    if n_out > n_in:
        raise LayerError(f"elementwise in place needs n_out <= n_in, got {n_out} > {n_in}")
    return Bound("elementwise", "dense", "gather", "row", 0, n_in, (0, 0), "elementwise")
