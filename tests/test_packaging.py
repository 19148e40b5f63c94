"""The wheel is self-contained: data files ship inside it and the CLI runs from any
directory without the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from paths import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA_DIRS = ("kernels", "templates", "boards", "firmware/rp2040js")  # rp2040js: --emulate's runner


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr[-2000:]}")
    (path,) = out.glob("rip-*.whl")
    return path


def test_wheel_contains_packages_and_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in (
        "rip/__init__.py",
        "rip/allocator/theory/bounds.py",
        "rip/allocator/theory/simulate.py",
        "rip/cli/bounds.py",
        "rip/frontend/ir.py",
    ):
        assert module in names
    for folder in DATA_DIRS:
        for f in (REPO / folder).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                assert f"rip/{f.relative_to(REPO).as_posix()}" in names
    assert not any(n.startswith("rip/tests/") for n in names)
    assert not any("tflite_writer" in n for n in names)  # test machinery stays out


def test_every_package_folder_is_listed_in_pyproject():
    """A folder of Python modules that pyproject.toml does not list would silently be left
    out of the wheel (the repository root is the `rip` package)."""
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    skip = {"tests", "benchmarks", "examples", "build", "docs", "dist"}
    folders = {
        "rip." + ".".join(init.parent.relative_to(REPO).parts)
        for init in REPO.rglob("__init__.py")
        if not ({".venv", ".git"} | skip) & set(init.relative_to(REPO).parts)
        and init.parent != REPO
    }
    assert folders <= listed, f"not in pyproject.toml's packages: {sorted(folders - listed)}"
    assert {p for p in listed if p != "rip"} <= folders  # and nothing listed is gone


def test_cli_runs_from_installed_wheel_elsewhere(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    # -I would drop PYTHONPATH; -P keeps the cwd out of sys.path so the checkout is unseen.
    proc = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            "import rip, sys; from rip.cli.bounds import main; "
            "print(rip.__file__, file=sys.stderr); "
            "sys.exit(main(['--input', '8', '--cin', '3', '--cout', '6', '--kernel', '3']))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(target) in proc.stderr  # imported from the wheel, not the checkout
    assert json.loads(proc.stdout)["gap"] >= 0
