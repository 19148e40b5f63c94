"""What rip-compile tells a user (issue 24, items 3 and 4): the report numbers everything
as the op table it prints, cuts no shape, never shows more bytes in use than the arena;
--plot says what it wrote and marks the selected plan; every report ends with the next
step, and a plan refused for want of SRAM names the strategy or board that would fit."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import pytest
from paths import shared_path

from rip import api
from rip.cli.compile import main
from rip.plot import figure

VWW0 = ("models", "mcunet", "mcunet-vww0.tflite")  # fits a Pico under rip; 4 fused chains
IN4 = ("models", "mcunet", "mcunet-in4.tflite")  # fits a Pico only under fused
ROW = re.compile(r"^\s*(\d+) (\S+)\s")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def table_lines(text: str) -> dict[int, str]:
    """The op table's rows of a printed report, by their index."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("# op"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        if m := ROW.match(line):
            rows[int(m.group(1))] = line
    return rows


def table(text: str) -> dict[int, str]:
    """The op table of a printed report: index -> op kind."""
    return {k: line.split()[1] for k, line in table_lines(text).items()}


@pytest.fixture(scope="module")
def vww0_report() -> dict[tuple[str, bool], Any]:
    """The text and JSON reports of MCUNet-vww0 on a Pico under rip and under fused."""
    model = str(shared_path(*VWW0))
    out: dict[tuple[str, bool], Any] = {}
    for strategy in ("rip", "fused"):
        for as_json in (False, True):
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                code = main([model, "--board", "pico", "--strategy", strategy, "--report",
                             "--quiet", *(["--json"] if as_json else [])])  # fmt: skip
            assert code == 0
            out[strategy, as_json] = json.loads(text.getvalue()) if as_json else text.getvalue()
    return out


def test_fused_chain_lines_number_ops_as_the_table_does(vww0_report):
    """Under rip the table lists the chains' members as rows: each ``KIND k`` of a chain
    line is row k of the table (the old lines used TFLite file indices, ``CONV_2D 1 >
    DEPTHWISE_CONV_2D 3`` for table rows 0 and 1). Under fused each chain is one
    FUSED_CHAIN row, named by its row, with the members listed under it."""
    text = vww0_report["rip", False]
    rows = table(text)
    chains = [line for line in text.splitlines() if line.startswith("  fused ")]
    assert chains  # the chains the fused plan chose (three under the default budget)
    for line in chains:
        members = re.findall(r"([A-Z_0-9]+) (\d+)", line.split(":")[0])
        assert members and all(rows[int(k)] == kind for kind, k in members), line
    fused = vww0_report["fused", False]
    rows = table(fused)
    named = re.findall(r"^  fused op (\d+) \(([A-Z_0-9 >]+)\)", fused, re.MULTILINE)
    assert len(named) == len(chains)
    members = {r["index"]: r["member_ops"] for r in vww0_report["fused", True]["op_table"]
               if "member_ops" in r}  # fmt: skip
    for k, kinds in named:
        assert rows[int(k)] == "FUSED_CHAIN" and kinds.split(" > ") == members[int(k)]


def test_shape_columns_are_not_cut(vww0_report):
    """Every row shows its whole input and output shapes (``1x16x16x16 + 1x16x16x16``,
    23 characters, was cut to 22)."""
    text, rep = vww0_report["rip", False], vww0_report["rip", True]
    lines = table_lines(text)
    shapes = [(" + ".join(r["inputs"]), r["output"]) for r in rep["op_table"]]
    assert max(len(i) for i, _ in shapes) > 22  # the old column's width
    for r, (ins, out) in zip(rep["op_table"], shapes, strict=True):
        assert f" {ins} " in lines[r["index"]] and f" {out} " in lines[r["index"]]


