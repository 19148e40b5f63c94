"""The compile report: model summary, per-op in-place table and memory plans, as data
(JSON-ready) and as text."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from rip.allocator.planning.cache import PlanCache
from rip.allocator.planning.parallel import plan_strategies
from rip.allocator.planning.placement import Plan
from rip.allocator.planning.requirements import Requirements, requirements
from rip.allocator.planning.strategies import STRATEGIES
from rip.boards import Board
from rip.frontend.ir import Graph
from rip.frontend.liveness import live_bytes
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

BASELINE = "tinyengine"


@dataclass(frozen=True)
class Compiled:
    """Everything the later stages need: the source and folded graphs, requirements, and
    the replay-checked plan of every strategy."""

    source: Graph
    graph: Graph
    req: Requirements
    plans: dict[str, Plan]
    seconds: float


def analyse(
    path: Path,
    board: Board,
    placer: str = "milp",
    time_limit: float = 60.0,
    strategies: tuple[str, ...] = STRATEGIES,
    progress: bool = False,
    cache: bool = False,
) -> Compiled:
    """Read, fold and plan ``path``; ``cache``: reuse and store plans (allocator/planning/
    cache.py), every reused plan replayed first."""
    t0 = time.perf_counter()
    source = read_model(path)
    graph = rewrite(source)
    req = requirements(graph)
    store = PlanCache(path.read_bytes()) if cache else None
    plans = plan_strategies(
        graph, req, strategies, placer, board.alignment, time_limit, progress, store
    )
    return Compiled(source, graph, req, plans, time.perf_counter() - t0)


def _shape(graph: Graph, tid: int) -> str:
    return "x".join(str(d) for d in graph.tensors[tid].shape) or "scalar"


def op_table(graph: Graph, req: Requirements, plan: Plan | None = None) -> list[dict[str, Any]]:
    """One row per op: shapes, bytes, its best in-place candidate (and whether the plan
    used it), scratch."""
    used = {p.op: p for p in plan.aliased} if plan else {}
    shifted = {p.op for p in plan.shifts} if plan else set()
    rows = []
    for op, r in zip(graph.operators, req.ops, strict=True):
        acts = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        best = min(r.candidates, key=lambda c: c.workspace, default=None)
        rows.append(
            {
                "index": r.index,
                "source_index": op.source_index,
                "op": op.kind,
                "inputs": [_shape(graph, t) for t in acts],
                "output": _shape(graph, op.outputs[0]),
                "input_bytes": sum(graph.tensors[t].nbytes for t in acts),
                "output_bytes": graph.tensors[op.outputs[0]].nbytes,
                "inplace_input": best.input if best else None,
                "gap": best.gap if best else None,
                "workspace": best.workspace if best else None,
                "order": best.order if best else None,
                "scheme": best.scheme if best else None,
                "not_inplace_because": r.reason or None,
                "planned_inplace": r.index in used,
                "planned_shift": r.index in shifted,
                "scratch_bytes": r.scratch_bytes,
            }
        )
    return rows


def ratio(value: int, base: int) -> str:
    """value / base as an exact fraction when it is one with a small denominator."""
    if base <= 0:
        return "-"
    f = Fraction(value, base)
    return f"{f.numerator}/{f.denominator}" if f.denominator <= 64 else f"{value / base:.3f}"


def plan_summary(c: Compiled, strategy: str, board: Board) -> dict[str, Any]:
    plan = c.plans[strategy]
    needed, available = board.budget(plan.peak, c.req.scratch_bytes)
    base = c.plans.get(BASELINE)
    n_tensors = len(plan.offsets)
    return {
        "strategy": strategy,
        "placer": plan.placer,
        "arena_bytes": plan.peak,
        "lower_bound_bytes": plan.lower_bound,
        "optimal": plan.optimal,
        "ratio_to_baseline": ratio(plan.peak, base.peak) if base else None,
        "inplace_tensors": len(plan.aliased),
        "inplace_share_pct": round(100 * len(plan.aliased) / n_tensors, 1) if n_tensors else 0.0,
        "shifts": [{"op": p.op, "tensor": p.input, "bytes": p.gap} for p in plan.shifts],
        "scratch_bytes": c.req.scratch_bytes,
        "needed_sram_bytes": needed,
        "board_sram_bytes": available,
        "fits": available == 0 or needed <= available,
        "headroom_bytes": (available - needed) if available else None,
        "solve_seconds": round(plan.solve_seconds, 3),
        "milp_size": {
            k: plan.stats[k] for k in ("variables", "constraints", "binaries") if k in plan.stats
        },
        "notes": list(plan.notes),
    }


def build_report(c: Compiled, path: Path, board: Board, strategy: str) -> dict[str, Any]:
    g = c.graph
    chosen = plan_summary(c, strategy, board)
    return {
        "model": g.name,
        "file": str(path),
        "board": board.name,
        "has_weights": g.has_weights,
        "inputs": [
            {"tensor": t, "shape": list(g.tensors[t].shape), "dtype": g.tensors[t].dtype}
            for t in g.inputs
        ],
        "outputs": [
            {"tensor": t, "shape": list(g.tensors[t].shape), "dtype": g.tensors[t].dtype}
            for t in g.outputs
        ],
        "ops_in_file": len(c.source.operators),
        "ops": len(g.operators),
        "stripped": [{"op": k, "float_tensor": f, "int8_tensor": q} for k, f, q in g.interface],
        "notes": list(g.notes),
        "liveness_bound_bytes": max(live_bytes(g), default=0),
        "inplace_candidates": sum(1 for r in c.req.ops if r.candidates),
        **chosen,
        "strategies": {s: plan_summary(c, s, board) for s in c.plans},
        "op_table": op_table(g, c.req, c.plans[strategy]),
        "seconds": round(c.seconds, 3),
    }


def format_report(rep: dict[str, Any]) -> str:
    lines = [
        f"model {rep['model']}  ({rep['file']})  board {rep['board']}",
        "  inputs:  "
        + ", ".join(f"{'x'.join(map(str, i['shape']))} {i['dtype']}" for i in rep["inputs"]),
        "  outputs: "
        + ", ".join(f"{'x'.join(map(str, o['shape']))} {o['dtype']}" for o in rep["outputs"]),
        f"  ops: {rep['ops_in_file']} in file, {rep['ops']} after folding; weights: "
        f"{'yes' if rep['has_weights'] else 'no (graph only)'}",
    ]
    for s in rep["stripped"]:
        lines.append(
            f"  stripped {s['op']}: float tensor {s['float_tensor']} -> int8 tensor "
            f"{s['int8_tensor']} (the compiled model runs int8 inside)"
        )
    lines += [f"  note: {n}" for n in rep["notes"]]
    header = (
        f"{'#':>4} {'op':<22} {'input':<22} {'output':<16} {'in B':>9} {'out B':>9} "
        f"{'in-place':>9} {'gap':>7} {'order':<8} {'scratch':>7}"
    )
    lines += ["", header, "-" * len(header)]
    for r in rep["op_table"]:
        if r["inplace_input"] is None:
            inplace = "-"
        else:
            inplace = f"t{r['inplace_input']}" + ("*" if r["planned_inplace"] else "")
        gap = "-" if r["gap"] is None else str(r["gap"])
        lines.append(
            f"{r['index']:>4} {r['op'][:22]:<22} {' + '.join(r['inputs'])[:22]:<22} "
            f"{r['output'][:16]:<16} {r['input_bytes']:>9,} {r['output_bytes']:>9,} "
            f"{inplace:>9} {gap:>7} {(r['order'] or '-'):<8} {r['scratch_bytes']:>7,}"
        )
    lines.append(f"  (* = overwritten in place under {rep['strategy']})")
    sram = f"{rep['board_sram_bytes']:,} B SRAM" if rep["board_sram_bytes"] else "no SRAM limit"
    lines += ["", f"memory plans ({rep['board']}: {sram}; ratio against {BASELINE})", ""]
    head = (
        f"{'strategy':<11} {'placer':<9} {'arena B':>10} {'ratio':>6} {'bound B':>10} "
        f"{'optimal':>8} {'in-place':>9} {'shifts':>6} {'needs B':>10} {'fits':>5} "
        f"{'solve s':>8} {'vars':>7} {'constr':>7}"
    )
    lines += [head, "-" * len(head)]
    for s in rep["strategies"].values():
        size = s["milp_size"]
        lines.append(
            f"{s['strategy']:<11} {s['placer']:<9} {s['arena_bytes']:>10,} "
            f"{s['ratio_to_baseline'] or '-':>6} {s['lower_bound_bytes']:>10,} "
            f"{'-' if s['optimal'] is None else 'yes' if s['optimal'] else 'no':>8} "
            f"{s['inplace_share_pct']:>8}% {len(s['shifts']):>6} {s['needed_sram_bytes']:>10,} "
            f"{'yes' if s['fits'] else 'NO':>5} {s['solve_seconds']:>8} "
            f"{size.get('variables', '-'):>7} {size.get('constraints', '-'):>7}"
        )
        lines += [f"    {s['strategy']}: {n}" for n in s["notes"]]
    lines += [
        "",
        f"selected: {rep['strategy']} / {rep['placer']}: arena {rep['arena_bytes']:,} B "
        f"+ scratch {rep['scratch_bytes']:,} B + board overhead = {rep['needed_sram_bytes']:,} B",
    ]
    if rep["board_sram_bytes"]:
        verdict = "fits" if rep["fits"] else "does NOT fit"
        lines.append(f"{verdict} {rep['board']}: headroom {rep['headroom_bytes']:,} B")
    for sh in rep["shifts"]:
        lines.append(
            f"right shift before op {sh['op']}: tensor t{sh['tensor']} moves {sh['bytes']:,} B"
        )
    lines.append(
        f"liveness bound (dual buffering): {rep['liveness_bound_bytes']:,} B; "
        f"in-place candidates: {rep['inplace_candidates']} of {rep['ops']} ops"
    )
    return "\n".join(lines)
