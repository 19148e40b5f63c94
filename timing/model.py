"""Which chip an emulated run is timed as, and the plugin's arguments for it: everything
comes from the board files (the emulated board's ``timing_board``, that Pico's ``core``,
``xip_*`` and cost fields) and from the firmware's own symbols."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rip.boards import Board, load_board
from rip.core.errors import RipError
from rip.firmware.pico_project import symbol_placement

# The runtime's SysTick reads (templates/qemu/startup.c.j2): every call opens a segment, so
# the segments are exactly the intervals the firmware times (segment 1: the inference). A
# profiling build's rip_profile_mark reads SysTick with rip_systick_ticks inlined into it.
# A board's core (its board file's `core`) as the plugin's cost table names it.
PLUGIN_CORES = {"cortex-m0plus": "m0plus", "cortex-m33": "m33"}
MARK_SYMBOLS = ("rip_systick_ticks", "rip_profile_mark")
# libgcc's 32-bit division (the sized symbols; __aeabi_idiv/__aeabi_uidiv are aliases of
# __divsi3/__udivsi3). The Pico SDK replaces all of them by its SIO-divider routine.
LIBGCC_DIVISION = ("__divsi3", "__udivsi3", "__aeabi_idivmod", "__aeabi_uidivmod", "__aeabi_idiv0")


@dataclass(frozen=True)
class TimingModel:
    """The Pico ``chip`` (its board file) a run is timed as; ``cache`` False charges flash
    like SRAM (what rp2040js does), for comparing the core's cost table alone."""

    chip: Board
    cache: bool = True

    @classmethod
    def of(cls, emulated: Board, cache: bool = True) -> TimingModel:
        """The model an emulated board's runs are timed with (its ``timing_board``)."""
        if not emulated.timing_board:
            raise RipError(f"board {emulated.name!r} has no timing model (no timing_board)")
        chip = load_board(emulated.timing_board)
        if chip.core not in PLUGIN_CORES or not chip.xip_cache_bytes or not chip.clock_hz:
            raise RipError(f"board {chip.name!r} lacks its timing fields (core, xip_*, clock_hz)")
        return cls(chip, cache)

    @property
    def label(self) -> str:
        """The report's key prefix: pico1, pico2."""
        return self.chip.timing_label or self.chip.name

    def args(self, emulated: Board, elf: Path, marks: tuple[str, ...] = MARK_SYMBOLS) -> list[str]:
        """The plugin's key=value arguments for ``elf`` on ``emulated`` (without out=), its
        segments opened by the functions ``marks`` (the SysTick reads by default)."""
        c = self.chip
        lo = int(emulated.code_origin or 0)
        hi = lo + int(emulated.code_bytes or 0)
        args = [
            f"core={PLUGIN_CORES[c.core]}",
            f"flash=0x{lo:x}:0x{hi:x}",
            f"cache={int(self.cache)}",
            f"cache_bytes={c.xip_cache_bytes}",
            f"ways={c.xip_cache_ways}",
            f"line={c.xip_line_bytes}",
            f"fill={c.xip_fill_bytes}",
            f"miss={c.xip_miss_cycles}",
            f"seq_miss={c.xip_sequential_miss_cycles}",
            f"cooldown={c.xip_cooldown_cycles}",
            f"pagebreak={c.xip_pagebreak_bytes}",
            f"exception={c.exception_entry_cycles}",
        ]
        if c.divide_cycles:
            args.append(f"div={c.divide_cycles}")
        division = LIBGCC_DIVISION if c.divider_call_cycles else ()
        symbols = symbol_placement(elf, (*marks, *division))
        for name in marks:
            if name in symbols:
                args.append(f"mark=0x{int(symbols[name]['address']) & ~1:x}")
        for name in division:
            if name in symbols:
                start = int(symbols[name]["address"]) & ~1
                end = start + int(symbols[name]["bytes"])
                args.append(f"replace=0x{start:x}:0x{end:x}:{c.divider_call_cycles}")
        return args
