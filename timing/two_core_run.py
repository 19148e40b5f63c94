"""Running a two-core firmware (issue 27) under the timing plugin's two-core mode: the
plugin's arguments from the firmware's own symbols, the run, and the critical path replayed
from what it recorded (``two_core.replay``), in instructions and in the Pico's cycles."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from rip.boards import Board
from rip.core.errors import NoAnswerError, RipError
from rip.firmware.qemu_run import QemuRun, run_elf, run_on_qemu
from rip.firmware.result import Result
from rip.firmware.tools import run_tool
from rip.timing.model import TimingModel
from rip.timing.plugin import SETTLE_SECONDS, plugin_path
from rip.timing.segment import Segment, parse_segments
from rip.timing.two_core import CYCLES, INSTRUCTIONS, CriticalPath, parse_events, replay

PROGRESS = "rip_core_progress"  # kernels/rip_cores.c: the two counters
# The idle spin; GCC may clone it (rip_core_spin.constprop.0, .part.0), each clone idle too.
SPIN = re.compile(r"rip_core_spin(\.\w+)*")
MARK = "rip_inference_mark"  # templates/qemu/startup.c.j2: main.c calls it around the invoke
SLOWDOWN = 20.0  # how much longer a run under the plugin may take than without it


@dataclass(frozen=True)
class TwoCoreEstimate:
    """A two-core inference: its critical path in instructions (``path``, one instruction
    per time unit on each core) and in ``model``'s cycles (``cycles``: each core timed as
    the Pico's core over one shared XIP cache), and each core's segment of work (core 0's
    inference window; core 1's whole run, which after its boot is nothing but its shares)."""

    path: CriticalPath
    cycles: CriticalPath
    model: TimingModel
    cores: tuple[Segment, Segment]

    @property
    def instructions(self) -> int:
        return self.path.length

    def summary(self) -> dict:
        """The report's figures: ``two_cores`` (both paths, each core's busy share) and the
        chip's ``<label>_cycles`` and ``_ms`` of the critical path."""
        p = self.model.label
        cycles = self.cycles.length
        stall = sum(c.stall for c in self.cores)
        return {
            f"{p}_cycles": cycles,
            f"{p}_ms": round(1e3 * cycles / self.model.chip.clock_hz, 3),
            f"{p}_flash_stall_cycles": stall,
            f"{p}_flash_miss_share": round(stall / (sum(c.cycles for c in self.cores) or 1), 4),
            "two_cores": {
                **self.path.summary(INSTRUCTIONS),
                **self.cycles.summary(CYCLES),
                "chip": self.model.chip.chip,
                "clock_hz": self.model.chip.clock_hz,
                "xip_cache": self.model.cache,
            },
        }


def plugin_args(elf: Path, nm: str = "arm-none-eabi-nm") -> list[str]:
    """The two-core arguments for ``elf``: the counters' address and the spin's code, from
    its symbol table; a RipError naming a symbol the firmware lacks."""
    proc = run_tool([nm, "-S", "--defined-only", str(elf)], nm, timeout=60.0)
    if proc.returncode != 0:
        raise RipError(f"{nm} {elf.name} failed: {proc.stderr.strip()[-300:]}")
    progress: int | None = None
    spins: list[tuple[int, int]] = []
    mark = False
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
        mark |= name == MARK
    found = {PROGRESS: progress, "rip_core_spin": spins, MARK: mark}
    missing = [name for name, value in found.items() if not value]
    if missing:
        raise RipError(f"{elf.name} has no {', '.join(missing)}: not a two-core rip firmware")
    return [f"progress=0x{progress:x}", *(f"spin=0x{lo:x}:0x{hi:x}" for lo, hi in spins)]


def run_two_core(
    elf: Path, board: Board, timeout: float, until: str | None = None
) -> tuple[QemuRun, TwoCoreEstimate | None]:
    """``elf`` run on ``board``'s machine (already the two-core one) under the timing
    plugin's two-core mode, timed as the board's Pico: what it printed, and the inference's
    estimate (None when the firmware reported an error: it may not have reached its
    marks)."""
    model = TimingModel.of(board)
    so = plugin_path()
    with tempfile.TemporaryDirectory(prefix="rip-two-core-") as tmp:
        out = Path(tmp) / "timing.txt"
        args = [str(so), f"out={out}", *model.args(board, elf, (MARK,)), *plugin_args(elf)]
        if any("," in a for a in args):
            raise RipError(f"a path given to the timing plugin contains a comma: {args}")
        run = run_elf(elf, board, timeout, until, ["-plugin", ",".join(args)], SETTLE_SECONDS)
        if isinstance(run.result, str):
            return run, None
        if not out.is_file():
            raise NoAnswerError(f"{board.name}: QEMU ended without the timing plugin's figures")
        text = out.read_text(encoding="utf-8")
    paths = [replay(*parse_events(text, unit)) for unit in (INSTRUCTIONS, CYCLES)]
    core0, core1 = parse_segments(text, 0), parse_segments(text, 1)
    if len(core0) < 2:
        raise RipError(f"{elf.name}: core 0 passed no inference mark")
    whole1 = sum(core1[1:], core1[0])
    return run, TwoCoreEstimate(paths[0], paths[1], model, (core0[1], whole1))


def run_two_core_project(
    project_dir: Path, board: Board | None = None, timeout: float | None = None,
    build: bool = True,
) -> tuple[Result, TwoCoreEstimate]:  # fmt: skip
    """``run_on_qemu`` for a two-core project: its Result with the critical path as its
    instructions, and the estimate (both paths, each core's busy share and segment)."""
    estimates: list[TwoCoreEstimate] = []

    def runner(elf: Path, b: Board, t: float) -> QemuRun:
        run, estimate = run_two_core(elf, b, t)
        if estimate is not None and isinstance(run.result, Result):
            estimates.append(estimate)
            run = replace(run, result=replace(run.result, cycles=estimate.instructions))
        return run

    result = run_on_qemu(project_dir, board, timeout, build, runner=runner, slowdown=SLOWDOWN)
    return result, estimates[0]
