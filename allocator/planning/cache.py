"""A plan cache: a second compile of an unchanged model under unchanged options is instant.

An entry is one strategy's plan, keyed by the model file's bytes, the strategy's variant
(the chains the ``fused`` transform chose), the planning options (strategy, placer,
alignment, time limit), rip's version, the solver's versions and the identity of the code
that plans (a hash of every source file of the front end and the allocator), so any change
to the model, the options or that code misses. Entries live in ``$RIP_CACHE_DIR``, else
``$XDG_CACHE_HOME/rip``, else ``~/.cache/rip``.

Nothing read back is trusted: an entry must decode, alias only pairs the problem allows,
and pass the caller's check (the planner's replay, replay.py) before it is used. A corrupt
or stale entry is ignored, and the freshly planned one is written over it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import Pair, Plan, Problem, measure_peak
from rip.allocator.planning.strategies import Variant
from rip.core import jsonio

FORMAT = 1  # bump when an entry's layout changes
PACKAGE = Path(__file__).resolve().parents[2]  # the rip package: allocator/ and frontend/


def default_cache_dir() -> Path:
    """``$RIP_CACHE_DIR``, else ``$XDG_CACHE_HOME/rip``, else ``~/.cache/rip``."""
    if os.environ.get("RIP_CACHE_DIR"):
        return Path(os.environ["RIP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rip"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


@cache
def code_identity() -> str:
    """A hash of rip's version, the solver stack's versions and every planning source file
    (front end and allocator): a plan made by other code is never reused."""
    h = hashlib.sha256()
    for dist in ("rip", "pyomo", "PySCIPOpt"):
        h.update(f"{dist}={_version(dist)}\n".encode())
    for sub in ("frontend", "allocator"):
        for f in sorted((PACKAGE / sub).rglob("*.py")):
            h.update(str(f.relative_to(PACKAGE)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _encode(plan: Plan) -> dict[str, Any]:
    return {
        "offsets": [[t, x] for t, x in sorted(plan.offsets.items())],
        "aliased": [asdict(p) for p in plan.aliased],
        "shifts": [asdict(p) for p in plan.shifts],
        "peak": plan.peak,
        "placer": plan.placer,
        "optimal": plan.optimal,
        "solve_seconds": plan.solve_seconds,
        "lower_bound": plan.lower_bound,
        "stats": plan.stats,
        "notes": list(plan.notes),
    }


def _decode(data: dict[str, Any], problem: Problem) -> Plan:
    """The stored plan, its pairs taken from ``problem`` (KeyError if it has no such pair)."""
    pairs = {(p.op, p.input, p.output): p for p in problem.pairs}

    def pair(d: dict[str, Any]) -> Pair:
        p = pairs[(d["op"], d["input"], d["output"])]
        if Pair(**d) != p:
            raise KeyError("stored pair differs from the problem's")
        return p

    optimal = data["optimal"]
    if optimal not in (True, False, None):
        raise ValueError("optimal must be true, false or null")
    return Plan(
        offsets={int(t): int(x) for t, x in data["offsets"]},
        aliased=tuple(pair(d) for d in data["aliased"]),
        shifts=tuple(pair(d) for d in data["shifts"]),
        peak=int(data["peak"]),
        placer=str(data["placer"]),
        optimal=optimal,
        solve_seconds=float(data["solve_seconds"]),
        lower_bound=int(data["lower_bound"]),
        stats=dict(data["stats"]),
        notes=tuple(str(n) for n in data["notes"]),
    )


class PlanCache:
    """The cached plans of one model file (by its bytes) in ``directory``."""

    def __init__(self, model_bytes: bytes, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else default_cache_dir()
        self.model = hashlib.sha256(model_bytes).hexdigest()
        self.hits: list[str] = []
        self.rejected: list[str] = []

    def key(
        self, strategy: str, placer: str, alignment: int, time_limit: float, variant: str = ""
    ) -> str:
        """The entry's name: model, variant, options, version and code identity, hashed."""
        ident = {
            "format": FORMAT,
            "model": self.model,
            "variant": variant,
            "strategy": strategy,
            "placer": placer,
            "alignment": alignment,
            "time_limit": time_limit,
            "code": code_identity(),
        }
        return hashlib.sha256(jsonio.dumps(ident, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(
        self, variant: Variant, options: PlanOptions, check: Callable[[Plan], None]
    ) -> Plan | None:
        """The stored plan of ``variant``, once ``check`` (the replay) passed it; None when
        absent, corrupt or rejected."""
        problem, strategy = variant.problem, variant.strategy
        key = self.key(strategy, options.placer, problem.alignment, options.time_limit, variant.key)
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text())
            if entry.get("key") != key:
                raise ValueError("entry stored under another key")
            plan = _decode(entry["plan"], problem)
            if set(plan.offsets) != {b.id for b in problem.buffers}:
                raise ValueError("offsets for other buffers")
            if plan.peak != measure_peak(problem, plan.offsets, plan.shifts):
                raise ValueError("peak is not the plan's")
            if plan.peak < problem.lower_bound():
                raise ValueError("peak below the layer-by-layer limit")
            check(plan)
        except Exception:  # anything wrong with an entry: plan afresh, rewrite it
            self.rejected.append(strategy)
            return None
        self.hits.append(strategy)
        return replace(plan, notes=(*plan.notes, "plan cache: reused after an exact replay"))

    def put(self, variant: Variant, plan: Plan, options: PlanOptions) -> None:
        """Store ``plan`` atomically; a cache that cannot be written is silently skipped."""
        strategy = variant.strategy
        key = self.key(
            strategy, options.placer, variant.problem.alignment, options.time_limit, variant.key
        )
        entry = {"key": key, "strategy": strategy, "plan": _encode(plan)}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w") as f:
                jsonio.dump(entry, f)
            os.replace(tmp, self._path(key))
        except (OSError, TypeError, ValueError):
            Path(tmp).unlink(missing_ok=True)
