"""Ctrl-C and bounded planning, end to end through the installed ``rip-compile``: SIGINT
during a MILP solve (SCIP catches it itself) stops the compile with exit 130 and writes
nothing, in the serial path and with parallel planning processes; an adversarial model
(1,000 ADDs alive together) is planned in bounded time, with a note saying why the MILP
was not built; ``--time-limit`` bounds the whole planning stage."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from adversarial_models import hard_packing, overlapping_adds

RIP_COMPILE = str(Path(sys.executable).parent / "rip-compile")


@pytest.fixture(scope="module")
def hard_model(tmp_path_factory) -> Path:
    """A packing the MILP does not prove optimal within a minute (it runs to the limit)."""
    path = tmp_path_factory.mktemp("models") / "hard.tflite"
    path.write_bytes(hard_packing())
    return path


def _children(pid: int) -> set[int]:
    """Child process ids of ``pid`` (Linux /proc), to check none outlive an interrupt."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _interrupt(argv: list[str], env: dict[str, str], after: float) -> tuple[int, str, float, set]:
    """Start rip-compile, send SIGINT ``after`` seconds later (mid-solve), and return its
    exit code, stderr, the seconds it took to stop, and the children it had."""
    proc = subprocess.Popen(
        [RIP_COMPILE, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    time.sleep(after)
    children = _children(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    return proc.returncode, err, time.monotonic() - t0, children


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_ctrl_c_during_the_solve_exits_130_and_writes_nothing(hard_model, tmp_path, parallel):
    out = tmp_path / "out"
    env = dict(os.environ, RIP_CACHE_DIR=str(tmp_path / "cache"), RIP_JOBS="3")
    argv = [str(hard_model), "--board", "host", "-o", str(out), "--time-limit", "120"]
    if parallel:  # a report plans every strategy, in worker processes
        argv.append("--report")
    code, err, seconds, children = _interrupt(argv, env, after=6.0)
    assert code == 130, err
    assert err == "rip-compile: interrupted\n", err
    assert seconds < 20, f"took {seconds:.1f} s to stop"
    assert not out.exists() and not (tmp_path / "cache").exists()
    if parallel:
        assert children, "planning ran in no worker process"
        time.sleep(0.5)
        assert not [c for c in children if Path(f"/proc/{c}").exists()], "a worker survived"


def test_a_model_too_big_for_the_milp_is_planned_by_first_fit_with_a_note(tmp_path):
    """1,000 ADDs alive together: half a million ordering binaries. The model was built
    before (minutes, 7.7 GB); now the cap refuses it and first fit plans, saying why."""
    model = tmp_path / "adds.tflite"
    model.write_bytes(overlapping_adds(1000))
    t0 = time.monotonic()
    proc = subprocess.run(
        [RIP_COMPILE, str(model), "--board", "host", "--json", "--no-cache", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert seconds < 60, f"{seconds:.1f} s"
    report = json.loads(proc.stdout)
    notes = " ".join(report["notes"])
    assert "binaries" in notes and "first-fit plan" in notes, notes


def test_time_limit_bounds_the_whole_planning_stage(hard_model):
    """Three strategies, each of which would run to the limit: together within it."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [RIP_COMPILE, str(hard_model), "--board", "host", "--json", "--no-cache", "--quiet",
         "--time-limit", "4"],
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, RIP_JOBS="1"),
    )  # fmt: skip
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert seconds < 4 + 10, f"{seconds:.1f} s"  # read, first fit and replay on top
    report = json.loads(proc.stdout)
    notes = " ".join(n for s in report["strategies"].values() for n in s.get("notes", []))
    assert "time limit" in notes, notes
