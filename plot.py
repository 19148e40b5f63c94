"""The lifecycle figure (the paper's Fig. 1): every buffer as a rectangle over time (step)
and address, one panel per plan, with an SRAM limit and a fixed overhead (SDK static data,
stack) drawn as a band above the arena (which holds the kernels' scratch).

It needs only each panel's ``Problem`` and ``Plan`` (no model, no board), so any plan can be
drawn; the text twin is ``rip.allocator.planning.check.picture``. matplotlib is imported
here only, and this module only when a figure is asked for."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rip.allocator.planning.placement import Plan, Problem
from rip.core.terms import Strategy


def figure(
    title: str,
    problems: dict[Strategy, Problem],
    plans: dict[Strategy, Plan],
    sram_bytes: int = 0,
    sram_label: str = "SRAM",
    overhead_bytes: int = 0,
    selected: Strategy | None = None,
) -> Figure:
    """One panel per plan (keyed like ``problems``), the ``selected`` one's title marked
    and its frame drawn thick, and one legend for the whole figure (every panel draws the
    same limit, band and hatching). ``sram_bytes`` 0 draws no limit; ``overhead_bytes`` is
    the band above each arena."""
    n = len(plans)
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 4.8), sharey=True, squeeze=False)
    overhead = overhead_bytes
    top = max(p.peak for p in plans.values()) + overhead
    if sram_bytes:
        top = max(top, sram_bytes)
    steps = max((b.last for p in problems.values() for b in p.buffers), default=0) + 1
    cmap = plt.get_cmap("tab20")
    for ax, (strategy, plan) in zip(axes[0], plans.items(), strict=True):
        aliased = {p.output for p in plan.aliased}
        for i, b in enumerate(problems[strategy].buffers):
            x = plan.offsets[b.id] / 1024
            ax.add_patch(
                Rectangle(
                    (b.first, x),
                    b.last - b.first + 1,
                    b.size / 1024,
                    facecolor=cmap(i % 20),
                    edgecolor="black",
                    linewidth=0.3,
                    hatch="//" if b.id in aliased else None,
                    alpha=0.85,
                )
            )
        peak = plan.peak / 1024
        ax.axhline(peak, color="black", linewidth=1, label="arena (peak)")
        ax.add_patch(
            Rectangle(
                (0, peak),
                steps,
                overhead / 1024,
                facecolor="grey",
                alpha=0.35,
                label="SDK + stack",
            )
        )
        if sram_bytes:
            ax.axhline(sram_bytes / 1024, color="red", linestyle="--", label=sram_label)
        mark = " (selected)" if strategy == selected else ""
        ax.set_title(f"{strategy}{mark}: {plan.peak:,} B ({plan.placer})",
                     fontweight="bold" if mark else "normal")  # fmt: skip
        if mark:
            for spine in ax.spines.values():
                spine.set_linewidth(2.5)
        ax.set_xlim(0, steps)
        ax.set_ylim(0, top / 1024 * 1.05)
        ax.set_xlabel("op index")
    axes[0][0].set_ylabel("address (KiB)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//"))
    labels.append("written in place")
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.suptitle(f"{title}: activation placement")
    fig.tight_layout(rect=(0, 0.07, 1, 1))  # room for the shared legend below the panels
    return fig


def plot_plans(
    path: Path,
    title: str,
    problems: dict[Strategy, Problem],
    plans: dict[Strategy, Plan],
    sram_bytes: int = 0,
    sram_label: str = "SRAM",
    overhead_bytes: int = 0,
    selected: Strategy | None = None,
) -> None:
    """``figure`` saved at ``path`` (its type from the extension)."""
    fig = figure(title, problems, plans, sram_bytes, sram_label, overhead_bytes, selected)
    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
