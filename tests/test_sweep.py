"""The synthetic sweep of Sec. 5.2 / Appendix G.2: Table 5's generators, the layer set, the
verdicts, and the ``rip-sweep`` command.

Generator properties are checked by brute force here, not by the helpers the generators
use; verdict expectations come from the paper (Sec. 5.2, Appendix F.4), not from the code.
"""

from __future__ import annotations

import csv
import io
import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rip.allocator.theory.bounds import rip_dense_gap, rip_padded_gap
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.herringbone import corollary1_gap, herringbone_gap
from rip.allocator.theory.simulate import simulate_herringbone, simulate_rip
from rip.allocator.theory.sweep import (
    GENERATORS,
    ROWS,
    SHARES,
    Layer,
    Record,
    evaluate_layer,
    generator_counts,
    make_layers,
    run_sweep,
    summarize,
    write_csv,
)
from rip.cli.sweep import main

PAPER_TABLES = Path(__file__).resolve().parents[2] / "shared/reference/paper-tables.json"
DRAWS = 300
MAX_EXTENT = 128


# --------------------------------------------------------------------------------------
# Independent property checks
# --------------------------------------------------------------------------------------
def _restricted(g: ConvGeometry) -> bool:
    return (
        (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right) == (0, 0, 0, 0)
        and (g.sh, g.sw, g.dh, g.dw) == (1, 1, 1, 1)
        and g.kh == g.kw
        and g.kh % 2 == 1
        and g.h_in == g.w_in
    )


def _x_star(g: ConvGeometry) -> Fraction:
    return Fraction((g.kh - 1) * g.c_in, g.c_out - g.c_in)


def _axis_non_monotone(n_in: int, n_out: int, k: int, s: int, d: int, pad: int) -> bool:
    firsts = []
    for o in range(n_out):
        real = [o * s + j * d - pad for j in range(k) if 0 <= o * s + j * d - pad < n_in]
        if real:
            firsts.append(min(real))
    return any(firsts[i + 1] < firsts[i] for i in range(len(firsts) - 1))


def _non_monotone(g: ConvGeometry) -> bool:
    return _axis_non_monotone(g.h_in, g.h_out, g.kh, g.sh, g.dh, g.pad_top) or (
        _axis_non_monotone(g.w_in, g.w_out, g.kw, g.sw, g.dw, g.pad_left)
    )


def _keff(k: int, d: int) -> int:
    return d * (k - 1) + 1


def _pads(g: ConvGeometry) -> tuple[int, int, int, int]:
    return (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right)


def _unit(g: ConvGeometry) -> bool:
    return (g.sh, g.sw, g.dh, g.dw) == (1, 1, 1, 1)


def _maximal_padding(g: ConvGeometry) -> bool:
    """No side past k_eff - 1 (Theorem 13's limit) and some side at it, and padded."""
    limits = (_keff(g.kh, g.dh) - 1,) * 2 + (_keff(g.kw, g.dw) - 1,) * 2
    sides = list(zip(_pads(g), limits, strict=True))
    return all(p <= lim for p, lim in sides) and any(p == lim > 0 for p, lim in sides)


