"""JSON rip writes is valid JSON, and JSON it reads holds finite numbers (issue 22, class 4):
no NaN or Infinity can be written (every writer goes through ``rip.core.jsonio``, checked
over the source tree), none is read, and an ``expected.json`` written for the most extreme
board a board file may describe still holds finite numbers rip-verify accepts."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest
from paths import REPO
from tflite_writer import example_model

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.boards import FIELD_RULES, load_board
from rip.cli.verify import _expected, default_timeout_for
from rip.codegen.emit import emit_model
from rip.core import jsonio
from rip.firmware.pico_project import write_pico_project
from rip.firmware.serial_port import MAX_WAIT_SECONDS
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

WRITERS = re.compile(r"\bjson\.dumps?\(")


def sources() -> list[Path]:
    """Every Python file of rip (the package and its benchmarks), not the tests."""
    skip = {".venv", "tests", "build", ".git"}
    return [
        p
        for p in sorted(REPO.rglob("*.py"))
        if not skip & set(p.relative_to(REPO).parts) and not p.name.startswith(".")
    ]


def test_every_json_writer_goes_through_jsonio() -> None:
    found = [
        f"{p.relative_to(REPO)}:{k}"
        for p in sources()
        if p != REPO / "core" / "jsonio.py"
        for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if WRITERS.search(line)
    ]
    assert len(sources()) > 50 and not found, found


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1.0, {"x": math.nan}]])
def test_dumps_refuses_what_json_has_not(value) -> None:
    with pytest.raises(ValueError):
        jsonio.dumps(value)
    assert "NaN" in json.dumps(value) or "Infinity" in json.dumps(value)  # what it prevents


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", '{"a": [-1e999]}'])
def test_loads_refuses_non_finite_numbers(text: str) -> None:
    with pytest.raises(ValueError):
        jsonio.loads(text)
    assert json.loads(text) is not None  # Python's own json takes it


def test_loads_keeps_what_json_means() -> None:
    assert jsonio.loads('{"a": 1.5e300, "b": [0, -2, "x"], "c": null}') == {
        "a": 1.5e300,
        "b": [0, -2, "x"],
        "c": None,
    }


def test_expected_json_of_the_most_extreme_board_is_finite(tmp_path: Path) -> None:
    """The board file's largest cycles-per-MAC and smallest clock, and a model of 2^62 MACs:
    expected.json's inference time is finite and rip-verify's wait is capped at a day."""
    graph = rewrite(read_model(example_model(0), name="example"))
    req = requirements(graph)
    model = emit_model(
        graph, req, plan_model(graph, req, "rip", PlanOptions(placer="firstfit")), "rip"
    )
    board = replace(
        load_board("pico"),
        cycles_per_mac_estimate=FIELD_RULES["cycles_per_mac_estimate"].high,
        clock_hz=1,
    )
    write_pico_project(model, tmp_path, board, 0x1234, macs=1 << 62)
    text = (tmp_path / "expected.json").read_text()
    data = jsonio.loads(text)
    assert math.isfinite(data["expected_inference_seconds"])
    assert default_timeout_for(_expected(tmp_path)) == MAX_WAIT_SECONDS