def test_picture_never_shows_more_bytes_in_use_than_the_arena(vww0_report):
    """The text picture's per-step figure is the arena bytes in use: at most the arena,
    although the live tensors of an in-place step add up to more."""
    text, rep = vww0_report["rip", False], vww0_report["rip", True]
    used = [int(n.replace(",", "")) for n in re.findall(r"\| +([\d,]+) B in use$", text, re.M)]
    assert len(used) == rep["ops"] and max(used) <= rep["arena_bytes"]
    c = api.plan(shared_path(*VWW0), board="pico", strategies=("rip",)).compiled
    steps = range(len(c.graph.operators))
    live = [sum(b.size for b in c.problem.buffers if b.live_at(k)) for k in steps]
    assert max(live) > c.plan.peak  # what the old "B live" printed: above the arena


def test_plot_confirms_the_file_and_marks_the_selected_strategy(capsys, tmp_path):
    model = shared_path(*VWW0)
    png = tmp_path / "plan.png"
    code, out, _ = run(capsys, str(model), "--board", "pico", "--strategy", "fused",
                       "--plot", str(png))  # fmt: skip
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote plot {png}: 4 panels (dual, tinyengine, rip, fused), fused marked" in out
    code, out, err = run(capsys, str(model), "--board", "pico", "--json", "--plot", str(png))
    assert code == 0 and json.loads(out) and f"wrote plot {png}" in err  # JSON stays JSON
    c = api.plan(model, board="pico", strategy="fused").compiled
    fig = figure("vww0", c.problems, c.plans, c.board.sram_bytes, "pico SRAM", 0, c.strategy)
    titles = [ax.get_title() for ax in fig.axes]
    assert [t for t in titles if "(selected)" in t] == [
        f"fused (selected): {c.plan.peak:,} B (milp)"
    ]
    # one legend for every panel: the limit, the band, the arena line, the hatching
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"pico SRAM", "SDK + stack", "written in place"} <= set(labels)


def test_every_report_ends_with_the_next_step(capsys, tmp_path):
    model = shared_path(*VWW0)
    code, out, _ = run(capsys, str(model), "--board", "pico", "--report")
    assert code == 0
    assert out.rstrip().splitlines()[-1] == (
        f"next: rip-compile {model} --board pico -o DIR --build; then "
        "rip-flash DIR (board in BOOTSEL mode) and rip-verify DIR"
    )
    code, out, _ = run(capsys, str(model), "--board", "pico", "--json")
    assert json.loads(out)["next_step"].startswith(f"next: rip-compile {model} --board pico")
    code, out, _ = run(capsys, str(model), "--board", "qemu-m33")
    assert out.rstrip().splitlines()[-1] == (
        f"next: rip-compile {model} --board qemu-m33 -o DIR --run (builds, "
        "runs and compares with TFLite Micro)"
    )
    target = tmp_path / "out"
    code, out, _ = run(capsys, str(model), "--board", "pico", "-o", str(target))
    assert code == 0 and out.rstrip().splitlines()[-1].startswith(
        f"next: rip-compile {model} --board pico -o {target} --build; then rip-flash {target}"
    )


def test_a_report_that_does_not_fit_names_what_would(capsys):
    """MCUNet-in4 needs 321,052 B under rip on a Pico (256 KiB; its arena of 311,040 B holds
    the kernels' scratch): the next step is fused."""
    model = shared_path(*IN4)
    code, out, _ = run(capsys, str(model), "--board", "pico", "--strategy", "rip", "--report")
    assert code == 0 and "does NOT fit pico" in out
    assert out.rstrip().splitlines()[-1] == (
        f"next: rip-compile {model} --board pico --strategy fused -o DIR (fits: 125,532 B)"
    )


def test_a_refused_plan_names_the_strategy_and_board_that_fit(capsys, tmp_path):
    """Issue 24's must-show: exit 3 with one line naming fused (and the Pico 2, which the
    same plan fits), nothing written."""
    target = tmp_path / "out"
    code, out, err = run(capsys, str(shared_path(*IN4)), "--board", "pico", "--strategy",
                         "rip", "-o", str(target))  # fmt: skip
    assert code == 3 and out == "" and err.count("\n") == 1 and not target.exists()
    assert err == (
        "rip-compile: error: does not fit pico: needs 321052 B, has 262144 B; --strategy "
        "fused fits (125532 B), --board pico2 fits (321052 of 524288 B) (--force to "
        "generate anyway)\n"
    )
