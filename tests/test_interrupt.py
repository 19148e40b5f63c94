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
import shutil
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
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # it exited meanwhile: no children left
        return found
    for task in tasks:
        with contextlib.suppress(OSError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _interrupt(
    argv: list[str], env: dict[str, str], sig: int = signal.SIGINT
) -> tuple[int, str, float, set]:
    """Start rip-compile with its stderr on a terminal (so it shows its stages), send ``sig``
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
    proc.send_signal(sig)
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


# ---- SIGTERM and SIGHUP (issue 22, class 5) ------------------------------------------------------
def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc): children in a new process group or
    session are still children."""
    found, todo = set(), [pid]
    while todo:
        kids = _children(todo.pop())
        todo += sorted(kids - found)
        found |= kids
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive(pids: set[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie waiting for its reaper is not)."""
    alive = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(p)
    return alive


def _stop_during(argv: list[str], env: dict[str, str], sig: int, wanted: str, seconds: float = 240):
    """Start rip-compile, wait until a process named ``wanted`` runs below it (a sleeping
    compiler, a paused QEMU: "during" made certain, not timed), send ``sig``; the exit
    code, stderr and the processes it had below it (pid: name)."""
    proc = subprocess.Popen(
        [RIP_COMPILE, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
    )
    deadline = time.monotonic() + seconds
    below: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        below = _descendants(proc.pid)
        if any(_comm(p).startswith(wanted) for p in below):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail(f"no {wanted} below rip-compile: {proc.communicate()[1]}")
    time.sleep(0.3)
    below = {p: _comm(p) for p in _descendants(proc.pid)}
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, below


def _wrapper(folder: Path, name: str, body: str) -> Path:
    """An executable ``name`` in ``folder`` (first on PATH) that runs ``body``."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return folder


def _nothing_left(tmp_path: Path, out: Path) -> None:
    assert not out.exists(), sorted(p.name for p in out.iterdir())
    assert not [p.name for p in tmp_path.iterdir() if ".rip-" in p.name]


LINUX = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")


@LINUX
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_parallel_planning_stops_the_workers(hard_model, tmp_path, sig):
    """SIGTERM left both planning workers alive (reparented, ~200 MB each): now they die
    with the compile, which exits 128 + N and writes nothing."""
    out = tmp_path / "out"
    env = dict(os.environ, RIP_CACHE_DIR=str(tmp_path / "cache"), RIP_JOBS="3")
    argv = [str(hard_model), "--board", "host", "-o", str(out), "--time-limit", "120", "--report"]
    code, err, seconds, children = _interrupt(argv, env, sig)
    assert code == 128 + sig, err
    assert _last_line(err) == f"rip-compile: stopped by {signal.Signals(sig).name}", err
    assert "Traceback" not in err and seconds < 30, (seconds, err)
    assert children, "planning ran in no worker process"
    time.sleep(0.5)
    assert not _alive(children), "a worker survived"
    _nothing_left(tmp_path, out)
    assert not (tmp_path / "cache").exists()


@LINUX
def test_sigterm_during_a_serial_solve_stops_when_the_solve_returns(hard_model, tmp_path):
    """In one process SCIP holds the interpreter for the whole solve, and (unlike Ctrl-C)
    does not watch for SIGTERM: the compile stops when the solve returns, within the
    planning time limit, with the same cleanup and exit 143."""
    out = tmp_path / "out"
    env = dict(os.environ, RIP_CACHE_DIR=str(tmp_path / "cache"), RIP_JOBS="1")
    argv = [str(hard_model), "--board", "host", "-o", str(out), "--time-limit", "8"]
    code, err, seconds, _ = _interrupt(argv, env, signal.SIGTERM)
    assert code == 143 and _last_line(err) == "rip-compile: stopped by SIGTERM", err
    assert seconds < 8 + 15, f"{seconds:.1f} s"
    _nothing_left(tmp_path, out)
    assert not (tmp_path / "cache").exists()


@LINUX
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_build_stops_make_and_the_compiler(tmp_path, sig):
    """SIGTERM during a build left make and cc running, and the staging folder behind: now
    the whole build's process group goes, the staging folder too, exit 128 + N. The
    compiler is a wrapper that sleeps first, so the signal certainly lands mid-build."""
    from tflite_writer import example_model

    model = tmp_path / "example.tflite"
    model.write_bytes(example_model(0))
    cc = subprocess.run(["sh", "-c", "command -v cc || command -v gcc"], capture_output=True,
                        text=True, check=False).stdout.strip()  # fmt: skip
    if not cc:
        pytest.skip("no C compiler")
    bin_dir = _wrapper(tmp_path / "bin", "cc", f'sleep 300; exec {cc} "$@"')
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", RIP_CACHE_DIR=str(tmp_path))
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    argv = [str(model), "--board", "host", "-o", str(out), "--run", "--placer", "firstfit"]
    code, err, below = _stop_during(argv, env, sig, "sleep")
    assert code == 128 + sig, err
    assert err.strip().splitlines()[-1] == f"rip-compile: stopped by {signal.Signals(sig).name}"
    assert set(below.values()) >= {"make", "sleep"}, below
    time.sleep(0.5)
    assert not _alive(set(below)), [below[p] for p in _alive(set(below))]
    _nothing_left(out.parent, out)


@LINUX
@pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc",
)
def test_sigterm_during_a_qemu_run_stops_qemu(tmp_path):
    """SIGTERM during a QEMU run left QEMU running: now it goes, with the staging folder,
    exit 143. QEMU is started paused (-S), so the run certainly lasts until the signal."""
    from tflite_writer import example_model

    model = tmp_path / "example.tflite"
    model.write_bytes(example_model(0))
    qemu = shutil.which("qemu-system-arm")
    bin_dir = _wrapper(tmp_path / "bin", "qemu-system-arm", f'exec {qemu} "$@" -S')
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", RIP_CACHE_DIR=str(tmp_path))
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    argv = [str(model), "--board", "qemu-m33", "-o", str(out), "--run", "--placer", "firstfit"]
    code, err, below = _stop_during(argv, env, signal.SIGTERM, "qemu-system")
    assert code == 143, err
    assert err.strip().splitlines()[-1] == "rip-compile: stopped by SIGTERM", err
    assert any(name.startswith("qemu-system") for name in below.values()), below
    time.sleep(0.5)
    assert not _alive(set(below)), [below[p] for p in _alive(set(below))]
    _nothing_left(out.parent, out)


@LINUX
def test_a_run_killed_outright_leaves_a_staging_folder_the_next_run_removes(tmp_path):
    """SIGKILL: no cleanup can run. make dies with rip (the parent-death signal); the next
    run into the same -o removes the staging folder the killed one left."""
    from tflite_writer import example_model

    model = tmp_path / "example.tflite"
    model.write_bytes(example_model(0))
    bin_dir = _wrapper(tmp_path / "bin", "cc", "exec sleep 300")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", RIP_CACHE_DIR=str(tmp_path))
    out = tmp_path / "work" / "out"
    out.parent.mkdir()
    argv = [str(model), "--board", "host", "-o", str(out), "--run", "--placer", "firstfit"]
    code, _, below = _stop_during(argv, env, signal.SIGKILL, "sleep")
    assert code == -signal.SIGKILL
    time.sleep(0.5)
    assert not [p for p in _alive(set(below)) if below[p] == "make"], "make outlived rip"
    for p in _alive(set(below)):  # the compiler make started: orphaned, stopped here
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    left = [p.name for p in out.parent.iterdir() if ".rip-new-" in p.name]
    assert left, "SIGKILL left no staging folder (nothing to test)"
    env["PATH"] = os.environ["PATH"]
    done = subprocess.run([RIP_COMPILE, *argv], env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not [p.name for p in out.parent.iterdir() if ".rip-" in p.name]
