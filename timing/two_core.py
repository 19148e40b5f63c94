"""The critical path of a two-core run (issue 27), replayed from what each core did.

QEMU runs the two vCPUs of ``mps2-an521`` round-robin, and under ``-icount`` its virtual
time is the sum of both cores' instructions: neither SysTick nor the interleaving QEMU
happened to choose says how long the cores would take side by side. The plugin
``plugin/pico_timing.c`` (its two-core mode) records instead, per core, the instructions it
executed outside ``rip_core_spin`` ("busy") and the cycles they take on the Pico's core, and
its synchronisations, each with both counts; this module replays them with one instruction
(or one cycle) = one time unit on each core:

* a core's clock advances by its busy instructions (cycles);
* a wait by core v when it has published m units resumes at max(its clock, the time of the
  other core's m-th publish) (``rip_core_wait``: the other's count >= its own);
* the inference runs from core 0's first mark to its second; core 0 ends it after a final
  barrier, so core 1's share lies inside.

Core 1's events before core 0's start mark (boot, its "ready" publish, its wait for the
first inference) are on the timeline too. Both clocks start at 0: core 1's boot is a few
dozen instructions, overlapping core 0's set-up (input, stack painting) by far.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rip.core.errors import RipError

PUBLISH, WAIT, RESET, MARK = "P", "W", "R", "M"
KINDS = (PUBLISH, WAIT, RESET, MARK)
# rip_core_reset stores zero to both counters a few instructions apart; its store to the
# core's own counter looks like a publish and is dropped when this close to the reset.
RESET_SPAN = 8


@dataclass(frozen=True)
class Event:
    """What ``core`` did when it had executed ``busy`` instructions outside the spin."""

    core: int
    kind: str  # PUBLISH, WAIT, RESET or MARK
    busy: int
    mark: int = 0  # the mark's index (MARK only)


@dataclass(frozen=True)
class CriticalPath:
    """The inference on two cores at one instruction (or cycle: the unit the events were
    counted in) per time unit each: its ``length``, each core's busy time inside it, and
    the number of waits core 0 passed inside it (its synchronisations)."""

    length: int
    busy: tuple[int, int]
    syncs: int

    @property
    def idle(self) -> tuple[int, int]:
        """Each core's time units inside the inference without work (waiting, or done)."""
        return (self.length - self.busy[0], self.length - self.busy[1])

    @property
    def idle_share(self) -> tuple[float, float]:
        n = self.length or 1
        return (self.idle[0] / n, self.idle[1] / n)

    def summary(self, unit: str = "instructions") -> dict:
        """The path's figures, keyed by the ``unit`` its events were counted in."""
        return {
            f"critical_path_{unit}": self.length,
            f"busy_{unit}": list(self.busy),
            f"idle_share_{unit}": [round(x, 4) for x in self.idle_share],
            "syncs": self.syncs,
        }


INSTRUCTIONS, CYCLES = "instructions", "cycles"  # the units a run's events carry


def parse_events(text: str, unit: str = INSTRUCTIONS) -> tuple[list[Event], tuple[int, int]]:
    """The events of the timing plugin's two-core output (``event`` and ``busy`` lines, each
    with a core's instructions and its cycles so far) counted in ``unit``, and each core's
    total in it; a RipError when it is incomplete (QEMU did not exit cleanly) or reports an
    error."""
    column = {INSTRUCTIONS: 0, CYCLES: 1}[unit]
    events: list[Event] = []
    totals = [0, 0]
    complete = False
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "end":
            complete = True
        elif parts[0] == "busy":
            totals[int(parts[1])] = int(parts[2 + column])
        elif parts[0] == "error":
            raise RipError(f"the timing plugin: {' '.join(parts[1:])}")
        elif parts[0] == "event":
            core, kind, counts, mark = int(parts[1]), parts[2], parts[3:5], int(parts[5])
            events.append(Event(core, kind, int(counts[column]), mark if kind == MARK else 0))
    if not complete:
        raise RipError("the timing plugin's output is incomplete (QEMU did not exit cleanly)")
    return events, (totals[0], totals[1])


def _without_resets(stream: list[Event]) -> list[Event]:
    """One core's events with its resets applied: a reset zeroes both counters, so every
    earlier publish is void, and so is the reset's own store to the core's counter when it
    comes right after the reset (the next event, within RESET_SPAN instructions)."""
    out: list[Event] = []
    reset_at: int | None = None
    for e in stream:
        if e.kind == RESET:
            out = [x for x in out if x.kind != PUBLISH]
        elif not (e.kind == PUBLISH and reset_at is not None and e.busy <= reset_at + RESET_SPAN):
            out.append(e)
        reset_at = e.busy if e.kind == RESET else None
    return out


