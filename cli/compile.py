"""rip-compile: an int8 TFLite model in; its memory report, C code and firmware out.

Only the command line, a thin layer over the Python API: arguments become the keyword
arguments of ``rip.plan`` / ``rip.emit`` (``rip.api``), which run the stages; ``rip.report``
formats the result, ``rip.cli.guarded`` turns errors into exit codes.

rip-compile model.tflite --board pico2 --strategy rip --placer milp --report [--json]
rip-compile model.tflite --board pico -o DIR --build --emulate [--json]
rip-compile model.tflite --plot plan.png
rip-compile model.tflite --board pico -o out/ --build [--stdio uart] [--build-type Debug]
            [--cmake-arg -DNAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rip import api
from rip.allocator.planning.check import picture
from rip.allocator.planning.options import (
    DEFAULT_MAX_OVERHEAD,
    DEFAULT_SHARE_SLACK,
    DEFAULT_STAGE_WEIGHTS,
    DEFAULT_TIME_LIMIT,
)
from rip.allocator.planning.staging import STAGE_TO_BOARD
from rip.allocator.planning.strategies import SELECTABLE
from rip.boards import Board, board_names, load_board
from rip.cli import guarded
from rip.cli.list_ops import format_operator_table, operator_table, rules_text
from rip.compiler import Compiled
from rip.core import jsonio
from rip.core.errors import EXIT_MISMATCH, EXIT_NO_REFERENCE, EXIT_OK, OutputError, RipError
from rip.core.printable import printable_lines
from rip.core.terms import BEST_STRATEGY, Placer, Strategy, WeightsIn
from rip.firmware.output_dir import cannot_write
from rip.firmware.pico_build import (
    BUILD_TYPES,
    DEFAULT_BUILD_TYPE,
    STDIO,
    PicoBuildOptions,
    summary_lines,
)
from rip.report import build_report, format_generated, format_report, next_step


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rip-compile",
        description="Compile an int8 TFLite model with Right In-Place memory planning.",
    )
    p.add_argument("model", nargs="?", help="path to an int8 .tflite model")
    p.add_argument(
        "--list-ops",
        action="store_true",
        help="print every accepted operator with its in-place class and kernel, and exit",
    )
    p.add_argument(
        "--rules",
        action="store_true",
        help="with --list-ops: then what the model validator requires of each operator",
    )
    p.add_argument(
        "--board", default="pico2", help=f"one of {', '.join(board_names())} (default pico2)"
    )
    p.add_argument(
        "--strategy",
        default=BEST_STRATEGY,
        choices=(BEST_STRATEGY, *Strategy.values()),
        help=f"{BEST_STRATEGY} (default): the lowest total activation RAM of "
        f"{' and '.join(SELECTABLE)}, the report says why; dual: nothing in place; "
        "tinyengine: depthwise only (the paper's baseline); rip: every in-place candidate "
        "(the paper's); fused: rip with fused row-streamed chains",
    )
    p.add_argument(
        "--placer",
        default="milp",
        choices=Placer.values(),
        help="milp: Pyomo + SCIP, optimal (default); firstfit: TinyEngine's",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help="time limit of the whole planning stage (every strategy's solve shares it); "
        "past it the best verified plan found is used, with a note",
    )
    p.add_argument(
        "--max-overhead",
        default=str(DEFAULT_MAX_OVERHEAD),
        metavar="F",
        help="fused: estimated instructions the fused chains may add, as a fraction or a "
        f"percentage of the unfused model's (e.g. 0.05 or 5%%; 'none': no limit; default "
        f"{DEFAULT_MAX_OVERHEAD:g})",
    )
    p.add_argument(
        "--stage-weights",
        default=str(DEFAULT_STAGE_WEIGHTS),
        metavar="BYTES",
        help="flash-aware execution on a board with a flash cache (pico, pico2 and the QEMU "
        "boards timed as them): stage the filters whose reuse thrashes the XIP cache in "
        "SRAM, adding at most BYTES to the arena (default "
        f"{DEFAULT_STAGE_WEIGHTS}: only bytes already free under the plan's peak; 'board': "
        "whatever SRAM the board leaves; 'off': never); never past the board's SRAM",
    )
    p.add_argument(
        "--weights",
        choices=WeightsIn.values(),
        default=WeightsIn.AUTO.value,
        help="where inference reads the constant data on a board with a flash cache: 'auto' "
        "(default) keeps it resident in SRAM, copied from flash at start-up, all of it where "
        "it fits beside the arena, else the ops' that stall most on flash, the rest in flash "
        "with thrashing filters staged; 'flash': all in flash; 'sram': all resident, refused "
        "when it does not fit",
    )
    p.add_argument(
        "--stream-input",
        action="store_true",
        help="input 0 streams in row by row (a camera's rows) instead of lying whole in the "
        "arena: the fused chain reading it keeps only the rows its window needs, from a row "
        "source the application sets (model.h); the firmware reads the test input's rows from "
        "flash (strategy fused only)",
    )
    p.add_argument(
        "--cores",
        type=int,
        choices=(1, 2),
        default=1,
        help="the cores inference runs on: 2 shares every CONV_2D of 4 or more output "
        "channels between both cores of a Pico (two Cortex-M33 or M0+), split by output "
        "channels and synchronised tile by tile at the gap one core needs; each core gets its "
        "own scratch (docs/two-cores.md). Emulated: --board qemu-m33 or qemu-armv6m runs on "
        "QEMU's dual-core mps2-an521 (default 1)",
    )
    p.add_argument(
        "--share-slack",
        default=str(DEFAULT_SHARE_SLACK),
        metavar="FRACTION",
        help="with --cores 2: how far a shared op's second scratch may raise the plan's "
        "layer-by-layer floor, a fraction of it (default 0.02; 1 shares every op it can, at "
        "more arena where every layer sets the floor); an op it would raise more runs on "
        "core 0 alone",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="print the model summary, per-op table and memory plans",
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--plot", metavar="PNG", help="draw the plans (time x address) to a file")
    p.add_argument("-o", "--output", metavar="DIR", help="write the generated project here")
    p.add_argument(
        "--run",
        action="store_true",
        help="(host and qemu boards) build and run the project, compare with TFLite Micro",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="with --run: run N times, report the fastest",
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="(pico boards) build the firmware with the Pico SDK at $PICO_SDK_PATH",
    )
    p.add_argument(
        "--stdio",
        choices=tuple(STDIO),
        help="with --build: where the firmware's result line goes: usb (USB serial), uart "
        "(UART0, for clean timing) or both; default both, or uart with a warning when the "
        "SDK has no TinyUSB",
    )
    p.add_argument(
        "--build-type",
        choices=BUILD_TYPES,
        help=f"with --build: CMake build type (default {DEFAULT_BUILD_TYPE})",
    )
    p.add_argument(
        "--cmake-arg",
        action="append",
        metavar="-DNAME=VALUE",
        help="with --build: one more CMake cache entry for the configure (repeatable; "
        "passed as one argument, never through a shell)",
    )
    p.add_argument(
        "--emulate",
        action="store_true",
        help="(pico) build, then run the firmware on the rp2040js emulator (Node.js) and "
        "compare its serial result line with TFLite Micro's",
    )
    p.add_argument(
        "--bootrom",
        metavar="FILE",
        help="with --emulate: the RP2040 boot ROM image (16 KB; default $RIP_RP2040_BOOTROM)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="generate code even when the plan does not fit the board's SRAM",
    )
    p.add_argument("--quiet", action="store_true", help="no planning progress on stderr")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="plan afresh: neither read nor write the plan cache ($RIP_CACHE_DIR, "
        "default ~/.cache/rip); with --build, also build in a fresh folder instead of the "
        "shared configured one there",
    )
    return p


def max_overhead(text: str) -> float | None:
    """``--max-overhead``: a fraction (0.05), a percentage (5%) or none (no limit); a
    RipError (one line, exit 2) for anything else or a negative value."""
    t = text.strip().lower()
    if t in ("none", "inf", "unlimited"):
        return None
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise RipError(
            f"--max-overhead {text!r}: give a fraction >= 0 such as 0.05, a percentage such "
            "as 5%, or none"
        )
    return value


def share_slack(text: str) -> float:
    """``--share-slack``: a fraction >= 0 or a percentage (2%); a RipError (one line, exit 2)
    for anything else."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise RipError(f"--share-slack {text!r}: give a fraction >= 0 such as 0.02, or 2%")
    return value


