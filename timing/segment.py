"""The timing plugin's segments (``plugin/pico_timing.c``): the intervals between marks,
each with its instructions, the cycles the Pico's core takes for them and its XIP cache's
traffic; in a two-core run each core has its own (``vcpu``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from rip.core.errors import RipError


@dataclass(frozen=True)
class Segment:
    """One interval between SysTick reads: executed instructions, estimated cycles, the
    part of them stalled on XIP cache misses, and the cache's hits and misses (fetches
    counted per 32-bit fetch word, data reads per access)."""

    instructions: int = 0
    cycles: int = 0
    stall: int = 0
    fetch_hits: int = 0
    fetch_misses: int = 0
    data_hits: int = 0
    data_misses: int = 0
    sequential_misses: int = 0  # misses that continued an open QSPI transfer (RP2350)
    divides: int = 0  # SDIV/UDIV executed (each charged the top of the TRM's range)
    replaced_calls: int = 0  # division calls charged as the SIO-divider routine (RP2040)
    replaced_instructions: int = 0
    exceptions: int = 0
    unknown: int = 0  # encodings the decoder did not classify (charged one cycle)

    def __add__(self, other: Segment) -> Segment:
        return Segment(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def misses(self) -> int:
        return self.fetch_misses + self.data_misses

    @property
    def stall_share(self) -> float:
        """The share of the cycles lost to flash misses."""
        return self.stall / self.cycles if self.cycles else 0.0


def parse_segments(text: str, vcpu: int = 0) -> tuple[Segment, ...]:
    """Core ``vcpu``'s segments in the plugin's output file; a RipError when it is
    incomplete."""
    segments = []
    names = {f.name for f in fields(Segment)}
    complete = False
    for line in text.splitlines():
        if line.startswith("segment "):
            values = dict(part.split("=", 1) for part in line.split()[1:])
            if int(values.get("vcpu", 0)) != vcpu:
                continue
            segments.append(Segment(**{k: int(v) for k, v in values.items() if k in names}))
        elif line.startswith("end "):
            complete = True
    if not complete:
        raise RipError("the timing plugin's output is incomplete (QEMU did not exit cleanly)")
    return tuple(segments)
