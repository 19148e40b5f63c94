"""Closed-form gaps of the two-core in-place schedules (issue 27), checked against the
two-core corruption simulator (:mod:`rip.allocator.theory.two_core_fast`, and on small
layers the exhaustive search of :mod:`rip.allocator.theory.two_core`) by the sweep of
:mod:`rip.allocator.theory.sweep_two_core`. docs/two-cores.md is the summary.

**Convolution and pooling** (split by output channels, units of P = tile x unit_tiles
pixels in row-major order, rule ``gather``, lag L). Write F(k) for the lowest stored input
pixel read by any output pixel of raster index >= k (Eq. 40's next live input, one pixel
earlier: the current output included) and n = H_out W_out. When a core stores its channels
of unit j (pixels below min((j+1) P, n)), the other core may not yet have read anything of
units j - L + 1 on, whose lowest input is F((j - L + 1) P), and its own later reads begin
no lower. So, with k = (j - L + 1) P,

    D_L(k) = min(k + L P, n) C_out - C_in F(k),                         k in {0, P, 2P, ...}
    Delta_2(L) = max( 0, N_out - N_in, max_{k < n, F(k) finite} D_L(k) ),

the upper core's last byte of the unit against the lower core's first unread input byte
(Eq. 7 with the write frontier L units ahead of the read frontier); units with
j - L + 1 <= 0 give k = 0. It holds for any split that leaves both cores a channel (the
core holding the top channels ends each pixel), for pooling (C_in = C_out, each core reading
its own channels: the top core's last byte still faces the bottom core's first), and for
taps read from the workspace (Eq. 6) when L >= 1: a pixel's own taps are then among the
other core's unread ones anyway, so sigma costs nothing more. L = 0 (a core stores unit j
once the other has *gathered* unit j) needs units of one tile and gives the one-core gap of
that tile, Theorem 13's per-pixel gather gap for tile 1. No synchronisation (L = infinity)
gives N_out - C_in F(0): the whole output below the input.

Evaluation (:func:`two_core_rip_gap`): D_L is the one-core debt of Lemma 12 with the
output frontier moved, so it is convex on each cell of Theorem 13's breakpoint grid
(F is the minimum of affine functions there) except for the kink of the clamp at
k* = n - L P; its maximum over the lattice k = 0 mod P of a cell lies within P of the cell's
corners. The candidates are every row within P + 1 of a row breakpoint (or of k*'s row),
times every column next to a column breakpoint (or to k*'s column), moved to the nearest
lattice column on either side, plus k = 0 and the first lattice point past k*:
O(P k_h k_w) evaluations of F, each O(k).

**The simple bound** (:func:`two_core_rip_gap_simple`): D_L(k) <= D_0(k) + L P C_out, so
Delta_2(L) <= Delta_1 + L P C_out with Delta_1 the one-core gap (the planner's per-pixel
gather gap, Theorem 13, is never below the tile's). Safe; for single-pixel units equal
where the one-core maximum sits at least L pixels before the end.

**Same-base kinds** (channel in-place and row-streamed depthwise, elementwise, reversed
nearest resizing): split by channels (elementwise: by index), every byte a core stores
lands on a byte only its own reads touch, so the gap stays 0 with no synchronisation at
all. **Fused chains**: split by channels per row compute, rule ``block`` with L = 1 (the
other core's half of a ring row must be stored before it is read); the gap and the rings
are the one-core ones (:func:`fused_two_core_gap`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from rip.allocator.theory.bounds import INF, _Axis, check_dense, rip_dense_gap, rip_padded_gap
from rip.allocator.theory.fused import Chain, fused_gap, ring_rows
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.two_core_programs import PIXELS, RipSchedule, shares
from rip.core.errors import LayerError
from rip.core.operators import Op
from rip.core.terms import InPlaceKind


def _stored(geom: ConvGeometry, layout: str) -> tuple[_Axis, _Axis, int, int]:
    """Row axis, column axis, stored width and stored input bytes of a layout."""
    if layout == "padded":
        rows = _Axis(geom.h_p, geom.h_out, geom.kh, geom.sh, geom.dh, 0)
        cols = _Axis(geom.w_p, geom.w_out, geom.kw, geom.sw, geom.dw, 0)
        return rows, cols, geom.w_p, geom.n_in_padded
    if layout == "dense":
        check_dense(geom)
        rows = _Axis(geom.h_in, geom.h_out, geom.kh, geom.sh, geom.dh, geom.pad_top)
        cols = _Axis(geom.w_in, geom.w_out, geom.kw, geom.sw, geom.dw, geom.pad_left)
        return rows, cols, geom.w_in, geom.n_in_dense
    raise LayerError(f"layout must be 'padded' or 'dense', got {layout!r}")


def lead_pixels(geom: ConvGeometry, lag: int | None, schedule: RipSchedule) -> int:
    """How far (output pixels) a core's stores may run ahead of the other core's reads:
    L units of P pixels, the whole output without synchronisation."""
    n = geom.h_out * geom.w_out
    return n if lag is None else min(lag * schedule.unit_pixels, n)


def two_core_rip_gap(geom: ConvGeometry, lag: int | None, schedule: RipSchedule = PIXELS) -> int:
    """Delta_2(L) of the module docstring (bytes): CONV_2D or pooling split by output
    channels over both cores as ``schedule`` says (any split leaving both cores a channel
    gives this gap), lag ``lag`` (None: unsynchronised). Exact (tight against the
    simulator). With one output channel there is nothing to split: the op stays on one
    core."""
    schedule.check_lag(lag)
    layout = schedule.layout
    if geom.c_out < 2:  # nothing to split: one core runs it, its gap is the tile's
        if schedule.taps == "workspace":
            return one_core_gap(geom, layout, "workspace")
        lag, schedule = 0, replace(schedule, unit_tiles=1)
    rows, cols, w_s, n_in = _stored(geom, layout)
    h_out, w_out, n = geom.h_out, geom.w_out, geom.h_out * geom.w_out
    per = schedule.unit_pixels
    lead = lead_pixels(geom, lag, schedule)
    all_cols = cols.first_read(0, onwards=True)
    row_here, row_later, col_on = (
        functools.cache(lambda r: rows.first_read(r, onwards=False) * w_s),
        functools.cache(lambda r: rows.first_read(r + 1, onwards=True) * w_s + all_cols),
        functools.cache(lambda c: cols.first_read(c, onwards=True)),
    )

    def first(k: int) -> float:  # F(k): this row from column c on, or any later row
        r, c = divmod(k, w_out)
        return min(row_here(r) + col_on(c), row_later(r))

    k_star = n - lead  # from here on every store ends at n
    row_pts = rows.breakpoints() | {k_star // w_out, 0, h_out - 1}
    col_pts = cols.breakpoints() | {k_star % w_out, (k_star - 1) % w_out, 0, w_out - 1}
    near_rows = {r + d for r in row_pts for d in range(-per - 1, per + 2)} & set(range(h_out))
    near_cols = {c + d for c in col_pts for d in (-1, 0, 1)} & set(range(w_out))
    ks = {0, -(-max(k_star, 0) // per) * per}
    for r in near_rows:
        for c in near_cols:
            off = -(r * w_out + c) % per  # the lattice columns nearest c on either side
            ks.update(r * w_out + cc for cc in (c + off, c + off - per) if 0 <= cc < w_out)
    worst = -INF
    for k in ks:
        if k < n and (f := first(k)) != INF:
            worst = max(worst, min(k + lead, n) * geom.c_out - geom.c_in * f)
    return int(max(0, geom.n_out - n_in, worst))


def one_core_gap(geom: ConvGeometry, layout: str = "dense", taps: str = "gather") -> int:
    """The one-core per-pixel gap (Theorem 4 or 13): with gathered taps what the planner
    uses, and no tile's gap is above it."""
    return rip_padded_gap(geom, taps) if layout == "padded" else rip_dense_gap(geom, taps)


