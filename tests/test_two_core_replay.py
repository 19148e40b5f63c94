"""The two-core critical path replay (rip.timing.two_core) on hand-made event lists: one
instruction per time unit on each core, a wait resuming at the other core's matching
publish, core 1's boot on the timeline, resets, and traces no run could produce."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rip.core.errors import RipError
from rip.timing.two_core import (
    CYCLES,
    MARK,
    PUBLISH,
    RESET,
    WAIT,
    Event,
    parse_events,
    replay,
    timeline,
)


class Core:
    """Builds one core's events as the firmware's calls would: work, publish, wait, mark."""

    def __init__(self, core: int) -> None:
        self.core, self.busy, self.events = core, 0, []

    def work(self, n: int) -> Core:
        self.busy += n
        return self

    def _add(self, kind: str, mark: int = 0) -> None:
        self.busy += 1  # the store, load or mark's first instruction is busy too
        self.events.append(Event(self.core, kind, self.busy, mark))

    def publish(self) -> Core:
        self._add(PUBLISH)
        return self

    def wait(self) -> Core:
        self._add(WAIT)
        return self

    def barrier(self) -> Core:
        return self.publish().wait()

    def mark(self) -> Core:
        self._add(MARK)
        return self

    def reset(self) -> Core:
        self._add(PUBLISH)  # rip_core_reset's store to the own counter
        self._add(RESET)
        return self


def program(setup: int, boot: int, blocks: list[tuple[int, int]]) -> list[Event]:
    """Core 0: ``setup`` instructions, reset, start mark, go barrier, then per block its
    work and a barrier, end mark. Core 1: ``boot`` instructions, ready barrier, the same
    blocks with its own work, then ready for the next inference (a wait never satisfied)."""
    c0 = Core(0).work(setup).reset().work(5).mark().barrier()
    c1 = Core(1).work(boot).barrier()
    for w0, w1 in blocks:
        c0.work(w0).barrier()
        c1.work(w1).barrier()
    c0.mark().work(100)
    c1.barrier()
    return c0.events + c1.events


def interleave(events: list[Event], seed: int) -> list[Event]:
    """The same events, the two cores' streams merged in a random order."""
    rng = random.Random(seed)
    streams = [[e for e in events if e.core == c] for c in (0, 1)]
    out: list[Event] = []
    while streams[0] or streams[1]:
        c = rng.choice([k for k in (0, 1) if streams[k]])
        out.append(streams[c].pop(0))
    return out


def expected(setup: int, boot: int, blocks: list[tuple[int, int]]) -> int:
    """The critical path of ``program`` worked out as the recurrence of its barriers: core
    v publishes at p_v (its resume time + its work + 1), executes its wait one later and
    resumes at max(that, the other's publish)."""
    p0, p1 = setup + 9, boot + 1  # the go and ready publishes
    r0, r1 = max(p0 + 1, p1), max(p1 + 1, p0)
    for w0, w1 in blocks:
        p0, p1 = r0 + w0 + 1, r1 + w1 + 1
        r0, r1 = max(p0 + 1, p1), max(p1 + 1, p0)
    return r0 + 1 - (setup + 8)  # the end mark one after core 0's last resume


def test_balanced_blocks_take_one_share_each() -> None:
    """Equal work on both cores: the critical path is one core's work plus the sync
    instructions, nobody idles."""
    path = replay(program(1000, 30, [(500, 500)] * 4))
    # go barrier (2) + 4 x (500 + 2) + the end mark (1)
    assert path.length == 2 + 4 * 502 + 1 == expected(1000, 30, [(500, 500)] * 4)
    assert path.busy[0] == path.length
    # core 1 resumes from the go one after the start mark, and is in its next ready
    # barrier (2) when core 0 marks the end
    assert path.busy[1] == 4 * 502 + 2
    assert path.syncs == 5
    assert path.idle_share[0] == 0.0


def test_one_core_far_ahead_waits_for_the_other() -> None:
    """Core 1 has almost nothing to do: it waits at every barrier, and the critical path is
    core 0's work; core 1's idle share is nearly all of it."""
    path = replay(program(1000, 30, [(1000, 10)] * 8))
    assert path.length == 2 + 8 * 1002 + 1
    assert path.busy[1] == 8 * 12 + 2
    assert path.idle_share[1] > 0.98


def test_the_slower_core_sets_the_critical_path() -> None:
    """Core 0 light, core 1 heavy: core 0 waits at every barrier for core 1's publish."""
    path = replay(program(1000, 30, [(10, 1000)] * 8))
    # core 1 resumes from the go one after the mark, then 8 blocks of 1000 + 2
    assert path.length == 1 + 8 * 1002 == expected(1000, 30, [(10, 1000)] * 8)
    assert path.busy[0] == 2 + 8 * 12 + 1
    assert path.idle_share[0] > 0.98


def test_mixed_blocks_sum_the_larger_share_of_each() -> None:
    blocks = [(300, 700), (900, 100), (500, 500), (50, 60)]
    assert replay(program(2000, 40, blocks)).length == expected(2000, 40, blocks)


