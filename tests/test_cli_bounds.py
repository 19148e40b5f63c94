"""rip-bounds: JSON out, one-line errors with exit code 2, batch mode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rip.cli.bounds import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_single_layer_json(capsys):
    code, out, _ = run(
        capsys,
        "--input",
        "224",
        "--cin",
        "64",
        "--cout",
        "64",
        "--kernel",
        "3",
        "--padding",
        "same",
        "--order",
        "row",
    )
    assert code == 0
    result = json.loads(out)
    assert {"gap", "workspace", "output_hw", "order"} <= result.keys()
    assert result["workspace"] == 3_225_664  # Appendix I, VGG-16 conv1_2
    assert result["output_hw"] == [224, 224]


def test_simulate_adds_truth_and_verdict(capsys):
    code, out, _ = run(
        capsys,
        "--input",
        "14",
        "--cin",
        "1",
        "--cout",
        "5",
        "--kernel",
        "3",
        "--scheme",
        "gm-eq1",
        "--simulate",
    )
    result = json.loads(out)
    assert code == 0
    assert (result["gap"], result["simulated_gap"], result["verdict"]) == (531, 533, "unsafe")


def test_scalar_flags_mean_square(capsys):
    _, a, _ = run(
        capsys, "--input", "9", "--cin", "3", "--cout", "8", "--kernel", "3", "--stride", "2"
    )
    _, b, _ = run(
        capsys, "--input", "9,9", "--cin", "3", "--cout", "8", "--kernel", "3,3", "--stride", "2,2"
    )
    assert json.loads(a) == json.loads(b)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--input", "0", "--cin", "1", "--cout", "1"], "input"),
        (["--input", "8", "--cin", "-2", "--cout", "1"], "cin"),
        (["--input", "4", "--cin", "1", "--cout", "1", "--kernel", "7"], "kernel"),
        (
            ["--input", "8", "--cin", "1", "--cout", "1", "--kernel", "3", "--padding", "3"],
            "padding",
        ),
        (
            [
                "--input",
                "8",
                "--cin",
                "1",
                "--cout",
                "2",
                "--kernel",
                "3",
                "--stride",
                "2",
                "--scheme",
                "gm-eq1",
            ],
            "stride 1",
        ),
        (
            [
                "--input",
                "8",
                "--cin",
                "1",
                "--cout",
                "2",
                "--scheme",
                "herringbone",
                "--layout",
                "dense",
            ],
            "layout",
        ),
        (["--input", "8", "--cin", "1", "--cout", "2", "--padding", "sideways"], "padding"),
        (["--cin", "1", "--cout", "2"], "--input"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, field):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("rip-bounds: error:")
    assert field in err
    assert "Traceback" not in err


def test_batch_mode_errors_per_line(tmp_path, capsys):
    lines = [
        {"input": [8, 8], "cin": 3, "cout": 6, "kernel": 3, "padding": "same", "simulate": True},
        {"input": [8, 8], "cin": 3},
        {"input": 8, "cin": 3, "cout": 6, "kernel": [3, 3], "stride": 2, "scheme": "gm-eq1"},
        {"input": 12, "cin": 5, "cout": 8, "kernel": 3, "scheme": "corollary1", "simulate": True},
        {
            "input": 6,
            "cin": 2,
            "cout": 4,
            "kernel": [1, 3],
            "padding": [0, 0, 1, 1],
            "layout": "padded",
            "taps": "workspace",
            "order": "col",
            "simulate": True,
        },
    ]
    path = tmp_path / "layers.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    code, out, _ = run(capsys, "--batch", str(path))
    assert code == 0
    results = [json.loads(x) for x in out.splitlines()]
    assert len(results) == 6
    assert results[0]["verdict"] == "tight"
    assert "cout" in results[1]["error"] and "line 2" in results[1]["error"]
    assert "stride 1" in results[2]["error"]
    assert (results[3]["gap"], results[3]["simulated_gap"]) == (149, 149)  # Table 2 row 2
    assert results[4]["order"] == "col" and results[4]["verdict"] == "tight"
    assert "line 6" in results[5]["error"]


def test_missing_batch_file(capsys):
    code, _, err = run(capsys, "--batch", "/nonexistent/layers.jsonl")
    assert code == 2 and "cannot read" in err


def test_console_script_runs_as_module():
    proc = subprocess.run(
        [sys.executable, "-m", "rip.cli.bounds", "--input", "5", "--cin", "1", "--cout", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["gap"] == 0
