"""The result line every board prints after an inference, defined once.

    RIP-RESULT model=<name> board=<board> strategy=<s> arena=<bytes> checksum=0x<crc32>
               <cycles|instructions>=<n> unit=<cycles|us|ns|instructions> [clock_hz=<Hz>]
               [stack=<bytes>] [cores=<n>]

(on one line, each field once and in this order, nothing after it). ``checksum`` is zlib's
CRC-32 of the int8 output tensors' bytes, concatenated in output order, on the default
test input. The measured figure counts in ``unit``: CPU cycles (DWT CYCCNT on the
RP2350), microseconds (the RP2040's timer), nanoseconds (host clock), or executed
instructions (an emulated board's SysTick under QEMU's ``-icount shift=0``, which counts
instructions and never cycles: its key is then ``instructions``, not ``cycles``).
``clock_hz`` is the system clock the figure was taken at, where the firmware can read it
(the Pico boards). ``cores`` is the number of cores the inference ran on, absent for one
(issue 27: a two-core firmware on QEMU prints ``instructions=0``, since its virtual time
counts both cores' instructions together; the host replaces it with the critical path,
``rip.timing.two_core``). A failing kernel prints ``RIP-ERROR op=<index> status=<n>``
instead.

The grammar is exact (``RESULT_LINE``): names in the safe set of ``rip.core.names``,
decimal numbers as ASCII digits without sign, underscore or leading zero and within their
C type, the checksum as ``0x`` and exactly eight lower-case hex digits (what ``%08lx``
prints). Python's ``int()`` would take ``0x23c6_8d3f``, ``+1``, full-width and
Arabic-Indic digits, and a line with two results would give the last one's fields; none of
them is a result line. Bytes before ``RIP-RESULT`` on the same line (noise, a partial line
from a port opened mid-line) are ignored unless they hold another result or an error line:
one result per line, and a line that also reports an error is no result.

The C side of every firmware is rendered from :func:`c_result_fields` (a list of fields
with their C expressions) by :func:`c_printf` or by a template's own per-field writer, so
no template carries a hand copy of the format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rip.core.names import MAX_NAME, NAME_CHARS

PREFIX = "RIP-RESULT"
ERROR_PREFIX = "RIP-ERROR"
# The key of the measured figure: "instructions" for emulated boards, "cycles" otherwise
# (the historical name, whatever the unit).
INSTRUCTIONS = "instructions"
COUNT_KEYS = ("cycles", INSTRUCTIONS)
SECONDS_PER_UNIT = {"us": 1e-6, "ns": 1e-9}  # the units that are times
UNITS = ("cycles", "us", "ns", INSTRUCTIONS)

_NAME = f"[{NAME_CHARS}]{{1,{MAX_NAME}}}"
_U32 = "0|[1-9][0-9]{0,9}"  # and at most 2^32 - 1, checked after the match
_U64 = "0|[1-9][0-9]{0,19}"  # and at most 2^64 - 1
RESULT_LINE = re.compile(
    f"{PREFIX} model=(?P<model>{_NAME}) board=(?P<board>{_NAME}) "
    f"strategy=(?P<strategy>{_NAME}) arena=(?P<arena>{_U32}) "
    "checksum=0x(?P<checksum>[0-9a-f]{8}) "
    f"(?P<count_key>{'|'.join(COUNT_KEYS)})=(?P<count>{_U64}) "
    f"unit=(?P<unit>{'|'.join(UNITS)})"
    f"(?: clock_hz=(?P<clock_hz>{_U32}))?(?: stack=(?P<stack>{_U32}))?"
    f"(?: cores=(?P<cores>{_U32}))?",
    re.ASCII,
)


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
    cores: int | None = None  # None: one core (the line has no cores=)

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
        cores = f" cores={self.cores}" if self.cores is not None else ""
        return (
            f"{PREFIX} model={self.model} board={self.board} strategy={self.strategy} "
            f"arena={self.arena} checksum=0x{self.checksum:08x} {self.count_key}={self.cycles} "
            f"unit={self.unit}{clock}{stack}{cores}"
        )


def parse_result_line(line: str) -> Result | None:
    """The Result on this line, or None unless the line ends in the one result line of the
    exact grammar (``RESULT_LINE``), its numbers within their C types and its figure's key
    agreeing with its unit (see the module docstring)."""
    start = line.find(PREFIX)
    if start < 0 or line.count(PREFIX) > 1 or ERROR_PREFIX in line:
        return None
    m = RESULT_LINE.fullmatch(line, start)
    if m is None:
        return None
    u32 = [int(m[k]) for k in ("arena", "clock_hz", "stack", "cores") if m[k] is not None]
    if any(v > 0xFFFFFFFF for v in u32) or int(m["count"]) > 0xFFFFFFFFFFFFFFFF:
        return None
    if m["cores"] is not None and int(m["cores"]) < 2:  # one core is written by omission
        return None
    if (m["count_key"] == INSTRUCTIONS) != (m["unit"] == INSTRUCTIONS):
        return None
    return Result(
        m["model"],
        m["board"],
        m["strategy"],
        int(m["arena"]),
        int(m["checksum"], 16),
        int(m["count"]),
        m["unit"],
        int(m["stack"]) if m["stack"] is not None else None,
        int(m["clock_hz"]) if m["clock_hz"] is not None else None,
        int(m["cores"]) if m["cores"] is not None else None,
    )


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
    cores: int = 1,
) -> list[CField]:
    """The result line's fields for a firmware of ``board`` measuring in ``unit``, in line
    order, with the C expressions that supply them (the model.h macros for the rest);
    ``cores`` above one adds ``cores=``."""
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
    if cores > 1:
        fields.append(CField("cores", "u32", literal=str(cores)))
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
