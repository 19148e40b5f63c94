"""Section 6, the figures (matplotlib, PNG): the paper's Fig. 1 lifecycle plot drawn from a
model's Problems and Plans, the arena bar chart against the Picos, and the memory against
instructions scatter. Each function draws from collected data (or from plans) and returns
the facts it labelled, so the page can quote them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle
from matplotlib.ticker import ScalarFormatter

from rip.allocator.planning.placement import Pair, Plan, Problem

DPI = 110
KIB = 1024
COLORS = {
    "tflm": "#7f7f7f",
    "dual": "#9ecae1",
    "tinyengine": "#4292c6",
    "rip": "#d62728",
    "fused": "#2ca02c",
}


def peak_pair(problem: Problem, plan: Plan) -> Pair | None:
    """The in-place pair to show at the plan's peak: among the ops where a live buffer
    reaches the peak, one whose output starts left of its input (a RiP overlap), the
    largest output first; else any in-place pair at the peak; None when no op is in place."""
    tops: dict[int, int] = {}
    for b in problem.buffers:
        top = plan.offsets[b.id] + b.size
        for t in range(b.first, b.last + 1):
            tops[t] = max(tops.get(t, 0), top)
    sizes = {b.id: b.size for b in problem.buffers}
    at_peak = [p for p in plan.aliased if tops.get(p.op) == plan.peak]
    left = [p for p in at_peak if plan.offsets[p.output] < plan.offsets[p.input]]
    return max(left or at_peak or list(plan.aliased), key=lambda p: sizes[p.output], default=None)


def lifecycle(
    path: Path,
    title: str,
    problems: dict[str, Problem],
    plans: dict[str, Plan],
    sram_bytes: int,
    sram_label: str,
    overhead_bytes: dict[str, int],
) -> dict[str, Any]:
    """Fig. 1: one panel per strategy, address across (KiB), op index down; the arena's
    peak (the kernels' scratch inside it) with the fixed overhead (SDK + stack) as a band right
    of it and the SRAM limit; ``fused`` places the graph with chains as single ops, so its
    panel's op axis is that graph's. A last panel zooms on rip's peak op: its output drawn
    left of the input it overwrites, both labelled in bytes, with the gap between their
    starts. Returns the labelled facts (empty when rip writes nothing in place)."""
    right = max(max(p.peak + overhead_bytes[s] for s, p in plans.items()), sram_bytes)
    right *= 1.04 / KIB
    pair = peak_pair(problems["rip"], plans["rip"]) if "rip" in plans else None
    panels = [*plans, *(["zoom"] if pair else [])]
    heights = [1.3 if s == "zoom" else 1.0 for s in panels]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(10, 2.6 * sum(heights) + 0.7),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for ax, strategy in zip(axes[:, 0], panels, strict=True):
        name = "rip" if strategy == "zoom" else strategy
        plan, problem = plans[name], problems[name]
        overhead = overhead_bytes[name]
        steps = max(b.last for b in problem.buffers) + 1
        _buffers(ax, problem, plan)
        ax.axvline(plan.peak / KIB, color="black", linewidth=1)
        ax.axvspan(
            plan.peak / KIB,
            (plan.peak + overhead) / KIB,
            color="grey",
            alpha=0.35,
            label=f"SDK + stack ({overhead:,} B)",
        )
        ax.axvline(
            sram_bytes / KIB,
            color="red",
            linestyle="--",
            label=f"{sram_label} SRAM ({sram_bytes:,} B)",
        )
        ax.set_xlim(0, right)
        ax.set_ylabel("op index (chains fused)" if name == "fused" else "op index")
        ax.tick_params(labelsize=9)
        if strategy == "zoom":
            ax.set_ylim(pair.op + 3.5, max(pair.op - 2.5, -0.5))
            ax.set_title(f"rip, zoomed on op {pair.op} at the peak", fontsize=11, loc="left")
            _mark_pair(ax, problem, plan, pair)
        else:
            ax.set_ylim(steps, 0)
            ax.set_title(f"{strategy}: arena {plan.peak:,} B", fontsize=11, loc="left")
            if strategy == "rip" and pair:
                ax.axhline(pair.op + 0.5, color="blue", linewidth=0.9, linestyle=":")
                ax.text(
                    right * 0.99,
                    pair.op + 0.5,
                    f"op {pair.op} (zoom below)",
                    color="blue",
                    ha="right",
                    va="bottom",
                    fontsize=9,
                )
            ax.legend(loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("address (KiB)")
    fig.suptitle(f"{title}: activation lifetimes (hatched: written in place)", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    if pair is None:
        return {}
    p = plans["rip"]
    return {
        "op": pair.op,
        "output_offset": p.offsets[pair.output],
        "output_bytes": problems["rip"].buffer(pair.output).size,
        "input_offset": p.offsets[pair.input],
        "input_bytes": problems["rip"].buffer(pair.input).size,
        "gap": pair.gap,
    }


def _buffers(ax, problem: Problem, plan: Plan) -> None:
    cmap = plt.get_cmap("tab20")
    aliased = {p.output for p in plan.aliased}
    for i, b in enumerate(problem.buffers):
        ax.add_patch(
            Rectangle(
                (plan.offsets[b.id] / KIB, b.first - 0.5),
                b.size / KIB,
                b.last - b.first + 1,
                facecolor=cmap(i % 20),
                edgecolor="black",
                linewidth=0.3,
                alpha=0.85,
                hatch="//" if b.id in aliased else None,
            )
        )


def _mark_pair(ax, problem: Problem, plan: Plan, pair: Pair) -> None:
    """Outline the op's output (left) and the input it overwrites (right), each labelled
    in bytes on the op's row, and the distance between their starts."""
    out, inp = problem.buffer(pair.output), problem.buffer(pair.input)
    for b, label, color, dy in ((out, "output", "blue", 0.3), (inp, "input", "black", -0.3)):
        x = plan.offsets[b.id] / KIB
        ax.add_patch(
            Rectangle(
                (x, b.first - 0.5),
                b.size / KIB,
                b.last - b.first + 1,
                fill=False,
                edgecolor=color,
                linewidth=2.2,
            )
        )
        ax.text(
            x + b.size / KIB / 2,
            pair.op + dy,
            f"op {pair.op} {label}: {b.size:,} B at offset {plan.offsets[b.id]:,}",
            ha="center",
            va="center",
            fontsize=9,
            color=color,
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.9},
        )
    x0, x1 = plan.offsets[out.id] / KIB, plan.offsets[inp.id] / KIB
    if x1 > x0:
        y = pair.op - 1
        ax.annotate(
            "",
            xy=(x1, y),
            xytext=(x0, y),
            arrowprops={"arrowstyle": "<->", "color": "blue", "linewidth": 1.5},
        )
        ax.text(
            x0 + 1,
            y - 0.15,
            f"input starts {plan.offsets[inp.id] - plan.offsets[out.id]:,} B right of the "
            f"output (planned gap {pair.gap:,} B)",
            ha="left",
            va="bottom",
            fontsize=9,
            color="blue",
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.9},
        )


