"""make calibrate-cost: measure per-op instructions on QEMU and fit the planner's cost model.

One command regenerates ``allocator/planning/cost_model.json`` (the coefficients
`rip.allocator.planning.cost_model` reads, which the ``fused`` strategy's instruction
budget, ``--max-overhead``, is estimated with). Rerun it whenever a kernel changes speed
(the fused kernels above all) and commit the file it writes:

    python benchmarks/calibrate_cost.py [--models a,b] [--boards qemu-m33,qemu-armv6m]
                                        [--out FILE] [--jobs N] [--json RAW]
    python benchmarks/calibrate_cost.py --refit RAW   # fit saved measurements again

For each model (default: the eleven MCUNet models of ../shared/models/mcunet) it plans the
layer-by-layer graph (``rip``) and up to two fused graphs (every maximal candidate chain
whole, with its residual ADD; and each chain's first two members only), builds each as a
profiling build (a SysTick mark around every op, ``benchmarks/bench_cost.py``'s machinery)
for each board, runs it on QEMU (the checksum must equal TFLite Micro's), and collects
per-op instructions. Then, per board:

* per op class, least squares (weighted by 1/sqrt of the measured count, coefficients kept
  non-negative by dropping a feature that comes out negative) of the op's instructions on
  its features (MACs, output elements, output pixels, one call);
* least squares of each fused chain's measured overhead (its instructions less those its
  ops took alone under ``rip`` in the same model) on the chain's features (MACs and output
  elements of its 1x1 and of its other members, rows and pixels computed per stage, one
  call).

It prints the estimate against the measurement per model (``rip`` and fused totals, the
fused overhead) and writes the data file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_cost import profile_run

from rip import compiler
from rip.allocator.planning.cost_model import (
    CLASSES,
    DATA,
    FUSED_FEATURES,
    OP_FEATURES,
    fused_features,
    op_class,
    op_features,
)
from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.allocator.planning.requirements import fused_chain
from rip.boards import load_board
from rip.compiler import Options, analyse, emit
from rip.core import jsonio
from rip.core.errors import LayerError
from rip.core.operators import Op
from rip.core.terms import Placer, Strategy
from rip.firmware.result import parse_result_line
from rip.frontend.fusion import ChainSpan, candidates
from rip.frontend.ir import Graph

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / ".." / "shared" / "models" / "mcunet"
BOARDS = ("qemu-m33", "qemu-armv6m")


def _fusable(graph: Graph, chain: ChainSpan) -> bool:
    ops = graph.operators[chain.first : chain.last + 1]
    try:
        fused_chain(graph, ops, chain.residual is not None)
    except LayerError:
        return False
    return True


def variants(graph: Graph) -> dict[str, list[ChainSpan]]:
    """The fused graphs measured: every maximal candidate whole, and each one's first two
    members (a chain without its residual ADD, the rest alone)."""
    chains = candidates(graph)
    whole = [c for c in chains if _fusable(graph, c)]
    heads = [ChainSpan(c.first, c.first + 1) for c in chains if c.last > c.first + 1]
    return {"whole": whole, "heads": [c for c in heads if _fusable(graph, c)]}


def _profile(model, board_name: str, reference: int, out: Path) -> list[tuple[int, int]]:
    """(op index, instructions) of every op of a profiling build run on QEMU (shifts left
    out); a RuntimeError when the run fails or its checksum differs from TFLite Micro's."""
    marks, figures, run = profile_run(model, load_board(board_name), reference, out)
    result = parse_result_line(run.lines[-1]) if run.lines else None
    if result is None or isinstance(result, str) or result.checksum != reference:
        raise RuntimeError(f"{out.name}: run failed or checksum differs ({result})")
    return [(m.op, n) for m, n in zip(marks, figures, strict=True) if m.part == "op"]


def rip_options(time_limit: float = DEFAULT_TIME_LIMIT) -> Options:
    """The layer-by-layer build's options: the strategy named, since an Options without one
    emits the selected plan (fused wherever fusing lowers the peak)."""
    return Options(
        placer=Placer.MILP, time_limit=time_limit, strategy=Strategy.RIP, strategies=(Strategy.RIP,)
    )


