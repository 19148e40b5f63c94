"""Section 1, per layer: the paper's Table 2 recomputed (Eq. 1 as published, Corollary 1,
Theorem 11 and the simulator, beside the paper's figures); the Sec. 5.2 sweep verdicts per
closed form and execution configuration (allocator/theory/sweep.py, as ``rip-sweep``
prints them); and the fused-chain sweep when the theory has one (issue 12)."""

from __future__ import annotations

from typing import Any

from rip.allocator.theory.bounds import rip_padded_gap
from rip.allocator.theory.geometry import make_geometry
from rip.allocator.theory.herringbone import corollary1_gap, gm_eq1_gap, herringbone_gap
from rip.allocator.theory.simulate import simulate_herringbone, simulate_rip
from rip.allocator.theory.sweep import CLOSED_FORM_LABELS, ROWS, run_sweep
from rip.allocator.theory.sweep_fused import run_fused_sweep

# Where issue 12's fused-chain theory may expose its sweep; the first callable found runs.


def table2(paper: dict) -> list[dict[str, Any]]:
    """Each row of the paper's Table 2 (valid padding, stride 1, taps from the workspace)
    with our closed forms and the simulator's minimum herringbone gap beside the paper's,
    and the RiP gap of the same layer (Theorem 4, workspace taps) with its simulation."""
    rows = []
    for c_in, c_out, k, hw, x_star, gm_eq1, truth in paper["table2_herringbone"]["rows"]:
        g = make_geometry((hw, hw), c_in, c_out, (k, k))
        rows.append(
            {
                "c_in": c_in,
                "c_out": c_out,
                "k": k,
                "hw": hw,
                "x_star": round((k - 1) * c_in / (c_out - c_in), 1),
                "paper_x_star": x_star,
                "paper_gm_eq1": gm_eq1,
                "paper_truth": truth,
                "gm_eq1": gm_eq1_gap(g),
                "corollary1": corollary1_gap(g),
                "theorem11": herringbone_gap(g),
                "simulated": simulate_herringbone(g),
                "rip_gap": rip_padded_gap(g, "workspace"),
                "rip_simulated": simulate_rip(g, "padded", "workspace"),
            }
        )
    return rows


def sweep(n_layers: int, jobs: int, paper: dict) -> dict[str, Any]:
    """The Sec. 5.2 sweep (seed 0): one row per closed form and configuration."""
    result = run_sweep(n_layers, seed=0, jobs=jobs, progress=False)
    s = result.summary
    rows = []
    for form, config in ROWS:
        v = s["results"][form][config]
        rows.append(
            {
                "form": form,
                "label": CLOSED_FORM_LABELS[form],
                "configuration": config,
                **{
                    k: v[k]
                    for k in (
                        "layers",
                        "not_applicable",
                        "unsafe",
                        "tight",
                        "loose",
                        "tight_pct",
                        "mean_overshoot",
                        "max_overshoot",
                    )
                },
            }
        )
    return {
        "layers": s["layers"],
        "seed": 0,
        "jobs": result.jobs,
        "wall_seconds": round(result.wall_seconds, 1),
        "restricted_layers": s["restricted_layers"],
        "restricted_pct": s["restricted_pct"],
        "rows": rows,
        "paper": paper["sweep_claims"],
    }


def fused_sweep(n_chains: int, jobs: int) -> dict[str, Any]:
    """The fused-chain sweep of issue 12 (`run_fused_sweep`): random chains, the exact and
    the fold closed forms of the fused gap and the ring sizes, each judged by the simulator
    (`simulate_fused`), which never evaluates a closed form."""
    run = run_fused_sweep(n_chains, seed=0, jobs=jobs, progress=False)
    s = run.summary
    checks = (
        ("exact gap (fused_gap)", s["chains"], s["gap"]),
        ("fold gap (fused_gap_fold)", s["chains"], s["gap_fold"]),
        ("ring rows per intermediate", s["rings"]["intermediates"], s["rings"]),
    )
    keys = ("unsafe", "tight", "loose", "mean_overshoot", "max_overshoot")
    return {
        "chains": s["chains"],
        "with_residual": s["residual"],
        "wall_seconds": round(run.wall_seconds, 1),
        "jobs": run.jobs,
        "rows": [{"check": c, "cases": n, **{k: v[k] for k in keys}} for c, n, v in checks],
    }
