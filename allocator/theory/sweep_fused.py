"""The fused-chain sweep (issue 12): random chains, the closed-form gap and ring sizes of
:mod:`rip.allocator.theory.fused` against the simulator of
:mod:`rip.allocator.theory.simulate_fused`, which never evaluates a closed form.

Chains are 1-4 ops (CONV_2D, DEPTHWISE_CONV_2D, MAX/AVERAGE_POOL_2D), kernels 1..7, strides
1..2, padding VALID or SAME, dilation 1..2, channel counts up to 64, with and without the
residual ADD; a quarter are inverted-bottleneck blocks (1x1 expand, kxk depthwise, 1x1
project) as MCUNet and MobileNetV2 are built from. Chain i draws from
``default_rng([seed, CHAIN_STREAM, i])``, so the set is deterministic in the seed and
independent of the worker count. Each chain gets one verdict for the gap and one per ring:
unsafe (closed form below the simulator's minimum), tight (equal) or loose (above).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any

import numpy as np
from tqdm import tqdm

from rip.allocator.theory.fused import (
    AVERAGE_POOL,
    CONV,
    DEPTHWISE,
    MAX_POOL,
    Chain,
    ChainOp,
    fused_gap,
    fused_gap_fold,
    ring_rows,
)
from rip.allocator.theory.geometry import make_geometry
from rip.allocator.theory.simulate_fused import simulate_fused, simulate_ring_rows
from rip.allocator.theory.sweep import VERDICTS, chunks, verdict
from rip.core.errors import LayerError, RipError

CHAIN_STREAM = 12  # keeps chain streams apart from the layer sweep's (seed, i)
DEFAULT_MAX_EXTENT = 48
MAX_CHANNELS = 64
_MAX_DRAWS = 1000


class _Redraw(Exception):
    pass


def _extent(rng: np.random.Generator, hi: int) -> int:
    """Log-uniform in [1, hi] (feature maps halve per stage)."""
    return min(hi, int(math.exp(rng.uniform(0.0, math.log(hi + 1)))))


def _op(
    rng: np.random.Generator,
    kind: str,
    hw: tuple[int, int],
    c_in: int,
    c_out: int,
    shape_preserving: bool,
) -> ChainOp:
    """One op on an hw x c_in input: kernel 1..7 (square two times in three), stride 1..2,
    dilation 1..2 (not pools), SAME or VALID; shape-preserving ops use stride 1 and SAME."""
    kh = int(rng.integers(1, 8))
    kw = kh if rng.random() < 2 / 3 else int(rng.integers(1, 8))
    if shape_preserving:
        stride = (1, 1)
        padding = "same"
    else:
        s = int(rng.integers(1, 3))
        stride = (s, s) if rng.random() < 0.8 else (int(rng.integers(1, 3)), s)
        padding = "same" if rng.random() < 0.5 else "valid"
    dil = (1, 1)
    if kind in (CONV, DEPTHWISE) and rng.random() < 0.25:
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    try:
        geom = make_geometry(hw, c_in, c_out, (kh, kw), stride, dil, padding)
    except LayerError:
        raise _Redraw from None
    return ChainOp(kind, geom)


def _random_chain(rng: np.random.Generator, max_extent: int) -> Chain:
    n_ops = int(rng.integers(1, 5))
    residual = rng.random() < 0.3
    hw = (_extent(rng, max_extent), _extent(rng, max_extent))
    c0 = int(rng.integers(1, MAX_CHANNELS + 1))
    ops: list[ChainOp] = []
    c = c0
    for i in range(n_ops):
        kind = str(rng.choice([CONV, CONV, DEPTHWISE, DEPTHWISE, MAX_POOL, AVERAGE_POOL]))
        if residual and i == n_ops - 1:
            kind = CONV if c != c0 else kind  # the last op restores the input's channels
        if kind == CONV:
            c_out = c0 if residual and i == n_ops - 1 else int(rng.integers(1, MAX_CHANNELS + 1))
        elif kind == DEPTHWISE:
            c_out = c * (1 if rng.random() < 0.8 or residual else 2)
        else:
            c_out = c
        op = _op(rng, kind, hw, c, c_out, residual)
        ops.append(op)
        hw, c = (op.geom.h_out, op.geom.w_out), c_out
    return Chain(tuple(ops), residual)


def _bottleneck(rng: np.random.Generator, max_extent: int) -> Chain:
    """1x1 expand (t in 2..6), kxk depthwise (k in 3, 5, 7, stride 1 or 2, SAME), 1x1
    project; the residual ADD when the block keeps its shape, as MobileNetV2 does."""
    h, w = _extent(rng, max_extent), _extent(rng, max_extent)
    c = int(rng.integers(1, 33))
    t = int(rng.choice([2, 3, 4, 6]))
    k = int(rng.choice([3, 5, 7]))
    s = int(rng.choice([1, 1, 2]))
    c_out = c if s == 1 and rng.random() < 0.6 else int(rng.integers(1, 33))
    try:
        e = make_geometry((h, w), c, t * c)
        d = make_geometry((h, w), t * c, t * c, (k, k), (s, s), padding="same")
        p = make_geometry((d.h_out, d.w_out), t * c, c_out)
    except LayerError:
        raise _Redraw from None
    ops = (ChainOp(CONV, e), ChainOp(DEPTHWISE, d), ChainOp(CONV, p))
    return Chain(ops, residual=(p.h_out, p.w_out, c_out) == (h, w, c))


def make_chain_at(index: int, seed: int = 0, max_extent: int = DEFAULT_MAX_EXTENT) -> Chain:
    """Chain ``index`` of the sweep, from its own stream; every fourth is a bottleneck."""
    rng = np.random.default_rng([seed, CHAIN_STREAM, index])
    draw = _bottleneck if index % 4 == 3 else _random_chain
    for _ in range(_MAX_DRAWS):
        try:
            return draw(rng, max_extent)
        except (_Redraw, LayerError):
            continue
    raise RipError(f"fused sweep: chain {index} found no valid draw in {_MAX_DRAWS} tries")


@dataclass(frozen=True)
class ChainRecord:
    index: int
    chain: Chain
    bound: int  # fused_gap (exact form)
    truth: int
    fold: int  # fused_gap_fold (O(k^2) form)
    ring_bound: tuple[int, ...]
    ring_truth: tuple[int, ...]

    verdict_of = staticmethod(verdict)

    @property
    def verdict(self) -> str:
        return self.verdict_of(self.bound, self.truth)

    @property
    def fold_verdict(self) -> str:
        return self.verdict_of(self.fold, self.truth)

    @property
    def ring_verdicts(self) -> tuple[str, ...]:
        return tuple(map(self.verdict_of, self.ring_bound, self.ring_truth))


def evaluate_chain(index: int, seed: int, max_extent: int) -> ChainRecord:
    chain = make_chain_at(index, seed, max_extent)
    return ChainRecord(
        index,
        chain,
        fused_gap(chain),
        simulate_fused(chain, "fast"),
        fused_gap_fold(chain),
        ring_rows(chain),
        simulate_ring_rows(chain),
    )


def _evaluate(args: tuple[Sequence[int], int, int]) -> list[ChainRecord]:
    indices, seed, max_extent = args
    return [evaluate_chain(i, seed, max_extent) for i in indices]


def _verdicts(records: list[ChainRecord], bound: Callable[[ChainRecord], int]) -> dict:
    verdicts = [ChainRecord.verdict_of(bound(r), r.truth) for r in records]
    count = Counter(verdicts)
    over = [bound(r) - r.truth for r, v in zip(records, verdicts, strict=True) if v == "loose"]
    return {
        **{v: count[v] for v in VERDICTS},
        "tight_pct": round(100.0 * count["tight"] / len(records), 2) if records else None,
        "mean_overshoot": round(sum(over) / len(over), 2) if over else None,
        "max_overshoot": max(over, default=0),
        "unsafe_chains": sorted(
            r.index for r, v in zip(records, verdicts, strict=True) if v == "unsafe"
        )[:10],
    }


def summarize(records: Iterable[ChainRecord]) -> dict[str, Any]:
    """Verdict counts for the gap and the rings, with the mean and largest overshoot
    (bound - truth over loose cases, bytes for the gap and rows for rings)."""
    records = list(records)
    rings = Counter(v for r in records for v in r.ring_verdicts)
    ring_over = [
        b - t for r in records for b, t in zip(r.ring_bound, r.ring_truth, strict=True) if b > t
    ]
    return {
        "chains": len(records),
        "lengths": dict(sorted(Counter(r.chain.length for r in records).items())),
        "residual": sum(r.chain.residual for r in records),
        "gap": _verdicts(records, lambda r: r.bound),
        "gap_fold": _verdicts(records, lambda r: r.fold),
        "rings": {
            "intermediates": sum(rings.values()),
            **{v: rings[v] for v in VERDICTS},
            "mean_overshoot": round(sum(ring_over) / len(ring_over), 2) if ring_over else None,
            "max_overshoot": max(ring_over, default=0),
        },
    }


@dataclass
class FusedSweepResult:
    records: list[ChainRecord]
    summary: dict[str, Any]
    wall_seconds: float
    jobs: int


def run_fused_sweep(
    n_chains: int = 3000,
    seed: int = 0,
    max_extent: int = DEFAULT_MAX_EXTENT,
    jobs: int | None = None,
    progress: bool = True,
    chunk_size: int = 50,
) -> FusedSweepResult:
    """Draw ``n_chains`` chains and judge every closed form against the simulator."""
    start = time.perf_counter()
    if not isinstance(n_chains, int) or n_chains < 0:
        raise RipError(f"chains must be a non-negative integer, got {n_chains!r}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    batches = [(tuple(c), seed, max_extent) for c in chunks(range(n_chains), chunk_size)]
    records: list[ChainRecord] = []
    with tqdm(total=n_chains, unit="chain", disable=not progress, file=sys.stderr) as bar:
        if jobs == 1 or len(batches) <= 1:
            for chunk in batches:
                records.extend(_evaluate(chunk))
                bar.update(len(chunk[0]))
        else:
            with Pool(min(jobs, len(batches))) as pool:
                for chunk, recs in zip(batches, pool.imap(_evaluate, batches), strict=True):
                    records.extend(recs)
                    bar.update(len(chunk[0]))
    return FusedSweepResult(records, summarize(records), time.perf_counter() - start, jobs)
