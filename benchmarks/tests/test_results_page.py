"""The results page generator (benchmarks/results/render.py) renders from a small synthetic
result set, and every number it prints is a value of that data: the renderer formats, it
never computes or invents. No timing is asserted."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks
from results import layers, render

NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
# Prose that names things by number (tables, theorems, boards, section headings, flags),
# removed before the numbers are checked.
STATIC = re.compile(
    r"(Tables?|Fig\.|Sec\.|Eq\.|Theorem|Corollary|Pico|issue|alignment|Figure) \d+(\.\d+)?"
    r"|^#+ \d+\.|-O\d|shift=0|\d-instruction|\d-core \d\.\d GHz|median of \d+|limit \d+ s"
    r"|\(1,024 B\)|1\.0005 mean|within 5%|The 33 keras",
    re.MULTILINE,
)


def ratio(num: int, den: int) -> dict:
    return {"fraction": f"{num}/{den}", "decimal": round(num / den, 5)}


def synthetic() -> dict:
    """Two models, one family, one graph, one sweep row; every value distinctive."""
    meta = {
        "command": "make bench-quick",
        "mode": "quick",
        "generated_utc": "2031-07-19 04:57 UTC",
        "total_seconds": 287.6,
        "machine": {
            "host": "box",
            "cpu": "CPU X",
            "cores": 2,
            "memory_gib": 23.4,
            "platform": "Linux",
            "python": "3.11.7",
        },
        "commit": "abc1234",
        "dirty": False,
        "load_start": 13.2,
        "load_end": 17.9,
        "strategies": ["dual", "tinyengine", "rip"],
        "data_file": "docs/results.json",
        "data_link": "results.json",
        "sections": {
            "layers": {"seconds": 45.8, "status": "ok", "note": None},
            "study": {"seconds": 2.3, "status": "ok", "note": None},
            "models": {"seconds": 10.7, "status": "ok", "note": None},
            "graphs": {"seconds": None, "status": "skipped", "note": "bench-quick"},
            "cost": {"seconds": 191.9, "status": "ok", "note": None},
            "pico": {"seconds": 913.3, "status": "ok", "note": None},
            "figures": {"seconds": 8.6, "status": "ok", "note": None},
        },
    }
    table2 = [
        {
            "c_in": 17,
            "c_out": 19,
            "k": 23,
            "hw": 29,
            "x_star": 31.4,
            "paper_x_star": 31.5,
            "paper_gm_eq1": 3701,
            "paper_truth": 3709,
            "gm_eq1": 3719,
            "corollary1": 3727,
            "theorem11": 3733,
            "simulated": 3739,
            "rip_gap": 3761,
            "rip_simulated": 3767,
        }
    ]
    sweep = {
        "layers": 9973,
        "seed": 0,
        "jobs": 2,
        "wall_seconds": 41.9,
        "restricted_layers": 1123,
        "restricted_pct": 11.26,
        "rows": [
            {
                "form": "theorem4",
                "label": "Theorem 4 (padded)",
                "configuration": "rip-padded-gather",
                "layers": 9967,
                "not_applicable": 6,
                "unsafe": 0,
                "tight": 9941,
                "loose": 26,
                "tight_pct": 99.74,
                "mean_overshoot": 87.65,
                "max_overshoot": 4441,
            }
        ],
        "paper": {
            "layers": 10000,
            "max_input_extent": 128,
            "unsafe": 0,
            "rip_padded_tight_pct": 100.0,
            "herringbone_generalized_tight_pct": 100.0,
            "rip_dense_tight_pct_workspace_taps": 99.1,
            "rip_dense_tight_pct_gather_first": 100.0,
            "rip_dense_mean_overshoot_when_loose": 91.85,
        },
    }
    fam = {
        "family": "MCUNet",
        "models": 11,
        "layers": 278,
        "equal": 269,
        "within_5pct": 277,
        "worst_ratio": 1.032,
        "mean_saving_pct": 21.5,
        "col_beats_row": 3,
    }
    study = {
        "families": [fam],
        "refused": {"bad-model": "operator SVDF at index 4"},
        "total": {**fam, "families": 1, "median_saving_pct": 19.8},
        "paper": {
            "layers": 84,
            "architectures": 25,
            "outside_gm_range": 43,
            "rip_equals_herringbone": 58,
            "within_5pct": 81,
            "mean_saving_vs_dual_pct": 24.8,
            "median_saving_pct": 25.0,
            "best_saving_pct": 50.0,
            "worst_ratio": 1.17,
        },
    }
    arena = {"dual": 340736, "tinyengine": 247808, "rip": 185856}
    model = {
        "model": "mcunet-in3",
        "mcunet": True,
        "tflm_arena": 503396,
        "strategies": ["dual", "tinyengine", "rip"],
        "scratch": 14168,
        "seconds": 0.42,
        "arena": arena,
        "optimal": {"dual": True, "tinyengine": False, "rip": True},
        "rip_firstfit": 278784,
        "ratio": {s: ratio(v, 247808) for s, v in arena.items()},
        "ratio_firstfit": ratio(278784, 247808),
        "ratio_tflm": {
            s: {"fraction": None, "decimal": round(v / 503396, 5)} for s, v in arena.items()
        },
        "fits": {
            "pico/dual": False,
            "pico/tinyengine": False,
            "pico/rip": True,
            "pico2/dual": True,
            "pico2/tinyengine": True,
            "pico2/rip": True,
        },
        "needed": {},
        "paper": {"base": 247808, "rip": 185856, "scratch": 18536, "ratio": ratio(3, 4)},
    }
    models = {
        "rows": [
            model,
            {
                "model": "kws-svdf",
                "mcunet": False,
                "tflm_arena": 6133,
                "error": "operator SVDF at index 4 is not supported",
            },
        ],
        "strategies": ["dual", "tinyengine", "rip"],
        "pico": {"sram": 262144, "overhead": 10012},
        "pico2": {"sram": 532480, "overhead": 10012},
        "fits_pico": {"dual": [], "tinyengine": [], "rip": ["mcunet-in3"]},
        "mcunet_fit_pico": {"dual": 0, "tinyengine": 0, "rip": 1},
        "mcunet_count": 1,
        "only_rip": ["mcunet-in3"],
        "only_fused": None,
        "mean_reduction_pct": {"dual": -37.5, "tinyengine": 0.0, "rip": 25.0},
        "paper_mean_reduction_pct": 19.7,
    }
    graph = {
        "name": "MobileNetV2",
        "ops": 65,
        "tensors": 66,
        "dual": {
            "seconds": 0.03,
            "peak": 1505280,
            "peak_kb": 1470.0,
            "optimal": True,
            "variables": 162,
            "constraints": 256,
            "binaries": 95,
            "inplace": 0,
            "shifts": 0,
        },
        "rip": {
            "seconds": 0.05,
            "peak": 1204224,
            "peak_kb": 1176.0,
            "optimal": True,
            "variables": 286,
            "constraints": 573,
            "binaries": 219,
            "inplace": 41,
            "shifts": 0,
            "inplace_pct": 63.1,
        },
        "ratio": ratio(4, 5),
        "compile_seconds": 0.84,
        "paper": {
            "ops": 64,
            "res": 10,
            "milp_vars": 6364,
            "milp_constraints": 8813,
            "compile_s_dual": 0.26,
            "compile_s_rip": 0.52,
            "peak_kb_dual": 1470.0,
            "peak_kb_rip": 1176.0,
            "ratio": "4/5",
            "inplace_pct": 49.2,
            "shift": 0,
        },
    }
    graphs = {
        "rows": [graph],
        "median_solve_rip": 0.05,
        "max_solve_rip": 0.05,
        "median_compile": 0.84,
        "max_compile": 0.84,
        "dual_equal_paper": 1,
        "rip_at_or_below_paper": 1,
        "with_paper_peaks": 1,
    }

    def run(n: int, tflm: int) -> dict:
        return {
            "instructions": n,
            "error": None,
            "per_mac": round(n / 81_800_000, 2),
            "vs_tflm": round(n / tflm, 3),
            "vs_dual": round(n / 346_300_000, 5),
        }

    cost = {
        "boards": ["qemu-m33", "qemu-armv6m"],
        "flags": {"qemu-m33": "-mcpu=cortex-m33 -O3", "qemu-armv6m": "-mcpu=cortex-m0plus -O3"},
        "measured": ["dual", "tinyengine", "rip"],
        "calibration": {
            "qemu-m33": {"instructions": 2000003, "ticks": 40001},
            "qemu-armv6m": {"instructions": 2000005, "ticks": 50001},
        },
        "rows": [
            {
                "model": "mcunet-in3",
                "macs": 81_800_000,
                "mismatches": [],
                "boards": {
                    "qemu-m33": {
                        "tflm": 394_000_050,
                        "tflm_per_mac": 4.82,
                        "dual": run(346_300_000, 394_000_050),
                        "tinyengine": run(346_250_150, 394_000_050),
                        "rip": run(346_253_900, 394_000_050),
                    },
                    "qemu-armv6m": {
                        "tflm": 1_523_000_040,
                        "tflm_per_mac": 18.62,
                        "dual": run(879_000_000, 1_523_000_040),
                        "tinyengine": {
                            "instructions": None,
                            "error": "build failed: x",
                            "per_mac": None,
                            "vs_tflm": None,
                            "vs_dual": None,
                        },
                        "rip": run(879_250_200, 1_523_000_040),
                    },
                },
            }
        ],
        "rip_vs_dual_mean": 0.99877,
        "rip_vs_dual_max": 1.00029,
        "rip_vs_dual_runs": 2,
        "all_checksums_equal": True,
        "mismatches": [],
        "host": [
            {
                "model": "mcunet-in3",
                "repeat": 5,
                "rip_ms": 301.27,
                "tflm_ms": 1207.93,
                "tflm_over_rip": 4.0094,
                "tinyengine_ms": 300.11,
                "rip_over_tinyengine": 1.00387,
                "rip_arena_bytes": 185856,
                "tinyengine_arena_bytes": 247808,
                "outputs_equal": True,
            }
        ],
    }
    figures = {
        "lifecycle": [
            {
                "model": "mcunet-in3",
                "link": "figures/lifecycle-mcunet-in3.png",
                "strategies": ["dual", "tinyengine", "rip"],
                "overhead": 24180,
                "sram": 262144,
                "peak": {
                    "op": 3,
                    "output_offset": 0,
                    "output_bytes": 185856,
                    "input_offset": 123904,
                    "input_bytes": 61952,
                    "gap": 123904,
                },
            }
        ],
        "bars": "figures/arena-per-model.png",
        "scatter": "figures/memory-vs-instructions.png",
    }
    headline = {
        "tflm": 503396,
        "tinyengine": 247808,
        "rip": 185856,
        "fused": None,
        "rip_vs_tinyengine": ["3/4", 0.75],
        "tflm_instructions": 394_000_050,
        "rip_instructions": 346_253_900,
        "rip_vs_tflm": 0.879,
    }
    return {
        "meta": meta,
        "layers": {"table2": table2, "sweep": sweep, "fused_sweep": None},
        "study": study,
        "models": models,
        "graphs": None,
        "cost": cost,
        "pico": pico_section(),
        "mlperf": mlperf_section(),
        "graphs_synthetic": graphs,
        "figures": figures,
        "headline": headline,
    }


def pico_section() -> dict:
    """The Pico timing model's section: one model on two chips, one ranking."""
    chip = {"board": "qemu-m33", "label": "pico2", "chip": "RP2350", "core": "m33",
            "clock_mhz": 151.0, "cache_kib": 17, "ways": 3, "line": 9, "fill": 11, "miss": 113,
            "sequential_miss": 49, "divider_call": 0, "divide": 13}  # fmt: skip
    pico1 = {**chip, "board": "qemu-armv6m", "label": "pico1", "chip": "RP2040",
             "core": "m0plus", "clock_mhz": 127.0, "sequential_miss": 0, "divider_call": 21,
             "divide": 0}  # fmt: skip
    row = {"model": "mcunet-in3", "chip": "pico2", "instructions": 200_000_113,
           "cycles": 335_000_127, "ms": 2233.3, "stall_pct": 17.9, "checksum_ok": True,
           "cmsis_cycles": 600_000_131, "cmsis_ms": 4000.1, "cmsis_stall_pct": 3.7,
           "vs_cmsis": 0.558}  # fmt: skip
    return {
        "rows": [row, {**row, "chip": "pico1", "cmsis_cycles": None, "cmsis_ms": None,
                       "cmsis_stall_pct": None, "vs_cmsis": None}],
        "beside_paper": [{"model": "mcunet-in3", "pico2_mcycles": 335.0,
                          "paper_pico2_mcycles": 380.8, "pico2_vs_paper": 0.88,
                          "pico1_ms": 7777.7, "paper_pico1_ms": 19388.2,
                          "pico1_vs_paper": 0.401}],
        "rankings": [{"model": "mcunet-in3", "chip": "pico2", "total_stall": 59_999_137,
                      "ops": [{"op": 139, "kind": "CONV_2D", "output": "1x7x7x160",
                               "weight_bytes": 55_297, "cycles": 9_000_149,
                               "stall": 5_000_151, "stall_pct": 55.6, "share_pct": 8.3}]}],
        "chips": [pico1, chip],
        "cmsis_note": None,
        "errors": [],
        "all_checksums_equal": True,
    }  # fmt: skip


