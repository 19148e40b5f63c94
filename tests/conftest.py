"""Shared fixtures: where the shared reference data lives, and skips when it is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cbuild import kernel_lib, kernel_objs  # noqa: F401  (the C build fixtures)

SHARED = Path(__file__).resolve().parents[2] / "shared"
REPO = Path(__file__).resolve().parents[1]


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test saying what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (CI keeps ../shared beside the checkout)")
    return path


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
