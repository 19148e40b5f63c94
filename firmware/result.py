"""The result line every board prints after an inference, defined once.

    RIP-RESULT model=<name> board=<board> strategy=<s> arena=<bytes> checksum=0x<crc32>
               cycles=<n> unit=<cycles|us|ns> [stack=<bytes>]

(on one line). ``checksum`` is zlib's CRC-32 of the int8 output tensors' bytes,
concatenated in output order, on the default test input; ``cycles`` counts in ``unit``:
CPU cycles (DWT CYCCNT on the RP2350), microseconds (the RP2040's timer), nanoseconds
(host clock). A failing kernel prints ``RIP-ERROR op=<index> status=<n>`` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "RIP-RESULT"
_FIELD = re.compile(r"(\w+)=(\S+)")
REQUIRED = ("model", "board", "strategy", "arena", "checksum", "cycles", "unit")


@dataclass(frozen=True)
class Result:
    model: str
    board: str
    strategy: str
    arena: int
    checksum: int
    cycles: int
    unit: str
    stack: int | None = None

    def line(self) -> str:
        stack = f" stack={self.stack}" if self.stack is not None else ""
        return (
            f"{PREFIX} model={self.model} board={self.board} strategy={self.strategy} "
            f"arena={self.arena} checksum=0x{self.checksum:08x} cycles={self.cycles} "
            f"unit={self.unit}{stack}"
        )


def parse_result_line(line: str) -> Result | None:
    """The Result on this line, or None if it is not a complete result line."""
    start = line.find(PREFIX + " ")
    if start < 0:
        return None
    fields = dict(_FIELD.findall(line[start + len(PREFIX) :]))
    if any(k not in fields for k in REQUIRED):
        return None
    try:
        return Result(
            fields["model"],
            fields["board"],
            fields["strategy"],
            int(fields["arena"]),
            int(fields["checksum"], 16),
            int(fields["cycles"]),
            fields["unit"],
            int(fields["stack"]) if "stack" in fields else None,
        )
    except ValueError:
        return None
