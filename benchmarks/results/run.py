"""Collect every section (each timed, each allowed to fail on its own), draw the figures,
write docs/results.json, docs/RESULTS.md and the README's headline block."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import bench_cost

from rip.boards import load_board
from rip.compiler import Options, analyse
from rip.core import jsonio
from rip.core.terms import Strategy

from . import cost, figures, graphs, layers, mlperf, models, pico, render, study
from .common import MCUNET, MODELS, REPO, exact_ratio, paper_tables

CYCLES = Path(__file__).with_name("paper-table3-cycles.json")
README_MARK = "<!-- results-{}: written by make bench (benchmarks/make_results.py) -->"
README_END = "<!-- /results-{} -->"
QUICK_NOTE = "bench-quick: MCUNet models only"


def machine() -> dict[str, Any]:
    cpu = "unknown CPU"
    mem = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "host": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def git(*args: str) -> str:
    r = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return r.stdout.strip()


GENERATED = ("docs/RESULTS.md", "docs/results.json", "docs/figures/", "README.md")


def dirty() -> bool:
    """Uncommitted changes other than the files this run writes."""
    lines = git("status", "--porcelain").splitlines()
    return any(not line[3:].startswith(GENERATED) for line in lines)


def section(meta: dict, key: str, fn, *args, skip: str | None = None) -> Any:
    """Run one section, recording its wall time and status; a failure is reported on the
    page (first line of the error), never hidden and never replaced by a number."""
    if skip:
        meta["sections"][key] = {"seconds": None, "status": "skipped", "note": skip}
        return None
    print(f"[results] {key} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        out = fn(*args)
        status, note = "ok", None
    except Exception as e:  # one section's failure must not lose the others
        traceback.print_exc()
        out, status, note = (
            None,
            "failed",
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
        )
    seconds = round(time.perf_counter() - t0, 1)
    meta["sections"][key] = {"seconds": seconds, "status": status, "note": note}
    print(f"[results] {key}: {status} in {seconds} s", file=sys.stderr, flush=True)
    return out


def layer_section(quick: bool, jobs: int, paper: dict) -> dict:
    out = {"table2": layers.table2(paper), "sweep": layers.sweep(10_000, jobs, paper)}
    out["fused_sweep"] = layers.fused_sweep(2_000 if quick else 5_000, jobs)
    return out


def study_section(quick: bool, paper: dict) -> dict:
    return {**study.collect(quick), "paper": paper["table6_summary"]}


def models_section(quick: bool, reference: dict, paper: dict) -> dict:
    d = models.collect(quick, reference, paper)
    t3 = paper["table3_mcunet_peak_activation_bytes"]
    d["paper_mean_reduction_pct"] = round(
        100
        * sum(1 - v["rip"] / v["base"] for k, v in t3.items() if not k.startswith("_"))
        / sum(1 for k in t3 if not k.startswith("_")),
        1,
    )
    return d


def cost_section(quick: bool, jobs: int, reference: dict) -> dict:
    names = list(MCUNET) if quick else list(reference)
    host = ("mcunet-in3",) if quick else cost.HOST_MODELS
    every = [str(s) for s in Strategy]
    # quick: the strategies a user compares with TFLite Micro (rip, and fused once it exists)
    measured = tuple(s for s in every if s in ("rip", "fused")) if quick else None
    return cost.collect(names, jobs, reference, every, 5 if quick else 20, host, measured)


def figure_section(data: dict, fig_dir: Path, link_prefix: str) -> dict:
    fig_dir.mkdir(parents=True, exist_ok=True)
    pico = load_board("pico")
    out: dict[str, Any] = {"lifecycle": []}
    for name in ("mcunet-in3", "person-det"):
        c = analyse(MODELS / "mcunet" / f"{name}.tflite", pico, Options(cache=False))
        overhead = {str(s): pico.fixed_overhead_bytes for s in c.variants}
        png = fig_dir / f"lifecycle-{name}.png"
        facts = figures.lifecycle(
            png,
            name,
            {str(s): p for s, p in c.problems.items()},
            {str(s): p for s, p in c.plans.items()},
            pico.sram_bytes,
            "Pico 1",
            overhead,
        )
        out["lifecycle"].append(
            {
                "model": name,
                "link": f"{link_prefix}/{png.name}",
                "strategies": [str(s) for s in c.plans],
                "overhead": overhead,
                "sram": pico.sram_bytes,
                "peak": facts or None,
            }
        )
    out.update(data_figures(data, fig_dir, link_prefix))
    return out


def data_figures(data: dict, fig_dir: Path, link_prefix: str) -> dict:
    """The figures drawn from the collected data alone (bars, scatter), so that
    ``--render-only`` can redraw them without measuring."""
    out: dict[str, Any] = {}
    m = data.get("models")
    if m:
        png = fig_dir / "arena-per-model.png"
        figures.arena_bars(png, m["rows"], m["strategies"], m["pico"], m["pico2"])
        out["bars"] = f"{link_prefix}/{png.name}"
    cst = data.get("cost")
    if m and cst:
        arena = {r["model"]: r for r in m["rows"] if "arena" in r}
        cycles = json.loads(CYCLES.read_text())["pico2_cycles_millions"]
        pts: dict[str, list] = {
            "rip (ours, qemu-m33 instructions)": [],
            "fused (ours, qemu-m33 instructions)": [],
            "TFLite Micro + CMSIS-NN (M33 instructions)": [],
            "paper RiP (Pico 2 cycles)": [],
        }
        for r in cst["rows"]:
            name, c = r["model"], r["boards"]["qemu-m33"]
            if name not in MCUNET or name not in arena:
                continue
            for s in ("rip", "fused"):
                n = c.get(s, {}).get("instructions")
                if n and s in arena[name]["arena"]:
                    pts[f"{s} (ours, qemu-m33 instructions)"].append(
                        (name, n / 1e6, arena[name]["arena"][s] / 1024)
                    )
            if c["tflm"] and arena[name]["tflm_arena"]:
                pts["TFLite Micro + CMSIS-NN (M33 instructions)"].append(
                    (name, c["tflm"] / 1e6, arena[name]["tflm_arena"] / 1024)
                )
            p = arena[name].get("paper")
            if p and name in cycles:
                pts["paper RiP (Pico 2 cycles)"].append(
                    (name, cycles[name]["rip"], p["rip"] / 1024)
                )
        png = fig_dir / "memory-vs-instructions.png"
        figures.memory_vs_instructions(png, pts)
        out["scatter"] = f"{link_prefix}/{png.name}"
    return out


def headline(data: dict) -> dict | None:
    m = data.get("models")
    row = next(
        (r for r in (m or {}).get("rows", []) if r["model"] == "mcunet-in3" and "arena" in r), None
    )
    if row is None:
        return None
    h: dict[str, Any] = {
        "tflm": row["tflm_arena"],
        "tinyengine": row["arena"].get("tinyengine"),
        "rip": row["arena"].get("rip"),
        "fused": row["arena"].get("fused"),
        "streamed": row.get("streamed"),
        "rip_vs_tinyengine": [row["ratio"]["rip"]["fraction"], row["ratio"]["rip"]["decimal"]],
    }
    crow = next(
        (r for r in (data.get("cost") or {}).get("rows", []) if r["model"] == "mcunet-in3"), None
    )
    if crow:
        c = crow["boards"]["qemu-m33"]
        h["tflm_instructions"] = c["tflm"]
        for s in ("rip", "fused"):
            if c.get(s, {}).get("instructions"):
                h[f"{s}_instructions"] = c[s]["instructions"]
                h[f"{s}_vs_tflm"] = c[s]["vs_tflm"]
    return h


def write_readme(readme: Path, blocks: dict[str, str]) -> list[str]:
    """Replace each of the README's generated blocks (between its ``results-NAME`` markers)
    with ``blocks[NAME]``; returns the names whose markers the README lacks."""
    src = readme.read_text()
    missing = []
    for name, text in blocks.items():
        begin, end = README_MARK.format(name), README_END.format(name)
        if begin not in src or end not in src:
            missing.append(name)
            continue
        head, rest = src.split(begin, 1)
        _, tail = rest.split(end, 1)
        src = f"{head}{begin}\n{text}\n{end}{tail}"
    readme.write_text(src)
    return missing


def collect(
    quick: bool,
    jobs: int,
    fig_dir: Path,
    link_prefix: str,
    command: str,
    data_file: str,
    data_link: str,
) -> dict:
    t0 = time.perf_counter()
    paper = paper_tables()
    reference = bench_cost.load_reference()
    meta: dict[str, Any] = {
        "command": command,
        "mode": "quick" if quick else "full",
        "generated_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": dirty(),
        "strategies": [str(s) for s in Strategy],
        "sections": {},
        "load_start": round(os.getloadavg()[0], 1),
        "data_file": data_file,
        "data_link": data_link,
    }
    data: dict[str, Any] = {"meta": meta}
    data["layers"] = section(meta, "layers", layer_section, quick, jobs, paper)
    data["study"] = section(meta, "study", study_section, quick, paper)
    data["models"] = section(meta, "models", models_section, quick, reference, paper)
    data["graphs"] = section(
        meta, "graphs", graphs.collect, paper, skip=QUICK_NOTE if quick else None
    )
    data["cost"] = section(meta, "cost", cost_section, quick, jobs, reference)
    data["pico"] = section(
        meta, "pico", pico.collect, jobs, reference, skip=QUICK_NOTE if quick else None
    )
    data["mlperf"] = section(
        meta, "mlperf", mlperf.collect, jobs, skip=QUICK_NOTE if quick else None
    )
    data["figures"] = section(meta, "figures", figure_section, data, fig_dir, link_prefix)
    data["headline"] = headline(data)
    meta["total_seconds"] = round(time.perf_counter() - t0, 1)
    meta["load_end"] = round(os.getloadavg()[0], 1)
    return data


def _alone(data: dict, key: str, fn, *args) -> None:
    """Section ``key`` measured alone into ``data`` (make_results.py --models, --graphs,
    --pico); its row of the section table says when and at which commit, apart from the
    full run."""
    meta = data["meta"]
    data[key] = section(meta, key, fn, *args)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = git("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if dirty() else "")
    meta["sections"][key]["note"] = (
        f"measured alone (make_results.py --{key}) on {when}, commit {commit}"
    )


def add_models(data: dict) -> None:
    """The models section measured alone, the headline recomputed from it."""
    _alone(data, "models", models_section, False, bench_cost.load_reference(), paper_tables())
    data["headline"] = headline(data)


def add_study(data: dict) -> None:
    """The study section (the shared models' planning study, and the models it refused)
    measured alone."""
    _alone(data, "study", study_section, False, paper_tables())


def add_graphs(data: dict) -> None:
    """The keras graphs section measured alone (its solve times and time limits want an
    otherwise idle machine)."""
    _alone(data, "graphs", graphs.collect, paper_tables())


def add_cost(data: dict, jobs: int) -> None:
    """The cost section measured alone (every kernel change moves it), the headline's
    instructions recomputed from it."""
    _alone(data, "cost", cost_section, False, jobs, bench_cost.load_reference())
    data["headline"] = headline(data)


def add_pico(data: dict, jobs: int) -> None:
    """The Pico timing section measured alone."""
    _alone(data, "pico", pico.collect, jobs, bench_cost.load_reference())


def add_mlperf(data: dict, jobs: int) -> None:
    """The MLPerf Tiny section measured alone."""
    _alone(data, "mlperf", mlperf.collect, jobs)


def write(data: dict, page: Path, data_path: Path, readme: Path | None, page_link: str) -> None:
    data_path.write_text(jsonio.dumps(data, indent=1) + "\n")
    page.write_text(render.render(data))
    if readme is not None:
        missing = write_readme(readme, render.readme_blocks(data, page_link))
        if missing:
            print(f"[results] {readme}: no markers for {', '.join(missing)}; those blocks "
                  "left as they were", file=sys.stderr)  # fmt: skip


__all__ = ["collect", "exact_ratio", "write"]
