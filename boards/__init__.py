"""Board descriptions: one TOML file per board in this folder, read by the compiler.

Every chip fact lives in these files and nowhere else: the core, SRAM, the SDK's static data
and stack, alignment, the cycle counter, the Pico SDK board and platform, the UF2 family (and
the RP2350's errata block family), and the BOOTSEL drive's label. ``boot_drives`` and
``uf2_chips`` collect the last two for the flasher, which must recognise any Pico.

A board file is input like a model: every field is checked by ``FIELD_RULES`` (one rule
per ``Board`` field) for its type and range (numbers finite and bounded, so that nothing
computed from them, such as how long rip-verify waits, can overflow to infinity) and, for
strings, a safe character set: board strings reach Makefiles, CMakeLists.txt, C comments
and compiler command lines (``cflags``), where ``$(shell ...)``, a quote or a newline
would be interpreted."""

from __future__ import annotations

import math
import re
import sys
from dataclasses import MISSING, dataclass, fields
from importlib import resources
from typing import Any

from rip.core.errors import OptionError, RipError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    chip: str
    # The core the code is built for (cortex-m33, cortex-m0plus; host): the planner's cost
    # model is the one calibrated on a board with the same core (planning/cost_model.py).
    core: str
    sram_bytes: int  # 0: no limit
    sdk_static_bytes: int
    stack_bytes: int
    alignment: int
    cycle_counter: str  # dwt_cyccnt | timer_us | clock_ns: what the result line counts
    pico_board: str | None = None  # PICO_BOARD; None for a board that is not a Pico
    pico_platform: str | None = None
    uf2_family: int | None = None
    uf2_errata_family: int | None = None
    boot_drive: str | None = None
    # The system clock a measured figure refers to, and a generous estimate of cycles per
    # multiply-accumulate: how long one inference takes, so that a verifier waits long
    # enough for the first result line (0: unknown).
    # The stack the firmware reserves (PICO_STACK_SIZE; 0: the SDK's 2 KB). On both Picos
    # core 0's stack sits in the 4 KB SCRATCH_Y bank, outside the SRAM the arena uses, so
    # the whole bank costs the arena nothing; emulated runs check the measured stack
    # against it.
    stack_limit_bytes: int = 0
    flash_bytes: int = 0  # the board's flash (the SDK's linker script enforces it); 0: none
    # What runs this board's firmware without the board (rip-compile --emulate): "rp2040js"
    # for the RP2040; None where nothing does (the RP2350).
    emulator: str | None = None
    clock_hz: int = 0
    cycles_per_mac_estimate: float = 0.0
    # Emulated boards (QEMU): the machine, where code and data go, the CMSDK UART, and how
    # many executed instructions one SysTick tick is under -icount shift=0 (calibrated).
    qemu_machine: str | None = None
    cflags: tuple[str, ...] = ()  # compiler flags of a board rip builds itself (QEMU)
    fpu: bool = False  # the runtime enables the FPU (CPACR) before main
    code_origin: int | None = None
    code_bytes: int | None = None
    ram_origin: int | None = None
    uart_base: int | None = None
    instructions_per_tick: int | None = None
    instructions_per_second_estimate: float = 0.0
    # Two cores (issue 27, docs/two-cores.md): the QEMU machine with two cores that run this
    # board's code (mps2-an521: the SSE-200's two Cortex-M33s, which run ARMv6-M code too),
    # its memory map, and its system control registers (INITSVTOR1, CPUWAIT), through which
    # core 0 starts core 1. None: the board runs one core only. ``dual_qemu_globals``: the
    # machine's device properties the code needs (-global; the AN521 image gives CPU 0 no
    # FPU and no DSP extension), passed as ``qemu_globals`` once on the two-core machine.
    qemu_machine_dual: str | None = None
    qemu_globals: tuple[str, ...] = ()
    dual_qemu_globals: tuple[str, ...] = ()
    dual_code_origin: int | None = None
    dual_ram_origin: int | None = None
    dual_uart_base: int | None = None
    dual_sysctl_base: int | None = None
    # The Pico timing model (rip.timing, docs/pico-timing.md). An emulated board names the
    # Pico whose cycles its runs estimate; a Pico board gives its core's cost table, its XIP
    # cache (geometry, and the stall of a miss at the SDK's default flash clock), the cost of
    # an exception entry and of integer division.
    timing_board: str | None = None  # emulated boards: "pico" or "pico2"
    timing_label: str | None = None  # Pico boards: the report's key prefix (pico1_cycles)
    xip_cache_bytes: int = 0
    xip_cache_ways: int = 0
    xip_line_bytes: int = 0
    xip_fill_bytes: int = 0  # bytes one miss brings in
    xip_miss_cycles: int = 0  # stall of a miss: one fresh QSPI transfer
    xip_sequential_miss_cycles: int = 0  # a miss continuing the open transfer (0: never)
    xip_cooldown_cycles: int = 0  # how long a transfer stays open after its last data
    xip_pagebreak_bytes: int = 0  # a transfer never continues across this alignment
    exception_entry_cycles: int = 0
    divide_cycles: int = 0  # SDIV/UDIV (the M33's; operand-dependent on silicon)
    divider_call_cycles: int = 0  # a 32-bit division call through the RP2040's SIO divider

    @property
    def fixed_overhead_bytes(self) -> int:
        """SRAM the arena cannot use: SDK static data and the stack."""
        return self.sdk_static_bytes + self.stack_bytes

    def budget(self, arena_bytes: int) -> tuple[int, int]:
        """(needed, available) bytes of SRAM for an arena of ``arena_bytes`` (all the
        activation RAM, the kernels' scratch included); available is 0 when unlimited."""
        return arena_bytes + self.fixed_overhead_bytes, self.sram_bytes


