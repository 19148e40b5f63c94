"""Issue 22: operators whose outputs nothing reads are removed before planning, with a note
(a dead PAD of a graph input was placed over a live tensor: exit 70 under every strategy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tflite_writer import ModelBuilder

from rip.cli.compile import main as compile_main
from rip.core.operators import Op
from rip.frontend.reader import read_model
from rip.frontend.rewrite import remove_dead_ops, rewrite

PADS = [(0, 0), (1, 1), (1, 1), (0, 0)]


def dead_model(dead: str) -> bytes:
    """x -> RELU -> RELU -> z, with dead ops: ``pad`` a PAD of the graph input (the issue's
    sample), ``chain`` PAD -> RELU -> PAD nothing reads, ``none`` no dead op."""
    mb = ModelBuilder()
    x = mb.activation((1, 8, 8, 4), 0.05, 3, "x")
    y = mb.activation((1, 8, 8, 4), 0.05, 3, "y")
    z = mb.activation((1, 8, 8, 4), 0.05, 3, "z")
    if dead in ("pad", "chain"):
        p = mb.activation((1, 10, 10, 4), 0.05, 3, "p")
        mb.pad(x, PADS, p)
        if dead == "chain":
            q = mb.activation((1, 10, 10, 4), 0.05, 3, "q")
            mb.operator("RELU", [p], [q])
            mb.pad(q, PADS, mb.activation((1, 12, 12, 4), 0.05, 3, "r"))
    mb.operator("RELU", [x], [y])
    mb.operator("RELU", [y], [z])
    mb.inputs([x])
    mb.outputs([z])
    return mb.to_bytes()


@pytest.mark.parametrize(("dead", "removed"), [("pad", 1), ("chain", 3), ("none", 0)])
def test_dead_operators_are_removed_with_a_note(dead: str, removed: int) -> None:
    graph = read_model(dead_model(dead))
    result = rewrite(graph)
    assert [op.kind for op in result.operators] == [Op.RELU, Op.RELU]
    notes = [n for n in result.notes if n.startswith("remove_dead_ops")]
    if removed:
        assert notes == [notes[0]] and f"removed {removed} operators" in notes[0]
        assert "PAD" in notes[0]
    else:
        assert not notes and remove_dead_ops(graph) is graph


@pytest.mark.parametrize("strategy", ["dual", "tinyengine", "rip", "fused"])
def test_a_dead_pad_of_the_input_plans_under_every_strategy(
    strategy: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "dead.tflite"
    path.write_bytes(dead_model("pad"))
    argv = [str(path), "--board", "host", "--strategy", strategy, "--no-cache"]
    assert compile_main([*argv, "--report"]) == 0
    assert "remove_dead_ops: removed 1 operators" in capsys.readouterr().out


def test_a_dead_pad_of_the_input_runs_to_tflms_bytes(tmp_path: Path) -> None:
    path = tmp_path / "dead.tflite"
    path.write_bytes(dead_model("chain"))
    argv = [str(path), "--board", "host", "--placer", "firstfit", "--no-cache", "--quiet"]
    assert compile_main([*argv, "-o", str(tmp_path / "out"), "--run"]) == 0
