"""make profile-functions: where one inference's instructions and Pico cycles go, by function.

The model is compiled (qemu-m33 planning, as make bench-cost does), its firmware built for a
QEMU board and run under rip's timing plugin with ``profile=`` (every executed instruction's
address, count and estimated cycles on the Pico the board is timed as, stalls on XIP cache
misses included: rip.timing.estimate.run_timed, docs/pico-timing.md); each address is
charged to the function whose symbol (``arm-none-eabi-nm -S``) covers it. Prints the top
functions with their share of the instructions, their cycles and cycles an instruction
(where a change that saves instructions may still cost time: loads, taken branches, flash
misses), and the calls into memset / memcpy / memmove by caller (a library call for a few
bytes is a common hidden cost on ARMv6-M).

    .venv/bin/python benchmarks/profile_functions.py MODEL [--board qemu-armv6m]
        [--strategy rip] [--top 25] [--annotate FUNCTION]...
"""

from __future__ import annotations

import argparse
import bisect
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from rip import compiler
from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.boards import load_board
from rip.compiler import Options, analyse, emit
from rip.core.terms import Placer, Strategy
from rip.firmware.qemu_project import build_qemu_project, write_qemu_project
from rip.timing.estimate import run_timed

LIBRARY_COPIES = ("memset", "memcpy", "memmove")


def symbols(elf: Path) -> list[tuple[int, int, str]]:
    """(start, size, name) of the ELF's code symbols, by address (Thumb bit cleared)."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", "--defined-only", str(elf)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            found.append((int(parts[0], 16) & ~1, int(parts[1], 16), parts[3]))
    return sorted(found)


Cost = tuple[int, int]  # (executions, estimated cycles)


def _charge(table: dict, key: object, n: int, cycles: int) -> None:
    """Add n executions and their cycles to ``table[key]``."""
    had = table.get(key, (0, 0))
    table[key] = (had[0] + n, had[1] + cycles)


def counts(profile: Path) -> dict[int, Cost]:
    """Executions and estimated cycles per instruction address (the plugin's ``pc size count
    cycles ...`` lines, one per decoded copy: an address in several translation blocks is
    summed)."""
    table: dict[int, Cost] = {}
    for line in profile.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4:
            try:
                pc, n, cycles = int(fields[0], 16), int(fields[2]), int(fields[3])
            except ValueError:
                continue
            _charge(table, pc, n, cycles)
    return table


def by_function(executed: dict[int, Cost], syms: list[tuple[int, int, str]]) -> dict[str, Cost]:
    starts = [s[0] for s in syms]
    total: dict[str, Cost] = {}
    for pc, (n, cycles) in executed.items():
        i = bisect.bisect_right(starts, pc) - 1
        inside = i >= 0 and pc < syms[i][0] + max(syms[i][1], 1)
        name = syms[i][2] if inside else "?"
        _charge(total, name, n, cycles)
    return total


def library_calls(elf: Path, executed: dict[int, Cost]) -> list[tuple[int, str, str]]:
    """(times, caller, callee) of every executed BL into a library copy routine."""
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    calls, caller = [], ""
    pattern = re.compile(r"\bbl\s+[0-9a-f]+ <(" + "|".join(LIBRARY_COPIES) + r")>")
    head = re.compile(r"^[0-9a-f]+ <(.+)>:$")  # a function's first line
    for line in listing.splitlines():
        named = head.match(line)
        if named:
            caller = named.group(1)
            continue
        hit = pattern.search(line)
        if hit and caller not in LIBRARY_COPIES:
            n = executed.get(int(line.split(":", 1)[0], 16), (0, 0))[0]
            if n:
                calls.append((n, caller, hit.group(1)))
    return sorted(calls, reverse=True)


def annotated(elf: Path, executed: dict[int, Cost], name: str) -> list[str]:
    """Function ``name``'s disassembly, each instruction prefixed by its executions and
    estimated cycles (where a loop's instructions sit, what runs once a call, a row or a
    channel, and which of them stall)."""
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn",
                              f"--disassemble={name}", str(elf)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    lines = []
    for line in listing.splitlines():
        at = re.match(r"\s*([0-9a-f]+):\s", line)
        if at:
            n, cycles = executed.get(int(at.group(1), 16), (0, 0))
            lines.append(f"{n:>12,} {cycles:>12,} {line.strip()}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--board", default="qemu-armv6m")
    ap.add_argument("--strategy", default="rip")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--annotate", metavar="FUNCTION", action="append", default=[],
                    help="also print FUNCTION's instructions with their executions "
                         "and cycles")  # fmt: skip
    args = ap.parse_args(argv)
    strategy = Strategy(args.strategy)
    options = Options(placer=Placer("milp"), time_limit=DEFAULT_TIME_LIMIT, strategies=(strategy,))
    compiled = analyse(args.model, load_board("qemu-m33"), options)
    expected = compiler.reference(args.model, compiled.graph).checksum
    board = load_board(args.board)
    with tempfile.TemporaryDirectory(prefix="rip-profile-") as tmp:
        out = Path(tmp)
        write_qemu_project(emit(compiled, strategy), out, board, expected)
        elf = build_qemu_project(out, board)
        run, _ = run_timed(elf, board, 3600.0, profile=out / "profile.txt")
        executed = counts(out / "profile.txt")
        per_function = by_function(executed, symbols(elf))
        copies = library_calls(elf, executed)
        notes = {name: annotated(elf, executed, name) for name in args.annotate}
    result = run.result
    if result is None or isinstance(result, str) or result.checksum != expected:
        print(
            f"profile-functions: no TFLite Micro checksum from the run: {result}", file=sys.stderr
        )
        return 1
    total = sum(n for n, _ in per_function.values())
    cycles = sum(c for _, c in per_function.values())
    pico = board.timing_board or board.name
    print(f"{compiled.graph.name} on {args.board} ({args.strategy}): {total:,} instructions "
          f"executed, {result.instructions:,} in the inference (its result line); "
          f"{cycles:,} cycles estimated on {pico} for all of them")  # fmt: skip
    head = ("instructions", "share", "cycles", "share", "cyc/insn")
    print(f"{head[0]:>14} {head[1]:>6} {head[2]:>14} {head[3]:>6} {head[4]:>8}  function")
    for name, (n, c) in sorted(per_function.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(
            f"{n:>14,} {100 * n / total:5.1f}% {c:>14,} {100 * c / max(cycles, 1):5.1f}% "
            f"{c / max(n, 1):8.2f}  {name}"
        )
    if copies:
        print("\nlibrary copy calls by caller:")
        for n, caller, callee in copies:
            print(f"{n:>14,}  {caller} -> {callee}")
    for name, lines in notes.items():
        print(f"\n{name}, executions and cycles per instruction:")
        print("\n".join(lines) if lines else "  (no such function in the firmware)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
