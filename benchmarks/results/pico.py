"""Section 5, Pico estimates: the eleven MCUNet models timed as the Pico 1 (RP2040) and
Pico 2 (RP2350) by the timing model of rip.timing (bench_cost's pico_cost), rip against
TFLite Micro's CMSIS-NN calls, the share of cycles stalled on XIP cache misses, the ops
that lose most to flash for Person-Det and MCUNet-in3, and the paper's Table 3 measurements
beside them. Every figure the page prints is computed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bench_cost
import pico_cost

from rip.boards import load_board
from rip.timing.model import TimingModel

from .common import MCUNET

PAPER = Path(__file__).with_name("paper-table3-cycles.json")
PAPER_MODELS = ("person-det", "mcunet-in3")
TOP = 5  # ops listed per ranking


def pct(x: float) -> float:
    return round(100 * x, 1)


def chip_facts(board: str) -> dict[str, Any]:
    """The assumptions of the model for one emulated board's Pico (its board file)."""
    c = TimingModel.of(load_board(board)).chip
    return {
        "board": board,
        "label": c.timing_label,
        "chip": c.chip,
        "core": c.core,
        "clock_mhz": c.clock_hz / 1e6,
        "cache_kib": c.xip_cache_bytes // 1024,
        "ways": c.xip_cache_ways,
        "line": c.xip_line_bytes,
        "fill": c.xip_fill_bytes,
        "miss": c.xip_miss_cycles,
        "sequential_miss": c.xip_sequential_miss_cycles,
        "divider_call": c.divider_call_cycles,
        "divide": c.divide_cycles,
    }


def derive(raw: dict, paper: dict) -> dict[str, Any]:
    """The page's rows from pico_cost.collect's data."""
    rows = []
    by_model = {r["model"]: r for r in raw["rows"]}
    for name in MCUNET:
        r = by_model.get(name)
        if r is None:
            continue
        for board, cell in r["boards"].items():
            c = raw["cmsis"].get(name, {}).get("boards", {}).get(board)
            saved, share = pico_cost.staging_saved(cell)
            rows.append({
                "model": name, "chip": cell["chip"], "instructions": cell["instructions"],
                "cycles": cell["cycles"], "ms": round(cell["ms"], 1),
                "stall_pct": pct(cell["stall_share"]), "checksum_ok": cell["checksum_ok"],
                "staging_saved_cycles": saved,
                "staging_saved_pct": pct(share) if share is not None else None,
                "staged_bytes": (cell.get("staging") or {}).get("staged_bytes", 0),
                "cmsis_cycles": c["cycles"] if c else None,
                "cmsis_ms": round(c["ms"], 1) if c else None,
                "cmsis_stall_pct": pct(c["stall_share"]) if c else None,
                "vs_cmsis": round(cell["cycles"] / c["cycles"], 3) if c else None,
            })  # fmt: skip
    beside = []
    for name in PAPER_MODELS:
        r = by_model.get(name)
        if r is None:
            continue
        cells = {c["chip"]: c for c in r["boards"].values()}
        p2, p1 = cells.get("pico2"), cells.get("pico1")
        paper2 = paper["pico2_cycles_millions"].get(name, {}).get("rip")
        paper1 = paper["pico1_time_ms"].get(name, {}).get("rip")
        beside.append({
            "model": name,
            "pico2_mcycles": round(p2["cycles"] / 1e6, 1) if p2 else None,
            "paper_pico2_mcycles": paper2,
            "pico2_vs_paper": round(p2["cycles"] / 1e6 / paper2, 3) if p2 and paper2 else None,
            "pico1_ms": round(p1["ms"], 1) if p1 else None,
            "paper_pico1_ms": paper1,
            "pico1_vs_paper": round(p1["ms"] / paper1, 3) if p1 and paper1 else None,
        })  # fmt: skip
    rankings = []
    for name in PAPER_MODELS:
        r = by_model.get(name)
        for cell in (r or {}).get("boards", {}).values():
            ops = cell.get("ops") or []
            total = sum(o["stall"] for o in ops)
            top = sorted(ops, key=lambda o: -o["stall"])[:TOP]
            rankings.append({
                "model": name, "chip": cell["chip"], "total_stall": total,
                "ops": [{"op": o["op"], "kind": o["kind"] + (" (shift)" if o["part"] == "shift"
                                                            else ""),
                         "output": "x".join(map(str, o["output"])),
                         "weight_bytes": o["weight_bytes"], "cycles": o["cycles"],
                         "stall": o["stall"], "stall_pct": pct(o["stall_share"]),
                         "share_pct": pct(o["stall"] / total) if total else None}
                        for o in top],
            })  # fmt: skip
    return {
        "rows": rows,
        "beside_paper": beside,
        "rankings": rankings,
        "chips": [chip_facts(b) for b in pico_cost.BOARDS],
        "cmsis_note": raw["cmsis_note"],
        "errors": raw["errors"],
        "all_checksums_equal": all(r["checksum_ok"] for r in rows),
    }


def collect(jobs: int, reference: dict[str, dict]) -> dict[str, Any]:
    """Every MCUNet model the reference file lists, timed (CMSIS-NN when $CMSIS_NN_DIR and
    $CMSIS_CORE_DIR name the checkouts)."""
    paths = {m: bench_cost.model_path(reference[m]) for m in MCUNET if m in reference}
    raw = pico_cost.collect(paths, jobs)
    return derive(raw, json.loads(PAPER.read_text()))
