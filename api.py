"""rip's Python API: plan an int8 TFLite model for a board, emit its project, run TFLite
Micro's reference, read the report (``Compilation.report``: ``rip.report`` is the module
that formats it). These are the calls ``rip-compile`` makes
(``rip.cli.compile`` only parses arguments and prints), for scripts and architecture
searches that want the figures without a subprocess::

    import rip

    result = rip.plan("mcunet-in4.tflite", board="pico", strategy="fused")
    result.arena_bytes, result.fits, result.ops[0]["op"]  # arena: all activation RAM
    result.report()                                     # rip-compile --json's report
    made = rip.emit(result, "out/")                     # the Pico SDK project
    rip.reference("mcunet-in4.tflite").checksum         # TFLite Micro's CRC-32

Stable: the names in ``__all__`` (re-exported by ``rip``) and the attributes documented
on ``Compilation``, ``StrategyPlan``, ``Fit`` and ``Reference``. ``Compilation.compiled``
is the driver's whole result (``rip.compiler.Compiled``) for those who need more; it may
change between releases.

Errors are the typed exceptions of ``rip.core.errors``, each a ``RipError`` carrying the
``exit_code`` the command line would exit with: ``ModelError`` (a model file rip cannot
read or does not support), ``OptionError`` (an unknown board, strategy or placer, a bad
number), ``OutputError`` (a folder that cannot be written), ``FitError`` (``emit`` of a
plan that does not fit; ``.strategies`` and ``.boards`` name what would), ``BuildError``
(a build or run of the project failed).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Union

from rip import compiler
from rip.allocator.planning.options import (
    DEFAULT_MAX_OVERHEAD,
    DEFAULT_SHARE_SLACK,
    DEFAULT_STAGE_WEIGHTS,
    DEFAULT_TIME_LIMIT,
)
from rip.allocator.planning.strategies import SELECTABLE, STRATEGIES
from rip.boards import Board, load_board
from rip.compiler import Compiled, Fit, Options, Reference
from rip.core.errors import (
    BuildError,
    FitError,
    ModelError,
    OptionError,
    OutputError,
    RipError,
)
from rip.core.terms import BEST_STRATEGY, Placer, Strategy, WeightsIn, parse_strategy
from rip.firmware.pico_build import PicoBuildOptions
from rip.report import build_report, format_generated, format_report, next_step, op_table

__all__ = [
    "BuildError",
    "Compilation",
    "Fit",
    "FitError",
    "ModelError",
    "OptionError",
    "OutputError",
    "Reference",
    "RipError",
    "StrategyPlan",
    "emit",
    "plan",
    "reference",
]

PathLike = Union[str, "os.PathLike[str]"]
MAX_TIME_LIMIT = 86400.0  # a day: planning waits for nothing longer


@dataclass(frozen=True)
class StrategyPlan:
    """One strategy's plan on the board: its arena (all the activation memory: the
    activations and every kernel's scratch, each a buffer of the plan live for its op), the
    largest scratch of one op inside it, what the arena needs of the board's SRAM (``fit``),
    whether the MILP proved it optimal (None: first fit), and the placer that made it."""

    strategy: Strategy
    arena_bytes: int
    scratch_bytes: int
    fit: Fit
    optimal: bool | None
    placer: str


@dataclass(frozen=True)
class Compilation:
    """What ``plan`` and ``emit`` return: the selected strategy's figures, every planned
    strategy's (``strategies``), the per-op table (``ops``: the rows of the JSON report's
    ``op_table``, one dict per op with ``index``, ``op``, ``inputs``, ``output``,
    ``input_bytes``, ``output_bytes``, ``inplace_input``, ``gap``, ``planned_inplace``,
    ``scratch_bytes``, ...), and after ``emit`` the project folder and, after a run, its
    checksum against TFLite Micro's."""

    compiled: Compiled
    options: Options

    @property
    def model(self) -> str:
        return self.compiled.graph.name

    @property
    def board(self) -> Board:
        return self.compiled.board

    @property
    def strategy(self) -> Strategy:
        return self.compiled.strategy

    @property
    def arena_bytes(self) -> int:
        """All the activation RAM: the arena, every kernel's scratch planned inside it."""
        return self.compiled.plan.peak

    @property
    def scratch_bytes(self) -> int:
        """The largest scratch of one kernel, a part of ``arena_bytes`` (a detail)."""
        return self.compiled.variant.req.scratch_bytes

    @property
    def fit(self) -> Fit:
        return self.compiled.fit()

    @property
    def fits(self) -> bool:
        return self.fit.fits

    @property
    def strategies(self) -> dict[Strategy, StrategyPlan]:
        c = self.compiled
        return {
            s: StrategyPlan(
                s, p.peak, c.variants[s].req.scratch_bytes, c.fit(s), p.optimal, str(p.placer)
            )
            for s, p in c.plans.items()
        }

    @property
    def ops(self) -> list[dict[str, Any]]:
        c = self.compiled
        return op_table(c.variant.graph, c.variant.req, c.plan, c.problem.op_buffers)

    @property
    def output_dir(self) -> Path | None:
        return self.compiled.output_dir

    @property
    def checksum(self) -> int | None:
        """The run's output checksum (``emit(..., run=True)``); None without a run."""
        return None if self.compiled.run is None else self.compiled.run.checksum

    @property
    def reference_checksum(self) -> int | None:
        ref = self.compiled.reference
        return None if ref is None else ref.checksum

    @property
    def match(self) -> bool | None:
        """The run's checksum equals TFLite Micro's; None without a run or a reference."""
        return self.compiled.match

    def report(self) -> dict[str, Any]:
        """The report as JSON-ready data, the same as ``rip-compile --json``."""
        return build_report(self.compiled)

    def text(self) -> str:
        """The report as ``rip-compile --report`` prints it (without the text picture),
        what was written, and the next step."""
        c = self.compiled
        parts = [format_report(build_report(c)), format_generated(c), next_step(c)]
        return "\n".join(p for p in parts if p)


