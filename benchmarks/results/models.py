"""Section 3, models (the paper's Table 3 and more): every shared model with weights
planned for the Pico 1 under every strategy ``rip.core.terms.Strategy`` has at run time (the
compiler's own ``analyse``: read, rewrite, requirements, variants, plan), rip's first-fit
plan of the same variant beside its MILP plan, TFLite Micro's arena from the reference
file, the largest kernel scratch (inside the arena), and whether each plan fits a Pico 1 and
a Pico 2 (boards/*.toml: arena + SDK + stack)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rip import compiler
from rip.allocator.planning.options import DEFAULT_TIME_LIMIT
from rip.boards import load_board
from rip.compiler import Options, analyse
from rip.core.errors import RipError
from rip.core.terms import Placer, Strategy

from .common import MCUNET, MODELS, exact_ratio, one_line

BASELINE = "tinyengine"
BOARDS = ("pico", "pico2")


def model_files(quick: bool, reference: dict[str, dict]) -> list[Path]:
    """The MCUNet eleven, then (full run) the other shared models with weights."""
    files = [MODELS / "mcunet" / f"{m}.tflite" for m in MCUNET]
    if quick:
        return files
    return (
        files
        + sorted((MODELS / "tinyml").glob("*.tflite"))
        + [MODELS / "keras" / "MobileNetV2.tflite", MODELS / "keras" / "MobileNetV3Small.tflite"]
    )


def measure(path: Path, reference: dict[str, dict], paper: dict, time_limit: float) -> dict:
    name = path.name.removesuffix(".tflite")
    ref = reference.get(name, {})
    row: dict[str, Any] = {
        "model": name,
        "mcunet": name in MCUNET,
        "tflm_arena": ref.get("tflm_arena_used_bytes"),
    }
    pico = load_board("pico")
    try:
        c = analyse(path, pico, Options(placer=Placer.MILP, time_limit=time_limit, cache=False))
    except RipError as e:
        row["error"] = one_line(e, path)
        return row
    row["strategies"] = [str(s) for s in c.plans]
    row["scratch"] = c.req.scratch_bytes
    row["seconds"] = round(c.seconds, 2)
    row["arena"] = {str(s): p.peak for s, p in c.plans.items()}
    row["optimal"] = {str(s): p.optimal for s, p in c.plans.items()}
    first_fit = replace(c.planning, placer=Placer.FIRSTFIT)
    rip = {Strategy.RIP: c.variants[Strategy.RIP]}
    row["rip_firstfit"] = compiler.plan(path, rip, first_fit, cache=False)[Strategy.RIP].peak
    base = row["arena"].get(BASELINE)
    row["ratio"] = {s: exact_ratio(v, base) for s, v in row["arena"].items()}
    row["ratio_firstfit"] = exact_ratio(row["rip_firstfit"], base)
    row["ratio_tflm"] = {s: exact_ratio(v, row["tflm_arena"]) for s, v in row["arena"].items()}
    row["fits"] = {}
    row["needed"] = {}
    for b in BOARDS:
        board = load_board(b)
        for s, plan in c.plans.items():
            needed, available = board.budget(plan.peak)
            row["needed"][f"{b}/{s}"] = needed
            row["fits"][f"{b}/{s}"] = needed <= available
    row["streamed"] = streamed_arena(path, pico, time_limit)
    if isinstance(row["streamed"], int):
        row["ratio_streamed"] = exact_ratio(row["streamed"], base)
    p = paper["table3_mcunet_peak_activation_bytes"].get(name)
    if p:
        row["paper"] = {
            "base": p["base"],
            "rip": p["rip"],
            "scratch": p["buffer"],
            "ratio": exact_ratio(p["rip"], p["base"]),
        }
    return row


def streamed_arena(path: Path, board: Any, time_limit: float) -> int | str:
    """``fused`` with the input streamed in (``--stream-input``): the arena, or why the
    model's input cannot stream (one line)."""
    opts = Options(strategy=Strategy.FUSED, strategies=(Strategy.FUSED,), stream_input=True,
                   placer=Placer.MILP, time_limit=time_limit, cache=False)  # fmt: skip
    try:
        return analyse(path, board, opts).plans[Strategy.FUSED].peak
    except RipError as e:
        return one_line(e, path)


def collect(
    quick: bool, reference: dict[str, dict], paper: dict, time_limit: float = DEFAULT_TIME_LIMIT
) -> dict:
    rows = [measure(p, reference, paper, time_limit) for p in model_files(quick, reference)]
    strategies = [str(s) for s in Strategy]
    ok = [r for r in rows if "arena" in r]
    fits_pico = {s: [r["model"] for r in ok if r["fits"].get(f"pico/{s}")] for s in strategies}

    def only(s: str, without: tuple[str, ...]) -> list[str] | None:
        if s not in strategies:
            return None
        return [m for m in fits_pico[s] if not any(m in fits_pico[w] for w in without)]

    mcunet = [r for r in ok if r["mcunet"]]
    return {
        "rows": rows,
        "strategies": strategies,
        "pico": {
            "sram": load_board("pico").sram_bytes,
            "overhead": load_board("pico").fixed_overhead_bytes,
        },
        "pico2": {
            "sram": load_board("pico2").sram_bytes,
            "overhead": load_board("pico2").fixed_overhead_bytes,
        },
        "fits_pico": fits_pico,
        "mcunet_fit_pico": {s: sum(r["fits"][f"pico/{s}"] for r in mcunet) for s in strategies},
        "mcunet_count": len(mcunet),
        "only_rip": only("rip", ("dual", "tinyengine")),
        "only_fused": only("fused", ("dual", "tinyengine", "rip")),
        "mean_reduction_pct": {
            s: round(
                100 * sum(1 - r["arena"][s] / r["arena"][BASELINE] for r in mcunet) / len(mcunet), 1
            )
            for s in strategies
            if mcunet
        },
        "mean_reduction_pct_streamed": round(
            100 * sum(1 - r["streamed"] / r["arena"][BASELINE] for r in mcunet) / len(mcunet), 1
        )
        if mcunet and all(isinstance(r.get("streamed"), int) for r in mcunet)
        else None,
    }
