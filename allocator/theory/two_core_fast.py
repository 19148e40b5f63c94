"""The two-core corruption simulator at pixel granularity, for layers of any size (issue 27):
the same semantics as the exhaustive search of :mod:`rip.allocator.theory.two_core`, with
numpy, never a closed form.

What it computes is the pairwise rule that the exhaustive search establishes on small
layers: a write by core X in unit j can land before a read by core Y of a unit m in some
interleaving exactly when m >= j - L + 1 (rule ``gather``: X's first write of unit j waits
for Y's reads of units 0..j-L; rule ``block``: X starts unit j once Y finished 0..j-L), and
before a read of its own exactly when that read comes later in its program. So when X
stores a byte range, the bytes still live are the other core's reads from unit j - L + 1
on and its own later reads; the lowest of them is X's next live input, and the gap must
cover the range's end minus it (Eq. 7 with two frontiers). Every address comes from
enumerating taps (each stored input pixel's last reader, as
:func:`rip.allocator.theory.simulate._fast_rip` finds it), and the maximum over both
cores' writes is the upset minimum: the smallest gap from which on every gap is safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rip.allocator.theory.fused import Chain, FusedSchedule, fused_schedule
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import _last_reader_axis, _stored_axes
from rip.allocator.theory.two_core_programs import (
    PIXELS,
    RipSchedule,
    _layer_reads,
    _read_cols,
    shares,
    store_split,
)
from rip.core.errors import LayerError
from rip.core.limits import MAX_SIMULATION_CELLS


def _first_live(prefix_max: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Per threshold, the first cell whose last reader (a running maximum over the cells in
    address order) is at least the threshold; ``prefix_max.size`` when none is."""
    return np.searchsorted(prefix_max, threshold, side="left")


