"""The plan cache and the strategy planner: a second run reuses plans, any change misses,
a corrupt entry is ignored and rewritten, and nothing is used without the replay."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from paths import shared_path
from tflite_writer import example_model

from rip.allocator.planning import parallel
from rip.allocator.planning.cache import PlanCache, default_cache_dir
from rip.allocator.planning.milp import MilpOptions, _feasible, milp
from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_graph, plan_model
from rip.allocator.planning.requirements import requirements
from rip.allocator.planning.strategies import STRATEGIES, build_problem
from rip.boards import load_board
from rip.cli.compile import main
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

MODEL = example_model(0)


@pytest.fixture(scope="module")
def model():
    g = rewrite(read_model(MODEL, name="example"))
    return g, requirements(g)


def test_cache_dir_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RIP_CACHE_DIR", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("RIP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x" / "rip"


def test_second_run_reuses_every_plan(model, tmp_path):
    g, req = model
    first = plan_graph(g, req, STRATEGIES, cache=PlanCache(MODEL, tmp_path), jobs=1)
    cache = PlanCache(MODEL, tmp_path)
    again = plan_graph(g, req, STRATEGIES, cache=cache, jobs=1)
    assert cache.hits == list(STRATEGIES) and not cache.rejected
    for s in STRATEGIES:
        assert again[s].offsets == first[s].offsets
        assert (again[s].peak, again[s].optimal) == (first[s].peak, first[s].optimal)


def test_any_change_misses(model, tmp_path):
    g, req = model
    plan_graph(g, req, ("rip",), cache=PlanCache(MODEL, tmp_path), jobs=1)
    other_model = PlanCache(MODEL + b"\0", tmp_path)
    plan_graph(g, req, ("rip",), cache=other_model, jobs=1)
    other_limit = PlanCache(MODEL, tmp_path)
    plan_graph(g, req, ("rip",), PlanOptions(time_limit=30.0), cache=other_limit, jobs=1)
    other_alignment = PlanCache(MODEL, tmp_path)
    align8 = PlanOptions(board=replace(load_board("host"), alignment=8))
    plan_graph(g, req, ("rip",), align8, cache=other_alignment, jobs=1)
    assert not other_model.hits and not other_limit.hits and not other_alignment.hits
    keys = {PlanCache(MODEL, tmp_path).key("rip", "milp", 4, 60.0)}
    keys.add(PlanCache(MODEL, tmp_path).key("rip", "firstfit", 4, 60.0))
    keys.add(PlanCache(MODEL, tmp_path).key("dual", "milp", 4, 60.0))
    assert len(keys) == 3


def _entry(tmp_path, strategy="rip"):
    key = PlanCache(MODEL, tmp_path).key(strategy, "milp", 4, 60.0)
    return tmp_path / f"{key}.json"


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda e: "not json {",
        lambda e: json.dumps({**e, "key": "0" * 64}),
        lambda e: json.dumps({**e, "plan": {**e["plan"], "peak": e["plan"]["peak"] - 4}}),
        # two live tensors at one offset: decodes, but the replay rejects it
        lambda e: json.dumps(
            {**e, "plan": {**e["plan"], "offsets": [[t, 0] for t, _ in e["plan"]["offsets"]]}}
        ),
        # a pair the problem does not have
        lambda e: json.dumps(
            {
                **e,
                "plan": {
                    **e["plan"],
                    "aliased": [{**p, "gap": p["gap"] + 4} for p in e["plan"]["aliased"]],
                },
            }
        ),
    ],
)
def test_a_corrupt_entry_is_ignored_and_rewritten(model, tmp_path, corrupt):
    g, req = model
    want = plan_graph(g, req, ("rip",), cache=PlanCache(MODEL, tmp_path), jobs=1)["rip"]
    path = _entry(tmp_path)
    good = path.read_text()
    path.write_text(corrupt(json.loads(good)))
    cache = PlanCache(MODEL, tmp_path)
    got = plan_graph(g, req, ("rip",), cache=cache, jobs=1)["rip"]
    assert cache.rejected == ["rip"] and not cache.hits
    assert got.offsets == want.offsets and got.peak == want.peak
    stored, before = json.loads(path.read_text())["plan"], json.loads(good)["plan"]
    for field in ("offsets", "aliased", "shifts", "peak", "optimal"):  # rewritten
        assert stored[field] == before[field]


def test_only_what_is_asked_is_planned(model, monkeypatch):
    g, req = model
    calls = []
    real = parallel._run_chain

    def counting(*args, **kwargs):
        calls.extend(args[0])  # the strategies of one chain, each placed once
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "_run_chain", counting)
    plans = plan_graph(g, req, ("rip",), jobs=1)
    assert list(plans) == ["rip"] and calls == ["rip"]


def test_equal_problems_are_planned_once(monkeypatch):
    """VGG-16 has no depthwise convolution: tinyengine's problem is dual's."""
    g = rewrite(read_model(shared_path("models", "keras", "VGG16.graph.tflite")))
    req = requirements(g)
    assert build_problem(req, "tinyengine", 4) == build_problem(req, "dual", 4)
    calls = []
    real = parallel._run_chain

    def counting(*args, **kwargs):
        calls.extend(args[0])  # the strategies of one chain, each placed once
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "_run_chain", counting)
    plans = plan_graph(g, req, ("dual", "tinyengine"), jobs=1)
    assert calls == ["dual"] and plans["tinyengine"] is plans["dual"]


def test_every_plan_is_replayed_once(model, tmp_path, monkeypatch):
    """A fresh plan once when its solve returns, a cached one once as the cache's last
    check; a plan two strategies share (dual and tinyengine here) once for both."""
    g, req = model
    replayed = []
    real = parallel.replay

    def counting(graph, plan, alignment, buffers=None, in_arena=True, shared=()):
        replayed.append(id(plan))
        return real(graph, plan, alignment, buffers, in_arena, shared)

    monkeypatch.setattr(parallel, "replay", counting)
    fresh = plan_graph(g, req, STRATEGIES, cache=PlanCache(MODEL, tmp_path), jobs=1)
    assert sorted(replayed) == sorted({id(p) for p in fresh.values()})
    replayed.clear()
    cache = PlanCache(MODEL, tmp_path)
    cached = plan_graph(g, req, STRATEGIES, cache=cache, jobs=1)
    assert cache.hits == list(STRATEGIES)
    assert len(replayed) == len(cached)  # each entry read back, once


def test_parallel_plans_equal_sequential(model, monkeypatch):
    g, req = model
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BUFFERS", 0)  # fork even for a small model
    together = plan_graph(g, req, STRATEGIES, jobs=2)
    alone = {s: plan_model(g, req, s) for s in ("dual", "rip")}
    for s in ("dual", "rip"):
        assert together[s].offsets == alone[s].offsets
    assert together["tinyengine"].peak == plan_model(g, req, "tinyengine").peak


def test_a_warm_start_from_another_strategy_is_checked(model):
    _, req = model
    dual, rip = build_problem(req, "dual", 4), build_problem(req, "rip", 4)
    rip_plan = milp(rip)
    assert rip_plan.aliased and not _feasible(dual, rip_plan.offsets, rip_plan.aliased, ())
    dual_plan = milp(dual)
    assert _feasible(rip, dual_plan.offsets, (), ())  # nothing aliased: feasible for any
    warm = milp(dual, MilpOptions(warm_starts=(rip_plan,)))  # ignored, not trusted
    assert warm.peak == dual_plan.peak


def test_cli_no_cache_and_cache(tmp_path, monkeypatch, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(MODEL)
    monkeypatch.setenv("RIP_CACHE_DIR", str(tmp_path / "cache"))
    assert main([str(model), "--board", "host", "--json", "--no-cache"]) == 0
    assert not (tmp_path / "cache").exists()
    fresh = json.loads(capsys.readouterr().out)
    assert main([str(model), "--board", "host", "--json"]) == 0
    assert len(list((tmp_path / "cache").glob("*.json"))) == len(STRATEGIES)
    capsys.readouterr()
    assert main([str(model), "--board", "host", "--json"]) == 0
    cached = json.loads(capsys.readouterr().out)
    for s in STRATEGIES:
        a, b = fresh["strategies"][s], cached["strategies"][s]
        assert (a["arena_bytes"], a["optimal"]) == (b["arena_bytes"], b["optimal"])
        assert any("plan cache" in n for n in b["notes"])


# ---- forged entries (issue 22, class 7) ------------------------------------------------


def _forged(model, tmp_path, forge):
    """Plan every strategy into the cache, let ``forge(entries)`` rewrite the entries (a
    dict strategy -> entry), plan again: the plans and the cache's hits and misses."""
    g, req = model
    want = plan_graph(g, req, STRATEGIES, cache=PlanCache(MODEL, tmp_path), jobs=1)
    files = {json.loads(p.read_text())["strategy"]: p for p in tmp_path.glob("*.json")}
    entries = {s: json.loads(p.read_text()) for s, p in files.items()}
    for s, text in forge(entries).items():
        files[s].write_text(text)
    cache = PlanCache(MODEL, tmp_path)
    got = plan_graph(g, req, STRATEGIES, cache=cache, jobs=1)
    return want, got, cache


