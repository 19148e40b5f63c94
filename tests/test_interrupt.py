"""Ctrl-C and bounded planning, end to end through the installed ``rip-compile``: SIGINT
during a MILP solve (SCIP catches it itself) stops the compile with exit 130 and writes
nothing, in the serial path and with parallel planning processes; an adversarial model
(1,000 ADDs alive together) is planned in bounded time, with a note saying why the MILP
was not built; ``--time-limit`` bounds the whole planning stage."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from adversarial_models import hard_packing, overlapping_adds

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_graph
from rip.allocator.planning.requirements import requirements
from rip.allocator.planning.strategies import STRATEGIES
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

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


def _interrupt(argv: list[str], env: dict[str, str]) -> tuple[int, str, float, set]:
    """Start rip-compile with its stderr on a terminal (so it shows its stages), send SIGINT
    a few seconds after planning started (the solve runs to its 120 s limit; building the
    model takes well under a second), and return the exit code, stderr, the seconds it
    took to stop, and the children it had. Waiting for the stage line, not a fixed time,
    keeps a slow interpreter start on a loaded machine out of the test."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [RIP_COMPILE, *argv], stdout=subprocess.DEVNULL, stderr=slave, env=env, text=True
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    while b"planning" not in seen and time.monotonic() < deadline and proc.poll() is None:
        if select.select([master], [], [], 0.5)[0]:
            seen += os.read(master, 65536)
    assert b"planning" in seen, seen.decode(errors="replace")
    time.sleep(4.0)  # inside the solve
    children = _children(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    while True:
        try:
            ready = select.select([master], [], [], 1.0)[0]
            chunk = os.read(master, 65536) if ready else b""
        except OSError:  # the terminal closed with the process
            break
        if not chunk and proc.poll() is not None:
            break
        seen += chunk
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, seen.decode(errors="replace"), time.monotonic() - t0, children


def _last_line(text: str) -> str:
    plain = text.replace("\x1b[K", "").replace("\r", "\n")  # the stage line's terminal codes
    return [x for x in plain.split("\n") if x.strip()][-1].strip()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_ctrl_c_during_the_solve_exits_130_and_writes_nothing(hard_model, tmp_path, parallel):
    out = tmp_path / "out"
    env = dict(os.environ, RIP_CACHE_DIR=str(tmp_path / "cache"), RIP_JOBS="3")
    argv = [str(hard_model), "--board", "host", "-o", str(out), "--time-limit", "120"]
    if parallel:  # a report plans every strategy, in worker processes
        argv.append("--report")
    code, err, seconds, children = _interrupt(argv, env)
    assert code == 130, err
    assert _last_line(err) == "rip-compile: interrupted", err
    assert "Traceback" not in err and "time limit" not in err, err
    assert seconds < 30, f"took {seconds:.1f} s to stop"
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
    """Two solves (rip; dual, whose twin tinyengine is planned once), each of which would
    run to the limit: together within one limit, the second with the time the first left."""
    graph = rewrite(read_model(hard_model))
    req = requirements(graph)
    t0 = time.monotonic()
    plans = plan_graph(graph, req, STRATEGIES, PlanOptions(time_limit=5.0), jobs=1)
    seconds = time.monotonic() - t0
    assert seconds < 5.0 + 3.5, f"{seconds:.1f} s"  # first fit, model building, replay
    notes = " ".join(n for plan in plans.values() for n in plan.notes)
    assert "time limit" in notes, notes