def measure(path: str, boards: tuple[str, ...], time_limit: float = DEFAULT_TIME_LIMIT) -> dict:
    """One model's runs: per (board, variant) the ops it executed, each as its measured
    instructions ``n``, the ops it stands for alone (``parts``: class and features), and
    for a fused chain its features and what its ops took alone under ``rip``. Every
    variant is the compiler driver's: ``rip``, and ``fused`` with exactly the chains of
    each measured set (``Options.fuse_chains``)."""
    p = Path(path)
    board0 = load_board(boards[0])
    options = rip_options(time_limit)
    c = analyse(p, board0, options)
    graph = c.graph
    reference = compiler.reference(p, graph).checksum
    compiled = {"rip": c}
    for name, chains in variants(graph).items():
        if not chains:
            continue
        fused = replace(
            options,
            strategy=Strategy.FUSED,
            strategies=(Strategy.FUSED,),
            cache=False,
            fuse_chains=tuple(chains),
        )
        compiled[name] = analyse(p, board0, fused)
    # ops by their TFLite index: each analyse reads the model afresh
    index = {op.source_index: k for k, op in enumerate(graph.operators)}
    runs = []
    with tempfile.TemporaryDirectory(prefix="calibrate-cost-") as tmp:
        models = {name: emit(v) for name, v in compiled.items()}
        for board in boards:
            alone: dict[int, int] = {}
            for name, v in compiled.items():
                g, model = v.variant.graph, models[name]
                entries = []
                for k, n in _profile(model, board, reference, Path(tmp) / f"{board}-{name}"):
                    op = g.operators[k]
                    if op.kind != Op.FUSED_CHAIN:
                        if name == "rip":  # k indexes the layer-by-layer graph only here
                            alone[k] = n
                        entry = {"n": n, "parts": [[op_class(g, op), op_features(g, op)]]}
                    else:
                        fp = op.params
                        entry = {
                            "n": n,
                            "parts": [[op_class(g, m), op_features(g, m)] for m in fp.ops],
                            "fused": fused_features(g, fp.members, fp.residual),
                            "alone": sum(alone[index[m.source_index]] for m in fp.ops),
                        }
                    entries.append(entry)
                runs.append({"board": board, "variant": name, "ops": entries})
    return {"model": graph.name, "runs": runs}


def _nnls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares with non-negative coefficients: a feature whose coefficient
    comes out negative is dropped and the rest refitted (an active set, enough for four
    features)."""
    keep = [j for j in range(x.shape[1]) if np.any(x[:, j])]
    while True:
        coef = np.zeros(x.shape[1])
        if keep:
            sol, *_ = np.linalg.lstsq(x[:, keep] * w[:, None], y * w, rcond=None)
            coef[keep] = sol
        bad = [j for j in keep if coef[j] < 0]
        if not bad:
            return coef
        keep.remove(min(bad, key=lambda j: coef[j]))


def _entries(rows: list[dict], board: str, variant: str | None = None):
    for r in rows:
        for run in r["runs"]:
            if run["board"] == board and (
                variant is None or (run["variant"] == "rip") == (variant == "rip")
            ):
                yield from run["ops"]


def fit(rows: list[dict], board: str) -> dict:
    """The coefficients of one board from every model's runs: op classes from the ``rip``
    runs, the fused overhead from the fused runs' chains."""
    ops: dict[str, dict[str, float]] = {}
    singles = [e for e in _entries(rows, board, "rip")]
    for cls in CLASSES:
        data = [(e["parts"][0][1], e["n"]) for e in singles if e["parts"][0][0] == cls]
        if not data:
            continue
        x = np.array([f for f, _ in data], dtype=float)
        y = np.array([n for _, n in data], dtype=float)
        coef = _nnls(x, y, 1 / np.sqrt(np.maximum(y, 1.0)))
        ops[cls] = {n: round(float(v), 6) for n, v in zip(OP_FEATURES, coef, strict=True)}
    chains = [e for e in _entries(rows, board, "fused") if "fused" in e]
    overhead = dict.fromkeys(FUSED_FEATURES, 0.0)
    if chains:
        # the overhead may come out negative (a fused kernel faster than its ops alone):
        # plain least squares, weighted like the ops by the chain's size
        x = np.array([e["fused"] for e in chains], dtype=float)
        y = np.array([e["n"] - e["alone"] for e in chains], dtype=float)
        w = 1 / np.sqrt(np.maximum(np.array([e["n"] for e in chains], float), 1.0))
        sol, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
        overhead = {n: round(float(v), 6) for n, v in zip(FUSED_FEATURES, sol, strict=True)}
    return {"ops": ops, "fused_overhead": overhead}