@dataclass
class _Core:
    """One core's replay so far."""

    events: list[Event]
    pos: int = 0
    clock: int = 0
    busy: int = 0  # busy instructions up to the last event replayed
    publishes: list[int] = field(default_factory=list)  # the time of each publish
    runs: list[tuple[int, int]] = field(default_factory=list)  # (start, length) of work
    marks: list[int] = field(default_factory=list)  # the time of each mark
    waits: list[int] = field(default_factory=list)  # the time each wait resumed
    times: list[tuple[Event, int]] = field(default_factory=list)  # each event, its time

    @property
    def done(self) -> bool:
        return self.pos == len(self.events)


def _run(me: _Core, other: _Core) -> bool:
    """Replay ``me`` until it ends or waits for a publish ``other`` has not replayed yet;
    True when it advanced."""
    start = me.pos
    while not me.done:
        e = me.events[me.pos]
        m = len(me.publishes)
        if e.kind == WAIT and m > len(other.publishes):
            break
        if e.busy < me.busy:
            raise RipError(f"core {e.core}: events out of order (busy {e.busy} after {me.busy})")
        me.runs.append((me.clock, e.busy - me.busy))
        me.clock += e.busy - me.busy
        me.busy = e.busy
        if e.kind == WAIT:
            if m:
                me.clock = max(me.clock, other.publishes[m - 1])
            me.waits.append(me.clock)
        elif e.kind == PUBLISH:
            me.publishes.append(me.clock)
        elif e.kind == MARK:
            me.marks.append(me.clock)
        me.times.append((e, me.clock))
        me.pos += 1
    return me.pos > start


def _busy_between(runs: Iterable[tuple[int, int]], lo: int, hi: int) -> int:
    return sum(max(0, min(t + n, hi) - max(t, lo)) for t, n in runs)


def _simulate(events: Sequence[Event], totals: tuple[int, int] | None) -> list[_Core]:
    """Both cores replayed as far as the events go (see ``replay``)."""
    for e in events:
        if e.core not in (0, 1) or e.kind not in KINDS:
            raise RipError(f"not a two-core event: {e}")
    cores = [_Core(_without_resets([e for e in events if e.core == c])) for c in (0, 1)]
    while _run(cores[0], cores[1]) | _run(cores[1], cores[0]):
        pass
    # Both blocked is impossible (each would have published more than the other), so a
    # core stops short only at a wait the other core never satisfies: fine as its last
    # event (the trace ended while it waited), not before more of its own.
    for c, me in enumerate(cores):
        if me.pos < len(me.events) - 1:
            e = me.events[me.pos]
            raise RipError(
                f"core {c} waits at busy {e.busy} for a publish that never comes, yet runs on"
            )
        if not me.done:  # the instructions up to its last wait ran
            me.runs.append((me.clock, me.events[me.pos].busy - me.busy))
        if me.done and totals is not None and totals[c] > me.busy:
            me.runs.append((me.clock, totals[c] - me.busy))
    return cores


def timeline(events: Sequence[Event]) -> list[tuple[Event, int]]:
    """Every event replayed (resets applied, see ``replay``) with its time, in time order
    (core 0 first at equal times); a wait's time is when it resumes."""
    cores = _simulate(events, None)
    return sorted(cores[0].times + cores[1].times, key=lambda x: (x[1], x[0].core))


def replay(events: Sequence[Event], totals: tuple[int, int] | None = None) -> CriticalPath:
    """The inference's critical path from the two cores' events (in each core's order; the
    order between cores does not matter). ``totals``: each core's busy instructions over
    the whole run, for the stretch after its last event. A RipError when the events cannot
    come from a run that obeyed the waits (a core ran on past a wait the other core never
    satisfied, or both wait for each other), or core 0 has fewer than two marks."""
    cores = _simulate(events, totals)
    marks = cores[0].marks
    if len(marks) < 2:
        raise RipError(f"core 0 passed {len(marks)} inference marks, not two")
    t0, t1 = marks[0], marks[1]
    busy = [_busy_between(c.runs, t0, t1) for c in cores]
    syncs = sum(1 for t in cores[0].waits if t0 <= t <= t1)
    return CriticalPath(t1 - t0, (busy[0], busy[1]), syncs)