def mlperf_section() -> dict:
    """The MLPerf Tiny section: one model, every figure distinct."""
    row = {
        "model": "mlperf-ad01_int8",
        "macs": 264_193,
        "strategy": "rip",
        "instructions": 399_451,
        "instructions_vs_xcube": 0.777,
        "resident": "10/10",
        "pico2_cycles": 512_797,
        "pico2_ms": 3.43,
        "stall_pct": 2.7,
        "flash_cycles": 4_438_849,
        "flash_stall_pct": 88.9,
        "xcube_cycles": 513_601,
        "xcube_ms": 3.22,
        "cycles_vs_xcube": 0.997,
        "pico_tflm_ms": 58.96,
        "pico_tflm_cycles": 8_844_001,
        "speedup_vs_pico_tflm": 17.3,
        "checksums_ok": True,
    }
    return {"rows": [row], "clock_mhz": 151.0, "source": "mlperf-tiny-latency.json",
            "xcube_mhz": 161.0, "xcube_cycles_per_ms": 161_000, "pico_tflm_mhz": 149.0,
            "all_checksums_equal": True}  # fmt: skip


def accepted(data: object) -> set[str]:
    """Every way the renderer may print a value of ``data``."""
    out: set[str] = set()

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, bool) or x is None:
            return
        elif isinstance(x, (int, float)):
            x = abs(x)  # a sign is not part of the token
            out.update({f"{x:,}", f"{x}", f"{x:g}"})
            out.update(f"{x:,.{d}f}" for d in range(6))
            out.update(f"{x:.{d}f}" for d in range(6))
        elif isinstance(x, str):
            out.update(NUMBER.findall(x))

    walk(data)
    return out