def _dot(coef: dict[str, float], names, xs) -> float:
    return sum(coef.get(n, 0.0) * x for n, x in zip(names, xs, strict=True))


def estimate(coef: dict, entry: dict) -> tuple[float, float]:
    """(estimated instructions, estimated overhead) of one measured entry."""
    alone = sum(_dot(coef["ops"].get(c, coef["ops"].get("other", {})), OP_FEATURES, f)
                for c, f in entry["parts"])  # fmt: skip
    extra = _dot(coef["fused_overhead"], FUSED_FEATURES, entry["fused"]) if "fused" in entry else 0
    return alone + extra, extra


def report(rows: list[dict], fitted: dict[str, dict]) -> dict[str, float]:
    """Estimate against measurement per model, board and variant: the total, and for the
    fused variants the chains' summed overhead (measured: less their ops under ``rip``)."""
    print("| board | model | variant | measured | estimated | error | overhead measured "
          "| overhead estimated |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    worst: dict[str, float] = {}
    for r in rows:
        for run in r["runs"]:
            coef = fitted[run["board"]]
            measured = sum(e["n"] for e in run["ops"])
            est = sum(estimate(coef, e)[0] for e in run["ops"])
            err = (est - measured) / measured
            worst[run["board"]] = max(worst.get(run["board"], 0.0), abs(err))
            chains = [e for e in run["ops"] if "fused" in e]
            om = f"{sum(e['n'] - e['alone'] for e in chains):,}" if chains else "-"
            oe = f"{sum(estimate(coef, e)[1] for e in chains):,.0f}" if chains else "-"
            print(f"| {run['board']} | {r['model']} | {run['variant']} | {measured:,} "
                  f"| {est:,.0f} | {100 * err:+.1f}% | {om} | {oe} |")  # fmt: skip
    for b, e in worst.items():
        print(f"{b}: worst |estimated - measured| / measured over the runs: {100 * e:.1f}%")
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated model names (default: the eleven MCUNet)")
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--out", default=str(DATA), help="the data file written")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", metavar="FILE", help="also write the raw measurements")
    ap.add_argument("--refit", metavar="FILE", help="fit --json's measurements again (no QEMU)")
    args = ap.parse_args(argv)
    boards = tuple(args.boards.split(","))
    paths = sorted(MODELS.glob("*.tflite"))
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    if not paths:
        print(f"calibrate-cost: no models under {MODELS}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if args.refit:
        rows = json.loads(Path(args.refit).read_text())
        boards = tuple(dict.fromkeys(run["board"] for r in rows for run in r["runs"]))
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(measure, map(str, paths), [boards] * len(paths)))
        if args.json:
            Path(args.json).write_text(jsonio.dumps(rows))
    fitted = {b: fit(rows, b) for b in boards}
    worst = report(rows, fitted)
    for b in boards:
        fitted[b]["worst_model_error"] = round(worst.get(b, 0.0), 4)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    data = {
        "about": "Instruction cost model of the fused strategy's budget (issue 12); written "
        "by benchmarks/calibrate_cost.py (make calibrate-cost), never by hand.",
        "calibrated_on": {
            "commit": commit or None,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "models": [r["model"] for r in rows],
        },
        "op_features": list(OP_FEATURES),
        "fused_features": list(FUSED_FEATURES),
        "boards": fitted,
    }
    Path(args.out).write_text(jsonio.dumps(data, indent=1) + "\n")
    print(f"\nwrote {args.out}; wall {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