def two_core_rip_gap_simple(
    geom: ConvGeometry, lag: int | None, schedule: RipSchedule = PIXELS
) -> int:
    """The simple safe bound Delta_1 + L P C_out (module docstring); without
    synchronisation N_out (the whole output below the input)."""
    schedule.check_lag(lag)
    if geom.c_out < 2:  # one core
        return one_core_gap(geom, schedule.layout, schedule.taps)
    one = one_core_gap(geom, schedule.layout)  # from L = 1 workspace taps cost no more
    if lag is None:
        return max(geom.n_out, one)
    return one + lead_pixels(geom, lag, schedule) * geom.c_out


# --------------------------------------------------------------------------------------
# Every in-place kind
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TwoCorePlan:
    """How one in-place kind shares its work (docs/two-cores.md): what each core takes,
    what one lag unit is, the synchronisation rule, and the smallest lag it admits (None:
    the cores never wait for each other within the op)."""

    kind: InPlaceKind
    split: str
    unit: str
    rule: str
    min_lag: int | None


TWO_CORE_PLANS: dict[InPlaceKind, TwoCorePlan] = {
    InPlaceKind.RIP: TwoCorePlan(
        InPlaceKind.RIP,
        "output channels [0, split) on core 0, [split, C_out) on core 1, same pixels",
        "P output pixels in row-major order (the kernel's tile: a pixel pair for CONV_2D)",
        "store unit j after the other core gathered units 0..j-L",
        0,
    ),
    InPlaceKind.CHANNEL: TwoCorePlan(
        InPlaceKind.CHANNEL,
        "channel groups [0, split) on core 0, the rest on core 1, each with its own plane "
        "buffer (or ring of rows, row-streamed)",
        "none",
        "none: a core stores only over channels it alone reads",
        None,
    ),
    InPlaceKind.ELEMENTWISE: TwoCorePlan(
        InPlaceKind.ELEMENTWISE,
        "flat index halves [0, n/2) and [n/2, n)",
        "none",
        "none: index i is read and stored by one core",
        None,
    ),
    InPlaceKind.REVERSE: TwoCorePlan(
        InPlaceKind.REVERSE,
        "channels [0, split) on core 0, the rest on core 1, both walking backwards",
        "none",
        "none: a core stores only over channels it alone reads",
        None,
    ),
    InPlaceKind.FUSED: TwoCorePlan(
        InPlaceKind.FUSED,
        "output channels of every row compute, per layer; the last row compute that also "
        "reads X stores in a unit of its own",
        "one row compute of the one-core schedule (or one row store)",
        "start unit i after the other core finished units 0..i-1 (L = 1)",
        1,
    ),
}