def _board(board: str | Board) -> Board:
    if isinstance(board, Board):
        return board
    if not isinstance(board, str):
        raise OptionError(f"board must be a board name or a Board, got {board!r}")
    return load_board(board)


PLAN_OPTIONS = frozenset(
    {
        "board",
        "strategy",
        "strategies",
        "placer",
        "time_limit",
        "max_overhead",
        "stage_weights",
        "weights",
        "stream_input",
        "cores",
        "share_slack",
        "cache",
        "progress",
    }
)


def check_time_limit(seconds: float) -> float:
    """Finite, above 0 and at most a day (``inf`` would be a planning stage with no
    bound); an OptionError (exit 2) otherwise."""
    if not isinstance(seconds, (int, float)) or not (
        math.isfinite(seconds) and 0 < seconds <= MAX_TIME_LIMIT
    ):
        raise OptionError(
            f"time limit {seconds!r}: give seconds above 0 and at most {MAX_TIME_LIMIT:g}"
        )
    return float(seconds)


def check_max_overhead(value: float | None) -> float | None:
    """A fraction >= 0 of the unfused model's instructions, or None (no budget)."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise OptionError(f"max overhead {value!r}: give a fraction >= 0 such as 0.05, or None")
    return float(value)


def check_stage_weights(value: int | None) -> int | None:
    """Flash-aware execution's budget: whole bytes >= 0 the staged filters may add to the
    arena, or None (off)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionError(f"stage weights {value!r}: give whole bytes >= 0, or None (off)")
    return value


def options(
    strategy: str | None = BEST_STRATEGY,
    *,
    strategies: Iterable[str] | None = None,
    placer: str = "milp",
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD,
    stage_weights: int | None = DEFAULT_STAGE_WEIGHTS,
    weights: str = "auto",
    stream_input: bool = False,
    cores: int = 1,
    share_slack: float = DEFAULT_SHARE_SLACK,
    cache: bool = True,
    progress: bool = False,
) -> Options:
    """The driver's options from plain values, each checked (OptionError naming it).
    ``strategies`` None plans every strategy (to compare them); the selected one is always
    planned, and ``best`` (the default) plans every selectable one and selects the lowest
    total."""
    selected = parse_strategy(strategy)
    planned = STRATEGIES if strategies is None else (
        tuple(Strategy.parse(s, "strategy") for s in strategies)
    )  # fmt: skip
    planned = (*planned, *(SELECTABLE if selected is None else (selected,)))
    return Options(
        strategy=selected,
        strategies=tuple(s for s in STRATEGIES if s in planned),
        placer=Placer.parse(placer, "placer"),
        time_limit=check_time_limit(time_limit),
        max_overhead=check_max_overhead(max_overhead),
        stage_weights=check_stage_weights(stage_weights),
        weights=WeightsIn.parse(weights, "weights"),
        stream_input=bool(stream_input),
        cores=check_cores(cores),
        share_slack=check_share_slack(share_slack),
        cache=cache,
        progress=progress,
    )


def check_cores(cores: int) -> int:
    """1 or 2 (the Picos' cores); an OptionError (exit 2) otherwise."""
    if isinstance(cores, bool) or cores not in (1, 2):
        raise OptionError(f"cores {cores!r}: give 1 or 2")
    return int(cores)


