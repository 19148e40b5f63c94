"""Where the checkout and the shared reference data are, for tests that need them at
collection time (parametrize lists cannot use fixtures); everything else uses the fixtures
of conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# The benchmarks' results package says which shared files are the paper's models (Table 3's
# eleven MCUNet models, Table 7's keras graphs); tests use the same lists.
sys.path.insert(0, str(REPO / "benchmarks"))
from results.common import KERAS_FILES, MCUNET  # noqa: E402

__all__ = ["KERAS_FILES", "MCUNET", "REPO", "SHARED", "shared_path"]


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test saying what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (CI keeps ../shared beside the checkout)")
    return path
