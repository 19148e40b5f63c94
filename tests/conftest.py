"""Shared fixtures: where the shared reference data lives, and skips when it is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cbuild import kernel_lib, kernel_objs  # noqa: F401  (the C build fixtures)
from paths import REPO, shared_path


@pytest.fixture(scope="session")
def repo() -> Path:
    """The checkout's root (the `rip` package)."""
    return REPO


@pytest.fixture(scope="session")
def paper_tables() -> dict:
    return json.loads(shared_path("reference", "paper-tables.json").read_text())


@pytest.fixture(autouse=True, scope="session")
def _plan_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """The CLI's plan cache goes to a temporary directory, never the user's ~/.cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RIP_CACHE_DIR", str(tmp_path_factory.mktemp("rip-cache")))
    yield
    mp.undo()