PROPERTIES = {
    "plain convolution, k in [1,7]": lambda g: (
        g.kh == g.kw and 1 <= g.kh <= 7 and _unit(g) and not any(_pads(g))
    ),
    "same padding, p = floor(k/2)": lambda g: (
        g.kh == g.kw
        and _unit(g)
        and set(_pads(g)) == {g.kh // 2}
        and g.kh // 2 > 0
        and (g.h_out, g.w_out) == (g.h_in, g.w_in)
    ),
    "strided downsampling": lambda g: (
        g.sh == g.sw >= 2 and (g.dh, g.dw) == (1, 1) and g.h_out < g.h_in and g.w_out < g.w_in
    ),
    "inverted-bottleneck expansion": lambda g: (
        (g.kh, g.kw) == (1, 1)
        and _unit(g)
        and not any(_pads(g))
        and g.c_out % g.c_in == 0
        and g.c_out // g.c_in >= 2
    ),
    "projection, c_out <= c_in": lambda g: g.c_out <= g.c_in and (g.kh, g.kw) == (1, 1),
    "collapsed minor axis, n in {1,2,3}": lambda g: min(g.h_out, g.w_out) in (1, 2, 3),
    "small herringbone grid, n <= 6": lambda g: _restricted(g) and g.h_out == g.w_out <= 6,
    "small output grid": lambda g: max(g.h_out, g.w_out) <= 8,
    "thin axis, one output axis of 1": lambda g: min(g.h_out, g.w_out) == 1 < max(g.h_out, g.w_out),
    "restricted regime, integer x*": lambda g: (
        _restricted(g) and g.c_out > g.c_in and _x_star(g).denominator == 1
    ),
    "random symmetric axes": lambda g: (
        g.h_in == g.w_in
        and g.kh == g.kw
        and g.sh == g.sw
        and g.dh == g.dw
        and len(set(_pads(g))) == 1
    ),
    "non-integer x*": lambda g: _restricted(g) and g.c_out > g.c_in and _x_star(g).denominator > 1,
    "non-monotone tap order": _non_monotone,
    "rectangular kernel": lambda g: g.kh != g.kw,
    "dilation": lambda g: g.dh == g.dw >= 2 and min(g.kh, g.kw) >= 2,
    "asymmetric stride": lambda g: g.sh != g.sw,
    "asymmetric dilation": lambda g: g.dh != g.dw and min(g.kh, g.kw) >= 2,
    "asymmetric padding": lambda g: g.pad_top != g.pad_bottom or g.pad_left != g.pad_right,
    "fully asymmetric": lambda g: (
        g.h_in != g.w_in
        and g.kh != g.kw
        and g.sh != g.sw
        and g.dh != g.dw
        and g.pad_top != g.pad_bottom
        and g.pad_left != g.pad_right
    ),
    "maximal padding": _maximal_padding,
}


# --------------------------------------------------------------------------------------
# Table 5
# --------------------------------------------------------------------------------------
def test_shares_match_paper_table5() -> None:
    if not PAPER_TABLES.is_file():
        pytest.skip(f"paper tables not found at {PAPER_TABLES}")
    paper = json.loads(PAPER_TABLES.read_text())["sweep_table5_generator_shares_percent"]
    assert paper == SHARES
    assert list(SHARES) == list(paper)  # the table's order, which fixes tie-breaking
    assert sum(SHARES.values()) == 100


def test_every_generator_has_a_property_check() -> None:
    assert set(GENERATORS) == set(PROPERTIES)


@pytest.mark.parametrize("name", list(PROPERTIES))
def test_generator_property(name: str) -> None:
    fn, prop = GENERATORS[name], PROPERTIES[name]
    seen = set()
    for i in range(DRAWS):
        g = fn(np.random.default_rng([99, i]), MAX_EXTENT)
        assert isinstance(g, ConvGeometry)
        assert prop(g), f"{name}: draw {i} lacks the property: {g}"
        assert 1 <= g.h_in <= MAX_EXTENT and 1 <= g.w_in <= MAX_EXTENT, g
        # every layer runs under all five configurations (G.2), so Theorem 13 must apply
        assert max(g.pad_top, g.pad_bottom) < g.kh_eff, g
        assert max(g.pad_left, g.pad_right) < g.kw_eff, g
        seen.add(g)
    assert len(seen) > DRAWS // 3, f"{name}: only {len(seen)} distinct layers"


@pytest.mark.parametrize("name", list(PROPERTIES))
def test_generator_respects_small_max_extent(name: str) -> None:
    for i in range(20):
        g = GENERATORS[name](np.random.default_rng([7, i]), 8)
        assert max(g.h_in, g.w_in) <= 8 and PROPERTIES[name](g)


def test_generator_redraws_deterministically() -> None:
    for name, fn in GENERATORS.items():
        a = [fn(np.random.default_rng([3, i]), MAX_EXTENT) for i in range(20)]
        b = [fn(np.random.default_rng([3, i]), MAX_EXTENT) for i in range(20)]
        assert a == b, name


def test_non_monotone_example_from_brief() -> None:
    # k=3, d=2, p=2, s=1: output 0 first reads row 0, output 1 row 1, output 2 row 0 again
    assert _axis_non_monotone(10, 10, 3, 1, 2, 2)
    assert not _axis_non_monotone(10, 8, 3, 1, 1, 1)


# --------------------------------------------------------------------------------------
# The layer set
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 99, 300, 1234, 10_000])
def test_counts_are_largest_remainder(n: int) -> None:
    counts = generator_counts(n)
    assert sum(counts.values()) == n
    for name, share in SHARES.items():
        assert abs(counts[name] - n * share / 100) < 1
    if n % 100 == 0:
        assert counts == {name: share * n // 100 for name, share in SHARES.items()}


def test_make_layers_deterministic() -> None:
    a, b = make_layers(200, seed=3), make_layers(200, seed=3)
    assert a == b
    assert [layer.index for layer in a] == list(range(200))
    assert a != make_layers(200, seed=4)
    by_gen: dict[str, int] = {}
    for layer in a:
        by_gen[layer.generator] = by_gen.get(layer.generator, 0) + 1
        assert PROPERTIES[layer.generator](layer.geom)
    assert by_gen == generator_counts(200)


@pytest.mark.parametrize(
    "kwargs", [{"n_layers": 0}, {"n_layers": 5, "seed": -1}, {"n_layers": 5, "max_extent": 3}]
)
def test_make_layers_rejects_bad_arguments(kwargs: dict) -> None:
    from rip.core.errors import RipError

    with pytest.raises(RipError):
        make_layers(**kwargs)


def test_jobs_do_not_change_results() -> None:
    one = run_sweep(120, seed=5, max_extent=48, jobs=1, progress=False, chunk_size=7)
    two = run_sweep(120, seed=5, max_extent=48, jobs=2, progress=False, chunk_size=7)
    assert one.summary == two.summary
    assert one.records == two.records


# --------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------
def test_paper_f4_loose_example() -> None:
    # Appendix F.4: C_in = C_out = 2, k = 1x2, 1x1 input, d = (1, 2), p_w = 1 (left and
    # right): the only real column is never read; truth 0, Theorem 13 as published returns
    # sigma = 2, with the exact first-pixel term it returns 0.
    g = ConvGeometry(1, 1, 2, 2, kh=1, kw=2, dw=2, pad_left=1, pad_right=1)
    recs = {(r.closed_form, r.configuration): r for r in evaluate_layer(Layer(0, "x", g))}
    published = recs[("theorem13-published", "rip-dense-workspace")]
    assert (published.bound, published.truth, published.verdict) == (2, 0, "loose")
    assert recs[("theorem13", "rip-dense-workspace")].verdict == "tight"
    assert recs[("gm-eq1", "herringbone-workspace")].verdict == "n/a"


def test_verdict_definition() -> None:
    g = ConvGeometry(4, 4, 1, 1)
    assert Record(0, "x", g, "f", "c", 3, 4).verdict == "unsafe"
    assert Record(0, "x", g, "f", "c", 4, 4).verdict == "tight"
    assert Record(0, "x", g, "f", "c", 5, 4).verdict == "loose"
    assert Record(0, "x", g, "f", "c", None, None).verdict == "n/a"


@pytest.fixture(scope="module")
def sweep300():
    return run_sweep(300, seed=0, jobs=2, progress=False)


def _verdicts(records, form: str, config: str) -> dict[str, int]:
    out = {"unsafe": 0, "tight": 0, "loose": 0, "n/a": 0}
    for r in records:
        if (r.closed_form, r.configuration) != (form, config):
            continue
        if r.bound is None:
            out["n/a"] += 1
        else:
            out["unsafe" if r.bound < r.truth else "tight" if r.bound == r.truth else "loose"] += 1
    return out


def test_sweep_records_match_direct_evaluation(sweep300) -> None:
    """Each record's bound and truth are what the closed form and simulator give for its
    configuration (guards against a mis-wired configuration)."""
    by_key = {(r.index, r.closed_form, r.configuration): r for r in sweep300.records}
    assert len(by_key) == 300 * len(ROWS)
    for layer in random.Random(0).sample(sweep300.layers, 25):
        g, i = layer.geom, layer.index
        for layout, gap in (("padded", rip_padded_gap), ("dense", rip_dense_gap)):
            for taps in ("gather", "workspace"):
                r = by_key[
                    (i, "theorem4" if layout == "padded" else "theorem13", f"rip-{layout}-{taps}")
                ]
                assert (r.bound, r.truth) == (gap(g, taps), simulate_rip(g, layout, taps))
        r = by_key[(i, "theorem11", "herringbone-workspace")]
        assert (r.bound, r.truth) == (herringbone_gap(g), simulate_herringbone(g))
        r = by_key[(i, "corollary1", "herringbone-workspace")]
        assert r.bound == (corollary1_gap(g) if _restricted(g) else None)


def test_sweep_claims_of_sec_5_2(sweep300) -> None:
    recs, n = sweep300.records, 300
    for form, config in (
        ("theorem4", "rip-padded-gather"),
        ("theorem4", "rip-padded-workspace"),
        ("theorem13", "rip-dense-gather"),
        ("theorem13", "rip-dense-workspace"),
        ("theorem11", "herringbone-workspace"),
        ("corollary1", "herringbone-workspace"),
    ):
        assert _verdicts(recs, form, config)["unsafe"] == 0, (form, config)
    # Sec. 5.2: RiP padded tight on every layer, dense tight on all when gathered first
    assert _verdicts(recs, "theorem4", "rip-padded-gather")["tight"] == n
    assert _verdicts(recs, "theorem4", "rip-padded-workspace")["tight"] == n
    assert _verdicts(recs, "theorem13", "rip-dense-gather")["tight"] == n
    assert _verdicts(recs, "theorem13", "rip-dense-workspace")["tight"] == n
    # As published, Theorem 13 is safe with both tap orders, tight when gathered first.
    assert _verdicts(recs, "theorem13-published", "rip-dense-gather")["tight"] == n
    assert _verdicts(recs, "theorem13-published", "rip-dense-workspace")["unsafe"] == 0


def test_herringbone_tight_in_restricted_domain(sweep300) -> None:
    # Theorem 11 is only asserted tight inside [9]'s domain: outside it the simulator finds
    # it loose when stored input is never read or the kernel is dilated (see the report).
    restricted = [
        r for r in sweep300.records if r.closed_form == "theorem11" and _restricted(r.geom)
    ]
    assert len(restricted) > 30
    assert all(r.bound == r.truth for r in restricted), [
        (r.index, r.geom) for r in restricted if r.bound != r.truth
    ]


def test_summary_agrees_with_records(sweep300) -> None:
    s = sweep300.summary
    assert s["layers"] == 300
    for form, config in ROWS:
        v, direct = s["results"][form][config], _verdicts(sweep300.records, form, config)
        assert (v["unsafe"], v["tight"], v["loose"], v["not_applicable"]) == (
            direct["unsafe"],
            direct["tight"],
            direct["loose"],
            direct["n/a"],
        )
        over = [
            r.bound - r.truth
            for r in sweep300.records
            if (r.closed_form, r.configuration) == (form, config)
            and r.bound is not None
            and r.bound > r.truth
        ]
        assert v["max_overshoot"] == max(over, default=0)
        if over:
            assert v["mean_overshoot"] == pytest.approx(sum(over) / len(over), abs=0.01)
        else:
            assert v["mean_overshoot"] is None


def test_summarize_empty_rows() -> None:
    s = summarize([], [])
    assert s["layers"] == 0 and s["results"]["theorem4"]["rip-padded-gather"]["tight"] == 0


def test_csv_rows(sweep300) -> None:
    buf = io.StringIO()
    write_csv(sweep300.records[: 10 * len(ROWS)], buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert len(rows) == 10 * len(ROWS)
    for row in rows:
        g = ConvGeometry(
            **{
                f: int(row[f])
                for f in (
                    "h_in",
                    "w_in",
                    "c_in",
                    "c_out",
                    "kh",
                    "kw",
                    "sh",
                    "sw",
                    "dh",
                    "dw",
                    "pad_top",
                    "pad_bottom",
                    "pad_left",
                    "pad_right",
                )
            }
        )
        assert g == sweep300.layers[int(row["index"])].geom
        assert row["generator"] == sweep300.layers[int(row["index"])].generator
        if row["verdict"] != "n/a":
            b, t = int(row["bound"]), int(row["truth"])
            assert row["verdict"] == ("unsafe" if b < t else "tight" if b == t else "loose")


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------
def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_csv = tmp_path / "s.csv"
    argv = [
        "--layers",
        "60",
        "--seed",
        "2",
        "--max-extent",
        "32",
        "--jobs",
        "1",
        "--json",
        "--no-progress",
        "--csv",
        str(out_csv),
    ]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["layers"] == 60
    for form, config in ROWS:
        row = payload["results"][form][config]
        assert {"unsafe", "tight", "loose", "mean_overshoot"} <= set(row)
    with out_csv.open() as fh:
        assert sum(1 for _ in fh) == 1 + 60 * len(ROWS)


def test_cli_table_no_csv(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        main(["--layers", "20", "--max-extent", "16", "--jobs", "1", "--no-progress", "--csv", "-"])
        == 0
    )
    out = capsys.readouterr().out
    assert "rip-dense-workspace" in out and "wall time" in out
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv",
    [
        ["--layers", "0"],
        ["--layers", "-3"],
        ["--layers", "x"],
        ["--max-extent", "2"],
        ["--seed", "-1"],
        ["--jobs", "0"],
        ["--bogus"],
    ],
)
def test_cli_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--no-progress", "--csv", "-"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rip-sweep: error: "), err


def test_cli_subprocess_exit_code() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rip.cli.sweep", "--layers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("rip-sweep: error:") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