def board_names() -> list[str]:
    return sorted(
        p.name[:-5] for p in resources.files(__package__).iterdir() if p.name.endswith(".toml")
    )


def load_board(name: str) -> Board:
    """The board called ``name`` (its file's name in this folder); a RipError listing the
    known boards otherwise. A name outside the board-name set (``../x``) names no board."""
    path = resources.files(__package__) / f"{name}.toml"
    if not BOARD_NAME.fullmatch(name) or not path.is_file():
        raise OptionError(f"unknown board {name[:40]!r}; known boards: {', '.join(board_names())}")
    board = parse_board(path.read_bytes(), f"{name}.toml")
    if board.name != name:
        raise RipError(f"board file {name}.toml: name {board.name!r} is not the file's name")
    return board


def pico_boards() -> list[Board]:
    return [b for b in map(load_board, board_names()) if b.pico_board]


def boot_drives() -> dict[str, Board]:
    """BOOTSEL drive label -> the board whose bootloader shows it (``RPI-RP2`` -> pico)."""
    return {b.boot_drive: b for b in pico_boards() if b.boot_drive}


def uf2_chips() -> dict[int, str]:
    """UF2 family id -> chip, from every Pico board file."""
    return {b.uf2_family: b.chip for b in pico_boards() if b.uf2_family is not None}


def pico_for_family(family: int) -> Board | None:
    """The Pico board whose UF2 family id is ``family`` (None for another id)."""
    return next((b for b in pico_boards() if b.uf2_family == family), None)


def uf2_families() -> dict[str, tuple[int, int | None]]:
    """Chip (lower case, ``rp2040``) -> (UF2 family, errata block family or None), from
    every Pico board file: what ``rip-uf2 --family`` offers."""
    return {
        b.chip.lower(): (b.uf2_family, b.uf2_errata_family)
        for b in pico_boards()
        if b.uf2_family is not None
    }


# ---- what a board file may hold ----------------------------------------------------------

