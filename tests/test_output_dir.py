"""``-o DIR`` as a transaction (rip.firmware.output_dir via rip.compiler): a failed build or
run, or Ctrl-C, leaves DIR as it was; rip replaces only the files its manifest lists, never
a user's; switching boards leaves no stale files; a bad ``-o`` or ``--plot`` is one line,
exit 2, before any planning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tflite_writer import example_model

from rip import compiler
from rip.boards import load_board
from rip.cli.compile import main
from rip.compiler import Options, compile_model
from rip.core.errors import BuildError, OutputError
from rip.core.terms import Placer
from rip.firmware import output_dir
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


# ---- links inside -o (issue 22, class 1) ------------------------------------------------------
def outside_tree(tmp_path: Path) -> Path:
    """A folder outside -o holding files a link inside -o will point at."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    for name in ("rip_common.h", "model.c", "notes.txt", "sub/keep.txt"):
        (outside / name).write_text(f"the user's {name}\n")
    return outside


def state(folder: Path) -> dict:
    """Names, bytes (or link targets) and modification times under ``folder``: 'nothing
    changes' made checkable."""
    return {
        p.relative_to(folder).as_posix(): (
            os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None,
            p.lstat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
    }


def _kernels(out: Path, outside: Path) -> str:
    shutil.rmtree(out / "kernels")
    (out / "kernels").symlink_to(outside)
    return "kernels"


def _listed_file(out: Path, outside: Path) -> str:
    (out / "model.c").unlink()
    (out / "model.c").symlink_to(outside / "model.c")
    return "model.c"


def _manifest_tmp(out: Path, outside: Path) -> str:
    (out / f"{MANIFEST}.tmp").symlink_to(outside / "notes.txt")
    return f"{MANIFEST}.tmp"


def _manifest(out: Path, outside: Path) -> str:
    (outside / "manifest.json").write_text((out / MANIFEST).read_text())
    (out / MANIFEST).unlink()
    (out / MANIFEST).symlink_to(outside / "manifest.json")
    return MANIFEST


def _dangling(out: Path, outside: Path) -> str:
    (out / "Makefile").unlink()
    (out / "Makefile").symlink_to(outside / "made-by-rip")
    return "Makefile"


LINKS: dict[str, Callable[[Path, Path], str]] = {
    "kernels-folder": _kernels,
    "listed-file": _listed_file,
    "manifest-tmp": _manifest_tmp,
    "manifest": _manifest,
    "dangling-listed-file": _dangling,
}


@pytest.mark.parametrize("how", sorted(LINKS))
def test_a_link_inside_o_is_refused_and_nothing_outside_changes(model, tmp_path, capsys, how):
    """A link inside an existing -o (a folder rip writes, a file the manifest lists, the
    manifest or its temporary file) pointing outside it: exit 2, one line naming the
    link; nothing outside changes and -o stays as it was."""
    out = tmp_path / "out"
    assert main([str(model), "--board", "host", "-o", str(out), *FAST]) == 0
    outside = outside_tree(tmp_path)
    name = LINKS[how](out, outside)
    before_outside, before = state(outside), state(out)
    capsys.readouterr()
    code = main([str(model), "--board", "host", "-o", str(out), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{name} is a symbolic link" in err and "never writes" in err, err
    assert state(outside) == before_outside
    assert state(out) == before and not leftovers(out)


def test_a_link_is_refused_before_planning(model, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main([str(model), "--board", "host", "-o", str(out), *FAST]) == 0
    _kernels(out, outside_tree(tmp_path))
    monkeypatch.setattr(compiler, "analyse", lambda *a, **k: pytest.fail("planned first"))
    assert main([str(model), "--board", "host", "-o", str(out), *FAST]) == 2
    assert "kernels is a symbolic link" in capsys.readouterr().err


def test_a_link_where_the_project_needs_a_folder_is_refused(model, tmp_path, capsys):
    """No manifest yet (a folder of the user's): a link where the project needs a folder
    is found once the project is written, before it is built or moved."""
    out = tmp_path / "out"
    out.mkdir()
    outside = outside_tree(tmp_path)
    (out / "kernels").symlink_to(outside)
    before_outside = state(outside)
    assert main([str(model), "--board", "host", "-o", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert "kernels is a symbolic link" in err and err.count("\n") == 1, err
    assert state(outside) == before_outside
    assert [p.name for p in out.iterdir()] == ["kernels"] and not leftovers(out)


def test_o_itself_may_be_a_link_to_a_folder(model, tmp_path):
    """The user named the link: rip works in the folder it points to."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    compile_to(model, tmp_path / "out")
    assert (real / "model.c").is_file() and (real / MANIFEST).is_file()
    assert (tmp_path / "out").is_symlink() and not leftovers(real)


def test_the_manifest_lists_only_regular_files(model, tmp_path):
    out = tmp_path / "out"
    compile_to(model, out)
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert manifest and all((out / f).is_file() and not (out / f).is_symlink() for f in manifest)


# ---- stale staging folders (class 5) ----------------------------------------------------------
def dead_pid() -> int:
    """A process id with no process behind it."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_later_run_removes_stale_staging_folders_of_its_own(model, tmp_path):
    """A run killed outright (SIGKILL) leaves its staging folder; the next run into the same
    -o removes it, and only it: one of a live process and a user's look-alike stay."""
    out, node, pid = tmp_path / "out", output_dir._node(), dead_pid()
    stale = tmp_path / f".out.rip-new-{node}-{pid}-abc123"
    (stale / "kernels").mkdir(parents=True)
    (stale / "kernels" / "rip_conv.c").write_text("half")
    stale_backup = tmp_path / f".out.rip-old-{node}-{pid}-def456"
    stale_backup.mkdir()
    live = tmp_path / f".out.rip-new-{node}-{os.getppid()}-xyz789"
    live.mkdir()
    users = tmp_path / ".out.rip-new-mine"
    users.mkdir()
    c = compile_to(model, out)
    assert not stale.exists() and not stale_backup.exists()
    assert live.is_dir() and users.is_dir()
    assert c.committed is not None and (out / "model.c").is_file()


def test_a_stale_folder_holding_a_link_is_removed_without_following_it(model, tmp_path):
    out, outside = tmp_path / "out", outside_tree(tmp_path)
    before = state(outside)
    stale = tmp_path / f".out.rip-new-{output_dir._node()}-{dead_pid()}-abc123"
    stale.mkdir()
    (stale / "kernels").symlink_to(outside)
    compile_to(model, out)
    assert not stale.exists() and state(outside) == before
