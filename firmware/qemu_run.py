"""Running an emulated board's firmware: qemu-system-arm with UART0 on a local TCP socket,
read through pyserial (``socket://``) by the same code rip-verify uses for a real board.

QEMU is always stopped before these functions return: after the result line, on a
timeout, on an error and on Ctrl-C (KeyboardInterrupt), so no emulator is left running.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import serial

from rip.boards import Board, load_board
from rip.codegen.templating import render
from rip.core import processes
from rip.core.errors import FirmwareError, NoAnswerError, RipError
from rip.firmware.host_project import read_expected
from rip.firmware.qemu_project import (
    build_qemu_project,
    dual_board,
    qemu_args,
    require_qemu,
)
from rip.firmware.result import Result
from rip.firmware.serial_port import (
    MAX_WAIT_SECONDS,
    LineReader,
    check_wait,
    open_port,
    wait_for_result,
)
from rip.firmware.tools import run_tool

QEMU_HINT = "apt-get install qemu-system-arm"
CONNECT_SECONDS = 10.0  # QEMU opens its socket within a fraction of a second


@dataclass(frozen=True)
class QemuRun:
    """What the firmware said: its result (a Result, a RIP-ERROR line, or None when it
    printed no result line) and every line it printed before."""

    result: Result | str | None
    lines: list[str]
    seconds: float


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect(port: int, proc: subprocess.Popen) -> serial.Serial:
    """The pyserial link to QEMU's UART socket, retried until QEMU listens."""
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        if proc.poll() is not None:
            err = (proc.stderr.read() if proc.stderr else "").strip()
            raise RipError(f"qemu-system-arm exited ({proc.returncode}) before it listened: {err}")
        try:
            return open_port(f"socket://127.0.0.1:{port}")
        except RipError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def run_elf(
    elf: Path,
    board: Board,
    timeout: float,
    until: str | None = None,
    extra_args: Sequence[str] = (),
    settle: float = 0.0,
) -> QemuRun:
    """Run ``elf`` on the board's QEMU machine until the firmware prints its result line
    (or, with ``until``, a line starting so), reports an error, or ``timeout`` seconds
    pass; QEMU is stopped in every case. ``extra_args`` go to QEMU (a ``-plugin``), and
    ``settle`` seconds are left for it to exit by itself afterwards (the firmware exits
    after its result line, and a plugin writes what it measured when QEMU exits)."""
    check_wait(timeout)
    require_qemu(board)
    qemu = shutil.which("qemu-system-arm")
    if qemu is None:
        raise RipError(f"running on {board.name} needs qemu-system-arm ({QEMU_HINT})")
    port = _free_port()
    cmd = [qemu, *qemu_args(board), "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on",
           "-kernel", str(elf), *extra_args]  # fmt: skip
    t0 = time.monotonic()
    # its own process group, dying with rip: stopped on Ctrl-C and SIGTERM, or if rip is killed
    proc = processes.spawn(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        link = _connect(port, proc)
        lines: list[str] = []
        try:
            if until is None:
                result = wait_for_result(link, timeout, collect=lines)
            else:
                result = None
                for line in LineReader(link).lines(time.monotonic() + timeout):
                    lines.append(line)
                    if line.startswith(until):
                        break
        finally:
            link.close()
        if settle:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=settle)
    finally:  # also on Ctrl-C and SIGTERM: no QEMU is left running
        processes.stop(proc)
    return QemuRun(result, lines, time.monotonic() - t0)


def default_timeout(board: Board, macs: int | None) -> float:
    """Seconds to wait for a result: the expected emulation time of a model of ``macs``
    multiply-accumulates (board file estimates), four times over, and never under a
    minute."""
    if not macs or not board.instructions_per_second_estimate:
        return 600.0
    seconds = macs * board.cycles_per_mac_estimate / board.instructions_per_second_estimate
    return min(MAX_WAIT_SECONDS, max(60.0, 4.0 * seconds))