MAX_BOARD_FILE_BYTES = 64 << 10  # the shipped ones are about 2 KB
BOARD_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}", re.ASCII)
# Text for comments and README lines: letters, digits, space and . , ; : ( ) ' + - _ /.
# No $ (Make and CMake expansion), no quote, backslash, # or * (ends a C comment), no
# newline (a new Makefile or CMake line), no control character.
DESCRIPTION = re.compile(r"[A-Za-z0-9 .,;:()'+_/-]{1,200}", re.ASCII)
# Compiler flags of the kinds a board needs: -m... (machine), -O..., -g..., -f... and -W...
# without '=' or ',' (so no -fplugin=, -specs=, -Wl,... or -Wa,...), -D macros with a
# plain value, -std=. Nothing a shell, make or the compiler driver would expand.
CFLAG = re.compile(
    r"-(m[a-z0-9][a-z0-9.+=_-]{0,63}|O[0-3sgz]?|g[0-3]?|f[a-z][a-z0-9-]{0,63}"
    r"|W[a-z][a-z0-9-]{0,63}|D[A-Za-z_][A-Za-z0-9_]{0,63}(=[A-Za-z0-9_.+-]{0,63})?"
    r"|std=[a-z0-9+]{1,16})",
    re.ASCII,
)
U32 = (0, 0xFFFFFFFF)
# A QEMU -global: device.property=value, in plain names.
QEMU_GLOBAL = re.compile(r"[a-z0-9-]{1,32}\.[A-Za-z0-9_-]{1,32}=[A-Za-z0-9]{1,16}", re.ASCII)
CYCLE_COUNTERS = ("dwt_cyccnt", "timer_us", "clock_ns", "systick_instructions")
# The cores code is built for: each keys a column of the fused budget's cost model.
CORES = ("cortex-m33", "cortex-m0plus", "host")
# What can run a board's firmware without the board: rip.firmware.rp2040_emulator.
EMULATORS = ("rp2040js",)


@dataclass(frozen=True)
class Rule:
    """What one field may hold: ``kind`` (int, float, str, bool, a list of str), and for
    numbers the closed range ``low``..``high``, for strings the pattern (or the choices)
    every value (each element of a list) must match whole."""

    kind: type
    low: float = 0
    high: float = 0
    pattern: re.Pattern[str] | None = None
    choices: tuple[str, ...] = ()
    power_of_two: bool = False

    def check(self, key: str, value: object) -> str | None:
        """Why ``value`` is not allowed for ``key``, or None."""
        shown = _shown(value)
        if not _is(value, self.kind):
            return f"{key} has the wrong type ({shown}; a {self.kind.__name__} is needed)"
        if self.kind in (int, float):
            two = " a power of two" if self.power_of_two else ""
            finite = not isinstance(value, float) or math.isfinite(value)  # TOML has inf, nan
            if not finite or not self.low <= value <= self.high:  # type: ignore[operator]
                span = (
                    f"{int(self.low):,}..{int(self.high):,}"
                    if self.kind is int
                    else f"{self.low:g}..{self.high:g}"
                )
                return f"{key} must be{two} in {span}, got {shown}"
            if self.power_of_two and int(value) & (int(value) - 1):  # type: ignore[call-overload]
                return f"{key} must be a power of two, got {shown}"
        texts = value if isinstance(value, list) else [value] if self.kind is str else []
        for text in texts:
            if self.choices and text not in self.choices:
                return f"{key} {shown} is not one of {', '.join(self.choices)}"
            if self.pattern is not None and not self.pattern.fullmatch(str(text)):
                return f"{key} {str(text)[:40]!r} holds a character or a form rip does not accept"
        return None


