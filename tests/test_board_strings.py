"""Strings that reach Make, CMake, C and a compiler command line (issue 22, class 8): a
board file's are checked against a safe character set per field (the refusals are in the
bad-input corpus); the model's name, which comes from its file name, is made a safe token.
Here: the widest strings the rules accept build as plain text, and a model file named to
inject Make and CMake code builds and runs without running any of it."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from tflite_writer import example_model

from rip.boards import DESCRIPTION, load_board
from rip.cli.compile import main
from rip.codegen.emit import EmittedModel
from rip.core.names import is_token, token
from rip.firmware.qemu_project import write_qemu_project

FAST = ("--placer", "firstfit", "--quiet", "--no-cache")
# Every punctuation mark a description may hold, and one flag of each accepted form.
WIDEST_DESCRIPTION = "Board (v2.1): a, b; c'd + e_f / g-h"
WIDEST_FLAGS = ("-mcpu=cortex-m33", "-mthumb", "-march=armv8-m.main+fp+dsp", "-O2", "-g",
                "-ffunction-sections", "-Wno-unused", "-DRIP_X=1.5", "-std=c99")  # fmt: skip


def test_the_widest_accepted_strings_stay_plain_text_in_the_makefile(tmp_path):
    """``make -n`` prints the compile command with the flags verbatim: nothing of the
    board's was expanded, quoted or split."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    assert DESCRIPTION.fullmatch(WIDEST_DESCRIPTION)
    board = replace(load_board("qemu-m33"), description=WIDEST_DESCRIPTION, cflags=WIDEST_FLAGS)
    from rip.allocator.planning.options import PlanOptions
    from rip.allocator.planning.parallel import plan_model
    from rip.allocator.planning.requirements import requirements
    from rip.codegen.emit import emit_model
    from rip.frontend.reader import read_model
    from rip.frontend.rewrite import rewrite

    graph = rewrite(read_model(example_model(0), name="example"))
    req = requirements(graph)
    model: EmittedModel = emit_model(
        graph, req, plan_model(graph, req, "rip", PlanOptions(placer="firstfit")), "rip"
    )
    write_qemu_project(model, tmp_path, board, 0x1234)
    done = subprocess.run(["make", "-n", "-C", str(tmp_path), "model.elf"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert " ".join(WIDEST_FLAGS) in done.stdout
    assert WIDEST_DESCRIPTION in (tmp_path / "Makefile").read_text().splitlines()[0]


@pytest.mark.parametrize(
    "name, safe",
    [
        ("a b", "a_b"),
        ('x"$(shell id)\n', "x___shell_id__"),
        ("", "model"),
        ("ok-1.2+x", "ok-1.2+x"),
    ],
)
def test_names_become_tokens(name: str, safe: str) -> None:
    assert token(name) == safe and is_token(token(name))


def test_a_model_file_named_to_inject_make_and_cmake_code_runs_none_of_it(tmp_path, capsys):
    """The model's name comes from its file name, and goes into Makefile and CMake comments,
    a CMake string, C strings and the result line: a name holding a newline, $(shell ...),
    quotes and ${...} builds and runs as the token rip makes of it."""
    if shutil.which("make") is None or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("needs make and a C compiler")
    name = 'm"\n$(shell touch pwned)\n${CMAKE_COMMAND}") #x'  # make runs in out/, cwd here
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(example_model(0))
    out = tmp_path / "out"
    assert main([str(model), "--board", "host", "-o", str(out), "--run", *FAST]) == 0, (
        capsys.readouterr().err
    )
    assert not list(tmp_path.rglob("pwned"))
    assert json.loads((out / "expected.json").read_text())["model"] == token(name)
    for board in ("pico2", "qemu-m33"):
        assert main([str(model), "--board", board, "-o", str(tmp_path / board), *FAST]) == 0
        for text in (p.read_text() for p in (tmp_path / board).glob("*") if p.is_file()):
            assert "$(shell" not in text and "${CMAKE_COMMAND}" not in text
    assert not list(tmp_path.rglob("pwned"))


def test_a_board_name_outside_the_set_names_no_board(capsys) -> None:
    assert main(["x.tflite", "--board", "../../tmp/evil"]) == 2
    err = capsys.readouterr().err
    assert "unknown board" in err and err.count("\n") == 1


def test_every_shipped_board_file_names_itself() -> None:
    from rip.boards import board_names

    for name in board_names():
        assert load_board(name).name == name and is_token(name)


@pytest.fixture(autouse=True)
def _here(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
