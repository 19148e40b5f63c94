"""The two-core sweep (issue 27): every closed form of
:mod:`rip.allocator.theory.two_core_bounds` against the two-core corruption simulator, in
the style of the layer sweep of Sec. 5.2 (:mod:`rip.allocator.theory.sweep`).

* **Layers**: the Table 5 generators (:func:`rip.allocator.theory.sweep.make_layers`, the
  same deterministic layer set). Each layer runs as a CONV_2D under five kernel
  configurations (:data:`CONFIGS`: the per-pixel gather kernel, the fast kernel's pixel
  pairs over the dense and the padded layout, taps from the workspace, and pairs synchronised
  four at a time) and, made a pool (C_out = C_in, no dilation), under two more (a pixel a
  unit, eight pixels a unit), at every lag of :data:`LAGS` (None: unsynchronised). Truth is
  :func:`rip.allocator.theory.two_core_fast.fast_rip_gap`; the exact form and the simple
  bound each get a verdict (unsafe / tight / loose). ``lag_matters`` counts the layers whose
  truth at L + 1 exceeds the gap planned for L: there, exceeding the lag bound by one unit
  corrupts.
* **Fused chains**: the chains of :mod:`rip.allocator.theory.sweep_fused` on two cores
  (:func:`rip.allocator.theory.two_core_fast.fast_fused`): at L = 1 the gap against the
  one-core `fused_gap` and the rings against the one-core rings; at L = 2 how many chains
  break (a ring row read before the other core stored its half, or overwritten too early).

Layer i and chain i come from their own random streams, so the result does not depend on
the worker count.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any

from tqdm import tqdm

from rip.allocator.theory.fused import fused_gap
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.sweep import (
    DEFAULT_MAX_EXTENT,
    VERDICTS,
    Layer,
    _dense_applies,
    chunks,
    make_layers,
    verdict,
)
from rip.allocator.theory.sweep_fused import make_chain_at
from rip.allocator.theory.two_core_bounds import two_core_rip_gap, two_core_rip_gap_simple
from rip.allocator.theory.two_core_fast import fast_fused, fast_rip_gap
from rip.allocator.theory.two_core_programs import RipSchedule
from rip.core import jsonio
from rip.core.errors import LayerError, RipError


@dataclass(frozen=True)
class Config:
    """One kernel configuration, named; its ``per_channel`` schedules run the layer as a
    pool."""

    name: str
    schedule: RipSchedule

    def admits(self, lag: int | None) -> bool:
        """Lag 0 needs a unit of one gathered tile (else the cores wait for each other)."""
        try:
            self.schedule.check_lag(lag)
        except LayerError:
            return False
        return True


CONFIGS: tuple[Config, ...] = (
    Config("conv-pixel", RipSchedule()),
    Config("conv-pair", RipSchedule(tile=2)),
    Config("conv-pair-padded", RipSchedule("padded", tile=2)),
    Config("conv-workspace", RipSchedule(taps="workspace")),
    Config("conv-pair-unit4", RipSchedule(tile=2, unit_tiles=4)),
    Config("pool-pixel", RipSchedule(per_channel=True)),
    Config("pool-unit8", RipSchedule(unit_tiles=8, per_channel=True)),
)
LAGS: tuple[int | None, ...] = (0, 1, 2, 3, 4, None)
FORMS = ("exact", "simple")


def pool_of(geom: ConvGeometry) -> ConvGeometry | None:
    """The layer as a pool: C_out = C_in, no dilation (None when that is not a layer)."""
    try:
        return ConvGeometry(
            geom.h_in, geom.w_in, geom.c_in, geom.c_in, geom.kh, geom.kw, geom.sh, geom.sw,
            1, 1, geom.pad_top, geom.pad_bottom, geom.pad_left, geom.pad_right,
        )  # fmt: skip
    except LayerError:
        return None


@dataclass(frozen=True)
class TwoCoreRecord:
    index: int
    generator: str
    config: str
    lag: int | None
    truth: int
    exact: int
    simple: int

    def verdict(self, form: str) -> str:
        return verdict(getattr(self, form), self.truth)


def evaluate_layer(layer: Layer) -> list[TwoCoreRecord]:
    """Every admitted (configuration, lag) of one layer."""
    out = []
    for cfg in CONFIGS:
        sched = cfg.schedule
        g = pool_of(layer.geom) if sched.per_channel else layer.geom
        if g is None or (sched.layout == "dense" and not _dense_applies(g)):
            continue
        for lag in LAGS:
            if not cfg.admits(lag):
                continue
            out.append(
                TwoCoreRecord(
                    layer.index, layer.generator, cfg.name, lag, fast_rip_gap(g, lag, sched),
                    two_core_rip_gap(g, lag, sched), two_core_rip_gap_simple(g, lag, sched),
                )
            )  # fmt: skip
    return out


def _key(lag: int | None) -> str:
    return "none" if lag is None else str(lag)


def summarize_layers(records: Iterable[TwoCoreRecord], n_layers: int) -> dict[str, Any]:
    """Verdict counts per configuration, lag and form, with the mean and largest overshoot
    of loose cases (bytes), and ``lag_matters`` per configuration and lag."""
    records = list(records)
    by: dict[tuple[str, str], list[TwoCoreRecord]] = {}
    for r in records:
        by.setdefault((r.config, _key(r.lag)), []).append(r)
    truth_at = {(r.index, r.config, r.lag): r.truth for r in records}
    results: dict[str, dict[str, Any]] = {}
    for (config, lag), rs in by.items():
        entry: dict[str, Any] = {"cases": len(rs)}
        for form in FORMS:
            count = Counter(r.verdict(form) for r in rs)
            over = [getattr(r, form) - r.truth for r in rs if r.verdict(form) == "loose"]
            entry[form] = {
                **{v: count[v] for v in VERDICTS},
                "mean_overshoot": round(sum(over) / len(over), 2) if over else None,
                "max_overshoot": max(over, default=0),
                "unsafe_layers": sorted(r.index for r in rs if r.verdict(form) == "unsafe")[:10],
            }
        nxt = None if rs[0].lag is None else rs[0].lag + 1
        if nxt is not None and nxt in LAGS:  # the gap planned for L against the truth at L + 1
            entry["lag_matters"] = sum(
                truth_at.get((r.index, r.config, nxt), -1) > r.exact for r in rs
            )
        results.setdefault(config, {})[lag] = entry
    return {"layers": n_layers, "records": len(records), "results": results}


# --------------------------------------------------------------------------------------
# Fused chains
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FusedTwoCoreRecord:
    index: int
    one_core: int  # fused_gap
    gap_l1: int  # the two-core simulator at L = 1
    rings_ok_l1: bool
    gap_l2: int
    rings_ok_l2: bool


def evaluate_chain(index: int, seed: int, max_extent: int) -> FusedTwoCoreRecord:
    chain = make_chain_at(index, seed, max_extent)
    l1, l2 = fast_fused(chain, 1), fast_fused(chain, 2)
    return FusedTwoCoreRecord(index, fused_gap(chain), l1.gap, l1.rings_ok, l2.gap, l2.rings_ok)


def summarize_chains(records: Iterable[FusedTwoCoreRecord]) -> dict[str, Any]:
    records = list(records)
    gap = Counter(verdict(r.one_core, r.gap_l1) for r in records)
    return {
        "chains": len(records),
        "gap_l1": {v: gap[v] for v in VERDICTS},
        "rings_ok_l1": sum(r.rings_ok_l1 for r in records),
        "broken_l2": sum(not r.rings_ok_l2 or r.gap_l2 > r.one_core for r in records),
        "rings_broken_l2": sum(not r.rings_ok_l2 for r in records),
        "gap_up_l2": sum(r.gap_l2 > r.one_core for r in records),
    }


# --------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------
def _layer_chunk(layers: Sequence[Layer]) -> list[TwoCoreRecord]:
    return [r for layer in layers for r in evaluate_layer(layer)]


def _chain_chunk(args: tuple[Sequence[int], int, int]) -> list[FusedTwoCoreRecord]:
    indices, seed, max_extent = args
    return [evaluate_chain(i, seed, max_extent) for i in indices]


@dataclass
class TwoCoreSweepResult:
    records: list[TwoCoreRecord]
    chains: list[FusedTwoCoreRecord]
    summary: dict[str, Any]
    wall_seconds: float
    jobs: int


def _run(fn, batches: list, jobs: int, total: int, unit: str, progress: bool) -> list:
    out: list = []
    with tqdm(total=total, unit=unit, disable=not progress, file=sys.stderr) as bar:
        if jobs == 1 or len(batches) <= 1:
            results: Iterable = map(fn, batches)
            pool = None
        else:
            pool = Pool(min(jobs, len(batches)))
            results = pool.imap(fn, batches)
        try:
            for batch, recs in zip(batches, results, strict=True):
                out.extend(recs)
                bar.update(len(batch[0]) if isinstance(batch, tuple) else len(batch))
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    return out


def run_two_core_sweep(
    n_layers: int = 2000,
    n_chains: int = 1000,
    seed: int = 0,
    max_extent: int = DEFAULT_MAX_EXTENT,
    jobs: int | None = None,
    progress: bool = True,
) -> TwoCoreSweepResult:
    """Draw the layers and chains and judge every two-core closed form (module docstring)."""
    start = time.perf_counter()
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if not isinstance(jobs, int) or jobs < 1:
        raise RipError(f"jobs must be a positive integer, got {jobs!r}")
    if not isinstance(n_chains, int) or n_chains < 0:
        raise RipError(f"chains must be a non-negative integer, got {n_chains!r}")
    layers = make_layers(n_layers, seed, max_extent)
    records = _run(_layer_chunk, list(chunks(layers, 20)), jobs, len(layers), "layer", progress)
    batches = [(tuple(c), seed, 48) for c in chunks(range(n_chains), 50)]
    chains = _run(_chain_chunk, batches, jobs, n_chains, "chain", progress)
    summary = {"layers": summarize_layers(records, len(layers)), "fused": summarize_chains(chains)}
    return TwoCoreSweepResult(records, chains, summary, time.perf_counter() - start, jobs)


def format_summary(summary: dict[str, Any]) -> str:
    """One line per configuration and lag: unsafe / tight / loose of both forms, and how
    many cases corrupt when the lag is exceeded by one unit; then the fused chains."""
    lines = [
        f"{summary['layers']['layers']} layers (Table 5), truth = two-core simulator",
        f"{'config':18} {'lag':>4} {'cases':>6}   {'exact u/t/l':<17} "
        f"{'simple u/t/l (max over)':<26} L+1 corrupts",
    ]
    for config, lags in summary["layers"]["results"].items():
        for lag, e in lags.items():
            ex, si = e["exact"], e["simple"]
            exact = f"{ex['unsafe']}/{ex['tight']}/{ex['loose']}"
            simple = f"{si['unsafe']}/{si['tight']}/{si['loose']} ({si['max_overshoot']} B)"
            lines.append(
                f"{config:18} {lag:>4} {e['cases']:>6}   {exact:<17} {simple:<26} "
                f"{e.get('lag_matters', '-')}"
            )
    f = summary["fused"]
    lines.append(
        f"fused chains {f['chains']}: L=1 gap vs one-core u/t/l "
        f"{f['gap_l1']['unsafe']}/{f['gap_l1']['tight']}/{f['gap_l1']['loose']}, rings ok "
        f"{f['rings_ok_l1']}; L=2 broken {f['broken_l2']} (rings {f['rings_broken_l2']}, "
        f"gap {f['gap_up_l2']})"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rip.allocator.theory.sweep_two_core [LAYERS [CHAINS [SEED [JOBS]]]]``:
    print the summary (and, with ``--json`` first, the summary as JSON)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = bool(argv) and argv[0] == "--json"
    args = [int(a) for a in argv[as_json:]]
    n_layers, n_chains, seed, jobs = (args + [2000, 1000, 0, 0][len(args) :])[:4]
    result = run_two_core_sweep(n_layers, n_chains, seed, jobs=jobs or None)
    if as_json:
        print(jsonio.dumps(result.summary, indent=1))
    else:
        print(format_summary(result.summary))
    print(f"wall {result.wall_seconds:.1f} s, {result.jobs} jobs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
