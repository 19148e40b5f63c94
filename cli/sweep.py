"""``rip-sweep``: the synthetic validation sweep of Sec. 5.2 / Appendix G.2 from the shell.

Draws the Table 5 layer set, runs every layer through the five execution configurations
against the corruption simulator, and prints unsafe / tight / loose counts per closed form;
then the same for random fused convolution chains (issue 12): the chain gap and ring sizes
of ``allocator/theory/fused.py`` against the fused-schedule simulator.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rip.allocator.theory.sweep import (
    CLOSED_FORM_LABELS,
    DEFAULT_MAX_EXTENT,
    MIN_MAX_EXTENT,
    ROWS,
    SweepResult,
    run_sweep,
    write_csv,
)
from rip.allocator.theory.sweep_fused import FusedSweepResult, run_fused_sweep
from rip.cli import guarded
from rip.core import jsonio
from rip.core.errors import OutputError, RipError

PROG = "rip-sweep"
NO_CSV = "-"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise RipError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Check the closed-form gaps against the corruption simulator on the "
        "synthetic layer set of the RiP paper (Sec. 5.2, Appendix G.2, Table 5).",
    )
    parser.add_argument(
        "--layers",
        type=_positive_int,
        default=10_000,
        help="number of layers to draw (default: 10000)",
    )
    parser.add_argument(
        "--chains",
        type=_non_negative_int,
        default=None,
        help="random fused chains to check (default: 30%% of --layers, 3000 for the "
        "10,000-layer sweep; 0 skips them)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="non-negative seed; layer i draws from the stream (seed, i) (default: 0)",
    )
    parser.add_argument(
        "--max-extent",
        type=int,
        default=DEFAULT_MAX_EXTENT,
        help=f"largest input height/width, at least {MIN_MAX_EXTENT} "
        f"(default: {DEFAULT_MAX_EXTENT})",
    )
    parser.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        help="worker processes (default: os.cpu_count(), here "
        f"{os.cpu_count()}); 1 runs in-process",
    )
    parser.add_argument(
        "--csv",
        default="sweep.csv",
        metavar="PATH",
        help="per-(layer, configuration) CSV (default: sweep.csv in the "
        f"current directory); '{NO_CSV}' writes no CSV",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the summary as JSON instead of a table"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def _fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def format_table(result: SweepResult) -> str:
    """One line per closed form and execution configuration, as Sec. 5.2 reports them."""
    s = result.summary
    w = max(len(label) for label in CLOSED_FORM_LABELS.values()) + 2
    head = (
        f"{'closed form':<{w}}{'configuration':<23}{'layers':>7}{'n/a':>6}{'unsafe':>7}"
        f"{'tight':>7}{'loose':>7}{'tight %':>9}{'mean over':>11}{'max over':>10}"
    )
    lines = [head, "-" * len(head)]
    for form, config in ROWS:
        v = s["results"][form][config]
        lines.append(
            f"{CLOSED_FORM_LABELS[form]:<{w}}{config:<23}{v['layers']:>7}"
            f"{v['not_applicable']:>6}{v['unsafe']:>7}{v['tight']:>7}{v['loose']:>7}"
            f"{_fmt(v['tight_pct'], '.2f'):>9}{_fmt(v['mean_overshoot'], '.2f'):>11}"
            f"{v['max_overshoot']:>10}"
        )
    lines.append("")
    lines.append(
        f"{s['layers']} layers, {s['restricted_layers']} ({s['restricted_pct']}%) inside the "
        f"restricted domain of [9]; {result.jobs} job(s), wall time {result.wall_seconds:.1f} s"
    )
    lines.append("overshoot = bound - truth over loose layers (scalars)")
    return "\n".join(lines)


def format_fused(result: FusedSweepResult) -> str:
    """The fused-chain section: the chain gap and the ring sizes against the simulator."""
    s = result.summary
    head = (
        f"{'fused chains (issue 12)':<40}{'items':>7}{'unsafe':>7}{'tight':>7}{'loose':>7}"
        f"{'tight %':>9}{'mean over':>11}{'max over':>10}"
    )
    r = s["rings"]
    n_rings = r["intermediates"]
    ring_pct = round(100.0 * r["tight"] / n_rings, 2) if n_rings else None
    lines = [head, "-" * len(head)]
    for label, g in (
        ("gap, exact form (bytes)", s["gap"]),
        ("gap, fold form O(k^2) (bytes)", s["gap_fold"]),
    ):
        lines.append(
            f"{label:<40}{s['chains']:>7}{g['unsafe']:>7}{g['tight']:>7}{g['loose']:>7}"
            f"{_fmt(g['tight_pct'], '.2f'):>9}{_fmt(g['mean_overshoot'], '.2f'):>11}"
            f"{g['max_overshoot']:>10}"
        )
    lines += [
        f"{'ring rows, R_l (rows)':<40}{n_rings:>7}{r['unsafe']:>7}{r['tight']:>7}"
        f"{r['loose']:>7}{_fmt(ring_pct, '.2f'):>9}{_fmt(r['mean_overshoot'], '.2f'):>11}"
        f"{r['max_overshoot']:>10}",
        "",
        f"{s['chains']} chains (ops: "
        + ", ".join(f"{k}: {v}" for k, v in s["lengths"].items())
        + f"; {s['residual']} with the residual ADD); wall time {result.wall_seconds:.1f} s",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``rip-sweep``; returns the exit code (usable as ``sys.exit(main())``)."""

    def work() -> int:
        try:
            args = build_parser().parse_args(argv)  # a bad argument raises RipError
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        return _run(args)

    return guarded(PROG, work)


def _run(args: argparse.Namespace) -> int:
    result = run_sweep(
        args.layers, args.seed, args.max_extent, args.jobs, progress=not args.no_progress
    )
    n_chains = (3 * args.layers) // 10 if args.chains is None else args.chains
    fused = (
        run_fused_sweep(n_chains, args.seed, jobs=result.jobs, progress=not args.no_progress)
        if n_chains
        else None
    )
    if args.csv != NO_CSV:
        try:
            write_csv(result.records, args.csv)
        except OSError as exc:  # the CSV path
            raise OutputError(str(exc)) from None
    if args.json:
        payload = {
            "seed": args.seed,
            "max_extent": args.max_extent,
            "jobs": result.jobs,
            "wall_seconds": round(result.wall_seconds, 3),
            **result.summary,
        }
        if fused is not None:
            payload["fused"] = {"wall_seconds": round(fused.wall_seconds, 3), **fused.summary}
        if args.csv != NO_CSV:
            payload["csv"] = args.csv
        print(jsonio.dumps(payload, indent=2))
    else:
        print(format_table(result))
        if fused is not None:
            print()
            print(format_fused(fused))
        if args.csv != NO_CSV:
            print(f"per-layer CSV: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
