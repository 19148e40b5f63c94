"""Board descriptions: one TOML file per board in this folder, read by the compiler.

Every chip fact lives in these files and nowhere else: SRAM, the SDK's static data and
stack, alignment, the cycle counter, the Pico SDK board and platform, the UF2 family (and
the RP2350's errata block family), and the BOOTSEL drive's label. ``boot_drives`` and
``uf2_chips`` collect the last two for the flasher, which must recognise any Pico."""

from __future__ import annotations

import sys
from dataclasses import MISSING, dataclass, fields
from importlib import resources

from rip.core.errors import RipError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    chip: str
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
    # The Pico timing model (rip.timing, docs/pico-timing.md). An emulated board names the
    # Pico whose cycles its runs estimate; a Pico board gives its core's cost table, its XIP
    # cache (geometry, and the stall of a miss at the SDK's default flash clock), the cost of
    # an exception entry and of integer division.
    timing_board: str | None = None  # emulated boards: "pico" or "pico2"
    timing_label: str | None = None  # Pico boards: the report's key prefix (pico1_cycles)
    core: str | None = None  # m0plus | m33: the plugin's cost table
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
        """SRAM the arena and scratch cannot use: SDK static data and the stack."""
        return self.sdk_static_bytes + self.stack_bytes

    def budget(self, arena_bytes: int, scratch_bytes: int) -> tuple[int, int]:
        """(needed, available) bytes of SRAM; available is 0 when unlimited."""
        return arena_bytes + scratch_bytes + self.fixed_overhead_bytes, self.sram_bytes


def board_names() -> list[str]:
    return sorted(
        p.name[:-5] for p in resources.files(__package__).iterdir() if p.name.endswith(".toml")
    )


def load_board(name: str) -> Board:
    """The board called ``name``; a RipError listing the known boards otherwise."""
    path = resources.files(__package__) / f"{name}.toml"
    if not path.is_file():
        raise RipError(f"unknown board {name!r}; known boards: {', '.join(board_names())}")
    return parse_board(path.read_bytes(), f"{name}.toml")


def pico_boards() -> list[Board]:
    return [b for b in map(load_board, board_names()) if b.pico_board]


def boot_drives() -> dict[str, Board]:
    """BOOTSEL drive label -> the board whose bootloader shows it (``RPI-RP2`` -> pico)."""
    return {b.boot_drive: b for b in pico_boards() if b.boot_drive}


def uf2_chips() -> dict[int, str]:
    """UF2 family id -> chip, from every Pico board file."""
    return {b.uf2_family: b.chip for b in pico_boards() if b.uf2_family is not None}


def uf2_families() -> dict[str, tuple[int, int | None]]:
    """Chip (lower case, ``rp2040``) -> (UF2 family, errata block family or None), from
    every Pico board file: what ``rip-uf2 --family`` offers."""
    return {
        b.chip.lower(): (b.uf2_family, b.uf2_errata_family)
        for b in pico_boards()
        if b.uf2_family is not None
    }


def _kind(annotation: str) -> type:
    """The TOML value type of a Board field, from its annotation (``int | None`` -> int:
    TOML has no None, so an optional field is simply absent)."""
    base = annotation.split("|")[0].strip()
    return {"int": int, "str": str, "bool": bool, "float": float}.get(base, list)


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
    field for anything malformed (encoding, syntax, unknown or missing field, wrong type,
    negative size, alignment not a positive power of two)."""
    where = f"board file {source}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RipError(f"{where}: not UTF-8 (byte {e.start})") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RipError(f"{where}: not valid TOML ({' '.join(str(e).split())})") from None
    known = {f.name: f for f in fields(Board)}
    for key, value in table.items():
        if key not in known:
            raise RipError(f"{where}: unknown field {key!r}")
        kind = _kind(str(known[key].type))
        if not _is(value, kind):
            raise RipError(f"{where}: {key} has the wrong type ({value!r})")
        if kind in (int, float) and value < 0:
            raise RipError(f"{where}: {key} must not be negative, got {value}")
    missing = [k for k, f in known.items() if k not in table and f.default is MISSING]
    if missing:
        raise RipError(f"{where}: missing field {missing[0]!r}")
    alignment = table["alignment"]
    if alignment < 1 or alignment & (alignment - 1):
        raise RipError(f"{where}: alignment must be a positive power of two, got {alignment}")
    return Board(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})
