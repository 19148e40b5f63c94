"""bench-compile: compile time end to end, per stage, against the previous release.

    python benchmarks/bench_compile.py [--models EfficientNetV2L mcunet-in0 ...]
                                       [--previous 752b6bf | --no-previous]

For every model of ../shared/models (the keras graphs of Table 7 and the MCUNet set):

* the wall time of each stage of the compiler driver (``rip.compiler.analyse``, which
  records them), in this process: read, rewrite, requirements, variants (each strategy's
  graph transform, requirements and problem), plan (every strategy's plan as the command
  makes it, in parallel processes when the problems are big, each replayed once), then
  each strategy's own solve time, and emit (the rip plan's C; graph-only files have no
  weights, so none);
* ``total``: ``rip-compile MODEL --board host --report --no-cache --json`` as a user runs
  it (interpreter start, imports, strategies in parallel processes), wall time;
* ``prev``: the same command of the previous release (``--previous``, a commit of this
  repository, unpacked with ``git archive`` into a temporary directory and run on this
  venv), and ``prev/total``; ``same`` says whether both report the same arena bytes and
  ``optimal`` flags for every strategy.

Targets: EfficientNetV2-L total <= 10 s, median over the keras graphs <= 2 s, every MCUNet
model <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.allocator.planning.strategies import STRATEGIES
from rip.boards import load_board
from rip.compiler import Options, analyse, emit

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO.parent / "shared" / "models"
PREVIOUS = "752b6bf"  # the release before compile-time work (issue 13)
STAGES = ("read", "rewrite", "requirements", "variants", "plan")


def model_files(stems: list[str] | None) -> list[Path]:
    keras = sorted((MODELS / "keras").glob("*.graph.tflite"), key=lambda f: f.stat().st_size)
    mcunet = sorted((MODELS / "mcunet").glob("*.tflite"), key=lambda f: f.stat().st_size)
    files = keras + mcunet
    if stems:
        files = [f for f in files if f.name.split(".")[0] in stems]
    return files


def stages(path: Path, time_limit: float) -> dict[str, float | None]:
    """Each driver stage's wall time in this process, each strategy's solve (seconds);
    emit None without weights."""
    c = analyse(path, load_board("host"), Options(time_limit=time_limit, cache=False))
    t: dict[str, float | None] = {name: c.stage_seconds[name] for name in STAGES}
    t.update({f"solve {s}": p.solve_seconds for s, p in c.plans.items()})
    t["emit"] = None
    if c.graph.has_weights:
        t0 = time.perf_counter()
        emit(c)
        t["emit"] = time.perf_counter() - t0
    return t


def command(python_code: str, path: Path) -> tuple[float, dict]:
    """Wall time of a compile command run in a fresh interpreter, and its JSON report."""
    args = [str(path), "--board", "host", "--report", "--json"]
    c = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", python_code, *args], capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - c
    rep = json.loads(out.stdout)
    return seconds, {
        s: (v["arena_bytes"], v["optimal"]) for s, v in sorted(rep["strategies"].items())
    }


NEW = "import sys; from rip.cli.compile import main; sys.exit(main(sys.argv[1:] + ['--no-cache']))"


def previous_code(commit: str, into: Path) -> str:
    """Unpack ``commit`` as the package ``rip`` under ``into``; the code that runs it."""
    blob = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into / "rip", filter="data")
    return (
        f"import sys; sys.path.insert(0, {str(into)!r}); "
        "from rip.cli.compile import main; sys.exit(main(sys.argv[1:]))"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="file stems under shared/models/{keras,mcunet}")
    p.add_argument("--previous", default=PREVIOUS, help="commit of the previous release")
    p.add_argument("--no-previous", action="store_true", help="skip the previous release")
    p.add_argument(
        "--time-limit", type=float, default=DEFAULT_TIME_LIMIT, help="planning stage limit (s)"
    )
    args = p.parse_args(argv)
    files = model_files(args.models)
    if not files:
        print(f"bench-compile: no models under {MODELS}", file=sys.stderr)
        return 2
    cols = [*STAGES, *(f"solve {s}" for s in STRATEGIES), "emit"]
    short = ["read", "rewr", "req", "variant", "plan", *(f"s {s}"[:7] for s in STRATEGIES), "emit"]
    head = (
        f"{'model':<20} "
        + " ".join(f"{c:>7}" for c in short)
        + f" {'total':>7} {'prev':>7} {'ratio':>6} {'same':>5}"
    )
    print("seconds per stage (in process), total = rip-compile --report end to end")
    print(head)
    print("-" * len(head))
    totals: dict[str, list[float]] = {"keras": [], "mcunet": []}
    prev_totals: dict[str, list[float]] = {"keras": [], "mcunet": []}
    all_same = True
    with tempfile.TemporaryDirectory(prefix="rip-prev-") as tmp:
        prev = None if args.no_previous else previous_code(args.previous, Path(tmp))
        for f in files:
            group = f.parent.name
            t = stages(f, args.time_limit)
            total, ours = command(NEW, f)
            totals[group].append(total)
            if prev is None:
                before, same, ratio = float("nan"), "-", "-"
            else:
                before, theirs = command(prev, f)
                prev_totals[group].append(before)
                same = "yes" if theirs == ours else "NO"
                all_same &= theirs == ours
                ratio = f"{before / total:.1f}x"
            cells = " ".join("      -" if t[c] is None else f"{t[c]:>7.2f}" for c in cols)
            print(
                f"{f.name.split('.')[0][:20]:<20} {cells} {total:>7.2f} {before:>7.2f} "
                f"{ratio:>6} {same:>5}",
                flush=True,
            )
    print()
    for group, values in totals.items():
        if not values:
            continue
        line = (
            f"{group}: {len(values)} models, total median {statistics.median(values):.2f} s, "
            f"max {max(values):.2f} s"
        )
        if prev_totals[group]:
            line += (
                f"; previous median {statistics.median(prev_totals[group]):.2f} s, "
                f"max {max(prev_totals[group]):.2f} s"
            )
        print(line)
    print("targets: EfficientNetV2L <= 10 s, keras median <= 2 s, every MCUNet model <= 2 s")
    if not all_same:
        print("arena bytes or optimal flags differ from the previous release", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
