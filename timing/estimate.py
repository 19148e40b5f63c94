"""Running a firmware under the timing plugin, and what it measured.

The plugin splits the run into segments at every SysTick read of rip's runtime, so the
segments are the intervals the firmware itself times: in a model's firmware segment 1 is
the inference (``rip_model_invoke()``, as the result line's ``instructions``), in a
profiling build one segment per op, in the CMSIS-NN harness one per call. An ``Estimate``
holds them with the chip they were timed as.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from rip.boards import Board
from rip.core.errors import NoAnswerError, RipError
from rip.firmware.host_project import read_expected
from rip.firmware.qemu_run import QemuRun, run_elf, run_on_qemu
from rip.firmware.result import Result
from rip.timing.model import TimingModel
from rip.timing.plugin import plugin_path
from rip.timing.two_core import CriticalPath
from rip.timing.two_core_run import run_two_core_project

SETTLE_SECONDS = 30.0  # after the result line, until QEMU has exited and the plugin written


@dataclass(frozen=True)
class Segment:
    """One interval between SysTick reads: executed instructions, estimated cycles, the
    part of them stalled on XIP cache misses, and the cache's hits and misses (fetches
    counted per 32-bit fetch word, data reads per access)."""

    instructions: int = 0
    cycles: int = 0
    stall: int = 0
    fetch_hits: int = 0
    fetch_misses: int = 0
    data_hits: int = 0
    data_misses: int = 0
    sequential_misses: int = 0  # misses that continued an open QSPI transfer (RP2350)
    divides: int = 0  # SDIV/UDIV executed (each charged the top of the TRM's range)
    replaced_calls: int = 0  # division calls charged as the SIO-divider routine (RP2040)
    replaced_instructions: int = 0
    exceptions: int = 0
    unknown: int = 0  # encodings the decoder did not classify (charged one cycle)

    def __add__(self, other: Segment) -> Segment:
        return Segment(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def misses(self) -> int:
        return self.fetch_misses + self.data_misses

    @property
    def stall_share(self) -> float:
        """The share of the cycles lost to flash misses."""
        return self.stall / self.cycles if self.cycles else 0.0


@dataclass(frozen=True)
class Estimate:
    """The segments of one run, timed as ``model``'s chip."""

    model: TimingModel
    segments: tuple[Segment, ...]

    @property
    def clock_hz(self) -> int:
        return self.model.chip.clock_hz

    def window(self, index: int = 1) -> Segment:
        """Segment ``index`` (1: the inference of a model's firmware)."""
        if index >= len(self.segments):
            raise RipError(
                f"the timing plugin saw {len(self.segments)} segments, no segment {index}: "
                "the firmware made no SysTick reads"
            )
        return self.segments[index]

    def seconds(self, cycles: int) -> float:
        return cycles / self.clock_hz

    def summary(self, index: int = 1) -> dict:
        """The report's figures of segment ``index``, keyed by the chip's label (pico1_...)."""
        w = self.window(index)
        p = self.model.label
        return {
            f"{p}_cycles": w.cycles,
            f"{p}_ms": round(1e3 * self.seconds(w.cycles), 3),
            f"{p}_flash_stall_cycles": w.stall,
            f"{p}_flash_miss_share": round(w.stall_share, 4),
            f"{p}_timing": {
                "chip": self.model.chip.chip,
                "clock_hz": self.clock_hz,
                "xip_cache": self.model.cache,
                **asdict(w),
            },
        }


def parse_segments(text: str) -> tuple[Segment, ...]:
    """The segments of the plugin's output file; a RipError when it is incomplete."""
    segments = []
    names = {f.name for f in fields(Segment)}
    complete = False
    for line in text.splitlines():
        if line.startswith("segment "):
            values = dict(part.split("=", 1) for part in line.split()[1:])
            segments.append(Segment(**{k: int(v) for k, v in values.items() if k in names}))
        elif line.startswith("end "):
            complete = True
    if not complete:
        raise RipError("the timing plugin's output is incomplete (QEMU did not exit cleanly)")
    return tuple(segments)


def run_timed(
    elf: Path,
    board: Board,
    timeout: float,
    model: TimingModel | None = None,
    profile: Path | None = None,
    until: str | None = None,
) -> tuple[QemuRun, Estimate]:
    """``elf`` run on the emulated ``board`` under the timing plugin: what it printed, and
    the estimate (``model`` defaults to the board's own timing model). ``profile`` also
    writes per-instruction counts there (pc, size, executions, cycles, stall, class)."""
    model = model or TimingModel.of(board)
    so = plugin_path()
    with tempfile.TemporaryDirectory(prefix="rip-timing-") as tmp:
        out = Path(tmp) / "segments.txt"
        args = [str(so), f"out={out}", *model.args(board, elf)]
        if profile is not None:
            args.append(f"profile={profile}")
        if any("," in a for a in args):
            raise RipError(f"a path given to the timing plugin contains a comma: {args}")
        run = run_elf(elf, board, timeout, until, ["-plugin", ",".join(args)], SETTLE_SECONDS)
        if not out.is_file():
            raise NoAnswerError(f"{board.name}: QEMU ended without the timing plugin's figures")
        return run, Estimate(model, parse_segments(out.read_text(encoding="utf-8")))


# The timing plugin models one core's pipeline and its XIP cache: two vCPUs would mix.
TWO_CORES_UNTIMED = "the Pico timing model times one core; a two-core run reports its critical path"
SLOWDOWN = 20.0  # how much longer a run under the plugin may take (measured ~10x CPU)


def run_project_timed(
    project_dir: Path, board: Board
) -> tuple[Result, Estimate | CriticalPath | str]:
    """``run_on_qemu`` under the timing plugin: the result line and the estimate of its
    inference, or (the plugin cannot be built here) an untimed run and the reason. A
    two-core project runs under the two-core plugin instead: its critical path, each core's
    busy instructions and idle share (`rip.timing.two_core_run`)."""
    if read_expected(project_dir).get("cores", 1) != 1:
        return run_two_core_project(project_dir, board)
    try:
        model = TimingModel.of(board)
        plugin_path()
    except RipError as e:
        return run_on_qemu(project_dir, board), str(e)
    estimates: list[Estimate] = []

    def runner(elf: Path, b: Board, timeout: float) -> QemuRun:
        run, estimate = run_timed(elf, b, timeout, model)
        estimates.append(estimate)
        return run

    result = run_on_qemu(project_dir, board, runner=runner, slowdown=SLOWDOWN)
    return result, estimates[0]
