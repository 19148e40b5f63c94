"""What each in-place kernel does on two cores, access by access (issue 27): the programs
:mod:`rip.allocator.theory.two_core` executes. Every read and write is found by enumerating
the op's taps (as :mod:`rip.allocator.theory.simulate` does for one core), never from a
closed form. For small layers: each access is an explicit set of byte addresses.

The splits (docs/two-cores.md):

* **CONV_2D** (:func:`rip_program`): output channels. Both cores take the same tile of
  ``tile`` output pixels in row-major order (the fast kernel's pixel pair, or one pixel),
  each gathers the tile's whole receptive fields into its own scratch and writes its own
  channels of the tile's pixels: core A channels [0, split), core B [split, C_out). A unit
  is ``unit_tiles`` consecutive tiles; rule ``gather``. With ``taps="workspace"`` (tile 1)
  each channel reads its taps from the workspace just before it is written (Eq. 6).
* **Pooling** (:func:`rip_program` with ``per_channel``): the same, each core reading only
  its own channels of the window.
* **DEPTHWISE_CONV_2D, channel in place** (:func:`depthwise_channel_program`): channel
  groups; each core computes a group's whole output plane into its own plane buffer from
  that group's input channels, then stores it over them. No synchronisation.
* **DEPTHWISE_CONV_2D, row-streamed** (:func:`depthwise_rows_program`): channels; each core
  runs the row engine over its own channels, saving its own channels of the input rows the
  one-core schedule saves into its own ring. No synchronisation.
* **Elementwise** (:func:`elementwise_program`): the flat index range in two halves.
* **RESIZE_NEAREST_NEIGHBOR, reversed** (:func:`resize_program`): channels, each core
  walking the output backwards over its own channels (Theorem 14 per channel).
* **Fused chains** (:func:`fused_program`): every row compute of the one-core schedule
  split by output channels, rule ``block``; the last compute of a step that also reads X
  (a one-op chain, or the residual ADD) computes into per-core scratch and a separate unit
  stores the row.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from rip.allocator.theory.fused import POOL_KINDS, Chain, fused_schedule
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import (
    LAYOUTS,
    TAPS,
    _stored_axes,
    _taps,
    depthwise_engine_spans,
    raster,
)
from rip.allocator.theory.two_core import BLOCK, GATHER, IN, OUT, Access, TwoCoreProgram, Unit
from rip.core.errors import LayerError
from rip.core.operators import Op


def default_split(c: int) -> int:
    """Core A's channels of ``c``: half, rounded up to an even count from four channels on
    (the fast conv kernel computes output channels in pairs), so A = [0, split) and
    B = [split, c) both hold a whole number of pairs. One channel stays on core A."""
    if c < 4:
        return (c + 1) // 2
    return 2 * (-(-c // 4))


def pair_split(c: int) -> int:
    """Core A's output channels of a fused chain's CONV_2D stage as the kernel splits them
    (kernels/rip_cores.h, rip_share_channels): `default_split` from four channels on, fewer
    stay whole on core A."""
    return c if c < 4 else default_split(c)


def group_split(c: int) -> int:
    """Core A's channels of a depthwise layer or stage as the kernel splits them
    (rip_share_groups): the first half of the groups of four, rounded up; the rest, any
    last channels outside a group included, on core B; fewer than two groups stay whole on
    core A."""
    groups = c // 4
    return c if groups < 2 else 4 * (-(-groups // 2))


def shares(c: int, split: int | None) -> tuple[tuple[int, int], tuple[int, int]]:
    """The channel ranges of core A and core B."""
    split = default_split(c) if split is None else split
    if not 0 <= split <= c:
        raise LayerError(f"two cores: split {split} is outside the {c} channels")
    return (0, split), (split, c)


def _tags():
    return itertools.count(1)


# --------------------------------------------------------------------------------------
# Convolution and pooling
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RipSchedule:
    """How a CONV_2D or pool kernel shares its work (module docstring): the input
    ``layout``, where it reads its ``taps`` (Eq. 6), ``tile`` output pixels gathered
    together, ``unit_tiles`` tiles a synchronisation unit, core A's ``split`` output
    channels (None: :func:`default_split`), and ``per_channel`` reads (a pool: output
    channel c reads input channel c only)."""

    layout: str = "dense"
    taps: str = "gather"
    tile: int = 1
    unit_tiles: int = 1
    split: int | None = None
    per_channel: bool = False

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS or self.taps not in TAPS:
            raise LayerError(f"two cores: no {self.layout} layout with {self.taps} taps")
        if self.tile < 1 or self.unit_tiles < 1 or (self.taps == "workspace" and self.tile != 1):
            raise LayerError("two cores: tile and unit positive, workspace taps with tile 1")

    @property
    def unit_pixels(self) -> int:
        return self.tile * self.unit_tiles

    def check_lag(self, lag: int | None) -> None:
        """L = 0 needs units that read everything before they store (one gathered tile):
        otherwise each core's first store waits for the other's later reads."""
        if lag is not None and (
            lag < 0 or (lag == 0 and (self.unit_tiles > 1 or self.taps != "gather"))
        ):
            raise LayerError(f"two cores: lag {lag} deadlocks (a unit must read before it writes)")

    def check(self, geom: ConvGeometry) -> None:
        if self.per_channel and geom.c_in != geom.c_out:
            raise LayerError("two cores: a per-channel op keeps its channels")


PIXELS = RipSchedule()  # one pixel at a time (the GEMV and reference kernels)
PIXEL_PAIRS = RipSchedule(tile=2)  # rip_conv2d_fast_(rq_)s8's pairs (CONV_TILE_PIXELS)


def rip_program(geom: ConvGeometry, schedule: RipSchedule = PIXELS) -> TwoCoreProgram:
    """CONV_2D (or, ``per_channel``, a pool) on two cores in the RiP layout: the output
    from 0, the input stored (``layout``) from ``gap``; output channels split at
    ``split``; a unit is ``unit_tiles`` tiles of ``tile`` pixels in row-major order
    (module docstring)."""
    schedule.check(geom)
    layout, taps, tile = schedule.layout, schedule.taps, schedule.tile
    split, per_channel = schedule.split, schedule.per_channel
    sy, sx = _stored_axes(geom, layout)
    c_in, c_out = geom.c_in, geom.c_out
    order = raster(geom.h_out, geom.w_out, "row")
    pixels = [sorted({y * sx.n + x for y, x in _taps(geom, sy, sx, r, c)}) for r, c in order]
    n, per = len(order), schedule.unit_pixels
    tag = _tags()

    def read_bytes(pix: Collection[int], ch: range) -> np.ndarray:
        p = np.asarray(sorted(pix), dtype=np.int64)
        return (p[:, None] * c_in + np.asarray(ch, dtype=np.int64)[None, :]).ravel()

    cores = []
    for lo, hi in shares(c_out, split):
        units: list[Unit] = []
        reads_of = range(lo, hi) if per_channel else range(c_in)
        for start in range(0, n, per):
            unit: list[Access] = []
            for t0 in range(start, min(start + per, n), tile):
                tile_px = range(t0, min(t0 + tile, n))
                if hi == lo:
                    continue  # no channels: this core does nothing
                if taps == "gather":
                    field = set().union(*(pixels[k] for k in tile_px))
                    unit.append(Access.read(IN, read_bytes(field, reads_of)))
                    unit += [Access.store(OUT, k * c_out + np.arange(lo, hi), next(tag))
                             for k in tile_px]  # fmt: skip
                else:  # each channel reads its taps from the workspace, then is written;
                    # the taps must survive until the last channel is written (Eq. 6)
                    for k in tile_px:
                        for ch in range(lo, hi):
                            own = range(ch, ch + 1) if per_channel else reads_of
                            unit.append(Access.read(IN, read_bytes(pixels[k], own)))
                            unit.append(Access.store(OUT, [k * c_out + ch], next(tag)))
                        unit.append(Access.read(IN, read_bytes(pixels[k], reads_of)))
            units.append(tuple(unit))
        cores.append(tuple(units))
    n_in = sy.n * sx.n * c_in
    kind = "pool" if per_channel else "conv"
    name = f"{kind} {layout} {taps} tile {tile} unit {per}"
    return TwoCoreProgram(name, (cores[0], cores[1]), n_in, geom.n_out, GATHER)


# --------------------------------------------------------------------------------------
# Depthwise convolution in place (gap 0)
# --------------------------------------------------------------------------------------
def _check_channel_in_place(geom: ConvGeometry) -> None:
    if geom.c_out != geom.c_in or geom.h_out * geom.w_out > geom.h_in * geom.w_in:
        raise LayerError("two cores: channel in place needs C_out = C_in and no larger output")


def _groups(lo: int, hi: int, group: int) -> list[tuple[int, int]]:
    """A core's channels [lo, hi) as the row engine takes them: whole groups, then singles."""
    full = lo + (hi - lo) // group * group
    return [(j, j + group) for j in range(lo, full, group)] + [(j, j + 1) for j in range(full, hi)]