def check_share_slack(value: float) -> float:
    """A fraction >= 0 and finite (how far two cores' scratch may raise the floor)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value >= 0)
    ):
        raise OptionError(f"share slack {value!r}: give a fraction >= 0")
    return float(value)


def plan(
    model: PathLike,
    board: str | Board = "pico2",
    strategy: str = BEST_STRATEGY,
    *,
    strategies: Iterable[str] | None = None,
    placer: str = "milp",
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_overhead: float | None = DEFAULT_MAX_OVERHEAD,
    stage_weights: int | None = DEFAULT_STAGE_WEIGHTS,
    weights: str = "auto",
    stream_input: bool = False,
    cores: int = 1,
    share_slack: float = DEFAULT_SHARE_SLACK,
    cache: bool = True,
    progress: bool = False,
) -> Compilation:
    """Plan ``model`` (an int8 .tflite file) for ``board`` (a name such as ``pico``,
    ``pico2``, ``host``, ``qemu-m33``, or a ``Board``): read, rewrite, in-place
    requirements, and every strategy's plan (``strategies``: only these), each replayed on
    its graph. Nothing is written; a plan that does not fit is returned (``fits`` False),
    not refused. ``time_limit`` bounds the whole planning stage (seconds), ``max_overhead``
    the ``fused`` chains' estimated extra instructions (a fraction; None: no budget),
    ``stage_weights`` the arena bytes flash-aware execution may add to stage filters in
    SRAM on a board with a flash cache (0: only free bytes; None: off), ``weights`` where
    inference reads the constant data (``auto``: SRAM, all of it where it fits beside the
    arena, else the ops' that stall most on flash; ``flash``; or ``sram``: all of it,
    refused where it does not fit); ``stream_input``
    streams input 0 in row by row (`rip.frontend.streaming`; the ``fused`` strategy only);
    ``cores`` 2 shares the convolutions over both cores of a Pico (docs/two-cores.md), each
    op whose second scratch raises the plan's floor by ``share_slack`` (a fraction) at most;
    ``cache`` reuses replay-checked plans of the same model and options."""
    opts = options(
        strategy,
        strategies=strategies,
        placer=placer,
        time_limit=time_limit,
        max_overhead=max_overhead,
        stage_weights=stage_weights,
        weights=weights,
        stream_input=stream_input,
        cores=cores,
        share_slack=share_slack,
        cache=cache,
        progress=progress,
    )
    return Compilation(compiler.compile_model(Path(model), _board(board), opts), opts)


def emit(
    source: Compilation | PathLike,
    output: PathLike,
    *,
    build: bool = False,
    run: bool = False,
    emulate: bool = False,
    bootrom: PathLike | None = None,
    pico_build: PicoBuildOptions | None = None,
    repeat: int = 1,
    force: bool = False,
    **plan_options: Any,
) -> Compilation:
    """Write the project of the selected plan into ``output`` (a transaction: moved into
    place only when written, built and run), from a ``plan`` result or straight from a
    model file (then planned first, with ``plan``'s keyword arguments; without
    ``strategies`` only the selected strategy is planned). ``build`` builds Pico firmware
    with the Pico SDK; ``run`` builds and runs on the host or under QEMU and compares the
    checksum with TFLite Micro's (``match``); ``emulate`` (Pico 1) builds and runs the
    firmware on rp2040js with the boot ROM ``bootrom`` (default $RIP_RP2040_BOOTROM);
    ``pico_build`` sets the build's stdio, build type and CMake options. A plan that does
    not fit is a ``FitError`` naming what would, unless ``force``."""
    if not isinstance(repeat, int) or repeat < 1:
        raise OptionError(f"repeat {repeat!r}: give a whole number of runs, at least 1")
    out = Path(output)
    outputs = replace(
        Options(),
        output=out,
        build=build or emulate,
        run=run,
        emulate=emulate,
        bootrom=Path(bootrom) if bootrom is not None else None,
        pico_build=pico_build or PicoBuildOptions(),
        repeat=repeat,
        force=force,
    )
    board_of = source.board if isinstance(source, Compilation) else _board(
        plan_options.get("board", "pico2")
    )  # fmt: skip
    compiler.check_output_request(board_of, outputs)  # before minutes of planning
    if isinstance(source, Compilation):
        if plan_options:
            raise OptionError(
                f"emit of a plan result takes no planning options ({', '.join(plan_options)})"
            )
        c, opts = source.compiled, source.options
    else:
        unknown = sorted(set(plan_options) - PLAN_OPTIONS)
        if unknown:
            raise OptionError(
                f"emit: unknown option {', '.join(unknown)}; plan options are "
                f"{', '.join(sorted(PLAN_OPTIONS))}"
            )
        board = plan_options.pop("board", "pico2")
        strategy = plan_options.pop("strategy", BEST_STRATEGY)
        plan_options.setdefault("strategies", ())
        opts = options(strategy, **plan_options)
        c = compiler.analyse(Path(source), _board(board), opts)
    opts = replace(
        opts,
        **{f: getattr(outputs, f) for f in ("output", "build", "run", "emulate", "bootrom",
                                            "pico_build", "repeat", "force")},
    )  # fmt: skip
    return Compilation(compiler.generate(c, opts), opts)


def reference(model: PathLike | Compilation) -> Reference:
    """TFLite Micro's checksum (zlib CRC-32 of the int8 outputs) on the default test
    input, run in a child process with a time limit: ``checksum``, or None with
    ``status`` (refused, crashed, timeout) and ``unavailable`` saying why."""
    if isinstance(model, Compilation):
        return compiler.reference(model.compiled.path, model.compiled.graph)
    path = Path(model)
    _, graph = compiler.front(path)
    return compiler.reference(path, graph)
