"""The result line every board prints after an inference, defined once.

    RIP-RESULT model=<name> board=<board> strategy=<s> arena=<bytes> checksum=0x<crc32>
               <cycles|instructions>=<n> unit=<cycles|us|ns|instructions> [clock_hz=<Hz>]
               [stack=<bytes>]

(on one line). ``checksum`` is zlib's CRC-32 of the int8 output tensors' bytes,
concatenated in output order, on the default test input. The measured figure counts in
``unit``: CPU cycles (DWT CYCCNT on the RP2350), microseconds (the RP2040's timer),
nanoseconds (host clock), or executed instructions (an emulated board's SysTick under
QEMU's ``-icount shift=0``, which counts instructions and never cycles: its key is then
``instructions``, not ``cycles``). ``clock_hz`` is the system clock the figure was taken
at, where the firmware can read it (the Pico boards). A failing kernel prints
``RIP-ERROR op=<index> status=<n>`` instead.

The C side of every firmware is rendered from :func:`c_result_fields` (a list of fields
with their C expressions) by :func:`c_printf` or by a template's own per-field writer, so
no template carries a hand copy of the format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "RIP-RESULT"
ERROR_PREFIX = "RIP-ERROR"
_FIELD = re.compile(r"(\w+)=(\S+)")
REQUIRED = ("model", "board", "strategy", "arena", "checksum", "unit")
# The key of the measured figure: "instructions" for emulated boards, "cycles" otherwise
# (the historical name, whatever the unit).
INSTRUCTIONS = "instructions"
COUNT_KEYS = ("cycles", INSTRUCTIONS)
SECONDS_PER_UNIT = {"us": 1e-6, "ns": 1e-9}  # the units that are times


@dataclass(frozen=True)
class Result:
    model: str
    board: str
    strategy: str
    arena: int
    checksum: int
    cycles: int  # the measured figure, in ``unit`` (instructions on an emulated board)
    unit: str
    stack: int | None = None
    clock_hz: int | None = None

    @property
    def count_key(self) -> str:
        """The line's key for the measured figure."""
        return INSTRUCTIONS if self.unit == INSTRUCTIONS else "cycles"

    @property
    def instructions(self) -> int | None:
        """Executed instructions, when that is what was measured."""
        return self.cycles if self.unit == INSTRUCTIONS else None

    @property
    def seconds(self) -> float | None:
        """The measured figure in seconds: a time as it is, cycles at ``clock_hz``; None
        for an instruction count (or cycles without a clock)."""
        if self.unit in SECONDS_PER_UNIT:
            return self.cycles * SECONDS_PER_UNIT[self.unit]
        if self.unit == "cycles" and self.clock_hz:
            return self.cycles / self.clock_hz
        return None

    def line(self) -> str:
        clock = f" clock_hz={self.clock_hz}" if self.clock_hz is not None else ""
        stack = f" stack={self.stack}" if self.stack is not None else ""
        return (
            f"{PREFIX} model={self.model} board={self.board} strategy={self.strategy} "
            f"arena={self.arena} checksum=0x{self.checksum:08x} {self.count_key}={self.cycles} "
            f"unit={self.unit}{clock}{stack}"
        )


def parse_result_line(line: str) -> Result | None:
    """The Result on this line, or None if it is not a complete result line."""
    start = line.find(PREFIX + " ")
    if start < 0:
        return None
    fields = dict(_FIELD.findall(line[start + len(PREFIX) :]))
    count = next((fields[k] for k in COUNT_KEYS if k in fields), None)
    if count is None or any(k not in fields for k in REQUIRED):
        return None
    try:
        return Result(
            fields["model"],
            fields["board"],
            fields["strategy"],
            int(fields["arena"]),
            int(fields["checksum"], 16),
            int(count),
            fields["unit"],
            int(fields["stack"]) if "stack" in fields else None,
            int(fields["clock_hz"]) if "clock_hz" in fields else None,
        )
    except ValueError:
        return None


# ---- the C side ------------------------------------------------------------------------


@dataclass(frozen=True)
class CField:
    """One ``key=value`` of the result line as C prints it: ``kind`` is ``str`` (a C
    string), ``u32``, ``hex32`` (0x and 8 hex digits) or ``u64``; ``expr`` the C
    expression, or None for a value fixed at generation time (``literal``)."""

    key: str
    kind: str
    expr: str | None = None
    literal: str | None = None


def c_result_fields(
    board: str,
    unit: str,
    count_expr: str,
    crc_expr: str = "crc",
    clock_expr: str | None = None,
    stack_expr: str | None = None,
) -> list[CField]:
    """The result line's fields for a firmware of ``board`` measuring in ``unit``, in line
    order, with the C expressions that supply them (the model.h macros for the rest)."""
    fields = [
        CField("model", "str", "RIP_MODEL_NAME"),
        CField("board", "str", literal=board),
        CField("strategy", "str", "RIP_MODEL_STRATEGY"),
        CField("arena", "u32", "RIP_MODEL_ARENA_BYTES"),
        CField("checksum", "hex32", crc_expr),
        CField(INSTRUCTIONS if unit == INSTRUCTIONS else "cycles", "u64", count_expr),
        CField("unit", "str", literal=unit),
    ]
    if clock_expr is not None:
        fields.append(CField("clock_hz", "u32", clock_expr))
    if stack_expr is not None:
        fields.append(CField("stack", "u32", stack_expr))
    return fields


_PRINTF = {
    "str": ("%s", "{}"),
    "u32": ("%lu", "(unsigned long){}"),
    "hex32": ("0x%08lx", "(unsigned long){}"),
    "u64": ("%llu", "(unsigned long long){}"),
}


def c_printf(fields: list[CField]) -> str:
    """The ``printf(...)`` arguments (format literal and values, without the parentheses)
    that print ``fields`` as one result line followed by a newline."""
    parts, args = [], []
    for f in fields:
        if f.literal is not None:
            parts.append(f"{f.key}={f.literal}")
            continue
        conv, cast = _PRINTF[f.kind]
        parts.append(f"{f.key}={conv}")
        args.append(cast.format(f.expr))
    fmt = " ".join([PREFIX, *parts])
    return ", ".join([f'"{fmt}\\n"', *args])
