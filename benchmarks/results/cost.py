"""Section 5, cost: executed instructions of one inference on the emulated boards under
every strategy (bench_cost: QEMU, -icount shift=0, every checksum against TFLite Micro's),
against TFLite Micro + CMSIS-NN from the reference file on the same core, instructions per
MAC; and the host inference time of the generated C against TFLite Micro's interpreter
(bench_host)."""

from __future__ import annotations

from typing import Any

import bench_cost
import bench_host

from rip.boards import load_board

from .common import MODELS

HOST_MODELS = ("mcunet-in3", "person-det")
TFLM_KEY = {
    "qemu-m33": "tflm_cmsis_nn_instructions",
    "qemu-armv6m": "tflm_cmsis_nn_instructions_armv6m",
}


def derive(row: dict, ref: dict, strategies: list[str]) -> dict[str, Any]:
    """The page's figures of one bench_cost row: per board, per strategy, instructions,
    per MAC, against TFLite Micro + CMSIS-NN and against dual."""
    out: dict[str, Any] = {
        "model": row["model"],
        "macs": row["macs"],
        "mismatches": row["mismatches"],
        "boards": {},
    }
    for board in bench_cost.BOARDS:
        tflm = ref.get(TFLM_KEY[board])
        cells: dict[str, Any] = {
            "tflm": tflm,
            "tflm_per_mac": round(tflm / row["macs"], 2) if tflm and row["macs"] else None,
        }
        dual = row["runs"].get(f"{board}/dual", {}).get("instructions")
        for s in strategies:
            run = row["runs"].get(f"{board}/{s}")
            if run is None:
                continue
            n = run.get("instructions")
            cells[s] = {
                "instructions": n,
                "error": run.get("error"),
                "per_mac": round(n / row["macs"], 2) if n and row["macs"] else None,
                "vs_tflm": round(n / tflm, 3) if n and tflm else None,
                "vs_dual": round(n / dual, 5) if n and dual else None,
            }
        out["boards"][board] = cells
    return out


def collect(
    models: list[str],
    jobs: int,
    reference: dict[str, dict],
    strategies: list[str],
    host_repeat: int,
    host_models: tuple[str, ...] = HOST_MODELS,
    measured: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Every model of ``models`` on both emulated boards under ``measured`` strategies
    (default: all), then the host timing of ``host_models``."""
    data = bench_cost.collect(models, jobs, None, reference, bench_cost.BOARDS, measured)
    rows = [derive(r, reference.get(r["model"], {}), strategies) for r in data["rows"]]
    ratios = [
        c["rip"]["vs_dual"]
        for r in rows
        for c in r["boards"].values()
        if c.get("rip", {}).get("vs_dual") is not None
    ]
    host = [bench_host.measure(MODELS / "mcunet" / f"{m}.tflite", host_repeat) for m in host_models]
    return {
        "boards": list(bench_cost.BOARDS),
        "flags": {b: " ".join(load_board(b).cflags) for b in bench_cost.BOARDS},
        "measured": list(measured) if measured else strategies,
        "calibration": {
            b: {"instructions": i, "ticks": t} for b, (i, t) in data["calibration"].items()
        },
        "rows": rows,
        "rip_vs_dual_mean": round(sum(ratios) / len(ratios), 5) if ratios else None,
        "rip_vs_dual_max": round(max(ratios), 5) if ratios else None,
        "rip_vs_dual_runs": len(ratios),
        "all_checksums_equal": not any(r["mismatches"] for r in rows),
        "mismatches": [f"{r['model']} {m}" for r in rows for m in r["mismatches"]],
        "host": host,
    }