def depthwise_channel_program(
    geom: ConvGeometry, split: int | None = None, group: int = 1
) -> TwoCoreProgram:
    """Channel in-place depthwise (TinyEngine's scheme, dense layout, output base = input
    base): each core takes its channels ``group`` at a time, reads every tap of the group's
    whole output plane (into its own plane buffer) and then stores the plane over the
    group's channels. One unit per group (the cores never wait for each other)."""
    _check_channel_in_place(geom)
    sy, sx = _stored_axes(geom, "dense")
    c = geom.c_in
    order = raster(geom.h_out, geom.w_out, "row")
    read_px = sorted({y * sx.n + x for r, cc in order for y, x in _taps(geom, sy, sx, r, cc)})
    px = np.asarray(read_px, dtype=np.int64)
    tag = _tags()
    cores = []
    for lo, hi in shares(c, split):
        units = []
        for j0, j1 in _groups(lo, hi, group):
            ch = np.arange(j0, j1)
            outs = (np.arange(len(order))[:, None] * c + ch[None, :]).ravel()
            units.append((Access.read(IN, (px[:, None] * c + ch[None, :]).ravel()),
                          Access.store(OUT, outs, next(tag))))  # fmt: skip
        cores.append(units)
    return _equal_units("depthwise channel", cores, geom.n_in_dense, geom.n_out)


