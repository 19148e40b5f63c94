"""The corruption simulator for fused chains (Appendix G.1 applied to
:func:`rip.allocator.theory.fused.fused_schedule`). It never evaluates a closed form.

It takes from the schedule only *which row of which layer is computed when*; what each
computation reads it finds itself by enumerating every tap of the op (rows and columns), and
it executes the schedule over a tagged workspace:

* ``literal`` (:func:`run_fused`): a byte-level arena of ``gap + N_in`` bytes, X at
  ``gap`` and Y from 0, each X byte tagged with its own index. A layer-0 row reads every
  X byte its taps reach (every read column, every channel) and counts the bytes whose tag
  is gone (``corrupted``); an intermediate row goes to ring slot ``i % R``, i the number
  of rows of its layer computed before it (the kernel's per-layer counter), and layer
  l > 0 reads its input rows from the slot each went to, tagged with the row last stored
  there, counting reads that find another row or a row never computed (``evicted``); rows
  computed twice count as ``recomputed``. The last layer
  writes Y row r pixel by pixel in step r; with the residual ADD each pixel first reads
  its X pixel. Output bytes past the workspace count as ``writes_outside``. The minimum
  gap is found by binary search (the live set only shrinks, so safety is monotone in the
  gap, as in :mod:`rip.allocator.theory.simulate`).
* rows in their input's slot (`rip.allocator.theory.fused.in_slot`): ``chain_evictions``
  executes the schedule with every ring tagged, a row whose ring has 0 rows stored in the
  slot of its input's ring that holds the lowest row it reads; ``slot_corruption``
  executes one such store byte by byte in the row engine's order.
* ``fast`` (:func:`simulate_fused`): the same semantics at pixel granularity: the last step
  that reads each X pixel, a prefix maximum over X's address order, and the debt of each
  step's row of writes against the first X pixel still to be read. Exact, as the fast mode
  of :mod:`rip.allocator.theory.simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.allocator.theory.fused import Chain, FusedSchedule, fused_schedule, slot_candidate
from rip.core.errors import LayerError
from rip.core.limits import MAX_SIMULATION_CELLS
from rip.core.operators import Op


@dataclass(frozen=True)
class FusedRun:
    """One literal execution of a fused schedule at ``gap``."""

    gap: int
    corrupted: int  # X bytes read after an output byte overwrote them
    writes_outside: int  # output bytes stored past the end of X (the workspace)
    evicted: int  # ring reads that found another row (or none) in the slot
    recomputed: int  # intermediate rows computed more than once
    misread: int  # computes whose listed reads differ from the taps the simulator finds

    @property
    def safe(self) -> bool:
        return not (self.corrupted or self.writes_outside)

    @property
    def ok(self) -> bool:
        return self.safe and not (self.evicted or self.recomputed or self.misread)


def _taps(n_in: int, k: int, s: int, d: int, pad: int, o: int) -> list[int]:
    """Real input positions tap by tap for output o (enumerated, no window arithmetic)."""
    return sorted({o * s + j * d - pad for j in range(k)} & set(range(n_in)))


def _read_cols(chain: Chain) -> np.ndarray:
    """X columns any layer-0 output column reads (every row is computed whole)."""
    g = chain.ops[0].geom
    cols = set()
    for c in range(g.w_out):
        cols.update(_taps(g.w_in, g.kw, g.sw, g.dw, g.pad_left, c))
    return np.array(sorted(cols), dtype=np.int64)


def _row_reads(chain: Chain, layer: int, row: int) -> list[int]:
    g = chain.ops[layer].geom
    return _taps(g.h_in, g.kh, g.sh, g.dh, g.pad_top, row)


def _check_size(chain: Chain, literal: bool) -> None:
    h, w, _ = chain.input_hwc
    cells = max(h * w, sum(op.geom.h_out * op.geom.kh for op in chain.ops))
    if literal:
        cells = max(cells, chain.n_in + chain.n_out)
    if cells > MAX_SIMULATION_CELLS:
        raise LayerError(
            f"simulate: this chain needs {cells:,} cells, more than the simulator's limit of "
            f"{MAX_SIMULATION_CELLS:,}"
        )


def run_fused(
    chain: Chain,
    gap: int,
    ring_rows: tuple[int, ...] | None = None,
    schedule: FusedSchedule | None = None,
) -> FusedRun:
    """Execute the schedule byte by byte at ``gap`` with the given ring sizes (default:
    the schedule's) and count what went wrong (module docstring)."""
    if gap < 0:
        raise LayerError(f"gap must be non-negative, got {gap}")
    _check_size(chain, literal=True)
    sched = fused_schedule(chain) if schedule is None else schedule
    rings = sched.ring_rows if ring_rows is None else tuple(ring_rows)
    if len(rings) != chain.length - 1 or any(r < 1 for r in rings):
        raise LayerError(f"ring sizes {rings} do not fit a chain of {chain.length} ops")
    _, w0, c0 = chain.input_hwc
    h_l, w_l, c_l = chain.output_hwc
    size = gap + chain.n_in
    arena = np.full(size, -1, dtype=np.int64)
    arena[gap:] = np.arange(chain.n_in)
    written = -2
    cols = _read_cols(chain)
    col_bytes = (cols[:, None] * c0 + np.arange(c0)[None, :]).ravel()
    slots = [np.full(r, -1, dtype=np.int64) for r in rings]
    where: list[dict[int, int]] = [{} for _ in rings]  # row -> the slot it went to
    done: list[set[int]] = [set() for _ in chain.ops]
    corrupted = outside = evicted = recomputed = misread = 0

    def read_x(addr: np.ndarray) -> int:
        return int(np.count_nonzero(arena[gap + addr] != addr))

    last = chain.length - 1
    for step in sched.steps:
        for comp in step.computes:
            layer, v = comp.layer, comp.row
            reads = _row_reads(chain, layer, v)
            if tuple(reads) != comp.reads:
                misread += 1
            if layer == 0:
                for y in reads:
                    corrupted += read_x(y * w0 * c0 + col_bytes)
            else:
                ring, at = slots[layer - 1], where[layer - 1]
                evicted += sum(int(y not in at or ring[at[y]] != y) for y in reads)
            if v in done[layer]:
                recomputed += 1
            if layer < last:
                where[layer][v] = len(done[layer]) % slots[layer].size
                slots[layer][where[layer][v]] = v
            done[layer].add(v)
            if layer < last:
                continue
            if v != step.row:
                misread += 1
            for c in range(w_l):  # Y row v, pixel by pixel
                start = (v * w_l + c) * c_l
                if chain.residual:  # the ADD reads X pixel (v, c) just before writing
                    corrupted += read_x(np.arange(start, start + c_l))
                end = min(start + c_l, size)
                outside += start + c_l - max(start, end)
                if end > start:
                    arena[start:end] = written
    if done[-1] != set(range(h_l)):  # every Y row exactly once
        misread += 1
    return FusedRun(gap, corrupted, outside, evicted, recomputed, misread)


def _last_reader_steps(chain: Chain, sched: FusedSchedule) -> np.ndarray:
    """Per X pixel (row-major), the last step that reads it, -1 if none."""
    h0, w0, _ = chain.input_hwc
    last = np.full((h0, w0), -1, dtype=np.int64)
    cols = _read_cols(chain)
    for step in sched.steps:
        for comp in step.computes:
            if comp.layer == 0:
                for y in _row_reads(chain, 0, comp.row):
                    last[y, cols] = step.row
        if chain.residual:
            last[step.row, :] = step.row
    return last.ravel()


def _fast_min_gap(chain: Chain, sched: FusedSchedule) -> int:
    """Step r writes Y row r after its reads of X; before that write every X pixel whose
    last reader is a later step is live. The gap must cover the debt of every step."""
    _, _, c0 = chain.input_hwc
    h_l, w_l, c_l = chain.output_hwc
    prefix_max = np.maximum.accumulate(_last_reader_steps(chain, sched))
    steps = np.arange(h_l)
    first_live = np.searchsorted(prefix_max, steps + 1, side="left")  # pixels
    has_live = first_live < prefix_max.size
    debt = (steps + 1) * w_l * c_l - c0 * first_live
    worst = int(debt[has_live].max()) if has_live.any() else 0
    return max(0, chain.n_out - chain.n_in, worst)


def simulate_fused(chain: Chain, mode: str = "fast") -> int:
    """Minimum corruption-free gap (bytes) of the fused schedule: Y's base that many bytes
    below X's. ``literal`` binary-searches :func:`run_fused`; ``fast`` is exact at pixel
    granularity (module docstring)."""
    if mode not in ("fast", "literal"):
        raise LayerError(f"mode must be 'fast' or 'literal', got {mode!r}")
    _check_size(chain, literal=mode == "literal")
    sched = fused_schedule(chain)
    if mode == "fast":
        return _fast_min_gap(chain, sched)
    hi = chain.n_out + chain.input_hwc[1] * chain.input_hwc[2]  # Y wholly below X: safe
    if not run_fused(chain, hi, schedule=sched).safe:
        raise AssertionError(f"simulator: gap {hi} is not safe, the search bound is wrong")
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if run_fused(chain, mid, schedule=sched).safe:
            hi = mid
        else:
            lo = mid + 1
    return lo


def ring_evictions(chain: Chain, layer: int, rows: int, schedule: FusedSchedule) -> int:
    """Reads of T_{layer+1}'s ring that find another row when the ring has ``rows`` slots:
    the schedule replayed on that ring alone (what the reader's taps are, enumerated)."""
    slots = np.full(rows, -1, dtype=np.int64)
    where: dict[int, int] = {}
    evicted = 0
    for comp in schedule.computes():
        if comp.layer == layer + 1:
            evicted += sum(
                int(y not in where or slots[where[y]] != y)
                for y in _row_reads(chain, comp.layer, comp.row)
            )
        elif comp.layer == layer:
            where[comp.row] = len(where) % rows
            slots[where[comp.row]] = comp.row
    return evicted


def source_evictions(chain: Chain, rows: int, schedule: FusedSchedule | None = None) -> int:
    """Reads of X that find another row when X streams into a ring of ``rows`` slots
    (``--stream-input``): before each layer-0 compute, the source delivers, in order, every
    X row up to the highest one the compute reads (enumerated from its taps) into slot
    ``row % rows``; each read then checks the slot still holds its row. A row never
    delivered, or overwritten by a later one, counts."""
    sched = fused_schedule(chain) if schedule is None else schedule
    slots = np.full(rows, -1, dtype=np.int64)
    delivered = 0  # rows 0 .. delivered - 1 have arrived
    evicted = 0
    for comp in sched.computes():
        if comp.layer != 0:
            continue
        reads = _row_reads(chain, 0, comp.row)
        while reads and delivered <= reads[-1]:
            slots[delivered % rows] = delivered
            delivered += 1
        evicted += sum(int(slots[y % rows] != y) for y in reads)
    return evicted


def simulate_source_rows(chain: Chain) -> int:
    """The fewest slots of the streamed input's ring with which no read of X finds another
    row, each size executed (searched upwards from 1)."""
    sched = fused_schedule(chain)
    h = chain.input_hwc[0]
    return next(r for r in range(1, h + 2) if source_evictions(chain, r, sched) == 0)


def simulate_ring_rows(chain: Chain) -> tuple[int, ...]:
    """The fewest ring rows per intermediate with which no read finds another row, each
    size executed (searched upwards from 1)."""
    sched = fused_schedule(chain)
    out = []
    for layer in range(chain.length - 1):
        h = chain.ops[layer].geom.h_out
        out.append(next(r for r in range(1, h + 2) if ring_evictions(chain, layer, r, sched) == 0))
    return tuple(out)


def chain_evictions(
    chain: Chain, rows: tuple[int, ...], schedule: FusedSchedule | None = None
) -> int:
    """Reads of any intermediate that find another row (or none) when ring ``l`` has
    ``rows[l]`` slots, a 0 meaning T_{l+1}'s rows are stored in the slot of T_l's ring
    holding the lowest row they read (`rip.allocator.theory.fused.in_slot`): the whole
    schedule replayed over tagged slots, each read checking that the slot its row went to
    still holds it. A 0 for T_1 (no ring before it) or after another 0 counts every read."""
    sched = fused_schedule(chain) if schedule is None else schedule
    if len(rows) != chain.length - 1 or any(r < 0 for r in rows):
        raise LayerError(f"ring rows {rows} do not fit a chain of {chain.length} ops")
    slots = [[(-1, -1)] * r for r in rows]  # (layer, row) last stored there
    where: dict[tuple[int, int], tuple[int, int]] = {}  # (layer, row) -> (ring, slot)
    count = [0] * len(rows)
    evicted = 0
    last = chain.length - 1
    for comp in sched.computes():
        reads = _row_reads(chain, comp.layer, comp.row)
        if comp.layer > 0:
            for y in reads:
                at = where.get((comp.layer - 1, y))
                evicted += int(at is None or slots[at[0]][at[1]] != (comp.layer - 1, y))
        if comp.layer == last:
            continue
        if rows[comp.layer] > 0:
            at = (comp.layer, count[comp.layer] % rows[comp.layer])
        else:
            lowest = where.get((comp.layer - 1, reads[0])) if comp.layer > 0 and reads else None
            if lowest is None or rows[lowest[0]] == 0 or lowest[0] != comp.layer - 1:
                evicted += 1  # nowhere to store it: no ring of its input to share
                continue
            at = lowest
        count[comp.layer] += 1
        slots[at[0]][at[1]] = (comp.layer, comp.row)
        where[(comp.layer, comp.row)] = at
    return evicted


def slot_corruption(chain: Chain, layer: int) -> int:
    """Reads that find an output byte when layer ``layer``'s row is stored over the input
    row it reads (a depthwise row in its input's slot), executed byte by byte in the row
    engine's order (kernels/rip_dw_row_engine.c): channel groups of four (the DSP engine),
    and of one (the ARMv6-M engine), in turn; in a group, output pixels left to right, each
    pixel's taps in that row read before its store (the engine's gathered border fields
    are read earlier still, which only a store before them could corrupt). Stores past the
    row count too. The taps are enumerated, and every row of the layer stores the same way
    (only which kernel row lands in the slot differs, and the columns read are the same)."""
    g = chain.ops[layer].geom
    if chain.ops[layer].kind != Op.DEPTHWISE_CONV_2D or g.c_out != g.c_in:
        raise LayerError(f"simulate: layer {layer} is no depthwise that keeps its channels")
    c, width = g.c_in, g.w_in * g.c_in
    cols = [_taps(g.w_in, g.kw, g.sw, g.dw, g.pad_left, o) for o in range(g.w_out)]
    bad = 0
    for group in (4, 1):
        row = np.arange(width, dtype=np.int64)  # each byte tagged with its own index
        for c0 in range(0, c, group):
            ch = np.arange(c0, min(c0 + group, c))
            for o in range(g.w_out):
                read = (np.array(cols[o], dtype=np.int64)[:, None] * c + ch[None, :]).ravel()
                bad += int(np.count_nonzero(row[read] != read))
                store = o * c + ch
                bad += int(np.count_nonzero(store >= width))
                row[store[store < width]] = -1
    return bad


def simulate_slots(chain: Chain) -> tuple[bool, ...]:
    """Per intermediate, whether storing its rows in their input's slot is safe, each case
    executed: the layers the kernel could store so (`slot_candidate`: a depthwise with a
    ring of one row after a ring of its own), the store executed (`slot_corruption`) and
    the schedule replayed with that ring at 0 rows and the others at `simulate_ring_rows`
    (`chain_evictions`)."""
    rows = list(simulate_ring_rows(chain))
    out: list[bool] = []
    for layer in range(chain.length - 1):
        ok = slot_candidate(chain, layer, rows[layer], bool(out) and out[-1])
        if ok:
            trial = [*rows[:layer], 0, *rows[layer + 1 :]]
            ok = slot_corruption(chain, layer) == 0 and chain_evictions(chain, tuple(trial)) == 0
        if ok:
            rows[layer] = 0
        out.append(ok)
    return tuple(out)