def numbers(page: str) -> list[str]:
    return NUMBER.findall(STATIC.sub(" ", page))


@pytest.fixture(scope="module")
def data() -> dict:
    d = synthetic()
    del d["graphs_synthetic"]  # section 4 is skipped in this set (as bench-quick skips it)
    return d


def test_renders_every_section(data):
    page = render.render(data)
    for heading in (
        "# Results",
        "## Headline",
        "## 1. Per layer",
        "### Table 2 reproduced",
        "## 2. Layer study",
        "## 3. Models",
        "## 4. Graph level",
        "## 5. Cost",
        "### qemu-armv6m",
        "### Host inference time",
        "### Estimated Pico 1 and Pico 2 time (timing model)",
        "### MLPerf Tiny on the Pico 2 beside the engines measured on boards",
        "## 6. Figures",
    ):
        assert heading in page
    assert "185,856" in page and "3/4" in page
    assert "![mcunet-in3 lifecycle](figures/lifecycle-mcunet-in3.png)" in page


def test_every_number_is_a_value_of_the_data(data):
    page = render.render(data)
    ok = accepted(data)
    stray = [n for n in numbers(page) if n not in ok]
    assert stray == []


def test_a_number_missing_from_the_data_is_caught(data):
    """The check above can fail: a value printed but absent from the data is reported."""
    page = render.render(data) + "\nrip saves 77,777 B more than claimed.\n"
    assert "77,777" in [n for n in numbers(page) if n not in accepted(data)]