def _shown(value: object) -> str:
    """A value for a message: short, and never a 4,300-digit conversion."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1 << 64:
        return f"a {value.bit_length()}-bit number"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(pattern: str) -> Rule:
    return Rule(str, pattern=re.compile(pattern, re.ASCII))


FIELD_RULES: dict[str, Rule] = {
    "name": Rule(str, pattern=BOARD_NAME),
    "description": Rule(str, pattern=DESCRIPTION),
    "chip": _text(r"[A-Za-z0-9]{1,16}"),
    "core": Rule(str, choices=CORES),
    "sram_bytes": Rule(int, 0, 1 << 32),
    "sdk_static_bytes": Rule(int, 0, 1 << 32),
    "stack_bytes": Rule(int, 0, 1 << 32),
    "alignment": Rule(int, 1, 4096, power_of_two=True),
    "cycle_counter": Rule(str, choices=CYCLE_COUNTERS),
    "pico_board": _text(r"[a-z0-9_]{1,32}"),
    "pico_platform": _text(r"[a-z0-9-]{1,32}"),
    "uf2_family": Rule(int, *U32),
    "uf2_errata_family": Rule(int, *U32),
    "boot_drive": _text(r"[A-Z0-9_-]{1,11}"),  # a FAT volume label, as a path glob reads it
    "stack_limit_bytes": Rule(int, 0, 1 << 24),
    "flash_bytes": Rule(int, 0, 1 << 32),
    "clock_hz": Rule(int, 0, 10**10),
    "cycles_per_mac_estimate": Rule(float, 0, 10**4),
    "qemu_machine": _text(r"[a-z0-9-]{1,32}"),
    "cflags": Rule(list, pattern=CFLAG),
    "fpu": Rule(bool),
    "code_origin": Rule(int, *U32),
    "code_bytes": Rule(int, 1, 1 << 32),
    "ram_origin": Rule(int, *U32),
    "uart_base": Rule(int, *U32),
    "instructions_per_tick": Rule(int, 1, 10**6),
    "instructions_per_second_estimate": Rule(float, 0, 10**12),
    "qemu_machine_dual": _text(r"[a-z0-9-]{1,32}"),
    "qemu_globals": Rule(list, pattern=QEMU_GLOBAL),
    "dual_qemu_globals": Rule(list, pattern=QEMU_GLOBAL),
    "dual_code_origin": Rule(int, *U32),
    "dual_ram_origin": Rule(int, *U32),
    "dual_uart_base": Rule(int, *U32),
    "dual_sysctl_base": Rule(int, *U32),
    "emulator": Rule(str, choices=EMULATORS),
    "timing_board": Rule(str, pattern=BOARD_NAME),
    "timing_label": _text(r"[a-z0-9]{1,16}"),
    "xip_cache_bytes": Rule(int, 0, 1 << 24),
    "xip_cache_ways": Rule(int, 0, 64),
    "xip_line_bytes": Rule(int, 0, 4096),
    "xip_fill_bytes": Rule(int, 0, 4096),
    "xip_miss_cycles": Rule(int, 0, 10**6),
    "xip_sequential_miss_cycles": Rule(int, 0, 10**6),
    "xip_cooldown_cycles": Rule(int, 0, 10**6),
    "xip_pagebreak_bytes": Rule(int, 0, 1 << 24),
    "exception_entry_cycles": Rule(int, 0, 10**4),
    "divide_cycles": Rule(int, 0, 10**4),
    "divider_call_cycles": Rule(int, 0, 10**4),
}
assert set(FIELD_RULES) == {f.name for f in fields(Board)}, "a Board field without a rule"


def _is(value: object, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def parse_board(data: bytes, source: str) -> Board:
    """A board from the bytes of its TOML file; one-line RipError naming ``source`` and the
    field for anything malformed (size, encoding, syntax, nesting, unknown or missing field,
    a value of the wrong type, out of its range or outside its character set, a memory
    region past 4 GiB), before any of it is used."""
    where = f"board file {source}"
    if len(data) > MAX_BOARD_FILE_BYTES:
        raise RipError(f"{where}: {len(data):,} B, more than a board file may be")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RipError(f"{where}: not UTF-8 (byte {e.start})") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RipError(f"{where}: not valid TOML ({' '.join(str(e).split())[:200]})") from None
    except RecursionError:
        raise RipError(f"{where}: not valid TOML (nested too deeply)") from None
    except ValueError as e:  # an integer of more than 4,300 digits
        raise RipError(f"{where}: not valid TOML ({' '.join(str(e).split())[:80]})") from None
    for key, value in table.items():
        rule = FIELD_RULES.get(key)
        if rule is None:
            raise RipError(f"{where}: unknown field {key[:40]!r}")
        why = rule.check(key, value)
        if why:
            raise RipError(f"{where}: {why}")
    missing = [f.name for f in fields(Board) if f.name not in table and f.default is MISSING]
    if missing:
        raise RipError(f"{where}: missing field {missing[0]!r}")
    for origin, size in (
        ("code_origin", "code_bytes"),
        ("ram_origin", "sram_bytes"),
        ("dual_code_origin", "code_bytes"),
        ("dual_ram_origin", "sram_bytes"),
    ):
        if origin in table and table[origin] + table.get(size, 0) > 1 << 32:
            raise RipError(f"{where}: {origin} + {size} ends past the 4 GiB address space")
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
    return Board(**values)  # each value checked against its field's rule above
