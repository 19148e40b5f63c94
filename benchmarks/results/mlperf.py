"""The MLPerf Tiny models on a Pico 2 against the engines measured on real boards (issue 26):
rip's firmware on qemu-m33 (the default strategy, compiled as `rip-compile --board
qemu-m33 --run` compiles it), its instructions and its Pico 2 cycles from the timing model,
with the constant data resident in SRAM where it fits (`--weights auto`) and kept in flash
(`--weights flash`), beside the measured latencies of ../shared/reference/
mlperf-tiny-latency.json: X-CUBE-AI on an STM32U575 (Cortex-M33 at 160 MHz, MLPerf Tiny
v1.3) and TFLite Micro as Raspberry Pi ships it on an RP2350 at 150 MHz. Every figure the
page and bench-cost print is computed here; every run's checksum is checked against TFLite
Micro's."""

from __future__ import annotations

import json
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pico_cost

from rip.boards import load_board
from rip.compiler import Options, analyse, emit, reference
from rip.core.terms import WeightsIn
from rip.firmware.qemu_project import macs
from rip.timing.model import TimingModel

from .common import SHARED

LATENCY = SHARED / "reference" / "mlperf-tiny-latency.json"
BOARD = "qemu-m33"
XCUBE_HZ = 160e6  # the STM32U575's clock in the measured run
PICO_TFLM_HZ = 150e6  # the RP2350's in pico-tflmicro's


def references() -> dict[str, dict]:
    """The reference file's models that have a model file here, by name."""
    models = json.loads(LATENCY.read_text())["models"]
    return {name: m for name, m in models.items() if m.get("file")}


def measure(name: str, entry: dict) -> dict[str, Any]:
    """One model on qemu-m33 under the timing plugin, once per ``--weights`` choice."""
    path = SHARED / entry["file"].split("shared/", 1)[1]
    board = load_board(BOARD)
    timing = TimingModel.of(board)
    row: dict[str, Any] = {"model": name, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="mlperf-") as tmp:
        for weights in (WeightsIn.AUTO, WeightsIn.FLASH):
            compiled = analyse(path, board, Options(weights=weights))
            if "checksum" not in row:
                row["macs"] = macs(compiled.graph)
                row["checksum"] = reference(path, compiled.graph).checksum
            out = Path(tmp) / str(weights)
            res, est = pico_cost.timed_firmware(emit(compiled), board, row["checksum"], out, timing)
            staged = compiled.staged.get(compiled.strategy)
            window = est.window()
            row["runs"][str(weights)] = {
                "strategy": str(compiled.strategy),
                "instructions": res.instructions,
                "cycles": window.cycles,
                "stall_share": round(window.stall_share, 4),
                "resident_ops": len(staged.resident_ops) if staged else 0,
                "ops": len(compiled.variants[compiled.strategy].graph.operators),
                "checksum_ok": row["checksum"] is not None and res.checksum == row["checksum"],
            }
    return row


def derive(entries: dict[str, dict], measured: list[dict]) -> dict[str, Any]:
    """The table's rows: rip's figures beside the measured engines', and their ratios."""
    chip = TimingModel.of(load_board(BOARD)).chip
    rows = []
    for m in measured:
        e = entries[m["model"]]
        auto, flash = m["runs"]["auto"], m["runs"]["flash"]
        xcube = round(e["xcubeai_u575_160mhz_ms"] * XCUBE_HZ / 1e3)
        tflm_ms = e["pico_tflmicro_rp2350_150mhz_ms"]
        ms = 1e3 * auto["cycles"] / chip.clock_hz
        rows.append({
            "model": m["model"], "macs": m["macs"], "strategy": auto["strategy"],
            "instructions": auto["instructions"],
            "instructions_vs_xcube": round(auto["instructions"] / xcube, 3),
            "resident": f"{auto['resident_ops']}/{auto['ops']}",
            "pico2_cycles": auto["cycles"], "pico2_ms": round(ms, 2),
            "stall_pct": round(100 * auto["stall_share"], 1),
            "flash_cycles": flash["cycles"],
            "flash_stall_pct": round(100 * flash["stall_share"], 1),
            "xcube_cycles": xcube, "xcube_ms": e["xcubeai_u575_160mhz_ms"],
            "cycles_vs_xcube": round(auto["cycles"] / xcube, 3),
            "pico_tflm_ms": tflm_ms, "pico_tflm_cycles": round(tflm_ms * PICO_TFLM_HZ / 1e3),
            "speedup_vs_pico_tflm": round(tflm_ms / ms, 1),
            "checksums_ok": auto["checksum_ok"] and flash["checksum_ok"],
        })  # fmt: skip
    return {"rows": rows, "clock_mhz": chip.clock_hz / 1e6, "source": str(LATENCY.name),
            "xcube_mhz": XCUBE_HZ / 1e6, "xcube_cycles_per_ms": round(XCUBE_HZ / 1e3),
            "pico_tflm_mhz": PICO_TFLM_HZ / 1e6,
            "all_checksums_equal": all(r["checksums_ok"] for r in rows)}  # fmt: skip


def collect(jobs: int) -> dict[str, Any]:
    """Every MLPerf Tiny model of the reference file that is here, ``jobs`` at a time."""
    entries = references()
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(measure, name, e) for name, e in entries.items()]
        measured = [f.result() for f in futures]
    return derive(entries, measured)


HEAD = ["model", "MACs", "strategy", "rip instructions (qemu-m33)", "/ X-CUBE-AI cycles",
        "ops resident", "rip Pico 2 cycles", "rip Pico 2 ms", "flash stall",
        "weights in flash: cycles", "flash stall", "X-CUBE-AI cycles (U575, measured)",
        "X-CUBE-AI ms", "rip / X-CUBE-AI cycles", "pico-tflmicro ms (RP2350, measured)",
        "pico-tflmicro / rip"]  # fmt: skip


def cells(r: dict[str, Any]) -> list[str]:
    """One row's cells, every one a value of the row."""
    return [r["model"], f"{r['macs']:,}", r["strategy"], f"{r['instructions']:,}",
            f"{r['instructions_vs_xcube']:.3f}", r["resident"], f"{r['pico2_cycles']:,}",
            f"{r['pico2_ms']:.2f}", f"{r['stall_pct']:.1f}%", f"{r['flash_cycles']:,}",
            f"{r['flash_stall_pct']:.1f}%", f"{r['xcube_cycles']:,}", f"{r['xcube_ms']:g}",
            f"{r['cycles_vs_xcube']:.3f}", f"{r['pico_tflm_ms']:g}",
            f"{r['speedup_vs_pico_tflm']:g}x"]  # fmt: skip


def print_table(d: dict[str, Any]) -> None:
    """bench-cost's print of the section: the table and the checksum verdict."""
    print("MLPerf Tiny on the Pico 2 (rip: qemu-m33 instructions and timing-model cycles; "
          f"X-CUBE-AI and pico-tflmicro: measured, {d['source']}):")  # fmt: skip
    print("| " + " | ".join(HEAD) + " |")
    print("|---" * len(HEAD) + "|")
    for r in d["rows"]:
        print("| " + " | ".join(cells(r)) + " |")
    bad = [r["model"] for r in d["rows"] if not r["checksums_ok"]]
    print("checksums: " + ("all equal TFLite Micro's" if not bad else "MISMATCH " + ", ".join(bad)))
