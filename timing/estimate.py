"""Running a firmware under the timing plugin, and what it measured.

The plugin splits the run into segments at every SysTick read of rip's runtime, so the
segments are the intervals the firmware itself times: in a model's firmware segment 1 is
the inference (``rip_model_invoke()``, as the result line's ``instructions``), in a
profiling build one segment per op, in the CMSIS-NN harness one per call. An ``Estimate``
holds them with the chip they were timed as.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rip.boards import Board
from rip.core.errors import NoAnswerError, RipError
from rip.firmware.host_project import read_expected
from rip.firmware.qemu_run import QemuRun, run_elf, run_on_qemu
from rip.firmware.result import Result
from rip.timing.model import TimingModel
from rip.timing.plugin import SETTLE_SECONDS, plugin_path
from rip.timing.segment import Segment, parse_segments
from rip.timing.two_core_run import TwoCoreEstimate, run_two_core_project

__all__ = ["Estimate", "Segment", "TwoCoreEstimate", "parse_segments", "run_project_timed"]


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


SLOWDOWN = 20.0  # how much longer a run under the plugin may take (measured ~10x CPU)


def run_project_timed(
    project_dir: Path, board: Board
) -> tuple[Result, Estimate | TwoCoreEstimate | str]:
    """``run_on_qemu`` under the timing plugin: the result line and the estimate of its
    inference, or (the plugin cannot be built here) an untimed run and the reason. A
    two-core project runs under the plugin's two-core mode: its critical path in
    instructions and in the Pico's cycles (`rip.timing.two_core_run`), and has no untimed
    fallback (SysTick there counts both cores' instructions as one)."""
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
