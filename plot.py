"""The lifecycle figure (the paper's Fig. 1): every activation as a rectangle over time (op
index) and address, one panel per strategy, with the board's SRAM limit and the fixed
overhead (scratch, SDK static data, stack) drawn as a band above the arena."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from rip.allocator.planning.placement import Plan
from rip.boards import Board
from rip.frontend.liveness import Lifetime


def plot_plans(
    path: Path,
    model: str,
    plans: dict[str, Plan],
    lifetimes: dict[int, Lifetime],
    board: Board,
    scratch_bytes: int,
) -> None:
    n = len(plans)
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 4.5), sharey=True, squeeze=False)
    overhead = scratch_bytes + board.fixed_overhead_bytes
    top = max(p.peak for p in plans.values()) + overhead
    if board.sram_bytes:
        top = max(top, board.sram_bytes)
    steps = max((lt.last for lt in lifetimes.values()), default=0) + 1
    cmap = plt.get_cmap("tab20")
    for ax, (strategy, plan) in zip(axes[0], plans.items(), strict=True):
        aliased = {p.output for p in plan.aliased}
        for i, (t, lt) in enumerate(lifetimes.items()):
            x = plan.offsets[t] / 1024
            ax.add_patch(
                Rectangle(
                    (lt.first, x),
                    lt.last - lt.first + 1,
                    lt.nbytes / 1024,
                    facecolor=cmap(i % 20),
                    edgecolor="black",
                    linewidth=0.3,
                    hatch="//" if t in aliased else None,
                    alpha=0.85,
                )
            )
        peak = plan.peak / 1024
        ax.axhline(peak, color="black", linewidth=1)
        ax.add_patch(
            Rectangle(
                (0, peak),
                steps,
                overhead / 1024,
                facecolor="grey",
                alpha=0.35,
                label="scratch + SDK + stack",
            )
        )
        if board.sram_bytes:
            ax.axhline(
                board.sram_bytes / 1024, color="red", linestyle="--", label=f"{board.name} SRAM"
            )
        ax.set_title(f"{strategy}: {plan.peak:,} B ({plan.placer})")
        ax.set_xlim(0, steps)
        ax.set_ylim(0, top / 1024 * 1.05)
        ax.set_xlabel("op index")
    axes[0][0].set_ylabel("address (KiB)")
    axes[0][0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"{model}: activation placement (hatched: written in place)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