def fused_two_core_gap(chain: Chain, lag: int = 1) -> int:
    """The gap of a fused chain on two cores (`two_core_programs.fused_program`): at L = 1
    the one-core `fused_gap` (at the store of Y row r the other core has finished step r's
    reads of X, and its rings hold what the one-core ring holds). L >= 2 breaks the
    schedule (a ring row read before the other core stored its half)."""
    if lag != 1:
        raise LayerError(f"two cores: a fused chain needs lag 1, got {lag}")
    return fused_gap(chain)


def fused_two_core_rings(chain: Chain) -> tuple[int, ...]:
    """Ring rows of a fused chain on two cores at L = 1: the one-core `ring_rows` (a slot
    is overwritten only in a unit after every read of its old row)."""
    return ring_rows(chain)


# --------------------------------------------------------------------------------------
# Scratch: per core
# --------------------------------------------------------------------------------------
Dims = tuple[int, int, int, int]
PER_CHANNEL_KINDS = (Op.DEPTHWISE_CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D)


def core_dims(
    kind: str,
    input_dims: Dims,
    filter_dims: Dims,
    output_dims: Dims,
    core: int,
    split: int | None = None,
) -> tuple[Dims, Dims, Dims]:
    """The (input, filter, output) dims of core ``core``'s share of an op (NHWC, filter
    [O, KH, KW, I] or depthwise [1, KH, KW, C]): each core's scratch is the one-core
    formula (`planning.scratch.kernel_scratch_bytes`, the kernels' ``_get_buffer_size``)
    on them, in a buffer of its own. A CONV_2D core gathers whole receptive fields (all
    C_in) for its C_X output channels; a depthwise or pool core sees only its C_X channels
    (one output plane, or its ring of rows over C_X channels; 4 C_X accumulator bytes);
    elementwise and resizing use none."""
    lo, hi = shares(output_dims[3], split)[core]
    c = hi - lo
    if kind == Op.CONV_2D:
        return input_dims, (c, *filter_dims[1:]), (*output_dims[:3], c)
    if kind in PER_CHANNEL_KINDS:
        return (*input_dims[:3], c), (*filter_dims[:3], c), (*output_dims[:3], c)
    return input_dims, filter_dims, output_dims
