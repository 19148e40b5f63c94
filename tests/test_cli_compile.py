"""rip-compile --report: the model summary, per-op table and memory plans; one-line errors."""

from __future__ import annotations

import json
import time

import pytest
from paths import shared_path
from test_refusals import _one_op
from tflite_writer import example_model, random_conv_model

from rip import compiler
from rip.allocator.planning.requirements import requirements
from rip.cli.compile import main
from rip.compiler import Reference
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite
from rip.report import op_table


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def example_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "example.tflite"
    path.write_bytes(example_model(0))
    return path


def test_report_json_keys(capsys, example_file):
    code, out, _ = run(capsys, str(example_file), "--report", "--json", "--board", "pico2")
    assert code == 0
    rep = json.loads(out)
    for key in ("arena_bytes", "scratch_bytes", "strategy", "placer", "solve_seconds", "fits"):
        assert key in rep
    assert rep["placer"] == "milp"
    assert set(rep["strategies"]) == {"dual", "tinyengine", "rip", "fused"}
    # no --strategy: the lower total of rip and fused (arena + scratch), rip on a tie
    total = {s: rep["strategies"][s]["arena_bytes"] + rep["strategies"][s]["scratch_bytes"]
             for s in ("rip", "fused")}  # fmt: skip
    assert rep["strategy"] == ("fused" if total["fused"] < total["rip"] else "rip")
    assert rep["selected_because"].startswith("lowest total activation RAM")
    dual, rip = rep["strategies"]["dual"], rep["strategies"]["rip"]
    assert rip["arena_bytes"] <= dual["arena_bytes"]
    code, out, _ = run(capsys, str(example_file), "--json", "--board", "pico2", "--strategy", "rip")
    rep = json.loads(out)
    assert rep["strategy"] == "rip" and rep["selected_because"] is None
    assert len(rep["op_table"]) == rep["ops"]  # rip runs the rewritten graph's ops
    assert rep["milp_size"]["variables"] > 0


def test_report_text_table(capsys, example_file):
    """The text report names the selected plan and why: with no instruction budget fusion
    lowers this model's peak and is selected; within the default budget the text names
    what the JSON report selected (rip since d41b32c's cost model, which prices this small
    model's chains above its 5%)."""
    code, out, _ = run(capsys, str(example_file), "--report", "--board", "host",
                       "--max-overhead", "none")  # fmt: skip
    assert code == 0
    assert "CONV_2D" in out and "memory plans" not in out.split("\n")[0]
    assert "tinyengine" in out and "selected: fused / milp" in out
    assert "selected by default: lowest total activation RAM" in out
    code, out, _ = run(capsys, str(example_file), "--report", "--json", "--board", "host")
    selected = json.loads(out)["strategy"]
    code, out, _ = run(capsys, str(example_file), "--report", "--board", "host")
    assert code == 0 and f"selected: {selected} / milp" in out
    code, out, _ = run(
        capsys, str(example_file), "--report", "--board", "host", "--strategy", "rip"
    )
    assert code == 0 and "selected: rip / milp" in out and "selected by default" not in out


def test_the_default_plan_is_rip_where_fusion_saves_nothing(capsys, example_file):
    """A model with one convolution has no chain to fuse: fused's plan is rip's, and the
    tie goes to rip (no recomputed rows)."""
    path = example_file.parent / "one-conv.tflite"
    path.write_bytes(random_conv_model(0))
    code, out, _ = run(capsys, str(path), "--json", "--board", "host")
    rep = json.loads(out)
    assert code == 0 and rep["strategy"] == "rip"
    assert "fusion saves nothing" in rep["selected_because"]


def test_plot_writes_a_png(capsys, example_file, tmp_path):
    png = tmp_path / "plan.png"
    code, _, _ = run(capsys, str(example_file), "--plot", str(png))
    assert code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_in3_fits_pico_under_rip(capsys):
    """Sec. 5.4: MCUNet-in3 fits the Pico's 256 KB under RiP. It overruns it under TinyEngine
    (247,808 B of activations and an 18,536 B Buffer beside them, Table 3); rip's baseline
    schedule, whose arena holds the kernels' scratch (issue 25), fits too, within less."""
    model = shared_path("models", "mcunet", "mcunet-in3.tflite")
    code, out, _ = run(capsys, str(model), "--board", "pico", "--json")
    rep = json.loads(out)
    assert code == 0
    rip, base = rep["strategies"]["rip"], rep["strategies"]["tinyengine"]
    assert rip["fits"] is True and base["fits"] is True
    overhead = base["needed_sram_bytes"] - base["arena_bytes"]  # the SDK's data and stack
    assert base["needed_sram_bytes"] <= base["board_sram_bytes"] < 247_808 + 18_536 + overhead
    assert float(rip["ratio_to_baseline"]) < 0.85  # rip 199,936 B against 247,888 B


def test_mcunet_per_op_table_under_a_second():
    """Issue 3: the per-op table (parse, fold, in-place requirements) of an MCUNet model in
    under a second; measured on the analysis alone, the MILP is timed by bench-alloc."""
    model = shared_path("models", "mcunet", "mcunet-in3.tflite")
    t0 = time.perf_counter()
    graph = rewrite(read_model(model))
    rows = op_table(graph, requirements(graph))
    assert time.perf_counter() - t0 < 5  # target 1 s; slack for a loaded CI machine
    assert sum(1 for r in rows if r["op"] == "CONV_2D") == 37


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"this is not a model at all, just text\n" * 4, "not a TFLite"),
        (b"\x00" * 3, ""),
    ],
)
def test_bad_files_one_line_exit_2(capsys, tmp_path, content, words):
    path = tmp_path / "bad.tflite"
    path.write_bytes(content)
    code, out, err = run(capsys, str(path), "--report")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("rip-compile: error:")
    assert str(path) in err and words in err
    assert "Traceback" not in err


def test_truncated_model(capsys, tmp_path):
    data = shared_path("models", "mcunet", "mcunet-in0.tflite").read_bytes()
    path = tmp_path / "half.tflite"
    path.write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, str(path), "--report")
    assert code == 2 and err.count("\n") == 1 and "half.tflite" in err


def test_unsupported_model_refused(capsys, tmp_path):
    model = tmp_path / "rnn.tflite"
    model.write_bytes(_one_op("UNIDIRECTIONAL_SEQUENCE_RNN", 5))
    code, _, err = run(capsys, str(model), "--report")
    assert code == 2 and err.count("\n") == 1
    assert "unsupported operator UNIDIRECTIONAL_SEQUENCE_RNN" in err


def test_missing_file_and_unknown_board(capsys, example_file):
    code, _, err = run(capsys, "/nonexistent/model.tflite", "--report")
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, str(example_file), "--board", "uno")
    assert code == 2 and "unknown board" in err and "pico2" in err


def test_run_without_a_reference_exits_4_and_says_why(capsys, example_file, tmp_path, monkeypatch):
    """TFLite Micro crashed on the model: the run is unchecked, which a script must not read
    as a match (it was exit 0)."""
    crashed = Reference(None, "TFLite Micro crashed (signal 11)", "crashed")
    monkeypatch.setattr(compiler, "reference", lambda path, graph: crashed)
    out = tmp_path / "out"
    code, stdout, err = run(
        capsys, str(example_file), "--board", "host", "--placer", "firstfit", "-o", str(out),
        "--run", "--no-cache",
    )  # fmt: skip
    assert code == 4, err
    assert err.count("\n") == 1 and "no reference to compare with (crashed" in err
    assert "no reference (crashed" in stdout and (out / "model").is_file()
