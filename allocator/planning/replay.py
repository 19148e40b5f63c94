"""Independent replay of a memory plan over a byte map, before any report or code.

Shares no code with the placers: it walks the graph's schedule itself, gives every
activation's bytes to it when its op writes it, frees them after their last reader, and
checks at every op that

* every input the op reads still holds its own bytes (nothing overwrote a live tensor),
* the output lands only on free bytes, or on the input this op overwrites in place, and
  then with a gap at least what the corruption simulator measures for that layer (the
  literal scalar-level simulator on small layers, the exact fast mode otherwise; never a
  closed form), or exactly at the input for channel in-place and upsampling,
* a planned right shift moves the input onto bytes that are free,
* each kernel's scratch (an op buffer, live for its op alone) is at least the kernel's
  formula and, while the op runs, shares no byte with anything live: its inputs, outputs
  and rings,
* a staged filter (an op buffer of role WEIGHTS) likewise lands only on bytes free when
  its op starts (after a planned shift), and the op's outputs do not write over it,
* every offset is a multiple of the alignment, and the peak it measures is the plan's;
* on two cores (issue 27), a shared op's scratch holds one per core, and a shared
  convolution's gap is also at least what the two-core simulator measures for its split at
  lag 0 in every pixel order its kernel may take (`two_core_fast.fast_rip_gap` over those
  tiles); a shared depthwise layer splits by channels, which need no gap (each core reads
  and writes its own channels only).

Ownership is kept as runs of bytes per live tensor (an interval map), not as one owner per
arena byte: a write or a free costs the live runs it touches, so a replay grows with
tensors and overlaps, not with arena bytes times tensors (EfficientNetV2-L: 12 MB arena,
3,433 tensors). Its verdicts equal the byte map's; tests/test_replay_fast.py keeps a byte
map as the reference and compares the two on random and corrupted plans.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

from rip.allocator.planning.placement import SCRATCH, OpBuffer, Plan
from rip.allocator.planning.requirements import (
    conv_geometry,
    depthwise_is_conv,
    fused_chain,
    op_buffers,
    op_min_scratch_bytes,
)
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import simulate_resize_nearest, simulate_rip, simulate_upsample
from rip.allocator.theory.simulate_fused import (
    chain_evictions,
    simulate_fused,
    simulate_ring_rows,
    simulate_slots,
    source_evictions,
)
from rip.allocator.theory.two_core_fast import fast_fused, fast_rip_gap
from rip.allocator.theory.two_core_programs import group_split, pair_split
from rip.core.errors import ReplayError
from rip.core.kernel_variants import conv_sweep_pixels, conv_sweep_tiles
from rip.core.operators import SPECS, Op
from rip.core.shapes import nearest_index_map, nhwc
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph

LITERAL_LIMIT = 4096  # output scalars up to which the literal simulator is used


def _min_gap(graph: Graph, op_index: int, order: str) -> int:
    """The simulator's minimum gap for this op overwriting its input."""
    op = graph.operators[op_index]
    cls = SPECS[op.kind].in_place if op.kind in SPECS else None
    if depthwise_is_conv(graph, op):  # the convolution it equals, in the conv kernels' order
        cls = InPlaceKind.RIP
    if cls is InPlaceKind.RIP:  # convolution and pooling
        geom: ConvGeometry = conv_geometry(graph, op)
        mode = "literal" if geom.n_out <= LITERAL_LIMIT and geom.kh * geom.kw <= 25 else "fast"
        return simulate_rip(geom, "dense", "gather", order, mode)
    if cls is InPlaceKind.FUSED:  # the fused row schedule executed
        p = op.params
        return simulate_fused(fused_chain(graph, p.members, p.residual is not None))
    return 0  # elementwise and activations: each output reads only its own index


