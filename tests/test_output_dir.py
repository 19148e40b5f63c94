"""``-o DIR`` as a transaction (rip.firmware.output_dir via rip.compiler): a failed build or
run, or Ctrl-C, leaves DIR as it was; rip replaces only the files its manifest lists, never
a user's; switching boards leaves no stale files; a bad ``-o`` or ``--plot`` is one line,
exit 2, before any planning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tflite_writer import example_model

from rip import compiler
from rip.boards import load_board
from rip.cli.compile import main
from rip.compiler import Options, compile_model
from rip.core.errors import BuildError, OutputError
from rip.core.terms import Placer
from rip.firmware.output_dir import MANIFEST

FAST = ("--placer", "firstfit", "--quiet", "--no-cache")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "example.tflite"
    path.write_bytes(example_model(0))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes: 'exactly as it was' made checkable."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def leftovers(folder: Path) -> list[str]:
    """Staging or backup folders left beside DIR."""
    return [p.name for p in folder.parent.iterdir() if ".rip-" in p.name]


def compile_to(model: Path, out: Path, board: str = "host", **kw) -> compiler.Compiled:
    return compile_model(
        model, load_board(board), Options(placer=Placer.FIRSTFIT, output=out, cache=False, **kw)
    )


def test_a_new_folder_gets_the_project_and_a_manifest(model, tmp_path):
    out = tmp_path / "a" / "b" / "out"
    c = compile_to(model, out)
    manifest = json.loads((out / MANIFEST).read_text())
    assert set(manifest["files"]) == set(snapshot(out)) - {MANIFEST}
    assert "model.c" in manifest["files"] and "kernels/rip_common.h" in manifest["files"]
    assert c.committed is not None and not c.committed.replaced and not leftovers(out)


def test_a_failed_run_leaves_the_previous_project_exactly_as_it_was(model, tmp_path, monkeypatch):
    out = tmp_path / "out"
    compile_to(model, out, run=True)
    (out / "notes.txt").write_text("mine")  # a user's own file
    before = snapshot(out)

    def broken(board, folder, repeat):
        assert folder != out  # the run happens in the staging folder, not in DIR
        (folder / "half-written.o").write_bytes(b"x")
        raise BuildError("host build failed: boom")

    monkeypatch.setattr(compiler, "run", broken)
    with pytest.raises(BuildError):
        compile_to(model, out, run=True)
    assert snapshot(out) == before and not leftovers(out)


def test_ctrl_c_while_building_leaves_no_folder(model, tmp_path, monkeypatch):
    out = tmp_path / "out"

    def interrupted(board, folder, repeat):
        raise KeyboardInterrupt

    monkeypatch.setattr(compiler, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        compile_to(model, out, run=True)
    assert not out.exists() and not leftovers(out)


def test_a_users_file_is_never_overwritten(model, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "main.c").write_text("int main(void) { return 0; }  /* mine */")
    code = main([str(model), "--board", "host", "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "main.c" in err and "not written by rip" in err
    assert snapshot(out) == {"main.c": b"int main(void) { return 0; }  /* mine */"}
    assert not leftovers(out)


def test_switching_boards_removes_the_previous_boards_files_only(model, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(model), "--board", "pico2", "-o", str(out), *FAST]) == 0
    assert (out / "CMakeLists.txt").is_file()
    (out / "my-notes.md").write_text("keep me")
    capsys.readouterr()
    assert main([str(model), "--board", "host", "-o", str(out), *FAST]) == 0
    said = capsys.readouterr().out
    assert "removed" in said and "CMakeLists.txt" in said and "no other file" in said
    assert not (out / "CMakeLists.txt").exists() and not (out / "pico_sdk_import.cmake").exists()
    assert (out / "Makefile").is_file() and (out / "my-notes.md").read_text() == "keep me"
    manifest = set(json.loads((out / MANIFEST).read_text())["files"])
    assert manifest == set(snapshot(out)) - {MANIFEST, "my-notes.md"}


@pytest.mark.parametrize(
    "where, words",
    [
        (lambda t: t / "file.txt", "is not a folder"),
        (lambda t: t / "file.txt" / "out", "is a file, not a folder"),
        (lambda t: Path("/proc/rip-cannot-write/out"), "cannot write"),
    ],
    ids=["existing-file", "under-a-file", "unwritable"],
)
def test_a_bad_output_path_is_one_line_exit_2_before_planning(
    model, tmp_path, capsys, monkeypatch, where, words
):
    (tmp_path / "file.txt").write_text("x")

    def no_planning(*args, **kwargs):
        raise AssertionError("planned before checking -o")

    monkeypatch.setattr(compiler, "analyse", no_planning)
    code = main([str(model), "--board", "host", "-o", str(where(tmp_path)), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert (tmp_path / "file.txt").read_text() == "x"


@pytest.mark.parametrize(
    "name, words",
    [
        ("plots", "is a folder"),
        ("plan.xyz", "unknown image type"),
        ("nope/plan.png", "no folder"),
        ("/proc/plan.png", "cannot write"),
    ],
)
def test_a_bad_plot_path_is_one_line_exit_2(model, tmp_path, capsys, monkeypatch, name, words):
    (tmp_path / "plots").mkdir()
    monkeypatch.setattr(compiler, "analyse", lambda *a, **k: pytest.fail("planned first"))
    code = main([str(model), "--plot", str(tmp_path / name), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "plots.png").exists()


def test_output_error_is_bad_input():
    assert OutputError.exit_code == 2
