"""Where the checkout and the shared reference data are, for tests that need them at
collection time (parametrize lists cannot use fixtures); everything else uses the fixtures
of conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test saying what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (CI keeps ../shared beside the checkout)")
    return path