def stage_weights(text: str) -> int | None:
    """``--stage-weights``: whole bytes >= 0, board (all the board leaves) or off; a
    RipError (one line, exit 2) for anything else."""
    t = text.strip().lower()
    if t in ("off", "none"):
        return None
    if t == "board":
        return STAGE_TO_BOARD
    if not t.isdigit():
        raise RipError(f"--stage-weights {text!r}: give whole bytes >= 0 such as 0, board, or off")
    return int(t)


def time_limit(seconds: float) -> float:
    """``--time-limit``: finite, above 0 and at most a day (``inf`` would be a planning
    stage with no bound); a RipError (exit 2) otherwise."""
    if not math.isfinite(seconds) or not 0 < seconds <= api.MAX_TIME_LIMIT:
        raise RipError(
            f"--time-limit {seconds:g}: give seconds above 0 and at most {api.MAX_TIME_LIMIT:g}"
        )
    return seconds


def _plan_options(args: argparse.Namespace, board: Board) -> dict[str, Any]:
    """``rip.plan``'s keyword arguments. ``-o`` alone needs only the selected strategy; a
    report, JSON or plot compares them all."""
    only = args.output and not (args.report or args.json or args.plot)
    return {
        "board": board,
        "strategy": args.strategy,
        "strategies": () if only else None,
        "placer": args.placer,
        "time_limit": time_limit(args.time_limit),
        "max_overhead": max_overhead(args.max_overhead),
        "stage_weights": stage_weights(args.stage_weights),
        "weights": args.weights,
        "stream_input": args.stream_input,
        "cores": args.cores,
        "share_slack": share_slack(args.share_slack),
        "cache": not args.no_cache,
        "progress": not args.quiet and not args.json and sys.stderr.isatty(),
    }