def test_changing_a_value_changes_the_page(data):
    changed = copy.deepcopy(data)
    changed["models"]["rows"][0]["arena"]["rip"] = 185_860
    assert "185,860" in render.render(changed)


def test_what_was_not_measured_says_so(data):
    page = render.render(data)
    graphs = page.split("## 4. Graph level")[1].split("## 5.")[0]
    assert "not measured in this run" in graphs and "bench-quick" in graphs
    # no fused strategy in the data: its columns (fused, and fused with the input streamed)
    # and its headline figure are absent, not zero
    assert "`fused` not measured in this run" in page
    models = page.split("## 3. Models")[1].split("## 4.")[0]
    row = next(line for line in models.splitlines() if line.startswith("| `mcunet-in3`"))
    assert row.count(render.NM) == 2
    fused_sweep = page.split("fused-chain sweep")[1].split("## 2.")[0]
    assert "not measured in this run" in fused_sweep


def test_a_fused_strategy_gets_its_numbers(data):
    with_fused = copy.deepcopy(data)
    with_fused["meta"]["strategies"].append("fused")
    row = with_fused["models"]["rows"][0]
    row["strategies"].append("fused")
    row["arena"]["fused"] = 101_377
    row["optimal"]["fused"] = True
    row["fits"].update({"pico/fused": True, "pico2/fused": True})
    with_fused["headline"]["fused"] = 101_377
    page = render.render(with_fused)
    assert "`fused` 101,377 B" in page
    assert [n for n in numbers(page) if n not in accepted(with_fused)] == []


