"""Section 1, per layer: the paper's Table 2 recomputed (Eq. 1 as published, Corollary 1,
Theorem 11 and the simulator, beside the paper's figures); the Sec. 5.2 sweep verdicts per
closed form and execution configuration (allocator/theory/sweep.py, as ``rip-sweep``
prints them); and the fused-chain sweep when the theory has one (issue 12)."""

from __future__ import annotations

import importlib
import inspect
import time
from typing import Any

from rip.allocator.theory.bounds import rip_padded_gap
from rip.allocator.theory.geometry import make_geometry
from rip.allocator.theory.herringbone import corollary1_gap, gm_eq1_gap, herringbone_gap
from rip.allocator.theory.simulate import simulate_herringbone, simulate_rip
from rip.allocator.theory.sweep import CLOSED_FORM_LABELS, ROWS, run_sweep

# Where issue 12's fused-chain theory may expose its sweep; the first callable found runs.
FUSED_MODULE = "rip.allocator.theory.fused"
FUSED_ENTRY_POINTS = ("run_fused_sweep", "run_chain_sweep", "fused_sweep", "run_sweep", "sweep")


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


def fused_sweep(n_chains: int, jobs: int) -> dict[str, Any] | None:
    """The fused-chain sweep of issue 12 when ``rip.allocator.theory.fused`` exposes one
    (None when the module is absent). Whatever it returns is kept as data: a summary with
    the sweep's ``results`` (form -> configuration -> verdict counts) renders as the main
    sweep's table, any other numbers as a list."""
    try:
        module = importlib.import_module(FUSED_MODULE)
    except ImportError:
        return None
    fn = next(
        (getattr(module, n) for n in FUSED_ENTRY_POINTS if callable(getattr(module, n, None))), None
    )
    if fn is None:
        return {
            "entry_point": None,
            "why": f"{FUSED_MODULE} has none of {', '.join(FUSED_ENTRY_POINTS)}",
        }
    params = inspect.signature(fn).parameters
    wanted = {
        "n_chains": n_chains,
        "n_layers": n_chains,
        "chains": n_chains,
        "layers": n_chains,
        "seed": 0,
        "jobs": jobs,
        "progress": False,
    }
    kwargs = {k: v for k, v in wanted.items() if k in params}
    t0 = time.perf_counter()
    out = fn(**kwargs)
    wall = round(time.perf_counter() - t0, 1)
    summary = getattr(out, "summary", out)
    return {
        "entry_point": f"{FUSED_MODULE}.{fn.__name__}",
        "arguments": kwargs,
        "wall_seconds": wall,
        "summary": _plain(summary),
    }


def _plain(value: Any) -> Any:
    """JSON-ready copy: dicts, lists, numbers, strings; anything else as its text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