def pico_build_options(args: argparse.Namespace) -> PicoBuildOptions:
    """``--stdio``, ``--build-type`` and ``--cmake-arg`` (each checked: one line, exit 2);
    they configure ``--build`` and mean nothing without it."""
    given = [f for f, v in (("--stdio", args.stdio), ("--build-type", args.build_type),
                            ("--cmake-arg", args.cmake_arg)) if v]  # fmt: skip
    if given and not (args.build or args.emulate):
        raise RipError(f"{', '.join(given)}: only with --build")
    return PicoBuildOptions(
        stdio=args.stdio,
        build_type=args.build_type or DEFAULT_BUILD_TYPE,
        cmake_args=tuple(args.cmake_arg or ()),
        shared=not args.no_cache,
    )


def joined_option_values(
    argv: Sequence[str], options: tuple[str, ...] = ("--cmake-arg",)
) -> list[str]:
    """``--cmake-arg -DX=1`` as ``--cmake-arg=-DX=1``: argparse would read a value that
    starts with a dash as an option of its own."""
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in options:
            value = next(it, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


# What matplotlib's savefig writes, by the file's extension.
PLOT_FORMATS = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff",
                ".webp", ".pgf")  # fmt: skip


def check_plot(path: Path) -> None:
    """``--plot`` is checked before the compile, so that minutes of planning do not end in
    a path matplotlib refuses: one line, exit 2. A folder is refused (matplotlib would
    quietly write DIR.png beside it)."""
    if path.is_dir():
        raise OutputError(f"--plot {path}: is a folder; give a file name such as plan.png")
    if path.suffix.lower() not in PLOT_FORMATS:
        raise OutputError(
            f"--plot {path}: unknown image type {path.suffix or '(no extension)'}; "
            f"one of {', '.join(PLOT_FORMATS)}"
        )
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"--plot {path}: no folder {folder}")
    why = cannot_write(folder)
    if why:
        raise OutputError(f"--plot {path}: cannot write in {folder} ({why})")


