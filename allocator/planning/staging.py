"""Flash-aware execution (issue 23): a layer's weights copied from XIP flash into free SRAM
of the arena just before the layer runs, where the Pico's flash cache would otherwise
refetch them on every sweep.

On a Pico, code and weights execute in place from QSPI flash through a 16 KB cache. The
fast convolution kernels sweep a CONV_2D's whole (packed) filter once per tile of output
pixels (`kernel_variants.conv_sweep_pixels`: pairs, triples, or as many as the scratch
holds where the filter outgrows the cache); a filter larger than the cache misses on
every sweep, and on the RP2350 that traffic was a third of MCUNet-in3's cycles
(docs/pico-timing.md). Staging trades SRAM for those stalls. Three parts, each a plain
function:

* `FlashCache.of`: the board's XIP cache from its board file (a Pico's ``xip_*`` figures,
  or those of the Pico an emulated board names as its ``timing_board``); None on a board
  with no flash model (the host), where nothing is staged.
* `candidates`: per op, an analytic estimate of the stall cycles staging saves (no
  emulation at compile time): the misses of every sweep after the first under an LRU cache
  (`FlashCache.sweep_misses`), priced at the board's miss cost, minus what the copy adds:
  a load and a store per word (its misses are the first sweep's, which the kernel takes
  whether or not the filter is staged). Only positive savings are candidates.
* `stage`: each candidate, largest saving first, gets an op-lived buffer
  (`placement.OpBuffer`, role ``WEIGHTS``) at the lowest aligned offset free at its
  op's step in the replayed plan; it is kept if it ends within the plan's peak plus the
  byte budget (``PlanOptions.stage_weights``, default 0: only bytes already free under the
  peak, so memory is never worse). No other offset moves, so the staged plan is the base
  plan plus buffers in its holes; with budget 0 its peak is the base plan's, and a base plan
  proven optimal stays optimal (a superset of buffers cannot peak lower). A budget never
  takes the arena past what the board leaves (`arena_limit`; an emulated board's also not
  past the Pico it is timed as), so ``STAGE_TO_BOARD`` means "whatever SRAM the board has
  left". The staged plan is replayed (replay.py checks every op-lived buffer against the
  live tensors) before use.

The copies themselves are the code generator's (a memcpy before the op, the kernel given
the SRAM pointer): same weights, same output bytes.

Staging is the flash path: the ops whose constant data is made resident in SRAM
(residency.py, ``PlanOptions.weights``: all of them where they fit beside the arena) are
not staged; what staging adds to the arena stays within the SRAM they leave.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import (
    WEIGHTS,
    OpBuffer,
    Plan,
    Problem,
    align_up,
    lowest_free,
)
from rip.allocator.planning.replay import replay
from rip.allocator.planning.residency import (
    boards_left,
    op_constant_bytes,
    packed_filter_bytes,
    resident_ops,
)
from rip.allocator.planning.scratch import conv_scratch_bytes
from rip.allocator.planning.strategies import Variant
from rip.boards import Board, load_board
from rip.core.kernel_variants import conv_sweep_pixels
from rip.core.operators import Op
from rip.core.terms import Strategy
from rip.frontend.ir import Graph, Operator, Padding

STAGE_TO_BOARD = 1 << 40  # a budget above any SRAM: stage into all the board leaves
COPY_CYCLES_PER_WORD = 2  # the copy's load and store of each word from the cache


@dataclass(frozen=True)
class FlashCache:
    """The XIP cache weights are read through: its geometry and what a miss stalls, every
    figure from a Pico board file (docs/pico-timing.md gives their sources)."""

    board: str  # the Pico whose figures these are
    cache_bytes: int
    ways: int
    line_bytes: int
    fill_bytes: int
    miss_cycles: int
    sequential_miss_cycles: int  # a fill continuing the open transfer (0: never)

    @classmethod
    def of(cls, board: Board) -> FlashCache | None:
        """The cache of ``board`` (a Pico), or of the Pico it emulates; None without one."""
        chip = board
        if not chip.xip_cache_bytes and chip.timing_board:
            chip = load_board(chip.timing_board)
        if not chip.xip_cache_bytes or not chip.xip_line_bytes or not chip.xip_cache_ways:
            return None
        return cls(
            chip.name,
            chip.xip_cache_bytes,
            chip.xip_cache_ways,
            chip.xip_line_bytes,
            chip.xip_fill_bytes or chip.xip_line_bytes,
            chip.xip_miss_cycles,
            chip.xip_sequential_miss_cycles,
        )

    @property
    def line_cycles(self) -> int:
        """The stall of one line missed in a sequential sweep: its first fill a fresh
        transfer (or one continuing the sweep's open transfer, where the chip appends)."""
        fills = max(1, self.line_bytes // self.fill_bytes)
        per_fill = self.sequential_miss_cycles or self.miss_cycles
        return fills * per_fill

    def lines(self, nbytes: int) -> int:
        return -(-nbytes // self.line_bytes)

    def sweep_misses(self, nbytes: int) -> int:
        """Lines that miss in every repeated sweep over ``nbytes`` contiguous bytes: with LRU
        replacement a set holding more lines than it has ways misses on each of them, one
        holding no more hits after the first sweep."""
        sets = self.cache_bytes // (self.ways * self.line_bytes)
        q, r = divmod(self.lines(nbytes), sets)
        return (r * (q + 1) if q + 1 > self.ways else 0) + ((sets - r) * q if q > self.ways else 0)


@dataclass(frozen=True)
class Candidate:
    """Filter ``member`` of op ``op`` (``nbytes`` as its kernel reads it, swept ``sweeps``
    times), and the stall cycles staging it is estimated to save (copy included)."""

    op: int
    member: int
    nbytes: int
    sweeps: int
    saved_cycles: int


def filter_bytes(graph: Graph, op: Operator) -> int:
    """A CONV_2D's filter as the fast kernels read it, an upper bound of every variant's:
    channels in pairs (an odd count padded by one), each row of KH * KW * C_in taps padded to
    a multiple of 4 (codegen's pack_filter_pairs); the reference kernels read less."""
    return packed_filter_bytes(op, tuple(graph.tensors[op.inputs[1]].shape))


def _sweeps(graph: Graph, op: Operator, core: str, fused: bool) -> int:
    """Sweeps of a CONV_2D's filter on ``core``: one per tile of output pixels
    (`kernel_variants.conv_sweep_pixels`, with the op's own scratch formula: the fewest
    pixels its kernel may take), over the whole image for the op alone, a row at a time in a
    fused chain (which runs the kernel row by row)."""
    h, w, _ = graph.tensors[op.outputs[0]].hwc
    c_out, kh, kw, c_in = graph.tensors[op.inputs[1]].shape
    params = op.params
    pointwise = (kh, kw) == (1, 1) and params.stride == (1, 1) and params.padding == Padding()
    tile = conv_sweep_pixels(core, pointwise, c_out, kh * kw * c_in,
                             conv_scratch_bytes((c_out, kh, kw, c_in)))  # fmt: skip
    return h * -(-w // tile) if fused else -(-(h * w) // tile)


def _members(op: Operator) -> tuple[Operator, ...]:
    """The convolutions whose filters an op sweeps: itself, or a fused chain's members."""
    if op.kind == Op.FUSED_CHAIN:
        return tuple(op.params.members)
    return (op,)


def _resweeps(graph: Graph, cache: FlashCache, core: str) -> list[tuple[int, int, int, int, float]]:
    """(op, member, filter bytes, sweeps, stall cycles of every sweep after the first) of
    every CONV_2D filter, alone or a fused chain's member. The op's flash working set is
    all its members' filters, swept in turn: the share of its lines that miss each sweep
    (`FlashCache.sweep_misses` of the whole set) is charged to each member's lines."""
    out = []
    for i, op in enumerate(graph.operators):
        members = _members(op)
        sizes = [filter_bytes(graph, m) if m.kind == Op.CONV_2D else 0 for m in members]
        total = sum(sizes)
        if not total:
            continue
        miss_share = cache.sweep_misses(total) / cache.lines(total)
        for k, (m, nbytes) in enumerate(zip(members, sizes, strict=True)):
            if not nbytes or graph.tensors[m.inputs[1]].data is None:
                continue
            sweeps = _sweeps(graph, m, core, op.kind == Op.FUSED_CHAIN)
            stalls = (sweeps - 1) * miss_share * cache.lines(nbytes) * cache.line_cycles
            out.append((i, k, nbytes, sweeps, stalls))
    return out


def candidates(
    graph: Graph, cache: FlashCache, core: str, skip: Collection[int] = ()
) -> list[Candidate]:
    """Every CONV_2D filter (alone or a fused chain's member, of an op not in ``skip``)
    whose staging saves cycles, largest saving first: the stalls of its later sweeps
    (`_resweeps`) less the copy's loads and stores (the copy's misses replace the first
    sweep's)."""
    out = []
    for i, k, nbytes, sweeps, stalls in _resweeps(graph, cache, core):
        saved = int(stalls - COPY_CYCLES_PER_WORD * -(-nbytes // 4))
        if saved > 0 and i not in skip:
            out.append(Candidate(i, k, nbytes, sweeps, saved))
    return sorted(out, key=lambda c: (-c.saved_cycles, c.op, c.member))


def flash_stalls(graph: Graph, cache: FlashCache, core: str) -> dict[int, int]:
    """Per op, the stall cycles an inference is estimated to spend reading its constant
    data (`residency.op_constant_bytes`) from flash: each line missed once, as a model
    whose constants outgrow SRAM outgrows the cache (nothing is left from the last
    inference); every later sweep of its CONV_2D filters (`_resweeps`); and every later
    output row of a depthwise layer, alone or in a chain, which rereads its whole filter
    and records (`_depthwise_rereads`)."""
    out = {
        i: cache.lines(op_constant_bytes(graph, op)) * cache.line_cycles
        for i, op in enumerate(graph.operators)
    }
    for i, _, _, _, stalls in _resweeps(graph, cache, core):
        out[i] += int(stalls)
    for i, op in enumerate(graph.operators):
        out[i] += _depthwise_rereads(graph, op, cache)
    return out


def _depthwise_rereads(graph: Graph, op: Operator, cache: FlashCache) -> int:
    """Stall cycles of a depthwise layer's (or a chain's depthwise members') rows after the
    first: the row engine reads the layer's whole filter and per-channel records once per
    output row. Half the cache is counted as theirs, the other half the kernels' code's
    (measured on MCUNet-in0 under the Pico 2 timing model: a 3x3 layer of 25 KB stalled
    3.7 times its compulsory misses over its three rows)."""
    shared = replace(cache, cache_bytes=cache.cache_bytes // 2)
    total = 0
    for m in _members(op):
        if m.kind != Op.DEPTHWISE_CONV_2D:
            continue
        rows = graph.tensors[m.outputs[0]].hwc[0]
        nbytes = op_constant_bytes(graph, m)
        total += (rows - 1) * shared.sweep_misses(nbytes) * cache.line_cycles
    return total


@dataclass(frozen=True)
class Staged:
    """What flash-aware execution did to one plan: the staged filters (their op-lived
    buffers are in the problem, their offsets in the plan) with each one's estimated
    saving, the arena bytes the budget let it add above the base plan's peak, and the ops
    whose constant data is resident in SRAM."""

    buffers: tuple[OpBuffer, ...]
    saved_cycles: tuple[int, ...]  # per buffer, the estimate of `candidates`
    cache: str  # the Pico whose flash cache the estimate models
    base_peak: int
    # ops whose constant data is resident in SRAM (residency.py; none of their filters is
    # staged), and the bound of those bytes
    resident_ops: tuple[int, ...] = ()
    resident_bytes: int = 0

    @property
    def staged_ops(self) -> set[int]:
        return {b.op for b in self.buffers}

    @property
    def staged_bytes(self) -> int:
        return sum(b.size for b in self.buffers)

    @property
    def estimated_saved_cycles(self) -> int:
        return sum(self.saved_cycles)

    def summary(self, peak: int) -> dict:
        """The report's and --json's figures."""
        return {
            "flash_cache_of": self.cache,
            "staged_ops": sorted(self.staged_ops),
            "staged_filters": len(self.buffers),
            "staged_bytes": self.staged_bytes,  # summed over the ops, each op-lived
            "largest_op_staged_bytes": max(
                (sum(b.size for b in self.buffers if b.op == op) for op in self.staged_ops),
                default=0,
            ),
            "estimated_saved_cycles": self.estimated_saved_cycles,
            "extra_arena_bytes": peak - self.base_peak,
            "resident_ops": len(self.resident_ops),
            "resident_bytes": self.resident_bytes,
        }


def _occupied(problem: Problem, plan: Plan, step: int) -> list[tuple[int, int]]:
    """Arena bytes [lo, hi) in use at ``step``: every buffer live then, a shiftable input at
    its reach (the MILP's ``end``: a shift extends the input by its gap)."""
    reach = {p.input: p.gap for p in plan.shifts}
    return [
        (plan.offsets[b.id], plan.offsets[b.id] + b.size + reach.get(b.id, 0))
        for b in problem.buffers
        if b.live_at(step)
    ]


def stage(
    problem: Problem, plan: Plan, found: list[Candidate], extra_bytes: int, limit: int = 0
) -> tuple[Problem, Plan, tuple[OpBuffer, ...], tuple[int, ...]]:
    """``plan`` with every candidate that fits staged, in the order given: each at the lowest
    aligned offset free at its op's step, kept when it ends within ``plan.peak +
    extra_bytes`` (and ``limit``, the arena bytes the board leaves, when non-zero). Returns
    the problem with the kept op-lived buffers, the plan with their offsets and its new
    peak, the buffers and their estimated savings."""
    v = problem.alignment
    ceiling = plan.peak + max(0, extra_bytes)
    if limit:
        ceiling = min(ceiling, max(limit, plan.peak))
    offsets = dict(plan.offsets)
    kept: list[OpBuffer] = []
    saved: list[int] = []
    next_id = problem.next_id()
    for c in found:
        size = align_up(c.nbytes, v)
        busy = _occupied(problem, plan, c.op)
        busy += [(offsets[b.id], offsets[b.id] + b.size) for b in kept if b.op == c.op]
        x = lowest_free(busy, size, v)
        if x + size > ceiling:
            continue
        buf = OpBuffer(next_id, c.op, size, WEIGHTS, c.member)
        next_id += 1
        offsets[buf.id] = x
        kept.append(buf)
        saved.append(c.saved_cycles)
    if not kept:
        return problem, plan, (), ()
    staged_problem = problem.with_op_buffers(tuple(kept))
    peak = max([plan.peak] + [offsets[b.id] + b.size for b in kept])
    note = f"{len(kept)} filters staged in SRAM ({sum(b.size for b in kept):,} B)"
    staged_plan = replace(plan, offsets=offsets, peak=peak, notes=(*plan.notes, note))
    return staged_problem, staged_plan, tuple(kept), tuple(saved)


def arena_limit(boards: list[Board], scratch_bytes: int) -> int:
    """The arena bytes every board of ``boards`` leaves beside the scratch, its SDK's static
    data and stack (0: no limit): staging never makes a plan that fits them not fit."""
    left = boards_left(boards, scratch_bytes)
    return 0 if left is None else max(0, left)


def stage_strategies(
    variants: Mapping[Strategy, Variant], plans: Mapping[Strategy, Plan], options: PlanOptions
) -> tuple[dict[Strategy, Variant], dict[Strategy, Plan], dict[Strategy, Staged]]:
    """Every strategy's flash-aware plan: the constant data of the ops that gain most made
    resident in SRAM, all of them where they fit beside the arena
    (`residency.resident_ops`, ``options.weights``), then the thrashing filters of the
    others staged where the budget allows (`stage`), each staged plan replayed; variants,
    plans and what was done, by strategy. Staging is off when ``options.stage_weights`` is
    None; neither runs on a board without a flash model (`FlashCache.of`) unless
    ``--weights sram`` asks for residency."""
    out_v, out_p = dict(variants), dict(plans)
    staged: dict[Strategy, Staged] = {}
    cache = FlashCache.of(options.board)
    boards = [options.board]
    if options.board.timing_board:  # an emulated board: it stands for that Pico, too
        boards.append(load_board(options.board.timing_board))
    core = options.board.core
    for s, v in variants.items():
        plan = plans[s]
        # the scratch is in the arena (outside it only in the paper's accounting)
        outside = 0 if v.req.scratch_in_arena else v.req.scratch_bytes
        gains = flash_stalls(v.graph, cache, core) if cache else None
        resident, nbytes = resident_ops(
            v.graph, boards, plan.peak + outside, options.weights, gains
        )
        if resident:
            note = f"constant data of {len(resident)} of {len(v.graph.operators)} ops resident"
            plan = replace(plan, notes=(*plan.notes, f"{note} in SRAM (at most {nbytes:,} B)"))
            out_p[s] = plan
        found = []
        if options.stage_weights is not None and cache is not None:
            found = candidates(v.graph, cache, core, skip=resident)
        limit = arena_limit(boards, outside + nbytes)
        problem, new_plan, kept, saved = stage(
            v.problem, plan, found, options.stage_weights or 0, limit
        )
        if kept:
            replay(
                v.graph, new_plan, problem.alignment, problem.op_buffers,
                v.req.scratch_in_arena, v.req.shared,
            )  # fmt: skip
            out_v[s] = replace(v, problem=problem)
            out_p[s] = new_plan
        if kept or resident:
            board = cache.board if cache else ""
            staged[s] = Staged(kept, saved, board, plans[s].peak, resident, nbytes)
    return out_v, out_p, staged