def test_graph_level_table(data):
    with_graphs = synthetic()
    with_graphs["graphs"] = with_graphs.pop("graphs_synthetic")
    with_graphs["meta"]["sections"]["graphs"] = {"seconds": 12.5, "status": "ok", "note": None}
    page = render.render(with_graphs)
    assert "| MobileNetV2 | 65 (64) |" in page
    assert [n for n in numbers(page) if n not in accepted(with_graphs)] == []


def test_lifecycle_figure_marks_the_rip_output_left_of_its_input(tmp_path):
    """The Fig. 1 drawing picks the rip op whose output starts left of the input it
    overwrites (none reaches the peak in this toy), and reports both in bytes."""
    from results import figures

    from rip.allocator.planning.placement import Pair, Plan, Problem
    from rip.frontend.liveness import Buffer

    bufs = (Buffer(0, 400, 0, 1), Buffer(1, 600, 1, 2), Buffer(2, 200, 2, 3))
    pair = Pair(1, 0, 1, 200)
    problems = {"dual": Problem(bufs), "rip": Problem(bufs, (pair,))}
    plans = {
        "dual": Plan(offsets={0: 0, 1: 400, 2: 0}, aliased=(), shifts=(), peak=1000, placer="x"),
        "rip": Plan(
            offsets={0: 200, 1: 0, 2: 600}, aliased=(pair,), shifts=(), peak=800, placer="x"
        ),
    }
    png = tmp_path / "f.png"
    facts = figures.lifecycle(png, "toy", problems, plans, 1024, "board", {"dual": 100, "rip": 60})
    assert png.stat().st_size > 0
    assert facts == {"op": 1, "output_offset": 0, "output_bytes": 600, "input_offset": 200,
                     "input_bytes": 400, "gap": 200}  # fmt: skip


def test_the_fused_chain_sweep_renders_from_a_real_run(data):
    """A small real fused-chain sweep (issue 12): its verdict table is on the page, and every
    number printed is one of the run's."""
    with_sweep = copy.deepcopy(data)
    with_sweep["layers"]["fused_sweep"] = layers.fused_sweep(24, 1)
    page = render.render(with_sweep)
    section = page.split("fused-chain sweep")[1].split("## 2.")[0]
    assert "| exact gap (fused_gap) | 24 | 0 |" in section
    assert [n for n in numbers(page) if n not in accepted(with_sweep)] == []