Runner = Callable[[Path, Board, float], QemuRun]


def run_on_qemu(project_dir: Path, board: Board | None = None, timeout: float | None = None,
                build: bool = True, runner: Runner = run_elf,
                slowdown: float = 1.0) -> Result:  # fmt: skip
    """Build (``make``) and run the project rip-compile wrote for an emulated board; its
    Result. A RIP-ERROR line is returned as a Result-less error (RipError, exit 1); no
    result line within ``timeout`` is a NoAnswerError (exit 2). ``runner`` runs the ELF
    (``run_elf``, or a run under a plugin ``slowdown`` times slower, which the default
    timeout allows for). A two-core project (expected.json's ``cores``) runs on the board's
    two-core machine; its instructions come from a run under the two_core_count plugin
    (``rip.timing.two_core_run.run_two_core_project``, the critical path and each core's
    busy instructions and idle share), so ``runner`` must be that run's."""
    expected = read_expected(project_dir)
    if board is None:
        board = load_board(str(expected.get("board")))
    if expected.get("cores", 1) == 2:
        board = dual_board(board)
        if runner is run_elf:  # SysTick counts both cores' instructions as one: no figure
            raise FirmwareError(
                f"{project_dir}: a two-core project runs under its plugin "
                "(rip.timing.two_core_run.run_two_core_project)"
            )
    elf = build_qemu_project(project_dir, board) if build else project_dir / "model.elf"
    if timeout is None:
        timeout = slowdown * default_timeout(board, expected.get("macs"))
    run = runner(elf, board, timeout)
    if run.result is None:
        raise NoAnswerError(
            f"{board.name} ({board.qemu_machine}) printed no result line within {timeout:g} s"
        )
    if isinstance(run.result, str):
        raise FirmwareError(f"{board.name}: the firmware reported an error: {run.result}")
    return run.result


def is_emulated(expected: dict) -> bool:
    """True when expected.json describes a project for an emulated (QEMU) board."""
    return bool(expected.get("qemu_machine"))


def calibrate(board: Board, work: Path, iterations: int = 1_000_000) -> tuple[int, int]:
    """(instructions, SysTick ticks) of a loop of known length on the board's machine,
    built with the board's runtime: instructions / ticks is what the board file's
    ``instructions_per_tick`` must be."""
    require_qemu(board)
    work.mkdir(parents=True, exist_ok=True)
    ctx = {"board": board, "profile": False, "error_prefix": "RIP-ERROR", "iterations": iterations,
           "cores": 1}  # fmt: skip
    for name, template in (
        ("calibrate.c", "calibrate.c.j2"),
        ("startup.c", "startup.c.j2"),
        ("rip_qemu.h", "rip_qemu.h.j2"),
        ("link.ld", "link.ld.j2"),
    ):
        (work / name).write_text(render(f"qemu/{template}", **ctx), encoding="utf-8")  # fmt: skip
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        raise RipError(f"calibrating {board.name} needs arm-none-eabi-gcc")
    elf = work / "calibrate.elf"
    proc = run_tool(
        [gcc, *board.cflags, "-std=c99", "-Wall", "-Wextra", "-Werror", "-nostartfiles",
         "-T", str(work / "link.ld"), f"-I{work}", str(work / "calibrate.c"),
         str(work / "startup.c"), "-o", str(elf)],
        "calibration build",
    )  # fmt: skip
    if proc.returncode != 0:
        raise RipError(f"calibration build failed: {proc.stderr.strip()[-500:]}")
    run = run_elf(elf, board, 60.0, until="RIP-CALIBRATE")
    line = next((x for x in run.lines if x.startswith("RIP-CALIBRATE")), None)
    if line is None:
        raise NoAnswerError(f"{board.name}: the calibration printed nothing")
    fields = dict(part.split("=") for part in line.split()[1:])
    return int(fields["instructions"]), int(fields["ticks"])
