"""Environment errors (issue 22, class 9), each its own one-line message and exit code: a
full disk (exit 6), a mount point inside ``-o`` (exit 2, before planning), ``-o`` itself a
mount point (works: the staging folder goes inside it). The mounts are real: tmpfs in a
private mount namespace (``unshare -m``, root only), so nothing outside the test sees
them; a full device is also ``/dev/full``."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tflite_writer import example_model

RIP = Path(sys.executable).parent
FAST = ["--placer", "firstfit", "--quiet", "--no-cache"]


def can_mount() -> bool:
    if not shutil.which("unshare") or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


MOUNTS = pytest.mark.skipif(not can_mount(), reason="needs root and unshare -m (tmpfs mounts)")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "example.tflite"
    path.write_bytes(example_model(0))
    return path


def in_namespace(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``script`` (sh) in a private mount namespace: its mounts vanish with it."""
    return subprocess.run(
        ["unshare", "-m", "sh", "-ec", script],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else ""


# ---- a full disk: exit 6 ------------------------------------------------------------------
def test_a_full_device_behind_rip_uf2_is_exit_6_and_the_device_stays(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    (tmp_path / "a.bin").write_bytes(b"\x01" * 300)
    done = subprocess.run(
        [RIP / "rip-uf2", tmp_path / "a.bin", "-o", "/dev/full", "--family", "rp2040"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 6, done.stderr
    assert done.stderr.count("\n") == 1 and "no space left on the device" in done.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # written to, never replaced


def test_a_full_disk_behind_stdout_is_exit_6(model):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [RIP / "rip-compile", model, "--board", "host", "--json", *FAST],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 6, done.stderr
    assert done.stderr.count("\n") == 1 and "no space left on the device" in done.stderr


@MOUNTS
def test_a_full_disk_under_o_is_exit_6_and_the_previous_project_survives(model, tmp_path):
    """A file system of one and a half projects holds one project but not a second one
    being staged beside it: ENOSPC while writing is one line, exit 6 (was exit 70), and the
    previous project is exactly as it was."""
    sized = tmp_path / "sized"
    first = subprocess.run([RIP / "rip-compile", model, "--board", "host", "-o", sized, *FAST],
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert first.returncode == 0, first.stderr
    # a tmpfs counts whole pages: a project's pages, and half again
    pages = sum(-(-f.stat().st_size // 4096) for f in sized.rglob("*") if f.is_file())
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    compile_ = f"{RIP / 'rip-compile'} {model} --board host -o {mnt}/out {' '.join(FAST)}"
    done = in_namespace(
        f"mount -t tmpfs -o size={pages * 6}k tmpfs {mnt}\n"
        f"{compile_} > /dev/null\n"
        f"find {mnt}/out -type f | sort | xargs md5sum > {tmp_path}/before\n"
        f"rc=0; {compile_} 2> {tmp_path}/err > /dev/null || rc=$?\n"
        f"find {mnt}/out -type f | sort | xargs md5sum > {tmp_path}/after\n"
        f"ls -a {mnt} > {tmp_path}/left\n"
        "exit $rc"
    )
    err = (tmp_path / "err").read_text()
    assert done.returncode == 6, (done.returncode, done.stderr, err)
    assert err.count("\n") == 1 and "no space left on the device" in err, err
    assert "nothing was changed in -o" in err, err
    assert (tmp_path / "before").read_text() == (tmp_path / "after").read_text()
    assert (tmp_path / "left").read_text().split() == [".", "..", "out"]


# ---- mount points inside -o: exit 2 before planning ----------------------------------------
@MOUNTS
@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_a_mount_point_inside_o_is_refused_before_planning(model, tmp_path, kind):
    """A folder of the project that is another file system (a tmpfs) or a bind mount of
    the same one: a rename into it fails (EXDEV; was exit 70 after the whole compile).
    Now one line naming it, exit 2, before planning, and -o as it was."""
    out = tmp_path / "out"
    first = subprocess.run(
        [RIP / "rip-compile", model, "--board", "host", "-o", out, *FAST],
        capture_output=True,
        text=True,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    before = files(out)
    source = tmp_path / "elsewhere"
    source.mkdir()
    mount = (
        f"mount -t tmpfs tmpfs {out}/kernels"
        if kind == "tmpfs"
        else f"mount --bind {source} {out}/kernels"
    )
    done = in_namespace(
        f"{mount}\n"
        f"exec {RIP / 'rip-compile'} {model} --board host -o {out} --report {' '.join(FAST)}"
    )
    assert done.returncode == 2, done.stderr
    line = last_line(done.stderr)
    assert done.stderr.count("\n") == 1 and "kernels is on another file system" in line, line
    assert done.stdout == ""  # refused before the report: nothing was planned
    assert files(out) == before and not [p for p in tmp_path.iterdir() if ".rip-" in p.name]


@MOUNTS
def test_o_itself_a_mount_point_is_written_with_the_staging_folder_inside_it(model, tmp_path):
    """-o a mount point (a USB stick, a container's volume): staging beside it would cross
    file systems, so it goes inside it; the project is written and nothing is left."""
    out = tmp_path / "out"
    out.mkdir()
    done = in_namespace(
        f"mount -t tmpfs tmpfs {out}\n"
        f"{RIP / 'rip-compile'} {model} --board host -o {out} {' '.join(FAST)}\n"
        f"ls -a {out} > {tmp_path}/inside\n"
        f"{RIP / 'rip-compile'} {model} --board host -o {out} {' '.join(FAST)}\n"
        f"ls -a {out} > {tmp_path}/again\n"
    )
    assert done.returncode == 0, done.stderr
    for name in ("inside", "again"):
        listing = (tmp_path / name).read_text().split()
        assert "model.c" in listing and ".rip-manifest.json" in listing, listing
        assert not [n for n in listing if ".rip-new-" in n or ".rip-old-" in n], listing
    assert not [p for p in tmp_path.iterdir() if ".rip-" in p.name]