def test_a_slow_boot_of_core_1_delays_the_go() -> None:
    """Core 1's boot is on the timeline: booting longer than core 0's set-up delays core
    0's go barrier, inside the inference."""
    fast = replay(program(1000, 30, [(100, 100)]))
    slow = replay(program(1000, 1500, [(100, 100)]))
    assert fast.length == 105
    # core 1 publishes ready at 1501; core 0 marked the start at 1008
    assert slow.length == 596 == expected(1000, 1500, [(100, 100)])


def test_the_order_between_cores_does_not_matter() -> None:
    events = program(1000, 30, [(300, 700), (900, 100), (5, 5)])
    first = replay(events)
    for seed in range(20):
        assert replay(interleave(events, seed)) == first


def test_totals_count_work_after_the_last_event() -> None:
    """Core 1's busy after its last event belongs to the inference when it lies inside."""
    c0 = Core(0).reset().mark().barrier().work(1000).mark()
    c1 = Core(1).barrier()
    events = c0.events + c1.events
    assert replay(events).busy[1] == 0
    assert replay(events, (c0.busy, c1.busy + 400)).busy[1] == 400


@pytest.mark.parametrize("after", [False, True])
def test_a_reset_voids_the_publishes_before_it_and_its_own_store(after: bool) -> None:
    """The .bss clear and rip_core_reset store to the counters: none of it is a publish,
    whichever order the reset's two stores come in."""
    c0 = Core(0).publish().work(50).publish().work(50)
    if after:  # the store to the other's counter first, then the own one
        c0._add(RESET)
        c0._add(PUBLISH)
    else:
        c0.reset()
    c0.mark().barrier().work(100).barrier().mark()
    c1 = Core(1).barrier().work(100).barrier()
    path = replay(c0.events + c1.events)
    assert path.length == 2 + 102 + 1
    assert path.syncs == 2


def test_a_core_running_past_a_wait_never_satisfied_is_refused() -> None:
    """Core 1 waits for core 0's second publish, which never comes, yet runs on: no run
    obeying the waits does that (a lag violation)."""
    c0 = Core(0).reset().mark().barrier().work(10).mark()
    c1 = Core(1).barrier().work(10).barrier().work(10).publish()
    with pytest.raises(RipError, match="never comes, yet runs on"):
        replay(c0.events + c1.events)


def test_fewer_than_two_marks_is_refused() -> None:
    c0 = Core(0).reset().mark().barrier()
    c1 = Core(1).barrier()
    with pytest.raises(RipError, match="marks"):
        replay(c0.events + c1.events)


def test_parse_events_reads_the_plugin_output() -> None:
    text = (
        "segment vcpu=0 index=0 instructions=3 cycles=4\n"
        "event 0 P 10 31 0\nevent 0 R 11 33 0\nevent 0 M 20 60 2\nevent 0 P 22 70 0\n"
        "event 0 W 23 71 0\nevent 1 P 5 15 0\nevent 1 W 6 17 0\nevent 0 M 40 150 2\n"
        "busy 0 99 300\n"
    )
    events, totals = parse_events(text + "busy 1 7 21\nend segments=1 events=8\n")
    assert events[2] == Event(0, MARK, 20, 2) and events[1] == Event(0, "R", 11)
    assert totals == (99, 7)
    events, totals = parse_events(text + "busy 1 7 21\nend segments=1 events=8\n", CYCLES)
    assert events[2] == Event(0, MARK, 60, 2) and events[5] == Event(1, "P", 15)
    assert totals == (300, 21)
    with pytest.raises(RipError, match="incomplete"):
        parse_events(text)
    with pytest.raises(RipError, match="vCPUs"):
        parse_events(text + "error more vCPUs than the 2 cores modelled\nend events=8\n")


blocks_st = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=12)


@given(blocks_st, st.integers(0, 2000), st.integers(0, 2000), st.integers(0, 10**6))
def test_the_replay_obeys_every_wait_and_bounds_the_path(
    blocks: list[tuple[int, int]], setup: int, boot: int, seed: int
) -> None:
    """No wait resumes before the other core's matching publish (no lag violation in the
    replay), a core's clock never runs backwards, and the critical path lies between the
    larger core's work and the sum of both."""
    events = interleave(program(setup, boot, blocks), seed)
    path = replay(events)
    published: dict[int, list[int]] = {0: [], 1: []}
    last = {0: 0, 1: 0}
    for e, t in timeline(events):
        assert t >= last[e.core]
        last[e.core] = t
        if e.kind == PUBLISH:
            published[e.core].append(t)
    counts = {0: 0, 1: 0}
    for e, t in sorted(timeline(events), key=lambda x: (x[0].core, x[0].busy)):
        if e.kind == PUBLISH:
            counts[e.core] += 1
        elif e.kind == WAIT and counts[e.core]:
            other = published[1 - e.core]
            if len(other) >= counts[e.core]:
                assert t >= other[counts[e.core] - 1]
    assert max(path.busy) <= path.length <= sum(path.busy) + 3 * len(blocks) + 4
    assert path.length == expected(setup, boot, blocks)
