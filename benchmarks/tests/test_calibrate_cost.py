"""make calibrate-cost's layer-by-layer build is the rip plan: its instructions are the
'alone' figures every fused chain's overhead is measured against (a build left to the
selection emitted the fused plan, and the fit saw no overhead). No QEMU here."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rip.boards import load_board
from rip.compiler import analyse
from rip.core.operators import Op
from rip.core.terms import Strategy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks
import calibrate_cost as calibrate

MODEL = Path(__file__).resolve().parents[3] / "shared" / "models" / "mcunet" / "mcunet-vww0.tflite"


@pytest.mark.skipif(not MODEL.exists(), reason=f"{MODEL} absent (../shared beside the checkout)")
def test_the_calibration_builds_the_rip_plan_not_the_selected_one() -> None:
    c = analyse(MODEL, load_board(calibrate.BOARDS[0]), calibrate.rip_options(5.0))
    assert c.strategy == Strategy.RIP
    emitted = c.variants[c.strategy].graph
    assert not any(op.kind == Op.FUSED_CHAIN for op in emitted.operators)
    # the model is one the selection fuses: without the strategy named, the build is fused
    unnamed = replace(calibrate.rip_options(5.0), strategy=None)
    left = analyse(MODEL, load_board(calibrate.BOARDS[0]), unnamed)
    assert left.strategy == Strategy.FUSED
    assert any(op.kind == Op.FUSED_CHAIN for op in left.variants[left.strategy].graph.operators)