def _equal_units(
    name: str, cores: Sequence[Sequence[Unit]], n_in: int, n_out: int, extend: bool = False
) -> TwoCoreProgram:
    """A program for unsynchronised cores: the shorter unit list padded with empty units."""
    most = max(len(u) for u in cores)
    padded = [tuple(u) + ((),) * (most - len(u)) for u in cores]
    return TwoCoreProgram(name, (padded[0], padded[1]), n_in, n_out, GATHER, extend=extend)


def depthwise_rows_program(
    geom: ConvGeometry,
    ring_rows: int,
    split: int | None = None,
    group: int = 4,
    saves: Collection[int] | None = None,
) -> TwoCoreProgram:
    """The row-streamed in-place depthwise kernel (`simulate.simulate_depthwise_rows`'s
    schedule) on two cores: each core runs it over its own channels, with its own ring of
    ``ring_rows`` input rows holding its own channels. Output row r: first the saves of the
    input rows r's bytes reach for the first time (wanted when some output row >= r reads
    them, or, given ``saves``, when listed), then per channel group the pixels in the
    engine's spans (`simulate.depthwise_engine_spans`), each span reading all its pixels' taps
    (from the ring for a saved row) before their stores, left to right."""
    _check_channel_in_place(geom)
    h, w, c = geom.h_in, geom.w_in, geom.c_in
    h_out, w_out = geom.h_out, geom.w_out
    row_bytes = w * c

    def tap_rows(r: int) -> list[int]:
        rows = (r * geom.sh - geom.pad_top + ky * geom.dh for ky in range(geom.kh))
        return [iy for iy in rows if 0 <= iy < h]

    readers: dict[int, list[int]] = {}
    for r in range(h_out):
        for iy in tap_rows(r):
            readers.setdefault(iy, []).append(r)
    tag = _tags()
    cores = []
    for core, (lo, hi) in enumerate(shares(c, split)):
        ring = f"ring{core}"
        ch = np.arange(lo, hi)
        saved_tag: dict[int, tuple[int, int]] = {}  # input row -> (slot, tag)
        n_saved = reached = 0
        units = []
        for r in range(h_out):
            unit: list[Access] = []
            end = (r + 1) * w_out * c
            while reached < h and reached * row_bytes < end:
                wanted = (
                    any(q >= r for q in readers.get(reached, ()))
                    if saves is None
                    else reached in saves
                )
                if ring_rows > 0 and wanted and hi > lo:
                    slot, t = n_saved % ring_rows, next(tag)
                    cols = (np.arange(w)[:, None] * c + ch[None, :]).ravel()
                    unit.append(Access.read(IN, reached * row_bytes + cols))
                    unit.append(Access.store(ring, slot * row_bytes + cols, t))
                    saved_tag[reached] = (slot, t)
                    n_saved += 1
                reached += 1
            any_row = bool(tap_rows(r))
            for j0, j1 in _groups(lo, hi, group):
                gch = np.arange(j0, j1)
                for span in depthwise_engine_spans(geom, any_row, group, j1 - j0):
                    for x in span:
                        for iy in tap_rows(r):
                            for kx in range(geom.kw):
                                ix = x * geom.sw - geom.pad_left + kx * geom.dw
                                if not 0 <= ix < w:
                                    continue
                                if iy in saved_tag:
                                    slot, t = saved_tag[iy]
                                    at = slot * row_bytes + ix * c + gch
                                    unit.append(Access.read(ring, at, t))
                                else:
                                    unit.append(Access.read(IN, iy * row_bytes + ix * c + gch))
                    for x in span:
                        unit.append(Access.store(OUT, (r * w_out + x) * c + gch, next(tag)))
            units.append(tuple(unit))
        cores.append(units)
    ring_size = max(ring_rows, 1) * row_bytes
    return TwoCoreProgram(
        "depthwise rows",
        (tuple(cores[0]), tuple(cores[1])),
        geom.n_in_dense,
        geom.n_out,
        GATHER,
        rings=(("ring0", ring_size), ("ring1", ring_size)),
    )


