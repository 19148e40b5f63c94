"""rip-compile: an int8 TFLite model in; its memory report (and, in later stages, code) out.

rip-compile model.tflite --board pico2 --strategy rip --placer milp --report [--json]
rip-compile model.tflite --plot plan.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rip.allocator.plan import PLACERS
from rip.allocator.strategies import STRATEGIES
from rip.boards import board_names, load_board
from rip.errors import RipError
from rip.report import analyse, build_report, format_report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rip-compile",
        description="Compile an int8 TFLite model with Right In-Place memory planning.",
    )
    p.add_argument("model", help="path to an int8 .tflite model")
    p.add_argument(
        "--board", default="pico2", help=f"one of {', '.join(board_names())} (default pico2)"
    )
    p.add_argument(
        "--strategy",
        default="rip",
        choices=STRATEGIES,
        help="dual: nothing in place; tinyengine: depthwise only (the paper's "
        "baseline); rip: every candidate (default)",
    )
    p.add_argument(
        "--placer",
        default="milp",
        choices=PLACERS,
        help="milp: Pyomo + SCIP, optimal (default); firstfit: TinyEngine's",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="MILP time limit per strategy; past it the best plan found is used",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="print the model summary, per-op table and memory plans",
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--plot", metavar="PNG", help="draw the plans (time x address) to a file")
    p.add_argument("--quiet", action="store_true", help="no solver progress on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        path = Path(args.model)
        if not path.is_file():
            raise RipError(f"{path}: no such file")
        board = load_board(args.board)
        progress = not args.quiet and not args.json and sys.stderr.isatty()
        compiled = analyse(path, board, args.placer, args.time_limit, progress=progress)
        rep = build_report(compiled, path, board, args.strategy)
        if args.plot:
            from rip.plot import plot_plans  # matplotlib only when a figure is asked for

            plot_plans(
                Path(args.plot),
                rep["model"],
                compiled.plans,
                compiled.req.lifetimes,
                board,
                compiled.req.scratch_bytes,
            )
        if args.json:
            print(json.dumps(rep, indent=2))
        else:
            print(format_report(rep))
        return 0
    except RipError as e:
        print(f"rip-compile: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
