"""Section 4, graph level (the paper's Table 7): the 33 keras.applications graphs. Per graph:
ops, tensors, the MILP's size and solve time for dual and rip (the driver's problems,
``rip.compiler.prepare``'s graph in the paper's accounting, the kernels' scratch outside
the arena, solved by bench_alloc's solve: our formulation, no shortcut so the model is
always built), the end-to-end ``rip-compile``
wall time in a fresh interpreter (bench_compile's command), peaks, ratio, in-place share
and shifts, each beside the paper's figure."""

from __future__ import annotations

from typing import Any

import bench_alloc
import bench_compile

from rip.allocator.planning.requirements import requirements
from rip.allocator.planning.strategies import variant
from rip.boards import load_board
from rip.compiler import Options, prepare
from rip.core.terms import Strategy

from .common import KERAS_FILES, MODELS, exact_ratio

COLUMNS = (
    "ops",
    "res",
    "milp_vars",
    "milp_constraints",
    "compile_s_dual",
    "compile_s_rip",
    "peak_kb_dual",
    "peak_kb_rip",
    "ratio",
    "inplace_pct",
    "shift",
)


def measure(name: str, paper_row: list | None, time_limit: float) -> dict[str, Any]:
    path = MODELS / "keras" / f"{KERAS_FILES[name]}.graph.tflite"
    strategies = (Strategy.DUAL, Strategy.RIP)
    p = prepare(path, load_board("host"), Options(strategies=strategies))
    # Table 7's accounting: activations alone, the kernels' scratch outside (rip's own
    # total, scratch in the arena, is the models section's)
    req = requirements(p.graph, scratch_in_arena=False)
    problems = {s: variant(s, p.graph, req, p.planning).problem for s in strategies}
    row: dict[str, Any] = {
        "name": name,
        "ops": len(p.graph.operators),
        "tensors": len(p.req.lifetimes),
    }
    for s in strategies:
        seconds, plan = bench_alloc.solve_plan(problems[s], False, time_limit)
        row[str(s)] = {
            "seconds": round(seconds, 2),
            "peak": plan.peak,
            "peak_kb": round(plan.peak / 1024, 1),
            "optimal": plan.optimal,
            "variables": plan.stats.get("variables"),
            "constraints": plan.stats.get("constraints"),
            "binaries": plan.stats.get("binaries"),
            "inplace": len(plan.aliased),
            "shifts": len(plan.shifts),
        }
    row["rip"]["inplace_pct"] = round(100 * row["rip"]["inplace"] / row["ops"], 1)
    row["ratio"] = exact_ratio(row["rip"]["peak"], row["dual"]["peak"])
    compile_seconds, _ = bench_compile.command(bench_compile.NEW, path)
    row["compile_seconds"] = round(compile_seconds, 2)
    if paper_row is not None:
        row["paper"] = dict(zip(COLUMNS, paper_row, strict=True))
    return row


def collect(paper: dict, time_limit: float = 300.0) -> dict[str, Any]:
    table = paper["table7_keras_graph_level"]
    rows = [measure(n, table.get(n), time_limit) for n in KERAS_FILES]
    solve = sorted(r["rip"]["seconds"] for r in rows)
    compile_ = sorted(r["compile_seconds"] for r in rows)
    return {
        "rows": rows,
        "median_solve_rip": solve[len(solve) // 2],
        "max_solve_rip": solve[-1],
        "median_compile": compile_[len(compile_) // 2],
        "max_compile": compile_[-1],
        "dual_equal_paper": sum(
            1 for r in rows if r.get("paper", {}).get("peak_kb_dual") == r["dual"]["peak_kb"]
        ),
        "rip_at_or_below_paper": sum(
            1
            for r in rows
            if r.get("paper", {}).get("peak_kb_rip") is not None
            and r["rip"]["peak_kb"] <= r["paper"]["peak_kb_rip"]
        ),
        "with_paper_peaks": sum(
            1 for r in rows if r.get("paper", {}).get("peak_kb_rip") is not None
        ),
    }
