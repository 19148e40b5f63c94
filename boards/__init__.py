"""Board descriptions: one TOML file per board in this folder, read by the compiler."""

from __future__ import annotations

import sys
from dataclasses import dataclass
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
    # The system clock a measured figure refers to, and a generous estimate of cycles per
    # multiply-accumulate: how long one inference takes, so that a verifier waits long
    # enough for the first result line (0: unknown).
    clock_hz: int = 0
    cycles_per_mac_estimate: float = 0.0
    # Emulated boards (QEMU): the machine, where code and data go, the CMSDK UART, and how
    # many executed instructions one SysTick tick is under -icount shift=0 (calibrated).
    qemu_machine: str | None = None
    code_origin: int | None = None
    code_bytes: int | None = None
    ram_origin: int | None = None
    uart_base: int | None = None
    instructions_per_tick: int | None = None
    instructions_per_second_estimate: float = 0.0

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
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["cflags"] = tuple(data.get("cflags", ()))
    try:
        return Board(**data)
    except TypeError as e:
        raise RipError(f"board file {name}.toml: {e}") from None