def arena_bars(
    path: Path, rows: list[dict], strategies: list[str], pico: dict, pico2: dict
) -> None:
    """Arena bytes per MCUNet model and strategy (TFLite Micro's from the reference file),
    the Pico 1 and Pico 2 SRAM as lines; the hatched cap is what else the board must hold
    (SDK + stack; ours and TFLite Micro's arenas both hold their kernels' scratch)."""
    rows = [r for r in rows if r.get("mcunet") and "arena" in r]
    cols = ["tflm", *strategies]
    width = 0.8 / len(cols)
    fig, ax = plt.subplots(figsize=(11, 4.8))
    for j, s in enumerate(cols):
        xs = [i + (j - (len(cols) - 1) / 2) * width for i in range(len(rows))]
        arena = [(r["tflm_arena"] if s == "tflm" else r["arena"][s]) or 0 for r in rows]
        extra = [pico["overhead"] for r in rows]
        ax.bar(
            xs,
            [a / KIB for a in arena],
            width,
            color=COLORS.get(s),
            label="TFLite Micro" if s == "tflm" else s,
        )
        ax.bar(
            xs,
            [e / KIB for e in extra],
            width,
            bottom=[a / KIB for a in arena],
            color=COLORS.get(s),
            alpha=0.35,
            hatch="///",
        )
    for board, label, style in ((pico, "Pico 1", "--"), (pico2, "Pico 2", ":")):
        ax.axhline(board["sram"] / KIB, color="red", linestyle=style, linewidth=1.2)
        ax.text(
            len(rows) - 0.45,
            board["sram"] / KIB,
            f"{label} {board['sram'] // KIB} KiB",
            va="bottom",
            ha="right",
            color="red",
            fontsize=9,
        )
    ax.set_xticks(range(len(rows)), [r["model"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("KiB (solid: arena, scratch included; hatched: SDK + stack)")
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, ncol=len(cols), fontsize=9, loc="upper left")
    ax.set_title("Activation arena per model and strategy against the Pico SRAM", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def memory_vs_instructions(path: Path, points: dict[str, list[tuple[str, float, float]]]) -> None:
    """One marker per series: (model, instructions or cycles in millions, arena KiB)."""
    markers = {
        "rip (ours, qemu-m33 instructions)": ("o", COLORS["rip"]),
        "fused (ours, qemu-m33 instructions)": ("D", COLORS["fused"]),
        "TFLite Micro + CMSIS-NN (M33 instructions)": ("s", COLORS["tflm"]),
        "paper RiP (Pico 2 cycles)": ("^", "#ff7f0e"),
    }
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for series, pts in points.items():
        if not pts:
            continue
        m, c = markers.get(series, ("x", "black"))
        ax.scatter(
            [p[1] for p in pts],
            [p[2] for p in pts],
            marker=m,
            color=c,
            s=40,
            label=series,
            zorder=3,
        )
    theirs = {p[0]: p for p in points.get("TFLite Micro + CMSIS-NN (M33 instructions)", [])}
    for name, x, y in points.get("rip (ours, qemu-m33 instructions)", []):
        if name in theirs:  # the same model under both: a thin line joins them
            ax.plot(
                [x, theirs[name][1]], [y, theirs[name][2]], color="grey", linewidth=0.6, zorder=1
            )
    ours = sorted(points.get("rip (ours, qemu-m33 instructions)", []), key=lambda p: p[1])
    for name, x, y in ours:  # a close neighbour on the right: label on the left
        crowded = any(1 < x2 / x < 1.5 and abs(y2 - y) < 40 for _, x2, y2 in ours)
        xy, ha = ((-6, 5), "right") if crowded else ((5, -11), "left")
        ax.annotate(name, (x, y), xytext=xy, textcoords="offset points", fontsize=8, ha=ha)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="x", which="minor", labelsize=8)
    ax.set_xlabel("millions of instructions (cycles for the paper) per inference, log")
    ax.set_ylabel("activation arena (KiB)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left")
    ax.set_title("Memory against instructions, MCUNet models", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