def _as(entry, **plan):
    return json.dumps({**entry, "plan": {**entry["plan"], **plan}})


FORGERIES = {
    # another strategy's plan under rip's key (reported as rip's 28,672 B, "optimal")
    "dual_plan_under_rip_key": lambda e: {"rip": json.dumps({**e["dual"], "key": e["rip"]["key"]})},
    "dual_plan_named_rip": lambda e: {
        "rip": json.dumps({**e["dual"], "key": e["rip"]["key"], "strategy": "rip"})
    },
    "dual_plan_with_rips_problem_hash": lambda e: {
        "rip": json.dumps({**e["rip"], "plan": {**e["dual"]["plan"], "optimal": True}})
    },
    # every offset 48 MiB up: no overlap, the replay passes, the arena is 48 MiB
    "offsets_48_mib_up": lambda e: {
        "rip": _as(
            e["rip"],
            offsets=[[t, x + (48 << 20)] for t, x in e["rip"]["plan"]["offsets"]],
            peak=e["rip"]["plan"]["peak"] + (48 << 20),
        )
    },
    "offsets_a_terabyte_up": lambda e: {
        "rip": _as(
            e["rip"], offsets=[[t, x + (1 << 40) - 8] for t, x in e["rip"]["plan"]["offsets"]]
        )
    },
    "solve_seconds_infinity": lambda e: {
        "rip": _as(e["rip"], solve_seconds=1.0).replace(
            '"solve_seconds": 1.0', '"solve_seconds": Infinity'
        )
    },
    "solve_seconds_nan": lambda e: {
        "rip": _as(e["rip"], solve_seconds=1.0).replace(
            '"solve_seconds": 1.0', '"solve_seconds": NaN'
        )
    },
    "stats_huge": lambda e: {"rip": _as(e["rip"], stats={"variables": 10**400})},
    "stats_text": lambda e: {"rip": _as(e["rip"], stats={"binaries": "\x1b[2J"})},
    "placer_escape": lambda e: {"rip": _as(e["rip"], placer="milp\x1b]0;owned\x07")},
    "other_version": lambda e: {"rip": json.dumps({**e["rip"], "version": "0.0.0"})},
    "offset_float": lambda e: {
        "rip": _as(e["rip"], offsets=[[t, x + 0.0] for t, x in e["rip"]["plan"]["offsets"]])
    },
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_entry_is_a_miss(model, tmp_path, name):
    want, got, cache = _forged(model, tmp_path, FORGERIES[name])
    assert "rip" in cache.rejected and "rip" not in cache.hits
    assert got["rip"].offsets == want["rip"].offsets and got["rip"].peak == want["rip"].peak


def test_cached_free_text_and_figures_are_never_shown(model, tmp_path):
    """Forged notes (terminal escapes) and a forged lower bound in an otherwise good entry:
    the plan is reused, its notes are rip's own one line, its bound recomputed."""
    escape = "\x1b[2J\x1b]0;owned\x07"

    def forge(e):
        return {"rip": _as(e["rip"], notes=[escape], lower_bound=0)}

    want, got, cache = _forged(model, tmp_path, forge)
    assert cache.hits.count("rip") == 1
    assert not any(escape in n for n in got["rip"].notes)
    assert got["rip"].notes == (
        "plan cache: reused after an exact replay (the first compile's notes not repeated)",
    )
    assert got["rip"].lower_bound == want["rip"].lower_bound


def test_json_stays_valid_with_forged_entries(tmp_path, monkeypatch, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(MODEL)
    monkeypatch.setenv("RIP_CACHE_DIR", str(tmp_path / "cache"))
    assert main([str(model), "--board", "host", "--json"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    for p in (tmp_path / "cache").glob("*.json"):
        e = json.loads(p.read_text())
        p.write_text(
            _as(e, solve_seconds=1.0, notes=["\x1b[31m"]).replace(
                '"solve_seconds": 1.0', '"solve_seconds": NaN'
            )
        )
    assert main([str(model), "--board", "host", "--json"]) == 0
    out = capsys.readouterr().out
    cached = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    assert "\x1b" not in out and "\\u001b" not in out
    for s in STRATEGIES:
        assert fresh["strategies"][s]["arena_bytes"] == cached["strategies"][s]["arena_bytes"]