def fast_rip_gap(
    geom: ConvGeometry,
    lag: int | None,
    schedule: RipSchedule = PIXELS,
    tiles: Sequence[int] | None = None,
    turns: bool = False,
) -> int:
    """Minimum gap (bytes; upset minimum over every interleaving the synchronisation
    allows) of :func:`rip.allocator.theory.two_core_programs.rip_program`'s schedule at lag
    ``lag`` (None: no synchronisation). ``tiles``: the pixel tiles in order, where a kernel's
    tiles differ in size (rip_conv2d_fast_rq_s8's triples, pairs and flash sweeps,
    `kernel_variants.conv_sweep_tiles`), each tile one unit; None: ``schedule.tile`` pixels
    each. ``turns``: the cores take the tiles in turns, all channels each (tile t core
    t % 2's; rip_conv2d_fast_rq_s8's default), at lag 0 with core 1 one unit ahead: core 0
    stores tile t once core 1 has read tile t - 1, core 1 stores tile t once core 0 has read
    tile t + 1."""
    schedule.check(geom)
    schedule.check_lag(lag)
    if turns:
        if lag != 0 or tiles is None:
            raise LayerError("two cores: turns are planned at lag 0 over given tiles")
        return _turns_rip_gap(geom, schedule, tiles)
    if tiles is not None:
        return _tiled_rip_gap(geom, lag, schedule, tiles)
    n_pix = geom.h_out * geom.w_out
    k = np.arange(n_pix)
    per = schedule.unit_pixels
    tile = schedule.tile
    own_from = (k // tile + 1) * tile if schedule.taps == "gather" else k
    unit = k // per
    other_from = np.zeros(n_pix, dtype=np.int64) if lag is None else (unit - lag + 1) * per
    return _gap_of(geom, schedule, own_from, other_from)


def _tiled_rip_gap(
    geom: ConvGeometry, lag: int | None, schedule: RipSchedule, tiles: Sequence[int]
) -> int:
    """fast_rip_gap over tiles of the given sizes, one unit each (rule gather)."""
    n_pix = geom.h_out * geom.w_out
    if schedule.taps != "gather":
        raise LayerError("two cores: tiles are gathered before a store")
    starts, unit = _tile_starts(n_pix, tiles)
    sizes = np.diff(starts)
    own_from = starts[unit + 1]
    if lag is None:
        other_from = np.zeros(n_pix, dtype=np.int64)
    else:
        first = np.maximum(unit - lag + 1, 0)
        other_from = starts[np.minimum(first, sizes.size)]
    return _gap_of(geom, schedule, own_from, other_from)


def _tile_starts(n_pix: int, tiles: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each tile's first pixel (and n_pix past the last), and each pixel's tile."""
    sizes = np.asarray(tiles, dtype=np.int64)
    if sizes.min(initial=1) < 1 or int(sizes.sum()) != n_pix:
        raise LayerError(f"two cores: tiles {tuple(tiles)[:8]}... do not cover {n_pix} pixels")
    starts = np.concatenate(([0], np.cumsum(sizes)))  # tile t covers [starts[t], starts[t+1])
    return starts, np.repeat(np.arange(sizes.size), sizes)


def _turns_rip_gap(geom: ConvGeometry, schedule: RipSchedule, tiles: Sequence[int]) -> int:
    """fast_rip_gap with the tiles taken in turns (``turns``): a store of tile t faces its
    own core's reads from its next tile (t + 2) on and the other core's from the tile the
    rule leaves it unread: t + 1 (core 1's, when core 0 stores) or t + 3 (core 0's, when core
    1 stores: it has read t + 1)."""
    n_pix = geom.h_out * geom.w_out
    starts, tile = _tile_starts(n_pix, tiles)
    last = len(starts) - 1
    own_from = starts[np.minimum(tile + 2, last)]
    other_from = starts[np.minimum(tile + np.where(tile % 2 == 0, 1, 3), last)]
    everything = ((0, geom.c_out), (0, geom.c_out))  # each core stores every channel
    return _gap_of(geom, schedule, own_from, other_from, everything)


def _gap_of(
    geom: ConvGeometry,
    schedule: RipSchedule,
    own_from: np.ndarray,
    other_from: np.ndarray,
    ranges: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> int:
    """The upset-minimum gap when pixel k's store faces its own core's reads from pixel
    ``own_from[k]`` on and the other core's from ``other_from[k]`` on (module docstring);
    ``ranges``: the output channels each core stores (default the schedule's split)."""
    layout, split, per_channel = schedule.layout, schedule.split, schedule.per_channel
    sy, sx = _stored_axes(geom, layout)
    n_pix = geom.h_out * geom.w_out
    if max(sy.n * sx.n, n_pix) * 4 > MAX_SIMULATION_CELLS:
        raise LayerError(f"simulate: this layer is above the simulator's {MAX_SIMULATION_CELLS:,}")
    ly = _last_reader_axis(geom.h_out, geom.kh, geom.sh, geom.dh, sy)
    lx = _last_reader_axis(geom.w_out, geom.kw, geom.sw, geom.dw, sx)
    last = np.where(
        (ly[:, None] >= 0) & (lx[None, :] >= 0), ly[:, None] * geom.w_out + lx[None, :], -1
    ).ravel()  # per stored pixel, in address order, the last output pixel reading it
    prefix_max = np.maximum.accumulate(last)
    n_stored = last.size
    k = np.arange(n_pix)
    own_px = _first_live(prefix_max, own_from)
    other_px = _first_live(prefix_max, np.maximum(other_from, 0))
    c_in, c_out = geom.c_in, geom.c_out
    ranges = shares(c_out, split) if ranges is None else ranges
    worst = -np.inf
    for core, (lo, hi) in enumerate(ranges):
        if hi == lo:
            continue
        o_lo, o_hi = ranges[1 - core]
        # the byte of a pixel a core reads first: channel 0, or its own first channel
        own_off, other_off = (lo, o_lo) if per_channel else (0, 0)
        nli = np.full(n_pix, np.inf)
        ok = own_px < n_stored
        nli[ok] = own_px[ok] * c_in + own_off
        if o_hi > o_lo:
            ok = other_px < n_stored
            nli[ok] = np.minimum(nli[ok], other_px[ok] * c_in + other_off)
        live = np.isfinite(nli)
        if live.any():
            worst = max(worst, float((k[live] * c_out + hi - nli[live]).max()))
    n_in = n_stored * c_in
    return int(max(0, geom.n_out - n_in, worst))


# --------------------------------------------------------------------------------------
# Fused chains
# --------------------------------------------------------------------------------------
def _units(chain: Chain, sched: FusedSchedule) -> tuple[list[tuple[int, int]], dict, dict]:
    """The two-core unit sequence of a fused chain: ``units[i]`` = (layer, row) of the row
    compute it runs, (-1, row) for a split-off store; ``compute_unit[(layer, row)]`` and
    ``store_unit[row]`` (where Y's row r is stored)."""
    split = store_split(chain)
    last = chain.length - 1
    units: list[tuple[int, int]] = []
    compute_unit: dict[tuple[int, int], int] = {}
    store_unit: dict[int, int] = {}
    for comp in sched.computes():
        compute_unit[(comp.layer, comp.row)] = len(units)
        units.append((comp.layer, comp.row))
        if comp.layer == last:
            if split:
                units.append((-1, comp.row))
            store_unit[comp.row] = len(units) - 1
    return units, compute_unit, store_unit


Splits = Sequence[int | None]  # per layer, core A's channels (None: the default split)


def _channel_owner(chain: Chain, layer: int, splits: Splits) -> np.ndarray:
    """Which core stores each output channel of ``layer``."""
    (_, split), _ = shares(chain.ops[layer].geom.c_out, splits[layer])
    return (np.arange(chain.ops[layer].geom.c_out) >= split).astype(np.int64)


def _reads(chain: Chain, layer: int, core: int, splits: Splits) -> range:
    lo, hi = shares(chain.ops[layer].geom.c_out, splits[layer])[core]
    return _layer_reads(chain, layer, lo, hi)


@dataclass(frozen=True)
class FusedTwoCore:
    """A fused chain's two-core schedule at one lag: the minimum gap (upset minimum), ring
    reads that some interleaving makes before the other core stored the row (``raw``) and
    ring rows the other core may overwrite before a read of the old row (``war``)."""

    gap: int
    raw: int
    war: int

    @property
    def rings_ok(self) -> bool:
        return not (self.raw or self.war)


def fast_fused(chain: Chain, lag: int = 1, splits: Splits | None = None) -> FusedTwoCore:
    """The two-core fused schedule (`two_core_programs.fused_program`; ``splits[l]`` core
    A's channels of layer l, by default `two_core_programs.default_split`) at ``lag`` under
    rule ``block``: a core starts unit i once the other finished units 0..i-L, so the other
    core's reads from unit i - L + 1 on may still be to come."""
    if lag < 1:
        raise LayerError(f"two cores: a fused chain's block rule needs lag >= 1, got {lag}")
    splits = [None] * chain.length if splits is None else list(splits)
    if len(splits) != chain.length:
        raise LayerError(f"two cores: {len(splits)} splits for a chain of {chain.length} layers")
    sched = fused_schedule(chain)
    _, compute_unit, store_unit = _units(chain, sched)
    last = chain.length - 1
    g0 = chain.ops[0].geom
    h0, w0, c0 = chain.input_hwc
    cols0 = np.asarray(_read_cols(g0.w_in, g0.w_out, g0.kw, g0.sw, g0.dw, g0.pad_left), np.int64)
    # per core, per family of X reads (layer 0, residual): last unit per X pixel, first byte
    families: list[list[tuple[np.ndarray, int]]] = [[], []]
    for core in (0, 1):
        reads0 = _reads(chain, 0, core, splits)
        if len(reads0):
            lastu = np.full((h0, w0), -1, dtype=np.int64)
            for comp in sched.computes():
                if comp.layer == 0:
                    for y in comp.reads:
                        lastu[y, cols0] = compute_unit[(0, comp.row)]
            families[core].append((lastu.ravel(), reads0.start))
        lo, hi = shares(chain.ops[last].geom.c_out, splits[last])[core]
        if chain.residual and hi > lo:
            lastu = np.full((h0, w0), -1, dtype=np.int64)
            for r in range(h0):
                lastu[r, :] = compute_unit[(last, r)]
            families[core].append((lastu.ravel(), lo))
    prefix = [[(np.maximum.accumulate(a), off) for a, off in fam] for fam in families]
    h_l, w_l, c_l = chain.output_hwc
    worst = -np.inf
    for core in (0, 1):
        lo, hi = shares(c_l, splits[last])[core]
        if hi == lo:
            continue
        for r in range(h_l):
            s = store_unit[r]
            nli = np.inf
            for who, threshold in ((core, s + 1), (1 - core, s - lag + 1)):
                for pm, off in prefix[who]:
                    p = int(_first_live(pm, np.array([max(threshold, 0)]))[0])
                    if p < pm.size:
                        nli = min(nli, p * c0 + off)
            if np.isfinite(nli):
                worst = max(worst, ((r + 1) * w_l - 1) * c_l + hi - nli)
    gap = int(max(0, chain.n_out - chain.n_in, worst))
    return FusedTwoCore(gap, *_ring_hazards(chain, sched, compute_unit, lag, splits))


def _ring_hazards(
    chain: Chain, sched: FusedSchedule, compute_unit: dict, lag: int, splits: Splits
) -> tuple:
    """(raw, war) over every ring: a read of a channel the other core stored in unit u, in
    unit m, is forced after the store only when u <= m - L; the other core's overwrite of a
    slot in unit u' is forced after a read of the old row in unit m only when m <= u' - L
    (a core's own accesses keep their program order)."""
    raw = war = 0
    for layer in range(1, chain.length):
        g = chain.ops[layer].geom
        if not _read_cols(g.w_in, g.w_out, g.kw, g.sw, g.dw, g.pad_left):
            continue  # every tap of the layer falls on padding: it reads no ring byte
        owner = _channel_owner(chain, layer - 1, splits)
        readers = {core: np.asarray(_reads(chain, layer, core, splits)) for core in (0, 1)}
        made = sched.needed[layer - 1]
        ring = sched.ring_rows[layer - 1]
        read_at: dict[int, list[int]] = {}  # row of T_layer -> units of its readers
        for comp in sched.computes():
            if comp.layer != layer:
                continue
            m = compute_unit[(layer, comp.row)]
            for y in comp.reads:
                read_at.setdefault(y, []).append(m)
                u = compute_unit[(layer - 1, y)]
                for core in (0, 1):
                    other = (
                        readers[core][owner[readers[core]] != core] if readers[core].size else []
                    )
                    if len(other) and u > m - lag:
                        raw += 1
        for i, y in enumerate(made):
            if i + ring >= len(made):
                continue
            u2 = compute_unit[(layer - 1, made[i + ring])]  # the row stored over y's slot
            for m in read_at.get(y, []):
                for core in (0, 1):  # core `core` reads y; the overwriting halves' owners
                    if not readers[core].size:
                        continue
                    owners = set(owner[readers[core]].tolist())
                    if any(w != core and m > u2 - lag for w in owners) or m >= u2:
                        war += 1
    return raw, war
