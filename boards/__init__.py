"""Board descriptions: one TOML file per board in this folder, read by the compiler."""

from __future__ import annotations

import sys
from dataclasses import MISSING, dataclass, fields
from importlib import resources

from rip.errors import RipError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    chip: str
    cpu: str
    sram_bytes: int  # 0: no limit
    sdk_static_bytes: int
    stack_bytes: int
    alignment: int
    cflags: tuple[str, ...]
    has_dsp: bool
    cycle_counter: str
    pico_board: str | None = None
    pico_platform: str | None = None
    uf2_family: int | None = None
    uf2_errata_family: int | None = None

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


# Field kinds for validation: TOML has no None, so optional fields are simply absent.
_STR_FIELDS = ("name", "description", "chip", "cpu", "cycle_counter", "pico_board", "pico_platform")
_INT_FIELDS = (
    "sram_bytes",
    "sdk_static_bytes",
    "stack_bytes",
    "alignment",
    "uf2_family",
    "uf2_errata_family",
)


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
        ok = (
            isinstance(value, str)
            if key in _STR_FIELDS
            else isinstance(value, int) and not isinstance(value, bool)
            if key in _INT_FIELDS
            else isinstance(value, bool)
            if key == "has_dsp"
            else isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            raise RipError(f"{where}: {key} has the wrong type ({value!r})")
        if key in _INT_FIELDS and value < 0:
            raise RipError(f"{where}: {key} must not be negative, got {value}")
    missing = [
        k for k, f in known.items() if k not in table and f.default is MISSING and k != "cflags"
    ]
    if missing:
        raise RipError(f"{where}: missing field {missing[0]!r}")
    alignment = table["alignment"]
    if alignment < 1 or alignment & (alignment - 1):
        raise RipError(f"{where}: alignment must be a positive power of two, got {alignment}")
    table["cflags"] = tuple(table.get("cflags", ()))
    return Board(**table)
