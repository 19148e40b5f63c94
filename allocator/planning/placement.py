"""The placers' narrow interface, and the first-fit placer.

A placement problem knows nothing about TFLite or kernels (STYLE.md, after TFLite Micro's
GreedyMemoryPlanner): buffers with a size and a live interval of schedule steps (an
activation, or a buffer one op alone uses, such as its kernel's scratch: live for that step
only, `requirements.OpBuffer`), plus in-place pairs, each saying "op k may write buffer
`output` over buffer `input` if the output starts at least `gap` bytes below it". A plan
gives every buffer an aligned offset and says which pairs it used, and which of those it
separated by a physical right shift.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rip.core.errors import PlacementError as PlacementError  # re-exported: milp.py imports it here
from rip.core.terms import InPlaceKind, Order, Placer
from rip.frontend.liveness import Buffer as Buffer  # the one buffer type, defined by liveness


@dataclass(frozen=True)
class Pair:
    """Op ``op`` may write ``output`` over ``input``: output offset <= input offset - gap
    (``exact``: equal, as channel in-place and upsampling need). ``gap`` is in bytes and a
    multiple of the alignment. A ``shiftable`` pair may instead share the input's base, the
    input being moved ``gap`` bytes right (a memmove) just before the op (Sec. 4.3)."""

    op: int
    input: int
    output: int
    gap: int
    exact: bool = False
    shiftable: bool = False
    kind: InPlaceKind | str = ""  # how the output overlays the input; "" in bare problems
    order: Order | str = Order.ROW  # "reverse": in-place upsampling (Theorem 14)


SCRATCH = "scratch"  # an op buffer's role: its kernel's scratch (``rip_context``)
WEIGHTS = "weights"  # an op buffer's role: a staged SRAM copy of a filter (staging.py)


@dataclass(frozen=True)
class OpBuffer:
    """A buffer of the arena that no graph tensor is, live for exactly the one op ``op`` (a
    schedule step): what a kernel needs while it runs, placed like any tensor, as TFLite
    Micro plans its kernels' scratch buffers as tensors live for one op. ``role`` says what
    it holds: ``SCRATCH``, the kernel's receptive-field gathers, rows and accumulators
    (`planning.scratch`); ``WEIGHTS``, a staged SRAM copy of filter ``member`` of the op (a
    CONV_2D's only filter is member 0; a fused chain's member k is its stage k), copied
    from flash just before the op (staging.py). ``id`` shares the id space of the problem's
    buffers (it is a key of ``Plan.offsets``) and is above every storage tensor id."""

    id: int
    op: int
    size: int
    role: str = SCRATCH
    member: int = 0

    @property
    def buffer(self) -> Buffer:
        return Buffer(self.id, self.size, self.op, self.op)


@dataclass(frozen=True)
class Problem:
    buffers: tuple[Buffer, ...]
    pairs: tuple[Pair, ...] = ()
    alignment: int = 4
    # The buffers above that are op-lived (each is also in ``buffers``, as ``b.buffer``).
    op_buffers: tuple[OpBuffer, ...] = ()

    def buffer(self, bid: int) -> Buffer:
        return next(b for b in self.buffers if b.id == bid)

    def next_id(self) -> int:
        """An id above every buffer's, for a new op-lived buffer."""
        return max((b.id for b in self.buffers), default=-1) + 1

    def resized(self, sizes: dict[int, int]) -> Problem:
        """This problem with the op buffers named in ``sizes`` (by id) of those sizes."""
        ops = tuple(replace(o, size=sizes.get(o.id, o.size)) for o in self.op_buffers)
        buffers = tuple(replace(b, size=sizes.get(b.id, b.size)) for b in self.buffers)
        return Problem(buffers, self.pairs, self.alignment, ops)

    def with_op_buffers(self, extra: tuple[OpBuffer, ...]) -> Problem:
        """This problem with the op-lived buffers ``extra`` added (ids from `next_id`)."""
        return Problem(
            self.buffers + tuple(o.buffer for o in extra),
            self.pairs,
            self.alignment,
            self.op_buffers + extra,
        )

    def conflicts(self, limit: int | None = None) -> list[tuple[int, int]]:
        """Buffer pairs whose lifetimes overlap and that no in-place pair relates: they may
        never share a byte. Only these get no-overlap constraints (the paper puts them on
        all n(n-1)/2 pairs). ``limit``: stop after ``limit + 1`` pairs, so that a caller
        can learn that a model is too big for the MILP without listing n^2/2 pairs."""
        related = {frozenset((p.input, p.output)) for p in self.pairs}
        by_first = sorted(self.buffers, key=lambda b: (b.first, b.id))
        out = []
        for i, a in enumerate(by_first):
            for b in by_first[i + 1 :]:
                if b.first > a.last:
                    break
                if frozenset((a.id, b.id)) not in related:
                    out.append((a.id, b.id))
                    if limit is not None and len(out) > limit:
                        return out
        return out

    def lower_bound(self) -> int:
        """The layer-by-layer limit: at every step, the bytes alive together, where the
        op's best in-place pair counts once as its overlapped footprint. No plan of this
        problem can peak below it."""
        return max([0, *self.step_bounds(), *(b.size for b in self.buffers)])

    def step_bounds(self) -> list[int]:
        """`lower_bound`'s figure at each step of the schedule.

        One sweep over the schedule: sizes enter at ``first`` and leave after ``last``."""
        steps = max((b.last for b in self.buffers), default=-1) + 1
        delta = [0] * (steps + 1)
        for b in self.buffers:
            if b.first <= b.last and b.first < steps:
                delta[max(b.first, 0)] += b.size
                delta[b.last + 1] -= b.size
        size = {b.id: b.size for b in self.buffers}
        saving = [0] * steps
        for p in self.pairs:
            if 0 <= p.op < steps:
                si, so = size[p.input], size[p.output]
                saving[p.op] = max(saving[p.op], si + so - max(so, p.gap + si))
        bounds, total = [], 0
        for k in range(steps):
            total += delta[k]
            bounds.append(total - saving[k])
        return bounds


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Offsets for every buffer, the in-place pairs used, and the shifts among them.

    ``peak`` is the arena size: the highest byte any buffer (or a shifted input) touches.
    ``optimal`` is True when the placer proved it, False when it stopped early, None for
    a heuristic that does not know.
    """

    offsets: dict[int, int]
    aliased: tuple[Pair, ...]
    shifts: tuple[Pair, ...]
    peak: int
    placer: Placer | str  # "greedy" for the warm start that no user picks
    optimal: bool | None = None
    solve_seconds: float = 0.0
    lower_bound: int = 0
    stats: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def measure_peak(problem: Problem, offsets: dict[int, int], shifts: tuple[Pair, ...]) -> int:
    top = [offsets[b.id] + b.size for b in problem.buffers]
    top += [offsets[p.input] + p.gap + problem.buffer(p.input).size for p in shifts]
    return max(top, default=0)


def lowest_free(occupied: list[tuple[int, int]], size: int, alignment: int) -> int:
    """The lowest aligned offset where ``size`` bytes miss every [lo, hi) in ``occupied``."""
    x = 0
    for lo, hi in sorted(occupied):
        if x + size <= lo:
            break
        x = max(x, align_up(hi, alignment))
    return x


def first_fit(problem: Problem) -> Plan:
    """TinyEngine's allocator: offsets committed in schedule order, each buffer at the
    lowest aligned offset free for its whole lifetime. An in-place output is tried first
    at ``gap`` below its input (when that is free); no shifts, no look-ahead, so freed
    space can be stranded between live buffers."""
    v = problem.alignment
    order = sorted(problem.buffers, key=lambda b: (b.first, b.id))
    placed: dict[int, int] = {}
    aliased: list[Pair] = []
    pairs_for: dict[int, list[Pair]] = {}
    for p in problem.pairs:
        pairs_for.setdefault(p.output, []).append(p)
    active: list[Buffer] = []  # placed buffers still alive at the current first step
    for b in order:
        # placed in order of first step, so a placed buffer overlaps b iff it lasts to it
        active = [o for o in active if o.last >= b.first]
        live = [(placed[o.id], placed[o.id] + o.size, o.id) for o in active if o.overlaps(b)]

        def free(x: int, skip: int | None, b: Buffer = b, live: list = live) -> bool:
            return x >= 0 and all(x + b.size <= lo or hi <= x for lo, hi, o in live if o != skip)

        chosen = None
        for p in pairs_for.get(b.id, ()):
            x = placed.get(p.input, -1) - p.gap
            if p.input in placed and x >= 0 and free(x, p.input):
                chosen, placed[b.id] = p, x
                break
        active.append(b)
        if chosen is not None:
            aliased.append(chosen)
            continue
        placed[b.id] = lowest_free([(lo, hi) for lo, hi, _ in live], b.size, v)
    return Plan(
        offsets=placed,
        aliased=tuple(aliased),
        shifts=(),
        peak=measure_peak(problem, placed, ()),
        placer=Placer.FIRSTFIT,
        lower_bound=problem.lower_bound(),
    )


def greedy_by_size(problem: Problem) -> Plan:
    """TFLite Micro's GreedyMemoryPlanner: the largest buffer first, each at the lowest
    aligned offset free over its lifetime. Uses no in-place pairs; often optimal for dual
    buffering, and a second warm start for the MILP."""
    v = problem.alignment
    placed: dict[int, int] = {}
    order = sorted(problem.buffers, key=lambda b: (-b.size, b.first, b.id))
    # the placed buffers alive at each step: a buffer's neighbours in time are found by its
    # own steps, not by a scan of every buffer (20,000 chained ops: minutes, now linear)
    at_step: dict[int, list[Buffer]] = {}
    for b in order:
        near = {o.id: o for k in range(b.first, b.last + 1) for o in at_step.get(k, ())}
        live = [(placed[o.id], placed[o.id] + o.size) for o in near.values() if o.overlaps(b)]
        placed[b.id] = lowest_free(live, b.size, v)
        for k in range(b.first, b.last + 1):
            at_step.setdefault(k, []).append(b)
    return Plan(
        offsets=placed,
        aliased=(),
        shifts=(),
        peak=measure_peak(problem, placed, ()),
        placer="greedy",  # a warm start only, never a user's --placer
        lower_bound=problem.lower_bound(),
    )
