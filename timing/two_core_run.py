"""Running a two-core firmware (issue 27) under the two_core_count plugin: the plugin's
arguments from the firmware's own symbols, the run, and the critical path replayed from
what it recorded (``two_core.replay``)."""

from __future__ import annotations

import re
import tempfile
from dataclasses import replace
from pathlib import Path

from rip.boards import Board
from rip.core.errors import NoAnswerError, RipError
from rip.firmware.qemu_run import QemuRun, run_elf, run_on_qemu
from rip.firmware.result import Result
from rip.firmware.tools import run_tool
from rip.timing.plugin import build_plugin
from rip.timing.two_core import CriticalPath, parse_events, replay

PLUGIN = "two_core_count"
PROGRESS = "rip_core_progress"  # kernels/rip_cores.c: the two counters
# The idle spin; GCC may clone it (rip_core_spin.constprop.0, .part.0), each clone idle too.
SPIN = re.compile(r"rip_core_spin(\.\w+)*")
MARK = "rip_inference_mark"  # templates/qemu/startup.c.j2: main.c calls it around the invoke
SETTLE_SECONDS = 30.0  # after the result line, until QEMU has exited and the plugin written
SLOWDOWN = 10.0  # how much longer a run under the plugin may take than without it


def plugin_args(elf: Path, nm: str = "arm-none-eabi-nm") -> list[str]:
    """The plugin's key=value arguments for ``elf`` (without out=): the counters' address,
    the spin's code and the inference mark, from its symbol table; a RipError naming a
    symbol the firmware lacks."""
    proc = run_tool([nm, "-S", "--defined-only", str(elf)], nm, timeout=60.0)
    if proc.returncode != 0:
        raise RipError(f"{nm} {elf.name} failed: {proc.stderr.strip()[-300:]}")
    progress: int | None = None
    spins: list[tuple[int, int]] = []
    mark: int | None = None
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        address, size, name = int(parts[0], 16), int(parts[1], 16), parts[3]
        if name == PROGRESS:
            progress = address
        elif SPIN.fullmatch(name):
            start = address & ~1  # the Thumb bit
            spins.append((start, start + size))
        elif name == MARK:
            mark = address & ~1
    found = {PROGRESS: progress, "rip_core_spin": spins, MARK: mark}
    missing = [name for name, value in found.items() if not value]
    if missing:
        raise RipError(f"{elf.name} has no {', '.join(missing)}: not a two-core rip firmware")
    spin_args = [f"spin=0x{lo:x}:0x{hi:x}" for lo, hi in spins]
    return [f"progress=0x{progress:x}", *spin_args, f"mark=0x{mark:x}"]


def run_two_core(
    elf: Path, board: Board, timeout: float, until: str | None = None
) -> tuple[QemuRun, CriticalPath | None]:
    """``elf`` run on ``board``'s machine (already the two-core one) under the plugin: what
    it printed, and the inference's critical path (None when the firmware reported an
    error: it may not have reached its marks)."""
    so = build_plugin(PLUGIN)
    with tempfile.TemporaryDirectory(prefix="rip-two-core-") as tmp:
        out = Path(tmp) / "events.txt"
        args = [str(so), f"out={out}", *plugin_args(elf)]
        if any("," in a for a in args):
            raise RipError(f"a path given to the two-core plugin contains a comma: {args}")
        run = run_elf(elf, board, timeout, until, ["-plugin", ",".join(args)], SETTLE_SECONDS)
        if isinstance(run.result, str):
            return run, None
        if not out.is_file():
            raise NoAnswerError(f"{board.name}: QEMU ended without the two-core plugin's events")
        events, totals = parse_events(out.read_text(encoding="utf-8"))
    return run, replay(events, totals)


def run_two_core_project(
    project_dir: Path, board: Board | None = None, timeout: float | None = None,
    build: bool = True,
) -> tuple[Result, CriticalPath]:  # fmt: skip
    """``run_on_qemu`` for a two-core project: its Result with the critical path as its
    instructions, and the critical path itself (each core's busy instructions and idle
    share, the syncs)."""
    paths: list[CriticalPath] = []

    def runner(elf: Path, b: Board, t: float) -> QemuRun:
        run, path = run_two_core(elf, b, t)
        if path is not None and isinstance(run.result, Result):
            paths.append(path)
            run = replace(run, result=replace(run.result, cycles=path.instructions))
        return run

    result = run_on_qemu(project_dir, board, timeout, build, runner=runner, slowdown=SLOWDOWN)
    return result, paths[0]
