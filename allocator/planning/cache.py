"""A plan cache: a second compile of an unchanged model under unchanged options is instant.

An entry is one strategy's plan, keyed by the model file's bytes, the strategy's variant
(the chains the ``fused`` transform chose), the planning options (strategy, placer,
alignment, time limit), rip's version, the solver's versions and the identity of the code
that plans (a hash of every source file of the front end and the allocator), so any change
to the model, the options or that code misses. Entries live in ``$RIP_CACHE_DIR``, else
``$XDG_CACHE_HOME/rip``, else ``~/.cache/rip``.

Nothing read back is trusted (issue 22: a forged entry gave another strategy's plan as
"optimal", a 48 MiB arena, terminal escapes in the notes, ``NaN`` in ``--json``). An entry
is bound to its strategy, rip's version and a content hash of the problem, each checked; it
must be strict JSON, decode, alias only pairs the problem allows, peak no higher than first
fit on the same problem (every plan rip stores does: each placer starts from it), carry
finite numbers in range and a known placer, and pass the caller's check (the planner's
replay, replay.py). The peak and the lower bound are recomputed, and the stored notes (free
text) are never shown. Any inconsistency is a miss: the model is planned afresh and the
entry rewritten.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.placement import Pair, Plan, Problem, first_fit, measure_peak
from rip.allocator.planning.strategies import Variant
from rip.core import jsonio

FORMAT = 3  # bump when an entry's layout changes (3: kernel scratch is placed in the arena)
MAX_ENTRY_BYTES = 64 << 20  # far above any real plan's (a few hundred bytes a buffer)
MAX_SOLVE_SECONDS = 7 * 86400.0
_PLACERS = ("milp", "firstfit", "greedy")
_STAT_KEYS = ("variables", "constraints", "binaries", "solved", "polished", "build_seconds")
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


def problem_hash(problem: Problem) -> str:
    """A content hash of ``problem``: its buffers (id, size, lifetime), pairs and alignment."""
    body = {
        "buffers": [[b.id, b.size, b.first, b.last] for b in problem.buffers],
        "pairs": [asdict(p) for p in problem.pairs],
        "alignment": problem.alignment,
    }
    return hashlib.sha256(jsonio.dumps(body, sort_keys=True).encode()).hexdigest()


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
    offsets = {_int(t): _int(x) for t, x in data["offsets"]}
    shifts = tuple(pair(d) for d in data["shifts"])
    placer = data["placer"]
    base = placer.removesuffix(" plan of another strategy") if isinstance(placer, str) else ""
    if base not in _PLACERS:
        raise ValueError("unknown placer")
    seconds = data["solve_seconds"]
    if type(seconds) not in (int, float) or not 0.0 <= seconds <= MAX_SOLVE_SECONDS:
        raise ValueError("solve time out of range")
    return Plan(
        offsets=offsets,
        aliased=tuple(pair(d) for d in data["aliased"]),
        shifts=shifts,
        peak=measure_peak(problem, offsets, shifts),  # recomputed, compared by the caller
        placer=placer,
        optimal=optimal,
        solve_seconds=float(seconds),
        lower_bound=problem.lower_bound(),  # recomputed: every placer stores this one
        stats=_stats(data["stats"]),
        notes=(),  # free text from a file: never shown
    )


def _int(value: Any) -> int:
    """A non-negative JSON integer below 2^40 (no bool, float or string)."""
    if type(value) is not int or not 0 <= value < 1 << 40:
        raise ValueError(f"not an integer in range: {value!r}")
    return value


def _stats(data: Any) -> dict[str, Any]:
    """The MILP's figures: known keys, each an integer in range, a bool, the build time in
    range, or the ``> N`` a model too big for the MILP records."""
    if not isinstance(data, dict) or not set(data) <= set(_STAT_KEYS):
        raise ValueError("unknown stats")
    for k, v in data.items():
        if isinstance(v, bool) or (type(v) is int and 0 <= v < 1 << 40):
            continue
        if k == "build_seconds" and type(v) is float and 0.0 <= v <= MAX_SOLVE_SECONDS:
            continue
        if not (isinstance(v, str) and v.startswith("> ") and v[2:].isascii() and v[2:].isdigit()):
            raise ValueError("stats value out of range")
    return dict(data)


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
            if path.stat().st_size > MAX_ENTRY_BYTES:
                raise ValueError("entry too large")
            entry = jsonio.loads(path.read_text())
            if entry.get("key") != key:
                raise ValueError("entry stored under another key")
            if entry.get("strategy") != strategy or entry.get("version") != _version("rip"):
                raise ValueError("entry of another strategy or rip version")
            if entry.get("problem") != problem_hash(problem):
                raise ValueError("entry of another problem")
            plan = _decode(entry["plan"], problem)
            if set(plan.offsets) != {b.id for b in problem.buffers}:
                raise ValueError("offsets for other buffers")
            if plan.peak != entry["plan"]["peak"]:
                raise ValueError("peak is not the plan's")
            if plan.peak < plan.lower_bound:
                raise ValueError("peak below the layer-by-layer limit")
            if plan.peak > first_fit(problem).peak:
                raise ValueError("peak above first fit's: no placer rip runs stores that")
            check(plan)
        except Exception:  # anything wrong with an entry: plan afresh, rewrite it
            self.rejected.append(strategy)
            return None
        self.hits.append(strategy)
        note = "plan cache: reused after an exact replay (the first compile's notes not repeated)"
        return replace(plan, notes=(note,))

    def put(self, variant: Variant, plan: Plan, options: PlanOptions) -> None:
        """Store ``plan`` atomically; a cache that cannot be written is silently skipped."""
        strategy = variant.strategy
        key = self.key(
            strategy, options.placer, variant.problem.alignment, options.time_limit, variant.key
        )
        entry = {
            "key": key,
            "strategy": strategy,
            "version": _version("rip"),
            "problem": problem_hash(variant.problem),
            "plan": _encode(plan),
        }
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