def _plot(c: Compiled, path: Path) -> str:
    """The figure, written beside ``path`` and renamed onto it: never a half-written file.
    Returns the line confirming it (the file, its panels, the selected one)."""
    from rip.plot import plot_plans  # matplotlib only when a figure is asked for

    board = c.board
    tmp = path.with_name(f".{path.stem}.rip-tmp{path.suffix}")
    try:
        plot_plans(
            tmp,
            c.graph.name,
            c.problems,
            c.plans,
            sram_bytes=board.sram_bytes,
            sram_label=f"{board.name} SRAM",
            overhead_bytes=board.fixed_overhead_bytes,
            selected=c.strategy,
        )
        os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"--plot {path}: cannot write ({e.strerror or e})") from None
    finally:
        tmp.unlink(missing_ok=True)
    panels = ", ".join(str(s) for s in c.plans)
    return f"wrote plot {path}: {len(c.plans)} panels ({panels}), {c.strategy} marked as selected"


def _compile(args: argparse.Namespace) -> int:
    """The API's calls (``rip.api``: plan, or emit with its planning), then printing."""
    board = load_board(args.board)
    if args.plot:
        check_plot(Path(args.plot))
    planning = _plan_options(args, board)
    if args.output:
        result = api.emit(
            Path(args.model),
            Path(args.output),
            build=args.build,
            run=args.run,
            emulate=args.emulate,
            bootrom=Path(args.bootrom) if args.bootrom else None,
            pico_build=pico_build_options(args),
            repeat=args.repeat,
            force=args.force,
            **planning,
        )
    elif args.run or args.build or args.emulate:
        raise RipError("--run, --build and --emulate need -o DIR for the generated project")
    else:
        result = api.plan(Path(args.model), **planning)
    c = result.compiled
    plotted = _plot(c, Path(args.plot)) if args.plot else ""
    # the model's tensor and file names reach the text: its control characters are escaped
    if args.json:
        print(jsonio.dumps(build_report(c), indent=2))
    else:
        if args.report or not args.output:
            print(printable_lines(format_report(build_report(c))))
        if args.report:
            print()
            print(f"arena under {c.strategy} (time x address):")
            print(picture(c.problem, c.plan))
        if args.output:
            print(printable_lines(format_generated(c)))
    for line in summary_lines(c.build) if c.build else ():
        print(printable_lines(f"rip-compile: {line}"), file=sys.stderr)
    if plotted:  # on stderr beside --json, whose stdout is JSON alone
        print(printable_lines(plotted), file=sys.stderr if args.json else sys.stdout)
    step = next_step(c)
    if step and not args.json:
        print(printable_lines(step))
    return _exit_code(c)


def _exit_code(c: Compiled) -> int:
    """0 ok; 1 the run's checksum differs from TFLite Micro's; 4 a run with no reference
    to compare with (TFLite Micro refused, crashed or timed out on the model): a script
    must not read "nothing to compare" as "matches"."""
    if c.match is False:
        return EXIT_MISMATCH
    if c.run is not None and c.match is None:
        why = c.reference.unavailable if c.reference is not None else "not computed"
        status = c.reference.status if c.reference is not None else "none"
        print(
            f"rip-compile: no reference to compare with ({status}: {why}); the run is unchecked",
            file=sys.stderr,
        )
        return EXIT_NO_REFERENCE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(joined_option_values(sys.argv[1:] if argv is None else argv))
    if args.list_ops:
        print(format_operator_table(operator_table()))
        if args.rules:
            print(f"\n{rules_text()}")
        return EXIT_OK
    if args.model is None:
        parser.error("the following arguments are required: model")
    return guarded("rip-compile", lambda: _compile(args))


if __name__ == "__main__":
    sys.exit(main())