def _two_core_min_gap(graph: Graph, op_index: int, scratch_bytes: int) -> int:
    """The two-core simulator's minimum gap for a shared convolution overwriting its input,
    the largest over every order rip_conv2d_fast_rq_s8 may take on two cores: its pixel
    tiles (pairs; on a DSP core, triples) taken in turns or split by output channels at
    lag 0, and for a pointwise layer the flash sweeps of ``scratch_bytes`` per core split
    by output channels."""
    geom = conv_geometry(graph, graph.operators[op_index])
    n_pix = geom.h_out * geom.w_out
    pairs = (2,) * (n_pix // 2) + ((1,) if n_pix % 2 else ())
    turns, split = [pairs, conv_sweep_tiles(n_pix, 3)], [pairs]
    pads = (geom.pad_top, geom.pad_bottom, geom.pad_left, geom.pad_right)
    pointwise = (geom.kh, geom.kw, geom.sh, geom.sw) == (1, 1, 1, 1) and not any(pads)
    taps = geom.kh * geom.kw * geom.c_in
    per = conv_sweep_pixels("cortex-m33", pointwise, geom.c_out, taps, scratch_bytes)
    split.append(conv_sweep_tiles(n_pix, per))
    return max(
        *(fast_rip_gap(geom, 0, tiles=t, turns=True) for t in turns),
        *(fast_rip_gap(geom, 0, tiles=t) for t in split),
    )


def _two_core_fused_gap(graph: Graph, op_index: int) -> int:
    """A fused chain both cores share (rip_fused.c): every row compute split by output
    channels, a core starting the next once the other finished it (rule block, L = 1). The
    two-core simulator's minimum gap over the splits the kernel may take: a depthwise stage
    by groups of four, a CONV_2D by channel pairs, or whole on core 0 where its
    requantisation is the exact one (the generator decides, from the weights); a ReplayError
    when a ring row could be read before both halves are stored or overwritten before it is
    read."""
    op = graph.operators[op_index]
    chain = fused_chain(graph, op.params.members, op.params.residual is not None)
    options = [
        (pair_split(c), c) if m.kind == Op.CONV_2D else (group_split(c),)
        for m, c in ((m, m.geom.c_out) for m in chain.ops)
    ]
    need = 0
    for splits in itertools.product(*options):
        two = fast_fused(chain, 1, splits)
        if not two.rings_ok:
            raise ReplayError(
                f"{op.describe(graph, op_index)}: on two cores (splits {list(splits)}) a ring "
                f"row is read before it is stored ({two.raw}) or overwritten first ({two.war})"
            )
        need = max(need, two.gap)
    return need


def _check_rings(graph: Graph, op_index: int) -> None:
    """Each ring tensor of a fused chain holds the rows its row schedule keeps at once, and
    an intermediate without one (0 rows: stored in its input's ring slot) is one the
    simulator finds safe there, the whole schedule replayed with those slots."""
    op = graph.operators[op_index]
    p = op.params
    chain = fused_chain(graph, p.members, p.residual is not None)
    shapes = chain.intermediates_hwc
    tensors = iter(p.rings)
    safe = simulate_slots(chain) if 0 in p.ring_rows else ()
    for k, (rows, kept, (_, w, c)) in enumerate(
        zip(p.ring_rows, simulate_ring_rows(chain), shapes, strict=True)
    ):
        if rows == 0:
            if not safe[k]:
                raise ReplayError(
                    f"{op.describe(graph, op_index)}: member {k}'s rows have no ring, and "
                    f"the simulator finds storing them in their input's slot unsafe"
                )
            continue
        ring, need = next(tensors), kept * w * c
        if graph.tensors[ring].nbytes < need:
            raise ReplayError(
                f"{op.describe(graph, op_index)}: ring tensor {ring} holds "
                f"{graph.tensors[ring].nbytes} B, its row schedule keeps {need} B"
            )
    lost = chain_evictions(chain, tuple(p.ring_rows)) if safe else 0
    if lost:
        raise ReplayError(
            f"{op.describe(graph, op_index)}: rings of {list(p.ring_rows)} rows lose {lost} "
            f"reads of their rows"
        )
    if p.source is not None:  # a streamed input: its rows arrive in order into slot r % R
        _, w, c = chain.input_hwc
        lost = source_evictions(chain, p.source_rows)
        held = graph.tensors[p.source_ring].nbytes
        if lost or held < p.source_rows * w * c or p.source_ring not in op.outputs:
            raise ReplayError(
                f"{op.describe(graph, op_index)}: the streamed input's ring of "
                f"{p.source_rows} rows ({held} B) loses {lost} reads of its rows"
            )


def _check_upsample(graph: Graph, op_index: int) -> None:
    op = graph.operators[op_index]
    (h, w, c), (ho, wo, _) = graph.tensors[op.inputs[0]].hwc, graph.tensors[op.outputs[0]].hwc
    if ho % h or wo % w or ho // h != wo // w or op.params.align_corners:
        # any other ratio, through TFLite's index maps
        n = nhwc(graph.tensors[op.inputs[0]].shape)[0]
        p = op.params
        ys = nearest_index_map(h, ho, p.align_corners, p.half_pixel_centers)
        xs = nearest_index_map(w, wo, p.align_corners, p.half_pixel_centers)
        if simulate_resize_nearest(n, (h, w), (ho, wo), ys, xs) != 0:
            raise ReplayError(f"op {op_index}: reverse resizing in place corrupts its input")
        return
    if h * w * c <= LITERAL_LIMIT and simulate_upsample(h, w, c, ho // h) != 0:
        raise ReplayError(f"op {op_index}: reverse upsampling in place corrupts its input")


class _Arena:
    """Which tensor owns which bytes: per live tensor, the disjoint [lo, hi) runs it still
    owns. A write or a free costs the runs it touches, not the arena's size."""

    def __init__(self) -> None:
        self.runs: dict[int, list[tuple[int, int]]] = {}

    def owns_all(self, s: int, lo: int, hi: int) -> bool:
        """Every byte of [lo, hi) still belongs to ``s`` (its runs are disjoint)."""
        covered = sum(max(0, min(b, hi) - max(a, lo)) for a, b in self.runs.get(s, ()))
        return covered == hi - lo

    def free(self, s: int) -> None:
        self.runs.pop(s, None)

    def paint(self, s: int, lo: int, hi: int, allowed: set[int], what: str) -> None:
        """Give [lo, hi) to ``s``; bytes of a tensor in ``allowed`` may be taken, bytes of
        any other live tensor may not (the error names the owner of the lowest one)."""
        if hi <= lo:
            self.runs.setdefault(s, [])
            return
        hit: list[tuple[int, int]] = []  # (first clashing byte, owner)
        for o, runs in self.runs.items():
            if o == s:
                continue
            for a, b in runs:
                if a < hi and lo < b:
                    hit.append((max(a, lo), o))
        bad = [(x, o) for x, o in hit if o not in allowed]
        if bad:
            raise ReplayError(
                f"{what}: writing tensor {s} at [{lo}, {hi}) overwrites live tensor {min(bad)[1]}"
            )
        for o in {o for _, o in hit}:
            kept = []
            for a, b in self.runs[o]:
                if a < lo:
                    kept.append((a, min(b, lo)))
                if b > hi:
                    kept.append((max(a, hi), b))
            self.runs[o] = kept
        mine = [(a, b) for a, b in self.runs.get(s, ()) if b <= lo or hi <= a]
        self.runs[s] = [*mine, (lo, hi)]


def replay(
    graph: Graph,
    plan: Plan,
    alignment: int,
    buffers: Sequence[OpBuffer] | None = None,
    scratch_in_arena: bool = True,
    shared: Collection[int] = (),
) -> int:
    """Replay ``plan``; return the measured peak or raise ReplayError naming the op.
    ``buffers``: the plan's op buffers (default: every kernel's scratch, `op_buffers`);
    ``scratch_in_arena`` False: a plan of the activations alone, the kernels' scratch left
    outside the arena (the paper's accounting), so no scratch need is checked; ``shared``:
    the ops two cores run together (each with a scratch of its own, and a convolution's
    gap checked at their split too)."""
    off = plan.offsets
    storage = {t: graph.storage(t) for t in graph.tensors}
    size = {s: graph.tensors[s].nbytes for s in set(storage.values())}
    if buffers is None:
        buffers = op_buffers(graph) if scratch_in_arena else ()
    at_op: dict[int, list[OpBuffer]] = {}
    for b in buffers:
        if b.id in size:
            raise ReplayError(f"op {b.op}'s {b.role} buffer {b.id} has a tensor's id")
        if not 0 <= b.op < len(graph.operators):
            raise ReplayError(f"{b.role} buffer {b.id} belongs to no op ({b.op})")
        size[b.id] = b.size
        at_op.setdefault(b.op, []).append(b)
    for i, op in enumerate(graph.operators if scratch_in_arena else ()):
        cores = 2 if i in shared else 1
        need = op_min_scratch_bytes(graph, op, cores)  # the leanest kernel's, recomputed
        have = sum(b.size for b in at_op.get(i, ()) if b.role == SCRATCH)
        if have < need:
            raise ReplayError(
                f"{op.describe(graph, i)}: its kernel needs {need} B of scratch, "
                f"the plan gives it {have} B"
            )
    for s, x in off.items():
        if x % alignment:
            raise ReplayError(f"tensor {s} at offset {x} is not aligned to {alignment} bytes")
        if x < 0:
            raise ReplayError(f"tensor {s} at negative offset {x}")
    needed = [s for s in size if s in off]
    peak = max((off[s] + size[s] for s in needed), default=0)
    peak = max([peak] + [off[p.input] + p.gap + size[p.input] for p in plan.shifts])
    arena = _Arena()
    last: dict[int, int] = {}
    for i, op in enumerate(graph.operators):
        for t in op.inputs:
            if t >= 0 and not graph.tensors[t].is_constant:
                last[storage[t]] = i
    for t in graph.outputs:
        last[storage[t]] = len(graph.operators)
    home = dict(off)  # where each tensor's bytes are now (a shift moves them)

    def where(s: int, what: str) -> tuple[int, int]:
        if s not in home:
            raise ReplayError(f"{what}: tensor {s} has no offset in the plan")
        return home[s], home[s] + size[s]

    def paint(s: int, allowed: set[int], what: str) -> None:
        lo, hi = where(s, what)
        arena.paint(s, lo, hi, allowed, what)

    def intact(s: int, what: str) -> None:
        if not arena.owns_all(s, *where(s, what)):
            raise ReplayError(f"{what}: input tensor {s} was overwritten before it was read")

    for t in graph.streamed:  # its rows live in its reader's ring, never whole
        if storage[t] in off or any(t in op.inputs for op in graph.operators):
            raise ReplayError(f"streamed input {t} is placed in the arena or read whole")
        if not any(getattr(op.params, "source", None) == t for op in graph.operators):
            raise ReplayError(f"streamed input {t}: no fused chain reads its rows")
    state = set(graph.state)  # outside the arena: never placed, read only by the next invoke
    for t in graph.state:
        if t in off or any(storage.get(u) == t for op in graph.operators for u in op.inputs):
            raise ReplayError(f"state tensor {t} is placed in the arena or read as an input")
    for t in graph.inputs:
        if t not in graph.streamed:
            paint(storage[t], set(), "graph input")
    aliased = {p.op: p for p in plan.aliased}
    shifted = {p.op for p in plan.shifts}
    for i, op in enumerate(graph.operators):
        what = op.describe(graph, i)
        reads = {storage[t] for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant}
        for s in reads:
            intact(s, what)
        mine = [ob.id for ob in at_op.get(i, ())]  # live while the op runs, for it alone
        for sid in mine:
            paint(sid, set(), f"{what} scratch")
        allowed: set[int] = set()
        pair = aliased.get(i)
        if pair is not None:
            if pair.input not in reads or pair.output != storage[op.outputs[0]]:
                raise ReplayError(f"{what}: plan aliases tensors the op does not connect")
            if i in shifted:  # memmove the input right by its gap, onto free bytes
                arena.free(pair.input)
                home[pair.input] = off[pair.input] + pair.gap
                paint(pair.input, set(), f"{what} right shift")
            gap = home[pair.input] - off[pair.output]
            if pair.exact:
                if gap != 0:
                    raise ReplayError(
                        f"{what}: in place needs the output at its input, gap is {gap}"
                    )
                if op.kind == Op.RESIZE_NEAREST_NEIGHBOR:
                    _check_upsample(graph, i)
            else:
                need = _min_gap(graph, i, pair.order)
                if i in shared and op.kind == Op.CONV_2D:
                    have = sum(b.size for b in at_op.get(i, ()) if b.role == SCRATCH)
                    need = max(need, _two_core_min_gap(graph, i, have // 2))
                if i in shared and op.kind == Op.FUSED_CHAIN:
                    need = max(need, _two_core_fused_gap(graph, i))
                if gap < need:
                    raise ReplayError(
                        f"{what}: gap {gap} B is below the simulated minimum {need} B"
                    )
            allowed.add(pair.input)
        # A fused chain's rings (outputs after the first) are written while its input is
        # still read and its output written: they may overlap nothing live.
        rings = {storage[t] for t in op.outputs[1:]} if op.kind == Op.FUSED_CHAIN else set()
        if rings:
            _check_rings(graph, i)
        if i in shared and op.kind == Op.FUSED_CHAIN and pair is None:
            _two_core_fused_gap(graph, i)  # its rings, on two cores
        for t in op.outputs:
            if storage[t] in state:  # a resource variable's bytes: the persistent region
                continue
            paint(storage[t], set() if storage[t] in rings else allowed, what)
        for s in rings:
            if not arena.owns_all(s, *where(s, what)):
                raise ReplayError(f"{what}: its ring tensor {s} was overwritten while it ran")
        for sid in mine:
            arena.free(sid)
        for s in reads | rings:
            if (last.get(s) == i or s in rings) and s not in allowed:
                arena.free(s)
        if pair is not None:  # the overwritten input is dead; keep the output's bytes
            arena.free(pair.input)
            paint(pair.output, set(), what)
    if peak != plan.peak:
        raise ReplayError(f"measured peak {peak} B differs from the plan's {plan.peak} B")
    return peak