# --------------------------------------------------------------------------------------
# Elementwise and nearest resizing (gap 0)
# --------------------------------------------------------------------------------------
def elementwise_program(n: int, block: int = 4, split: int | None = None) -> TwoCoreProgram:
    """An elementwise op over ``n`` bytes in place (output index i over input index i):
    core A the indices [0, split), core B [split, n), ``block`` at a time (each block read,
    then written)."""
    if n < 1 or block < 1:
        raise LayerError("two cores: an elementwise op needs a positive size and block")
    tag = _tags()
    cores = []
    for lo, hi in shares(n, n // 2 if split is None else split):
        cores.append([
            (Access.read(IN, range(i, min(i + block, hi))),
             Access.store(OUT, range(i, min(i + block, hi)), next(tag)))
            for i in range(lo, hi, block)
        ])  # fmt: skip
    return _equal_units("elementwise", cores, n, n)


def resize_program(
    n: int,
    input_hw: tuple[int, int],
    output_hw: tuple[int, int],
    c: int,
    ys: Sequence[int],
    xs: Sequence[int],
    split: int | None = None,
) -> TwoCoreProgram:
    """RESIZE_NEAREST_NEIGHBOR reversed (Theorem 14; `simulate.simulate_resize_nearest`'s
    traversal) over a same-base workspace: output pixels last to first, each core copying
    its own channels of source pixel (b, ys[y], xs[x]) to output pixel (b, y, x)."""
    (h, w), (ho, wo) = input_hw, output_hw
    if min(n, h, w, ho, wo, c) < 1 or len(ys) != ho or len(xs) != wo:
        raise LayerError("two cores: resize needs positive extents and one index per output")
    tag = _tags()
    cores = []
    for lo, hi in shares(c, split):
        ch = np.arange(lo, hi)
        units = []
        for b in range(n - 1, -1, -1):
            for y in range(ho - 1, -1, -1):
                for x in range(wo - 1, -1, -1):
                    src = ((b * h + ys[y]) * w + xs[x]) * c
                    dst = ((b * ho + y) * wo + x) * c
                    units.append(
                        (Access.read(IN, src + ch), Access.store(OUT, dst + ch, next(tag)))
                    )
        cores.append(units)
    return _equal_units("resize reversed", cores, n * h * w * c, n * ho * wo * c, extend=True)


# --------------------------------------------------------------------------------------
# Fused chains
# --------------------------------------------------------------------------------------
def _layer_reads(chain: Chain, layer: int, out_lo: int, out_hi: int) -> range:
    """Input channels that output channels [out_lo, out_hi) of a layer read: all of them
    for a convolution, their own (or, at a depth multiplier m, channel // m) otherwise."""
    op = chain.ops[layer]
    g = op.geom
    if out_hi == out_lo:
        return range(0)
    if op.kind == Op.CONV_2D:
        return range(g.c_in)
    mult = g.c_out // g.c_in if op.kind not in POOL_KINDS else 1
    return range(out_lo // mult, (out_hi - 1) // mult + 1)


def _read_cols(n_in: int, n_out: int, k: int, s: int, d: int, pad: int) -> list[int]:
    return sorted({o * s + j * d - pad for o in range(n_out) for j in range(k)} & set(range(n_in)))


def store_split(chain: Chain) -> bool:
    """Whether the last compute of a step also reads X (a one-op chain reads its window,
    the residual ADD its X row): then it computes its row into per-core scratch and a
    separate unit stores it, so that no core stores over X bytes the other still reads in
    the same step."""
    return chain.residual or chain.length == 1


def fused_program(
    chain: Chain, splits: Sequence[int] | None = None, split_store: bool | None = None
) -> TwoCoreProgram:
    """A fused chain on two cores (module docstring): each row compute of
    :func:`fused_schedule` split by output channels (``splits[l]`` channels of layer l on
    core A), rule ``block``. Each core reads every input channel its channels need, from X
    (layer 0) or from the ring of the layer below, the bytes of the columns the layer's
    taps reach; ring bytes are expected to hold what the producing core stored for that
    row (row r of T_{l+1} in its schedule slot). ``split_store`` (default
    :func:`store_split`) puts the stores of Y's rows in units of their own."""
    sched = fused_schedule(chain)
    last = chain.length - 1
    splits_: list[int | None] = [None] * chain.length if splits is None else list(splits)
    share = [shares(op.geom.c_out, s) for op, s in zip(chain.ops, splits_, strict=True)]
    split = store_split(chain) if split_store is None else split_store
    ring_names = [f"ring{i}" for i in range(last)]
    tag = _tags()
    stored: dict[tuple[int, int, int], int] = {}  # (layer, row, core) -> tag of its ring write
    cores: list[list[Unit]] = [[], []]

    def cols_of(layer: int) -> np.ndarray:
        g = chain.ops[layer].geom
        return np.asarray(_read_cols(g.w_in, g.w_out, g.kw, g.sw, g.dw, g.pad_left), np.int64)

    def row_bytes(c: int, cols: np.ndarray, ch: range) -> np.ndarray:
        return (cols[:, None] * c + np.asarray(ch, dtype=np.int64)[None, :]).ravel()

    def expected(layer: int, row: int, cols: np.ndarray, ch: range) -> np.ndarray:
        """Per byte of (cols x ch) of row ``row`` of layer ``layer``'s output, the tag of the
        ring write that stored it."""
        tags = np.asarray(
            [stored.get((layer, row, 0 if k < share[layer][0][1] else 1), -3) for k in ch]
        )
        return np.broadcast_to(tags[None, :], (cols.size, len(ch))).ravel()

    def compute(layer: int, v: int, reads_rows: Sequence[int], core: int) -> tuple[Unit, Unit]:
        """Core ``core``'s share of computing row v of layer ``layer``: its reads and ring
        write, and the store of Y's row when this is the last layer (in this unit, or
        returned apart when the store is split off)."""
        g = chain.ops[layer].geom
        lo, hi = share[layer][core]
        if hi == lo:
            return (), ()
        unit: list[Access] = []
        reads = _layer_reads(chain, layer, lo, hi)
        cols = cols_of(layer)
        for y in reads_rows if len(reads) else ():
            if layer == 0:
                at = y * g.w_in * g.c_in + row_bytes(g.c_in, cols, reads)
                unit.append(Access.read(IN, at))
            else:
                at = sched.slot(layer - 1, y) * g.w_in * g.c_in + row_bytes(g.c_in, cols, reads)
                want = expected(layer - 1, y, cols, reads)
                unit.append(Access.read(ring_names[layer - 1], at, want))
        out_cols = np.arange(g.w_out, dtype=np.int64)
        if layer < last:
            t = next(tag)
            stored[(layer, v, core)] = t
            ring_at = sched.slot(layer, v) * g.w_out * g.c_out
            unit.append(
                Access.store(
                    ring_names[layer], ring_at + row_bytes(g.c_out, out_cols, range(lo, hi)), t
                )
            )
            return tuple(unit), ()
        if chain.residual:  # the ADD reads X's row v, its own channels
            at = v * g.w_out * g.c_out + row_bytes(g.c_out, out_cols, range(lo, hi))
            unit.append(Access.read(IN, at))
        store = tuple(
            Access.store(OUT, (v * g.w_out + x) * g.c_out + np.arange(lo, hi), next(tag))
            for x in range(g.w_out)
        )
        return (tuple(unit), store) if split else (tuple(unit) + store, ())

    for comp in sched.computes():
        parts = [compute(comp.layer, comp.row, comp.reads, core) for core in (0, 1)]
        for core in (0, 1):
            cores[core].append(parts[core][0])
        if comp.layer == last and split:
            for core in (0, 1):
                cores[core].append(parts[core][1])
    rings = tuple(
        (name, rows * op.geom.w_out * op.geom.c_out)
        for name, rows, op in zip(ring_names, sched.ring_rows, chain.ops, strict=False)
    )
    return TwoCoreProgram(
        "fused " + chain.describe(),
        (tuple(cores[0]), tuple(cores[1])),
        chain.n_in,
        chain.n_out,
        BLOCK,
        rings=rings,
    )
