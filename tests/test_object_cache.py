"""The kernel object cache (rip.firmware.object_cache): a hit is the object the compiler
would write, and whatever decides the object (a header, a flag) is in the key."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rip.firmware import object_cache

CC = shutil.which("gcc") or shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="needs a C compiler")


def _project(root: Path, value: int) -> Path:
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    (root / "kernels" / "k.h").write_text(f"#define K_VALUE {value}\n")
    (root / "kernels" / "k.c").write_text('#include "k.h"\nint k(void) { return K_VALUE; }\n')
    return root


def _compile(root: Path, *flags: str) -> tuple[int, bytes]:
    here = os.getcwd()
    os.chdir(root)
    try:
        rc = object_cache.main([str(CC), *flags, "-Ikernels", "-c", "-o", "kernels/k.o",
                                "kernels/k.c"])  # fmt: skip
    finally:
        os.chdir(here)
    return rc, (root / "kernels" / "k.o").read_bytes()


def _entries(cache: Path) -> int:
    return sum(1 for _ in cache.rglob("*.o"))


def test_a_second_project_reuses_the_object_and_a_changed_header_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("RIP_OBJECT_CACHE", str(cache))
    rc, first = _compile(_project(tmp_path / "a", 1), "-O2")
    assert rc == 0 and _entries(cache) == 1
    rc, again = _compile(_project(tmp_path / "b", 1), "-O2")
    assert rc == 0 and again == first and _entries(cache) == 1  # a hit: nothing new stored
    rc, other = _compile(_project(tmp_path / "c", 2), "-O2")
    assert rc == 0 and other != first and _entries(cache) == 2  # the header is in the key
    rc, _ = _compile(_project(tmp_path / "d", 1), "-O0")
    assert rc == 0 and _entries(cache) == 3  # so are the flags


def test_a_failing_compile_stores_nothing_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("RIP_OBJECT_CACHE", str(cache))
    root = _project(tmp_path / "a", 1)
    (root / "kernels" / "k.c").write_text("int k(void) { return missing; }\n")
    here = os.getcwd()
    os.chdir(root)
    try:
        rc = object_cache.main([str(CC), "-c", "-o", "kernels/k.o", "kernels/k.c"])
    finally:
        os.chdir(here)
    assert rc != 0 and _entries(cache) == 0
    assert object_cache.main(["no-such-compiler-here", "-c", "x.c"]) == 127
