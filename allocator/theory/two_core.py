"""Two cores over one RiP workspace (issue 27): the schedule model, a literal executor, the
worst interleaving by construction, and an exhaustive search over every interleaving.

It never evaluates a closed form: a program lists, per core, the reads and writes its kernel
performs (byte addresses, found by enumerating taps in the builders of
:mod:`rip.allocator.theory.two_core_programs`), and the engines execute them.

**The model.** Each core runs a sequence of *units* (the same unit sequence on both cores:
the same pixel blocks, or the same row computes, each core doing its share of the work);
a unit is a list of accesses in the kernel's order. Synchronisation is one progress counter
per core (written by that core only, read by the other) and a lag ``L``:

* rule ``gather`` (per-layer kernels): a core *publishes* unit i once its last read of unit
  i is done, and before its first write of unit i waits until the other core has published
  units 0..i-L (``L >= 0``; ``L = 0`` needs every unit's reads before its writes, or the
  two cores wait for each other forever, which the engines report);
* rule ``block`` (fused chains, whose units consume what the other core produced): a core
  publishes unit i when it has finished it, and waits before *starting* unit i until the
  other core has finished units 0..i-L (``L >= 1``: the issue's "a core may not start
  block i + L until the other finished block i").

``lag=None`` means no synchronisation at all (both cores run free until the op's end).

**The workspace** is the allocation-tracked one of the one-core simulator
(:mod:`rip.allocator.theory.simulate`), one tag per byte: the arena holds the input at
``gap`` (region ``in``; its bytes tagged ``ORIGINAL``) and the output from 0 (region
``out``), the same bytes when they overlap; every other region (a ring) has its own bytes,
tagged ``UNSET`` until written. A write stores its tag; a read names the tag it expects in
each byte (``ORIGINAL`` for the input), and a read that finds another tag is a corruption:
an input byte overwritten too early, a ring row overwritten before its last reader (write
after read), or read before the other core stored it (read after write). An output byte
past the workspace is a write outside.

**The engines.**

* :func:`execute` runs one interleaving (a sequence of core ids) byte by byte, checking
  that every step obeys the synchronisation.
* :func:`leader_order` is the worst case by construction: the *leader* runs whenever the
  rule lets it, the other only when the leader waits. Each leader write then sees the
  largest set of the other core's reads still to come that any interleaving allows (the
  other core is stopped exactly at the publish the leader needed, before any read of the
  next unit), so the two leader orders together reach every corruption any interleaving
  can (:func:`worst_case`).
* :func:`explore` is the exhaustive search: every state (accesses done by A, by B) that
  some interleaving reaches, found by a breadth-first walk from (0, 0) under the rule; a
  write can precede a read exactly when a reachable state has the write done and the read
  enabled. :class:`Exploration` turns that into the set of gaps at which some interleaving
  corrupts, and counts the ring reads some interleaving gets wrong.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rip.core.errors import LayerError

ORIGINAL = -1  # an input byte no write has touched
UNSET = -2  # a byte no write has stored yet (outside the input)
IN, OUT, TICK = "in", "out", ""  # the arena's two views, and a no-op access
GATHER, BLOCK = "gather", "block"
RULES = (GATHER, BLOCK)


@dataclass(frozen=True, eq=False)
class Access:
    """One read or write of a set of bytes of one region. A write stores ``tag`` in each
    byte; a read expects ``expect`` (one tag, or one per byte)."""

    write: bool
    region: str
    addrs: np.ndarray
    tag: int = 0
    expect: int | np.ndarray = ORIGINAL

    @staticmethod
    def read(region: str, addrs: Iterable[int] | np.ndarray, expect=ORIGINAL) -> Access:
        return Access(False, region, np.asarray(addrs, dtype=np.int64).ravel(), 0, expect)

    @staticmethod
    def store(region: str, addrs: Iterable[int] | np.ndarray, tag: int) -> Access:
        return Access(True, region, np.asarray(addrs, dtype=np.int64).ravel(), tag)


TICK_ACCESS = Access(False, TICK, np.zeros(0, dtype=np.int64))

Unit = tuple[Access, ...]


@dataclass(frozen=True, eq=False)
class TwoCoreProgram:
    """What both cores do: ``units[core][i]`` is core ``core``'s share of unit i (both
    cores have the same number of units). ``n_in``/``n_out``: arena bytes of the input and
    the output; ``rings``: the size of every other region; ``extend``: the output may run
    past the input's end (the workspace is then max(gap + n_in, n_out), Theorem 14's
    upsampling), otherwise it must fit in gap + n_in (Eq. 10's second term)."""

    name: str
    units: tuple[tuple[Unit, ...], tuple[Unit, ...]]
    n_in: int
    n_out: int
    rule: str = GATHER
    rings: tuple[tuple[str, int], ...] = ()
    extend: bool = False

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise LayerError(f"two cores: rule must be one of {RULES}, got {self.rule!r}")
        if len(self.units[0]) != len(self.units[1]):
            raise LayerError("two cores: both cores must run the same number of units")

    def workspace(self, gap: int) -> int:
        return max(gap + self.n_in, self.n_out) if self.extend else gap + self.n_in


@dataclass(frozen=True, eq=False)
class _Core:
    """One core's accesses flattened, with where it waits and publishes."""

    accesses: tuple[Access, ...]
    need: np.ndarray  # per access: units the other core must have published first (0: none)
    published: np.ndarray  # per prefix length 0..n: units this core has published


def _flatten(units: Sequence[Unit], rule: str, lag: int | None) -> _Core:
    accesses: list[Access] = []
    need: list[int] = []
    publish_at: list[int] = []  # per unit, the prefix length after which it is published
    for i, unit in enumerate(units):
        unit = tuple(unit) or (TICK_ACCESS,)  # an empty share still passes its sync point
        start = len(accesses)
        reads = [k for k, a in enumerate(unit) if not a.write and a.region != TICK]
        writes = [k for k, a in enumerate(unit) if a.write]
        if rule == GATHER:
            wait = writes[0] if writes else None
            publish_at.append(start + (reads[-1] + 1 if reads else 0))
        else:
            wait = 0
            publish_at.append(start + len(unit))
        for k, a in enumerate(unit):
            accesses.append(a)
            need.append(i - lag + 1 if lag is not None and k == wait else 0)
    counts = np.zeros(len(accesses) + 1, dtype=np.int64)
    for p in publish_at:
        counts[p] += 1
    return _Core(tuple(accesses), np.asarray(need, dtype=np.int64), np.cumsum(counts))


def _cores(program: TwoCoreProgram, lag: int | None) -> tuple[_Core, _Core]:
    if lag is not None and (lag < 0 or (program.rule == BLOCK and lag < 1)):
        raise LayerError(f"two cores: lag {lag} is below the {program.rule} rule's minimum")
    return (
        _flatten(program.units[0], program.rule, lag),
        _flatten(program.units[1], program.rule, lag),
    )


class Deadlock(LayerError):
    """Both cores wait for each other (a lag too small for the units' order)."""


# --------------------------------------------------------------------------------------
# One interleaving, literally
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One execution: ``corrupted`` bytes read with another tag than expected (input
    overwritten, ring row overwritten or not yet stored), ``outside`` output bytes past the
    workspace."""

    corrupted: int = 0
    outside: int = 0

    @property
    def safe(self) -> bool:
        return not (self.corrupted or self.outside)

    def __add__(self, other: Run) -> Run:
        return Run(self.corrupted + other.corrupted, self.outside + other.outside)


def execute(program: TwoCoreProgram, gap: int, order: Iterable[int], lag: int | None) -> Run:
    """Run the interleaving ``order`` (core ids, one per access) over a tagged workspace;
    LayerError if a step breaks the synchronisation or the order is incomplete."""
    if gap < 0:
        raise LayerError(f"gap must be non-negative, got {gap}")
    cores = _cores(program, lag)
    size = program.workspace(gap)
    arena = np.full(size, UNSET, dtype=np.int64)
    arena[gap : gap + program.n_in] = ORIGINAL
    rings = {name: np.full(n, UNSET, dtype=np.int64) for name, n in program.rings}
    pos = [0, 0]
    corrupted = outside = 0
    for core in order:
        me, other = cores[core], cores[1 - core]
        k = pos[core]
        if k >= len(me.accesses):
            raise LayerError(f"two cores: core {core} has no access left")
        if other.published[pos[1 - core]] < me.need[k]:
            raise LayerError(f"two cores: core {core} runs access {k} before its sync point")
        a = me.accesses[k]
        pos[core] += 1
        if a.region == TICK:
            continue
        if a.region in (IN, OUT):
            where = a.addrs + (gap if a.region == IN else 0)
            if a.write:
                inside = where[(where >= 0) & (where < size)]
                outside += where.size - inside.size
                arena[inside] = a.tag
            else:
                corrupted += int(np.count_nonzero(arena[where] != a.expect))
        elif a.write:
            rings[a.region][a.addrs] = a.tag
        else:
            corrupted += int(np.count_nonzero(rings[a.region][a.addrs] != a.expect))
    if pos != [len(cores[0].accesses), len(cores[1].accesses)]:
        raise LayerError("two cores: the interleaving stops before both cores finish")
    return Run(corrupted, outside)


def leader_order(program: TwoCoreProgram, lag: int | None, leader: int) -> list[int]:
    """The worst interleaving for ``leader``'s writes (module docstring): the leader runs
    whenever the rule lets it, the other core one access at a time only while the leader
    waits. Deadlock if neither can move."""
    cores = _cores(program, lag)
    n = [len(c.accesses) for c in cores]
    pos = [0, 0]
    order: list[int] = []

    def can(core: int) -> bool:
        k = pos[core]
        return k < n[core] and cores[1 - core].published[pos[1 - core]] >= cores[core].need[k]

    while pos != n:
        core = leader if can(leader) else 1 - leader
        if not can(core):
            raise Deadlock(f"two cores: both cores wait at {pos} under lag {lag}")
        order.append(core)
        pos[core] += 1
    return order


def worst_case(program: TwoCoreProgram, gap: int, lag: int | None) -> Run:
    """Both leader orders executed at ``gap``: what the worst interleaving corrupts."""
    return sum(
        (execute(program, gap, leader_order(program, lag, lead), lag) for lead in (0, 1)),
        Run(),
    )


def _upset_minimum(safe, hi: int) -> int:
    """The smallest gap g such that every gap in [g, hi] is safe (what a planner that places
    the output *at least* gap below the input needs); hi must be safe."""
    if not safe(hi):
        raise AssertionError(f"two cores: gap {hi} is not safe, the search bound is wrong")
    g = hi
    while g > 0 and safe(g - 1):
        g -= 1
    return g


def safe_gap_bound(program: TwoCoreProgram) -> int:
    """A gap at which the output cannot reach the input (every arena write lands below it)."""
    return program.n_out + 1


def min_gap_worst_case(program: TwoCoreProgram, lag: int | None) -> int:
    """The upset minimum (:func:`_upset_minimum`) by executing both leader orders at every
    gap from the always-safe one downwards."""
    orders = [leader_order(program, lag, lead) for lead in (0, 1)]

    def safe(gap: int) -> bool:
        return all(execute(program, gap, o, lag).safe for o in orders)

    return _upset_minimum(safe, safe_gap_bound(program))


# --------------------------------------------------------------------------------------
# Every interleaving
# --------------------------------------------------------------------------------------
@dataclass(eq=False)
class Exploration:
    """The states some interleaving reaches: ``seen[a, b]``, A having done a accesses and B
    b. ``hi[c][k]``: the most accesses the other core has done in a reachable state where
    core c's access k is enabled (-1 when never enabled); ``deadlocks``: reachable states
    where neither core can move before both finish."""

    program: TwoCoreProgram
    cores: tuple[_Core, _Core]
    seen: np.ndarray
    hi: tuple[np.ndarray, np.ndarray]
    states: int
    deadlocks: int
    _ring: int | None = field(default=None, repr=False)

    def enabled_at(self, core: int, k: int) -> np.ndarray:
        """The other core's positions in every reachable state where core ``core`` may run
        its access ``k``."""
        me, other = self.cores[core], self.cores[1 - core]
        row = self.seen[k, :] if core == 0 else self.seen[:, k]
        return np.flatnonzero(row & (other.published >= me.need[k]))

    def ring_violations(self) -> int:
        """Ring bytes some interleaving reads with another tag than the read expects (a row
        stored too late, or overwritten too early); independent of the gap."""
        if self._ring is None:
            self._ring = self._count_ring()
        return self._ring

    def _count_ring(self) -> int:
        names = [name for name, _ in self.program.rings]
        # per region and byte, its writes in program order: (core, position, tag)
        history: dict[str, dict[int, list[tuple[int, int, int]]]] = {n: {} for n in names}
        for core in (0, 1):
            for k, a in enumerate(self.cores[core].accesses):
                if a.write and a.region in history:
                    for x in a.addrs.tolist():
                        history[a.region].setdefault(x, []).append((core, k, a.tag))
        bad = 0
        for core in (0, 1):
            for k, a in enumerate(self.cores[core].accesses):
                if a.write or a.region not in history:
                    continue
                others = None
                expect = np.broadcast_to(np.asarray(a.expect), a.addrs.shape)
                for x, want in zip(a.addrs.tolist(), expect.tolist(), strict=True):
                    writes = history[a.region].get(x, [])
                    if len({w for w, _, _ in writes}) > 1:
                        raise LayerError("two cores: a ring byte is written by both cores")
                    if not writes or writes[0][0] == core:  # program order decides
                        done = np.array([k])
                    else:
                        if others is None:
                            others = self.enabled_at(core, k)
                        done = others
                    positions = np.array([p for _, p, _ in writes], dtype=np.int64)
                    tags = np.array([UNSET] + [t for _, _, t in writes], dtype=np.int64)
                    seen = tags[np.searchsorted(positions, done)]  # the last write before
                    bad += int(np.any(seen != want))
        return bad

    def unsafe_gaps(self, hi: int | None = None) -> set[int]:
        """Every gap in [0, hi] at which some interleaving corrupts the input or writes
        outside the workspace (ring violations are counted apart: they do not depend on the
        gap). A write at output address o precedes a read of input byte p, which sits at
        gap + p, in some interleaving exactly when the writer had done it in a reachable
        state enabling the read; such a pair corrupts at gap o - p."""
        hi = safe_gap_bound(self.program) if hi is None else hi
        bad: set[int] = set()
        for writer in (0, 1):
            writes = [
                (k, a.addrs) for k, a in enumerate(self.cores[writer].accesses)
                if a.write and a.region == OUT and a.addrs.size
            ]  # fmt: skip
            if not writes:
                continue
            wpos = np.concatenate([np.full(w.size, k) for k, w in writes])
            waddr = np.concatenate([w for _, w in writes])
            for core in (0, 1):
                for k, a in enumerate(self.cores[core].accesses):
                    if a.write or a.region != IN:
                        continue
                    done = k if writer == core else int(self.hi[core][k])
                    before = waddr[wpos < done]  # the writes done in that state
                    if before.size:
                        gaps = (before[:, None] - a.addrs[None, :]).ravel()
                        bad.update(gaps[(gaps >= 0) & (gaps <= hi)].tolist())
        top = max(
            (int(a.addrs.max()) + 1 for c in self.cores for a in c.accesses
             if a.write and a.region == OUT and a.addrs.size),
            default=0,
        )  # fmt: skip
        bad.update(g for g in range(hi + 1) if top > self.program.workspace(g))
        return bad

    def safe_at(self, gap: int) -> bool:
        """No interleaving corrupts anything (input or ring) at ``gap``: what a same-base
        kind (gap 0, placed exactly) needs."""
        return gap not in self.unsafe_gaps(gap) and self.ring_violations() == 0

    def min_gap(self, hi: int | None = None) -> int:
        """The upset minimum over every interleaving: the smallest gap from which on no
        interleaving corrupts the input (ring violations not included)."""
        hi = safe_gap_bound(self.program) if hi is None else hi
        bad = self.unsafe_gaps(hi)
        if hi in bad:
            raise AssertionError(f"two cores: gap {hi} is not safe, the search bound is wrong")
        return max(bad) + 1 if bad else 0


def explore(program: TwoCoreProgram, lag: int | None) -> Exploration:
    """Breadth-first walk of every state some interleaving of the two cores reaches under
    ``lag`` (each step: one core runs its next access, if the rule lets it)."""
    cores = _cores(program, lag)
    na, nb = len(cores[0].accesses), len(cores[1].accesses)
    pub_a, pub_b = cores[0].published, cores[1].published
    need_a, need_b = cores[0].need, cores[1].need
    seen = np.zeros((na + 1, nb + 1), dtype=bool)
    seen[0, 0] = True
    queue = deque([(0, 0)])
    hi = (np.full(na, -1, dtype=np.int64), np.full(nb, -1, dtype=np.int64))
    states = deadlocks = 0
    while queue:
        a, b = queue.popleft()
        states += 1
        moved = False
        if a < na and pub_b[b] >= need_a[a]:
            moved = True
            hi[0][a] = max(hi[0][a], b)
            if not seen[a + 1, b]:
                seen[a + 1, b] = True
                queue.append((a + 1, b))
        if b < nb and pub_a[a] >= need_b[b]:
            moved = True
            hi[1][b] = max(hi[1][b], a)
            if not seen[a, b + 1]:
                seen[a, b + 1] = True
                queue.append((a, b + 1))
        if not moved and (a, b) != (na, nb):
            deadlocks += 1
    return Exploration(program, cores, seen, hi, states, deadlocks)
