"""The paper's model sets are written twice, for the tests (tests/paths.py) and for the
results page (benchmarks/results/common.py), so that no test imports a benchmark: the two
must be the same lists."""

from __future__ import annotations

import sys
from pathlib import Path

import paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks
from results import common


def test_the_tests_and_the_results_page_use_the_same_models() -> None:
    assert paths.MCUNET == common.MCUNET
    assert paths.KERAS_FILES == common.KERAS_FILES
