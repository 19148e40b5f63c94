"""Issue 22, class 6 (the model part): a model's weights beyond rip's host limit or the
board's flash are one line before any code is written, and the report path is linear in
ops (20,000 chained RELUs took minutes: the greedy warm start, the plan picture and the
live-bytes sweep each scanned every buffer at every step)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite_writer import ModelBuilder

from rip.cli.compile import main as compile_main
from rip.core.errors import ModelError
from rip.core.limits import MAX_WEIGHT_BYTES
from rip.frontend.liveness import Buffer
from rip.frontend.reader import read_model


def fc_model(n_in: int, n_out: int) -> bytes:
    mb = ModelBuilder()
    x = mb.activation((1, n_in), 0.05, 3, "x")
    w = mb.constant_int8(np.ones((n_out, n_in), dtype=np.int8), 0.01, 0)
    b = mb.bias(np.zeros(n_out, dtype=np.int64), 0.05, 0.01)
    y = mb.activation((1, n_out), 0.2, 0, "y")
    mb.fully_connected(x, w, b, y)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def test_weights_beyond_the_host_limit_are_one_line(tmp_path: Path) -> None:
    n_out = MAX_WEIGHT_BYTES // 4096 + 1
    path = tmp_path / "heavy.tflite"
    path.write_bytes(fc_model(4096, n_out))
    with pytest.raises(ModelError, match=r"constants \(weights\) hold 16,797,700 B, more than"):
        read_model(path)


def test_weights_beyond_the_boards_flash_do_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """2.25 MB of weights on a Pico (2 MiB of flash): exit 3, nothing written, no --force."""
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model(2304, 1024))
    out = tmp_path / "out"
    for force in ([], ["--force"]):
        argv = [str(path), "--board", "pico", "--placer", "firstfit", "--no-cache", "-o", str(out)]
        assert compile_main([*argv, *force]) == 3
        err = capsys.readouterr().err
        want = "(2,363,392 B) and the test input need 2,365,696 B of constant data; the board"
        assert err.count("\n") == 1 and want in err and "has 2,097,152 B" in err
        assert not out.exists()


def chain_model(n: int) -> bytes:
    mb = ModelBuilder()
    x = mb.activation((1, 4), 0.05, 3)
    t = x
    for _ in range(n):
        y = mb.activation((1, 4), 0.05, 3)
        mb.operator("RELU", [t], [y])
        t = y
    mb.inputs([x])
    mb.outputs([t])
    return mb.to_bytes()


def test_the_report_is_linear_in_ops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Counted, not timed: the buffer-pair tests planning and the report make grow as the
    ops do (twice the ops, at most three times the tests; they grew fourfold before)."""
    calls = {"n": 0}
    overlaps, live_at = Buffer.overlaps, Buffer.live_at

    def count_overlaps(self: Buffer, other: Buffer) -> bool:
        calls["n"] += 1
        return overlaps(self, other)

    def count_live_at(self: Buffer, step: int) -> bool:
        calls["n"] += 1
        return live_at(self, step)

    monkeypatch.setattr(Buffer, "overlaps", count_overlaps)
    monkeypatch.setattr(Buffer, "live_at", count_live_at)
    counts = []
    for n in (400, 800):
        path = tmp_path / f"chain{n}.tflite"
        path.write_bytes(chain_model(n))
        calls["n"] = 0
        argv = [str(path), "--board", "host", "--no-cache", "--report", "--time-limit", "30"]
        assert compile_main(argv) == 0
        counts.append(calls["n"])
    capsys.readouterr()
    assert counts[1] <= 3 * counts[0], counts


def test_a_huge_input_on_the_host_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A 1x1x1x2^24 input (its test input an 80 MB C file: gcc took 2.5 GB): exit 3 before
    any file is written."""
    mb = ModelBuilder()
    x = mb.activation((1, 1, 1, 1 << 24), 0.05, 3)
    y = mb.activation((1, 1, 1, 1 << 24), 0.05, 3)
    mb.operator("RELU", [x], [y])
    mb.inputs([x])
    mb.outputs([y])
    path = tmp_path / "wide.tflite"
    path.write_bytes(mb.to_bytes())
    out = tmp_path / "out"
    argv = [str(path), "--board", "host", "--placer", "firstfit", "--no-cache", "-o", str(out)]
    assert compile_main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rip's limit for a board without flash is 4,194,304 B" in err
    assert not out.exists()
