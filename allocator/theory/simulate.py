"""The corruption simulator of Appendix G.1: executes a traversal and finds the minimum gap.

It never evaluates a closed form. Two modes answer the same question:

* ``literal``: a scalar-level workspace. Every input scalar carries a count of the output
  pixels (or, for upsampling, output scalars) that still read it, built by enumerating every
  tap of every output; outputs are written scalar by scalar and a write onto a scalar whose
  count is non-zero, or past the end of the workspace, is a corruption. The minimum gap is
  found by binary search. For small layers.
* ``fast``: the same semantics at pixel granularity with numpy. Each stored input pixel gets
  the traversal index of its last reader; the live set only shrinks, so the lowest live
  address at every step is a prefix-maximum search, and the minimum gap is a maximum over
  steps. Exact, not an approximation: a write range that reaches the lowest live scalar
  corrupts it, and one that stays below it corrupts nothing.

Semantics shared by both (Sec. 4.1, Eq. 6): with ``taps="gather"`` an output pixel's
receptive field is read before any of its channels is written (sigma = 0); with
``taps="workspace"`` its inputs stay live until its last channel is written (sigma = C_out).
The workspace is the gap followed by the stored input; the output is written from address 0
and must fit inside it. Input that no output reads is dead from the start.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from rip.allocator.theory.geometry import ConvGeometry
from rip.core import kernel_variants as kv
from rip.core.errors import LayerError
from rip.core.limits import MAX_SIMULATION_CELLS
from rip.core.terms import Layout, Order, Taps

LAYOUTS = Layout.values()
TAPS = Taps.values()
ORDERS = (Order.ROW.value, Order.COL.value)


@dataclass(frozen=True)
class Stored:
    """How one spatial axis of the input is stored: ``n`` stored positions, and the offset
    that maps a padded coordinate to a stored one (the padding amount under the dense
    layout, 0 under the padded layout, where padding cells are stored and live)."""

    n: int
    offset: int


def _stored_axes(geom: ConvGeometry, layout: str) -> tuple[Stored, Stored]:
    if layout == "padded":
        return Stored(geom.h_p, 0), Stored(geom.w_p, 0)
    if layout == "dense":
        return Stored(geom.h_in, geom.pad_top), Stored(geom.w_in, geom.pad_left)
    raise LayerError(f"layout must be one of {LAYOUTS}, got {layout!r}")


def _check(layout: str, taps: str, order: str) -> None:
    if layout not in LAYOUTS:
        raise LayerError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if taps not in TAPS:
        raise LayerError(f"taps must be one of {TAPS}, got {taps!r}")
    if order not in ORDERS:
        raise LayerError(f"order must be one of {ORDERS}, got {order!r}")


# --------------------------------------------------------------------------------------
# Traversals
# --------------------------------------------------------------------------------------
def raster(h_out: int, w_out: int, order: str) -> list[tuple[int, int]]:
    """Row-major (Fig. 2(b)) or column-major traversal of the output grid."""
    if order == "row":
        return [(r, c) for r in range(h_out) for c in range(w_out)]
    return [(r, c) for c in range(w_out) for r in range(h_out)]


def herringbone_order(h_out: int, w_out: int) -> list[tuple[int, int]]:
    """The herringbone traversal of Eq. 25: legs along the longer (major) axis peel the
    outermost remaining row or column, alternating with a shorter minor leg, and the walk
    ends on a major leg. Major leg i runs from pixel (i, i) away from the corner; minor leg
    i runs from (i+1, i) (or (i, i+1)) away from the corner."""
    order: list[tuple[int, int]] = []
    row_major = w_out >= h_out
    n = min(h_out, w_out)
    for i in range(n):
        if row_major:
            order += [(i, c) for c in range(i, w_out)]
            if i < n - 1:
                order += [(r, i) for r in range(i + 1, h_out)]
        else:
            order += [(r, i) for r in range(i, h_out)]
            if i < n - 1:
                order += [(i, c) for c in range(i + 1, w_out)]
    return order


# --------------------------------------------------------------------------------------
# Literal mode
# --------------------------------------------------------------------------------------
def _taps(geom: ConvGeometry, sy: Stored, sx: Stored, r: int, c: int) -> Iterator[tuple[int, int]]:
    """Stored (y, x) coordinates read by output pixel (r, c), enumerated tap by tap."""
    for j in range(geom.kh):
        y = r * geom.sh + j * geom.dh - sy.offset
        if not 0 <= y < sy.n:
            continue
        for i in range(geom.kw):
            x = c * geom.sw + i * geom.dw - sx.offset
            if 0 <= x < sx.n:
                yield y, x


def _literal_refcounts(geom, sy, sx, order, pixel_addr):
    """Per stored input scalar, how many output pixels read it (relative to the input base)."""
    counts = np.zeros(sy.n * sx.n * geom.c_in, dtype=np.int64)
    taps_of = []
    for r, c in order:
        pix = sorted({pixel_addr(y, x) for y, x in _taps(geom, sy, sx, r, c)})
        taps_of.append(pix)
        for p in pix:
            counts[p * geom.c_in : (p + 1) * geom.c_in] += 1
    return counts, taps_of


def _tile_ends(n_pix: int, tile: int | Sequence[int]) -> np.ndarray:
    """ends[k]: traversal pixel k is the last of its tile. ``tile`` is a size (every tile
    that long, the last one shorter) or the tiles' sizes in order, summing to ``n_pix``."""
    sizes = [tile] * -(-n_pix // tile) if isinstance(tile, int) else list(tile)
    if any(t < 1 for t in sizes) or (not isinstance(tile, int) and sum(sizes) != n_pix):
        raise LayerError(f"tiles {sizes} do not cover the {n_pix} output pixels")
    ends = np.zeros(n_pix, dtype=bool)
    ends[np.minimum(np.cumsum(sizes), n_pix) - 1] = True
    return ends


def _literal_rip_safe(geom, counts0, taps_of, out_addr, order, gap, taps, tile=1) -> bool:
    """Run one RiP traversal with the input right-aligned at ``gap``; True if no write lands
    on a live input scalar or past the end of the workspace. With tiles (``tile`` as
    `_tile_ends` takes it; gather only) the receptive fields of a tile's consecutive pixels
    are all read before any of their channels is written."""
    c_in, c_out = geom.c_in, geom.c_out
    size = gap + counts0.size
    live = np.zeros(size, dtype=np.int64)
    live[gap:] = counts0
    ends = _tile_ends(len(order), tile)
    for k, (r, c) in enumerate(order):
        if taps == "gather" and (k == 0 or ends[k - 1]):  # the tile's fields copied out first
            for j in range(k, len(order)):
                for p in taps_of[j]:
                    live[gap + p * c_in : gap + (p + 1) * c_in] -= 1
                if ends[j]:
                    break
        start = out_addr(r, c)
        for a in range(start, start + c_out):  # channel by channel
            if a >= size or live[a] > 0:
                return False
        if taps == "workspace":  # inputs released only once the whole pixel is written
            for p in taps_of[k]:
                live[gap + p * c_in : gap + (p + 1) * c_in] -= 1
    return True


def _binary_search(safe, hi: int) -> int:
    """Smallest gap in [0, hi] for which ``safe`` holds; feasibility is monotone in the gap
    because the live set only shrinks over the traversal (see the module docstring)."""
    if not safe(hi):
        raise AssertionError(f"simulator: gap {hi} is not safe, the search bound is wrong")
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if safe(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _literal_rip(
    geom: ConvGeometry, layout: str, taps: str, order: str, tile: int | Sequence[int] = 1
) -> int:
    sy, sx = _stored_axes(geom, layout)
    c_out = geom.c_out
    if order == "row":  # input and output both stored in the traversal's raster order

        def pixel_addr(y, x):
            return y * sx.n + x

        def out_addr(r, c):
            return (r * geom.w_out + c) * c_out
    else:

        def pixel_addr(y, x):
            return x * sy.n + y

        def out_addr(r, c):
            return (c * geom.h_out + r) * c_out

    trav = raster(geom.h_out, geom.w_out, order)
    counts0, taps_of = _literal_refcounts(geom, sy, sx, trav, pixel_addr)
    hi = geom.n_out + c_out  # output entirely below the input: always safe

    def safe(gap: int) -> bool:
        return _literal_rip_safe(geom, counts0, taps_of, out_addr, trav, gap, taps, tile)

    return _binary_search(safe, hi)


def _literal_herringbone(geom: ConvGeometry) -> int:
    """Herringbone over the padded layout with taps read from the workspace. Output
    scalars go to any free scalar (a free list: the lowest free address), as the debt
    accounting of Appendix C assumes; the gap is the free space the walk starts with."""
    sy, sx = _stored_axes(geom, "padded")
    trav = herringbone_order(geom.h_out, geom.w_out)

    def pixel_addr(y, x):
        return y * sx.n + x

    counts0, taps_of = _literal_refcounts(geom, sy, sx, trav, pixel_addr)
    c_in, c_out = geom.c_in, geom.c_out

    def safe(gap: int) -> bool:
        live = np.concatenate([np.zeros(gap, dtype=np.int64), counts0])
        used = np.zeros(live.size, dtype=bool)  # holds an output scalar
        for k in range(len(trav)):
            free = np.flatnonzero((live == 0) & ~used)
            if free.size < c_out:
                return False
            used[free[:c_out]] = True
            for p in taps_of[k]:
                live[gap + p * c_in : gap + (p + 1) * c_in] -= 1
        return True

    return _binary_search(safe, geom.n_out + c_out)


def _literal_upsample(h_in: int, w_in: int, c: int, scale: int, reverse: bool) -> int:
    """Nearest upsampling by ``scale`` at scalar granularity: each output scalar copies one
    input scalar (read, then write). Input packed at ``gap``, output written from 0."""
    h_out, w_out = h_in * scale, w_in * scale
    src = [
        ((r // scale) * w_in + (cc // scale)) * c + ch
        for r in range(h_out)
        for cc in range(w_out)
        for ch in range(c)
    ]
    counts0 = np.bincount(np.asarray(src), minlength=h_in * w_in * c)
    steps = range(len(src) - 1, -1, -1) if reverse else range(len(src))
    n_out = len(src)

    def safe(gap: int) -> bool:
        size = max(n_out, gap + counts0.size)
        live = np.zeros(size, dtype=np.int64)
        live[gap : gap + counts0.size] = counts0
        for a in steps:
            live[gap + src[a]] -= 1
            if live[a] > 0:
                return False
        return True

    # Not monotone in the gap (the write frontier descends towards the input), so scan
    # upwards for the first safe gap instead of bisecting. gap = n_out is always safe.
    return next(gap for gap in range(n_out + 1) if safe(gap))


# --------------------------------------------------------------------------------------
# Fast exact mode
# --------------------------------------------------------------------------------------
def _last_reader_axis(n_out: int, k: int, s: int, d: int, st: Stored) -> np.ndarray:
    """For each stored coordinate on one axis, the largest output index reading it, or -1."""
    last = np.full(st.n, -1, dtype=np.int64)
    o = np.arange(n_out)
    for j in range(k):
        pos = o * s + j * d - st.offset
        ok = (pos >= 0) & (pos < st.n)
        np.maximum.at(last, pos[ok], o[ok])
    return last


def _fast_rip(geom: ConvGeometry, layout: str, taps: str, tile: int | Sequence[int] = 1) -> int:
    """Row-major RiP; column-major callers pass the transposed geometry (identical
    arithmetic: the traversal and both tensors are stored column-major). With ``tile``
    pixels gathered together, the state when pixel k is written is the one after the last
    pixel of its tile was gathered, and every write of a tile lies below the end of its
    last pixel: only each tile's last pixel constrains the gap."""
    sy, sx = _stored_axes(geom, layout)
    ly = _last_reader_axis(geom.h_out, geom.kh, geom.sh, geom.dh, sy)
    lx = _last_reader_axis(geom.w_out, geom.kw, geom.sw, geom.dw, sx)
    # Readers of stored pixel (y, x) are rows(y) x cols(x): the last in raster order is
    # (last row, last col).
    last = np.where(
        (ly[:, None] >= 0) & (lx[None, :] >= 0), ly[:, None] * geom.w_out + lx[None, :], -1
    ).ravel()
    prefix_max = np.maximum.accumulate(last)
    n_pix = geom.h_out * geom.w_out
    k = np.arange(n_pix)
    threshold = k + 1 if taps == "gather" else k  # live = last reader >= threshold
    first_live = np.searchsorted(prefix_max, threshold, side="left")  # in pixels
    has_live = first_live < last.size
    debt = (k + 1) * geom.c_out - geom.c_in * first_live
    n_in = sy.n * sx.n * geom.c_in
    if tile != 1:
        has_live &= _tile_ends(n_pix, tile)
    worst = int(debt[has_live].max()) if has_live.any() else 0
    return max(0, geom.n_out - n_in, worst)


def _herringbone_rank(h_out: int, w_out: int) -> np.ndarray:
    rank = np.empty((h_out, w_out), dtype=np.int64)
    for i, (r, c) in enumerate(herringbone_order(h_out, w_out)):
        rank[r, c] = i
    return rank


def _reads_mask(n_out: int, k: int, s: int, d: int, st: Stored) -> np.ndarray:
    """mask[y, o]: stored coordinate y is read by output index o on this axis."""
    mask = np.zeros((st.n, n_out), dtype=bool)
    o = np.arange(n_out)
    for j in range(k):
        pos = o * s + j * d - st.offset
        ok = (pos >= 0) & (pos < st.n)
        mask[pos[ok], o[ok]] = True
    return mask


def _fast_herringbone(geom: ConvGeometry) -> int:
    sy, sx = _stored_axes(geom, "padded")
    rank = _herringbone_rank(geom.h_out, geom.w_out)
    my = _reads_mask(geom.h_out, geom.kh, geom.sh, geom.dh, sy)
    mx = _reads_mask(geom.w_out, geom.kw, geom.sw, geom.dw, sx)
    # last[y, x] = max rank over readers rows(y) x cols(x); -1 when nothing reads it.
    by_row = np.where(my[:, :, None], rank[None, :, :], -1).max(axis=1)  # (Hp, Wout)
    last = np.where(mx[None, :, :], by_row[:, None, :], -1).max(axis=2)  # (Hp, Wp)
    released = np.sort(last.ravel())
    n_pix = geom.h_out * geom.w_out
    k = np.arange(n_pix)
    # Pixel k needs C_out free scalars while its own taps are still live: free space is the
    # gap plus every input pixel whose last reader came before k (or that nothing reads).
    freed = np.searchsorted(released, k, side="left") * geom.c_in
    return max(0, int(((k + 1) * geom.c_out - freed).max()))


# --------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------
def _check_size(geom: ConvGeometry, mode: str, herringbone: bool) -> None:
    """Refuse a layer whose simulation would not fit in bounded memory and time: the
    largest array (or, in literal mode, the tap count) above MAX_SIMULATION_CELLS."""
    n_pix = geom.h_out * geom.w_out
    cells = max(
        geom.h_p * geom.w_p,
        n_pix,
        geom.kh * geom.h_out,
        geom.kw * geom.w_out,
    )
    if herringbone:  # (Hp, Hout, Wout) and (Hp, Wp, Wout) masks; a Python walk of n_pix
        cells = max(cells, geom.h_p * n_pix, geom.h_p * geom.w_p * geom.w_out, 16 * n_pix)
    if mode == "literal":  # every tap of every output, scalar by scalar
        cells = max(cells, n_pix * geom.kh * geom.kw * geom.c_in, geom.n_in_padded + geom.n_out)
    if cells > MAX_SIMULATION_CELLS:
        raise LayerError(
            f"simulate: this layer needs {cells:,} cells, more than the simulator's limit of "
            f"{MAX_SIMULATION_CELLS:,} (see docs/RELIABILITY.md)"
        )


def simulate_rip(
    geom: ConvGeometry,
    layout: str = "padded",
    taps: str = "gather",
    order: str = "row",
    mode: str = "fast",
    tile: int | Sequence[int] = 1,
) -> int:
    """Minimum corruption-free gap (scalars) of a RiP traversal: the input right-aligned
    after the gap, the output written from index 0 (Eq. 4 and Eq. 39 layouts). ``tile``:
    how many consecutive output pixels of the traversal a kernel gathers before writing
    them (rip_conv2d_fast_s8 gathers 2, a pointwise rip_conv2d_fast_rq_s8 on DSP cores 3;
    a tile may span two rows, the last one may be shorter), or the tiles' sizes in order
    (the same kernel's sweeps of a filter larger than the flash cache,
    `kernel_variants.conv_sweep_tiles`)."""
    _check(layout, taps, order)
    if tile != 1 and taps != "gather":
        raise LayerError(f"tiles need gathered taps, got tile={tile} with {taps!r}")
    if isinstance(tile, int) and tile < 1:
        raise LayerError(f"tile must be >= 1, got {tile}")
    _check_size(geom, mode, herringbone=False)
    if mode == "literal":
        return _literal_rip(geom, layout, taps, order, tile)
    if mode != "fast":
        raise LayerError(f"mode must be 'fast' or 'literal', got {mode!r}")
    return _fast_rip(geom.transposed() if order == "col" else geom, layout, taps, tile)


def simulate_herringbone(geom: ConvGeometry, mode: str = "fast") -> int:
    """Minimum gap of the generalized herringbone traversal (Eq. 25) over the padded
    layout, taps read from the workspace: the peak debt of Eq. 26 as measured."""
    _check_size(geom, mode, herringbone=True)
    if mode == "literal":
        return _literal_herringbone(geom)
    if mode != "fast":
        raise LayerError(f"mode must be 'fast' or 'literal', got {mode!r}")
    return _fast_herringbone(geom)


def simulate_upsample(h_in: int, w_in: int, c: int, scale: int, reverse: bool = True) -> int:
    """Minimum gap of in-place nearest upsampling (Sec. I.1): 0 for the reverse traversal
    of Theorem 14; the forward traversal shows why it must run backwards."""
    for name, v in (("h_in", h_in), ("w_in", w_in), ("channels", c), ("scale", scale)):
        if v < 1:
            raise LayerError(f"{name} must be positive, got {v}")
    return _literal_upsample(h_in, w_in, c, scale, reverse)


@dataclass(frozen=True)
class DepthwiseRowsRun:
    """One execution of the row-streamed in-place depthwise schedule
    (rip_depthwise_conv2d_inplace_rows_fast_s8): ``corrupted`` reads that returned a byte
    other than the input byte they wanted; ``saved`` the (input row, output row before which
    it was copied into the ring) pairs, in order; ``writes_outside`` output bytes stored past
    the input's extent (the shared base holds the input, gap 0)."""

    corrupted: int
    saved: tuple[tuple[int, int], ...]
    writes_outside: int


def depthwise_row_spans(geom: ConvGeometry, any_row: bool) -> list[range]:
    """The order the row engine (rip_dw_row) stores one output row's pixels of a channel
    group in, as spans: every pixel of a span reads all its taps before the span's first
    store, then the span's pixels are stored left to right. The left border pixels
    [0, lo) are one span (their receptive fields gathered once into a padded segment), each
    interior pixel [lo, hi) its own (every tap inside the input: lo, hi as the kernel's
    rip_fast_interior), the right border pixels [hi, W_out) one span; a row with no
    interior (or no kernel row inside the input, ``any_row`` False) is one span."""
    w, w_out = geom.w_in, geom.w_out
    k, s, d, pad = geom.kw, geom.sw, geom.dw, geom.pad_left
    last = w - 1 - (k - 1) * d + pad
    hi = min(0 if last < 0 else last // s + 1, w_out)
    lo = min(-(-pad // s), hi)
    if not any_row or lo >= hi:
        return [range(w_out)] if w_out else []
    spans = [range(0, lo)] if lo > 0 else []
    spans += [range(x, x + 1) for x in range(lo, hi)]
    return spans + ([range(hi, w_out)] if hi < w_out else [])


def depthwise_engine_spans(
    geom: ConvGeometry, any_row: bool, group: int, width: int
) -> list[range]:
    """The spans (`depthwise_row_spans`' sense) in which the row engine stores one output
    row of a pass over ``width`` channels, on a core whose engine takes ``group`` channels
    a pass (kernels/rip_dw_row_engine.c, rip_dw_row). ARMv6-M (group 1): the border sides
    and interior pixels of `depthwise_row_spans`. DSP cores and hosts (group 4): a group of
    four channels in the column-pair engine's tiles where it runs the layer
    (`kernel_variants.dw_cols_tile`: each tile's columns read before its first store), else
    the tap-pair engine's border sides and pixels (up to 49 taps); a channel left over from
    the groups, one pixel at a time (rip_dw1_pixel: its taps, then its store)."""
    w_out = geom.w_out
    if group == 1:
        return depthwise_row_spans(geom, any_row)
    if width < group or geom.kh * geom.kw > kv.DW_STAGED_TAPS:
        return [range(x, x + 1) for x in range(w_out)]
    tile = kv.dw_cols_tile(geom.kh, geom.kw, geom.sw, geom.dw)
    if tile is None:
        return depthwise_row_spans(geom, any_row)
    return [range(x, min(x + tile, w_out)) for x in range(0, w_out, tile)]


def simulate_depthwise_rows(
    geom: ConvGeometry,
    ring_rows: int,
    channels: int | None = None,
    group: int = 4,
    saves: Collection[int] | None = None,
) -> DepthwiseRowsRun:
    """Execute the row-streamed in-place depthwise kernel's schedule over a tracked
    workspace: output base == input base (gap 0), one byte per (pixel, channel), each input
    byte tagged with its own index and each stored output byte overwriting its tag.

    Output rows go in order. Before output row r is stored, each input row its byte range
    reaches for the first time is copied (its tags, whatever they are by then) into ring slot
    ``saves % ring_rows`` when some tap of an output row >= r reads it (found by enumerating
    every tap, not by a formula), or, given ``saves`` (the input rows a baked schedule lists,
    `planning.scratch.depthwise_saved_rows`), when it is one of them; taps of a saved row read
    the ring slot the row went to,
    even after a later save reused it. Within a row the kernel's engine (rip_dw_row) takes
    one channel group at a time, ``group`` channels (four on DSP cores and hosts, one on
    ARMv6-M), then the C % group channels one at a time, and for each walks the pixels left
    to right in spans, every pixel of a span reading all its taps of the pass's channels
    before the span's first store (`depthwise_engine_spans`: the column-pair engine's tiles
    on DSP cores and hosts, a border side's pixels, single pixels).
    ``channels`` overrides the geometry's C (the schedule is the same for any C; a small
    one keeps large planes quick)."""
    h, w, c = geom.h_in, geom.w_in, channels or geom.c_in
    h_out, w_out = geom.h_out, geom.w_out
    row_bytes = w * c

    def tap_rows(r: int) -> list[int | None]:
        return [
            iy if 0 <= (iy := r * geom.sh - geom.pad_top + ky * geom.dh) < h else None
            for ky in range(geom.kh)
        ]

    readers: dict[int, list[int]] = {}
    for r in range(h_out):
        for iy in tap_rows(r):
            if iy is not None:
                readers.setdefault(iy, []).append(r)
    arena = np.arange(h * w * c, dtype=np.int64)
    ring = np.full((max(ring_rows, 1), row_bytes), -1, dtype=np.int64)
    slot: dict[int, int] = {}
    saved: list[tuple[int, int]] = []
    full = c - c % group
    groups = [(j, j + group) for j in range(0, full, group)] + [(j, j + 1) for j in range(full, c)]
    corrupted = outside = 0
    reached = 0  # input rows [0, reached) have been reached by some output row's bytes
    for r in range(h_out):
        end = (r + 1) * w_out * c
        while reached < h and reached * row_bytes < end:
            wanted = (
                any(q >= r for q in readers.get(reached, ())) if saves is None else reached in saves
            )
            if ring_rows > 0 and wanted:
                k = len(saved) % ring_rows
                ring[k] = arena[reached * row_bytes : (reached + 1) * row_bytes]
                slot[reached] = k
                saved.append((reached, r))
            reached += 1
        rows = tap_rows(r)
        any_row = any(iy is not None for iy in rows)
        for j0, j1 in groups:
            for span in depthwise_engine_spans(geom, any_row, group, j1 - j0):
                for x in span:
                    ix0 = x * geom.sw - geom.pad_left
                    for iy in rows:
                        if iy is None:
                            continue
                        src = ring[slot[iy]] if iy in slot else arena[iy * row_bytes :]
                        for kx in range(geom.kw):
                            ix = ix0 + kx * geom.dw
                            if not 0 <= ix < w:
                                continue
                            want = (iy * w + ix) * c + np.arange(j0, j1)
                            got = src[ix * c + j0 : ix * c + j1]
                            corrupted += int(np.count_nonzero(got != want))
                for x in span:
                    out = (r * w_out + x) * c
                    if out + j1 > arena.size:
                        outside += out + j1 - max(out + j0, arena.size)
                    arena[out + j0 : min(out + j1, arena.size)] = -1
    return DepthwiseRowsRun(corrupted, tuple(saved), outside)


def depthwise_plane_order(geom: ConvGeometry, channels: int, in_place: bool) -> str | None:
    """The order in which the column-pair engine runs the depthwise layer a group of four
    channels at a time over every output row (kernels/rip_dw_cols_engine.h,
    rip_dw_plane_cols_ok, the same test), or
    None where it runs the rows in turn: its kernel covered in one tile a row
    (`kernel_variants.dw_cols_tile`), no dilation down the columns, ``channels`` a positive
    multiple of 4. "whole" where a group's whole widened plane fits (a square kernel,
    `kernel_variants.dw_cols_whole_fits`): every read of a group before its first store.
    Else "window", which ``in_place`` takes only where every input row it widens for output
    row r from the workspace is one that no earlier output row has reached (i * W >=
    r * W_out: the window keeps the rows it widened for the previous output row). DSP cores
    and hosts only: ARMv6-M takes `depthwise_band_order`'s."""
    tile = kv.dw_cols_plane_tile(geom.kh, geom.kw, geom.sw, geom.dw)
    if tile is None or geom.dh != 1 or channels % 4 or channels == 0 or geom.w_out > tile:
        return None
    if kv.dw_cols_whole_fits(geom.kh, geom.kw, geom.sh, geom.sw, geom.h_out, geom.w_out):
        return "whole"
    keep = max(geom.kh - geom.sh, 0)
    for r in range(geom.h_out if in_place else 0):
        lo = r * geom.sh - geom.pad_top + (keep if r else 0)
        hi = min(r * geom.sh - geom.pad_top + geom.kh, geom.h_in)
        if any(i * geom.w_in < r * geom.w_out for i in range(max(lo, 0), hi)):
            return None
    return "window"


def simulate_depthwise_plane(
    geom: ConvGeometry, channels: int | None = None, order: str = "window"
) -> int:
    """Execute the column-pair engine's group order (rip_dw_plane_cols) with output base ==
    input base over a tracked workspace, one byte per (pixel, channel) tagged with its
    index: groups of four channels in turn. ``order`` "window": output rows in order within
    a group; for each row the tile's columns (``ncp`` pairs from column -pad_left, as the
    kernel widens them) of the window's kernel rows that the previous row's window did not
    hold are read from the workspace, the rest come from the kept window (read when
    widened), then the row's outputs of the group are stored. "whole": every row the group
    reads is read first, then its outputs are stored. Returns the reads that found a byte
    other than the input byte they want (0 proves the order at gap 0);
    `depthwise_plane_order` says where the kernel takes which."""
    h, w, c = geom.h_in, geom.w_in, channels or geom.c_in
    if c % 4 or geom.dh != 1 or order not in ("window", "whole"):
        raise LayerError("simulate: the group order takes groups of four channels, dh 1")
    ncp = geom.sw * ((geom.w_out + 1) // 2) + (geom.kw - 1) // 2
    lo_x, hi_x = max(-geom.pad_left, 0), min(-geom.pad_left + 2 * ncp, w)
    keep = max(geom.kh - geom.sh, 0)
    arena = np.arange(max(h * w, geom.h_out * geom.w_out) * c, dtype=np.int64)
    corrupted = 0

    def read(iy: int, lanes: np.ndarray) -> int:
        if not 0 <= iy < h or lo_x >= hi_x:
            return 0
        want = ((iy * w + np.arange(lo_x, hi_x)) * c)[:, None] + lanes
        return int(np.count_nonzero(arena[want] != want))

    for j0 in range(0, c, 4):
        lanes = np.arange(j0, j0 + 4)
        if order == "whole":
            rows = (geom.h_out - 1) * geom.sh + geom.kh
            corrupted += sum(read(i - geom.pad_top, lanes) for i in range(rows))
        for r in range(geom.h_out):
            if order == "window":
                for ky in range(keep if r else 0, geom.kh):
                    corrupted += read(r * geom.sh - geom.pad_top + ky, lanes)
            stored = (r * geom.w_out + np.arange(geom.w_out)) * c
            arena[stored[:, None] + lanes] = -1
    return corrupted


def depthwise_band_order(geom: ConvGeometry, in_place: bool) -> bool:
    """Whether ARMv6-M's engine runs the depthwise layer a channel at a time, its output rows
    in bands of `kernel_variants.dw1_band_rows` from a window of their input rows that keeps
    the rows the next band still reads (kernels/rip_dw_row_engine.c, rip_dw_plane_cols and
    rip_dw1_band_in_place_ok: the same test). ``in_place`` takes it only where every input
    row a band reads from the workspace (not kept) is one that the earlier bands' stores have
    not reached: i * W >= oy0 * W_out."""
    band = kv.dw1_band_rows(geom.kh, geom.kw, geom.sh, geom.sw, geom.dh, geom.dw, geom.w_out)
    if band == 0 or geom.h_out <= 0:
        return False
    reach = (geom.kh - 1) * geom.dh + 1
    keep = max(reach - geom.sh, 0)
    for oy0 in range(band, geom.h_out if in_place else 0, band):
        first = max(oy0 * geom.sh - geom.pad_top + keep, 0)
        if first < geom.h_in and first * geom.w_in < oy0 * geom.w_out:
            return False
    return True


def simulate_depthwise_band(geom: ConvGeometry, channels: int | None = None) -> int:
    """Execute ARMv6-M's channel order (rip_dw_plane_cols on ARMv6-M) with output base ==
    input base over a tracked workspace, one byte per (pixel, channel) tagged with its
    index: channels in turn; for each, bands of `kernel_variants.dw1_band_rows` output
    rows, each band's input rows (the window's columns from -pad_left) read from the
    workspace except the previous band's last reach - sh, which the window keeps (read when
    first fetched), then the band's outputs stored. Where the kernel gathers four channels'
    windows in one pass (`kernel_variants.dw1_group_channels`), each whole group of four
    is read before the first of its channels is stored. Returns the reads that found a byte
    other than the input byte they want (0 proves the order at gap 0);
    `depthwise_band_order` says where the kernel takes it."""
    h, w, c = geom.h_in, geom.w_in, channels or geom.c_in
    band = kv.dw1_band_rows(geom.kh, geom.kw, geom.sh, geom.sw, geom.dh, geom.dw, geom.w_out)
    if band == 0:
        raise LayerError("simulate: the channel order's window does not hold a row's window")
    wb = kv.dw1_window_row(geom.kw, geom.sw, geom.dw, geom.w_out)
    reach = (geom.kh - 1) * geom.dh + 1
    keep = max(reach - geom.sh, 0)
    lo_x, hi_x = max(-geom.pad_left, 0), min(-geom.pad_left + wb, w)
    arena = np.arange(max(h * w, geom.h_out * geom.w_out) * c, dtype=np.int64)
    corrupted = 0

    def read(iy: int, lanes: np.ndarray) -> int:
        if not (0 <= iy < h and lo_x < hi_x):
            return 0
        want = ((iy * w + np.arange(lo_x, hi_x)) * c)[:, None] + lanes
        return int(np.count_nonzero(arena[want] != want))

    group = kv.dw1_group_channels(
        geom.kh, geom.kw, geom.sh, geom.sw, geom.dh, geom.dw, geom.h_out, geom.w_out
    )
    grouped = c - c % group if group > 1 else 0  # gathered four at a time (the rest alone)
    for ch in range(c):
        if ch < grouped and ch % group == 0:  # the group's rows, all of them (one band)
            corrupted += sum(
                read(iy - geom.pad_top, np.arange(ch, ch + group))
                for iy in range((geom.h_out - 1) * geom.sh + reach)
            )
        for oy0 in range(0, geom.h_out, band):
            nb = min(band, geom.h_out - oy0)
            iy0 = oy0 * geom.sh - geom.pad_top
            for iy in range(iy0 + (keep if oy0 else 0), iy0 + (nb - 1) * geom.sh + reach):
                if ch >= grouped:
                    corrupted += read(iy, np.array([ch]))
            stored = (oy0 * geom.w_out + np.arange(nb * geom.w_out)) * c + ch
            arena[stored] = -1
    return corrupted


def simulate_depthwise_ring(
    geom: ConvGeometry,
    channels: int | None = None,
    group: int = 4,
    saves: Collection[int] | None = None,
) -> int:
    """The fewest ring rows with which the row-streamed in-place depthwise schedule (saving
    ``saves``, as `simulate_depthwise_rows`) reads no corrupted byte (searched upwards from
    0, each size executed)."""
    for rows in range(geom.h_in + 1):
        if simulate_depthwise_rows(geom, rows, channels, group, saves).corrupted == 0:
            return rows
    raise LayerError("simulate: no ring size makes the row-streamed depthwise schedule safe")


# ---- nearest resizing at any ratio --------------------------------------------------------------

MAX_RESIZE_PIXELS = 1 << 20  # one Python step a pixel: larger resizes stay out of place


def simulate_resize_nearest(
    n: int,
    input_hw: tuple[int, int],
    output_hw: tuple[int, int],
    ys: tuple[int, ...],
    xs: tuple[int, ...],
) -> int:
    """Execute RESIZE_NEAREST_NEIGHBOR's reverse traversal (rip_resize_nearest_s8 with
    ``reverse``) with output base == input base over a tracked workspace of pixels (every
    pixel moves whole): each input pixel tagged with its index, output pixels stored last to
    first, each reading the source pixel ``(b, ys[y], xs[x])`` the index maps give. Returns
    the number of reads that found a pixel already overwritten; 0 proves the same-base
    (gap 0) placement for these maps, integer scale or not (Theorem 14 is the integer case).
    """
    (h, w), (ho, wo) = input_hw, output_hw
    if min(n, h, w, ho, wo) < 1 or len(ys) != ho or len(xs) != wo:
        raise LayerError("resize needs positive extents and one source index per output")
    cells = max(n * h * w, n * ho * wo)
    if cells > MAX_RESIZE_PIXELS:
        raise LayerError(f"{cells} pixels exceed the resize simulation's {MAX_RESIZE_PIXELS}")
    tags = [*range(n * h * w), *([-1] * (cells - n * h * w))]
    corrupted = 0
    for b in range(n - 1, -1, -1):
        for y in range(ho - 1, -1, -1):
            row = (b * h + ys[y]) * w
            for x in range(wo - 1, -1, -1):
                src = row + xs[x]
                if tags[src] != src:
                    corrupted += 1
                tags[(b * ho + y) * wo + x] = -2  # now an output pixel
    return corrupted
