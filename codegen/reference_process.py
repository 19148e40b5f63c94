"""TFLite Micro as the reference, isolated in a child process with a time limit.

TFLite Micro is a C++ interpreter loaded into the Python process; on a malformed model it
may crash (SIGSEGV, SIGABRT) or loop, which would take the compiler down with it. Here it
runs in a child (``python -m rip.codegen.reference_process``): the graph goes in on stdin
(pickled), one marked JSON line comes back on stdout. Whatever happens, the caller gets a
``ReferenceOutcome``: ``ok`` with the checksum, or ``refused`` (TFLite Micro declined the
model), ``crashed`` (the child died on a signal or exit code), ``timeout`` (killed after
the limit), each with a one-line reason. ``reference_checksum`` is the same as a drop-in
for ``checksum(reference_outputs(...))``: it raises a ``ReferenceRunError`` whose ``status``
says why there is no reference.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rip.codegen.reference import (
    ArenaUse,
    ReferenceRunError,
    arena_use,
    checksum,
    reference_outputs,
)
from rip.core import jsonio, processes
from rip.frontend.ir import Graph

MARKER = "RIP-REFERENCE "
ARENA = "--arena"  # the child's mode that reports TFLite Micro's arena, not the checksum
DEFAULT_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class ReferenceOutcome:
    """``status`` is ``ok`` (``checksum`` set) or ``refused``, ``crashed``, ``timeout``
    (``reason`` set, one line)."""

    status: str
    checksum: int | None = None
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.status == "ok"


class ReferenceUnavailable(ReferenceRunError):
    """No reference checksum: ``status`` is ``refused``, ``crashed`` or ``timeout``."""

    def __init__(self, outcome: ReferenceOutcome) -> None:
        super().__init__(outcome.reason or outcome.status)
        self.status = outcome.status
        self.outcome = outcome


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_reference(
    model: Path | bytes, graph: Graph, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> ReferenceOutcome:
    """TFLite Micro's checksum of ``model`` on the default test input, computed in a child
    process that is killed after ``timeout`` seconds. Never raises for what the
    interpreter does; ``status`` says what happened."""
    data = Path(model).read_bytes() if isinstance(model, Path) else bytes(model)
    payload = pickle.dumps((data, graph), protocol=pickle.HIGHEST_PROTOCOL)
    try:  # its own process group, dying with rip: never left behind by a signal
        done = processes.run(
            [sys.executable, "-m", "rip.codegen.reference_process"], timeout, input=payload
        )
    except subprocess.TimeoutExpired:
        return ReferenceOutcome(
            "timeout", reason=f"TFLite Micro did not finish within {timeout:g} s (killed)"
        )
    except OSError as e:
        return ReferenceOutcome("crashed", reason=f"cannot start the reference process ({e})")
    stdout = done.stdout.decode(errors="replace")
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            try:
                answer = json.loads(line[len(MARKER) :])
            except json.JSONDecodeError:
                break
            if "checksum" in answer:
                return ReferenceOutcome("ok", checksum=int(answer["checksum"]))
            return ReferenceOutcome("refused", reason=_one_line(str(answer.get("refused"))))
    stderr = (
        _one_line(done.stderr.decode(errors="replace").strip().splitlines()[-1])
        if (done.stderr.strip())
        else ""
    )
    how = (
        f"on {_signal_name(-done.returncode)}"
        if done.returncode < 0
        else f"with exit code {done.returncode}"
    )
    detail = f": {stderr}" if stderr else ""
    return ReferenceOutcome("crashed", reason=f"TFLite Micro crashed {how}{detail}")


def reference_checksum(
    model: Path | bytes, graph: Graph, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> int:
    """The checksum, or ``ReferenceUnavailable`` (a ``ReferenceRunError``) naming why not."""
    outcome = run_reference(model, graph, timeout)
    if outcome.checksum is None:
        raise ReferenceUnavailable(outcome)
    return outcome.checksum


def run_arena_use(model: Path | bytes, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> ArenaUse:
    """TFLite Micro's arena for ``model`` (`reference.arena_use`), in a child process as
    the checksum is (the interpreter aborts on some models it cannot allocate); a
    ReferenceRunError saying why when there is none."""
    data = Path(model).read_bytes() if isinstance(model, Path) else bytes(model)
    cmd = [sys.executable, "-m", "rip.codegen.reference_process", ARENA]
    try:
        done = processes.run(cmd, timeout, input=data)
    except subprocess.TimeoutExpired:
        raise ReferenceRunError(f"TFLite Micro did not allocate within {timeout:g} s") from None
    for line in done.stdout.decode(errors="replace").splitlines():
        if line.startswith(MARKER):
            answer = json.loads(line[len(MARKER) :])
            if "head" in answer:
                return ArenaUse(int(answer["head"]), int(answer["tail"]))
            raise ReferenceRunError(_one_line(str(answer.get("refused"))))
    how = f"on {_signal_name(-done.returncode)}" if done.returncode < 0 else "without an answer"
    raise ReferenceRunError(f"TFLite Micro's allocation ended {how}")


def _arena_child() -> int:
    try:
        use = arena_use(sys.stdin.buffer.read())
        answer: dict = {"head": use.head, "tail": use.tail}
    except Exception as e:  # the interpreter's own refusal
        answer = {"refused": f"TFLite Micro cannot allocate the model: {e}"}
    sys.stdout.write(MARKER + jsonio.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


def _child() -> int:
    if sys.argv[1:] == [ARENA]:
        return _arena_child()
    data, graph = pickle.loads(sys.stdin.buffer.read())
    try:
        answer: dict = {"checksum": checksum(reference_outputs(data, graph))}
    except ReferenceRunError as e:
        answer = {"refused": str(e)}
    except Exception as e:  # the interpreter's own exceptions: a refusal, not a crash
        answer = {"refused": f"TFLite Micro failed: {type(e).__name__}: {e}"}
    sys.stdout.write(MARKER + jsonio.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child())
