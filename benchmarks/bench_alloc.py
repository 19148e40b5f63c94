"""bench-alloc: MILP cost per keras.applications graph (Table 7), our formulation against the
paper's all-pairs formulation, side by side in one run.

    python benchmarks/bench_alloc.py [--models MobileNet VGG16 ...] [--time-limit 300]

For each model and formulation: build + solve seconds of the RiP problem (the compiler
driver's own, ``rip.compiler.prepare`` on the host board) and its peak; the two peaks must
agree (both optimal) unless the all-pairs run hit its time limit. Prints the
table and the median; targets: EfficientNetV2-L under 13 s, median under 2 s (ours).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rip.allocator.planning.milp import MilpOptions, milp
from rip.allocator.planning.placement import Plan, Problem
from rip.boards import load_board
from rip.compiler import Options, prepare
from rip.core.terms import Strategy

KERAS = Path(__file__).resolve().parents[2] / "shared" / "models" / "keras"


def solve_plan(problem: Problem, all_pairs: bool, time_limit: float) -> tuple[float, Plan]:
    """Build and solve the MILP (never the lower-bound shortcut, so its size is known):
    wall seconds and the plan, whose stats hold variables, constraints and binaries."""
    t0 = time.perf_counter()
    plan = milp(problem, MilpOptions(time_limit=time_limit, all_pairs=all_pairs, shortcut=False))
    return time.perf_counter() - t0, plan


def solve(problem, all_pairs: bool, time_limit: float) -> tuple[float, int, bool, int]:
    seconds, plan = solve_plan(problem, all_pairs, time_limit)
    return seconds, plan.peak, bool(plan.optimal), plan.stats["binaries"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="file stems under shared/models/keras")
    p.add_argument("--time-limit", type=float, default=300.0, help="per solve (s)")
    p.add_argument("--ours-only", action="store_true", help="skip the all-pairs formulation")
    args = p.parse_args(argv)
    if not KERAS.is_dir():
        print(f"bench-alloc: {KERAS} is absent", file=sys.stderr)
        return 2
    files = sorted(KERAS.glob("*.graph.tflite"), key=lambda f: f.stat().st_size)
    if args.models:
        files = [f for f in files if f.name.split(".")[0] in args.models]
    head = (
        f"{'model':<22} {'ops':>5} {'ours s':>8} {'ours bin':>9} {'paper-form s':>13} "
        f"{'paper bin':>10} {'speed-up':>9} {'peak B':>11} {'equal':>6}"
    )
    print(head)
    print("-" * len(head))
    ours_times = []
    for f in files:
        prepared = prepare(f, load_board("host"), Options(strategies=(Strategy.RIP,)))
        graph, problem = prepared.graph, prepared.variants[Strategy.RIP].problem
        t_ours, peak, opt, nbin = solve(problem, False, args.time_limit)
        ours_times.append(t_ours)
        if args.ours_only:
            t_all, peak_all, opt_all, nbin_all = float("nan"), peak, opt, 0
        else:
            t_all, peak_all, opt_all, nbin_all = solve(problem, True, args.time_limit)
        equal = "yes" if peak == peak_all else ("limit" if not opt_all else "NO")
        speed = f"{t_all / t_ours:.1f}x" if t_ours > 0 and t_all == t_all else "-"
        print(
            f"{f.name.split('.')[0]:<22} {len(graph.operators):>5} {t_ours:>8.2f} {nbin:>9,} "
            f"{t_all:>13.2f} {nbin_all:>10,} {speed:>9} {peak:>11,} {equal:>6}",
            flush=True,
        )
    if ours_times:
        print(
            f"\nours: median {statistics.median(ours_times):.2f} s, "
            f"max {max(ours_times):.2f} s over {len(ours_times)} models "
            "(targets: median < 2 s, EfficientNetV2-L < 13 s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
