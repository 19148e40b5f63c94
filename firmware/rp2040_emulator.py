"""A Pico's firmware run without the board: the UF2 the Pico SDK built, on rp2040js.

rip's runner (``firmware/rp2040js/run.mjs``, Node) loads the RP2040 boot ROM and the UF2,
starts core 0 at the start of flash and serves the firmware's UART0 and its USB CDC serial
port on two local TCP sockets. Both are read through pyserial (``socket://``) by the reader
rip-verify uses for a real board (``serial_port.wait_for_result``): UART0's result line is
the run's result, and the USB port's must agree with it. The runner stops by itself at a
bound of emulated cycles and one of wall time, and is killed with its process group when
this module is done with it: after the result line, on an error, Ctrl-C or SIGTERM.

What the figure means: the RP2040 firmware measures microseconds (``unit=us``) with the
SDK's timer, which rp2040js advances by its count of core cycles at the 125 MHz system
clock, so microseconds x 125 is rp2040js's cycle count of the inference, to within 125
cycles. rp2040js charges flash reads like SRAM reads (no XIP cache, no wait states),
emulates core 0 only and has its own instruction costs (about 1.3 cycles per ARMv6-M
instruction): a real Pico takes longer.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import serial

from rip.boards import EMULATORS, Board
from rip.core import processes
from rip.core.errors import (
    BuildError,
    EmulatorMissing,
    FirmwareError,
    NoAnswerError,
    NoDeviceError,
    RipError,
)
from rip.firmware.host_project import read_expected
from rip.firmware.pico_project import app_name, expected_inference_seconds
from rip.firmware.result import Result
from rip.firmware.rp2040js_install import install, locked_version, node
from rip.firmware.serial_port import LineReader, open_port, wait_for_result

BOOTROM_ENV = "RIP_RP2040_BOOTROM"
BOOTROM_BYTES = 16384
BOOTROM_HINT = (
    "rp2040js does not ship the RP2040 boot ROM (16,384 B): build it from "
    "github.com/raspberrypi/pico-bootrom-rp2040 or take the B1 image rp2040js's demo loads "
    f"(github.com/wokwi/rp2040js, demo/bootrom.ts), and give it with --bootrom FILE or "
    f"{BOOTROM_ENV}=FILE"
)
# Bounds. Emulated: the boot (boot ROM, clocks, USB enumeration: about 0.1 s measured) and
# twice the board file's generous estimate of one inference, as rip-verify waits for a real
# board (the estimate is about three times what rp2040js takes). Wall: that many cycles at
# a floor of rp2040js's speed (about 20 M emulated cycles/s here, 7 M on 2 cores under a
# load of 14), after the start.
BOOT_SECONDS = 1.0
UNKNOWN_INFERENCE_SECONDS = 10.0  # a project whose expected.json carries no MAC count
CYCLES_PER_WALL_SECOND_FLOOR = 5e6
START_SECONDS = 30.0  # node starting and the runner listening
USB_SECONDS = 10.0  # after UART0's line, for the same line on USB CDC
SERIALS = ("uart", "usb")


@dataclass(frozen=True)
class EmulatedRun:
    """What the emulated board said: UART0's result (a Result, a RIP-ERROR line, or None
    when there was none), the USB CDC port's, UART0's lines up to the result, and the
    runner's own end record when it stopped by itself (a bound, a BKPT: ``end``)."""

    result: Result | str | None
    usb_result: Result | str | None
    lines: list[str]
    end: dict | None
    max_cycles: int
    wall_seconds: float
    emulator: str

    @property
    def result_line(self) -> Result | None:
        """UART0's result, when it printed a result line."""
        return self.result if isinstance(self.result, Result) else None

    @property
    def emulated_cycles(self) -> int | None:
        """rp2040js's cycle count of the inference: the firmware's microseconds at its clock."""
        r = self.result_line
        if r is None or r.unit != "us" or not r.clock_hz:
            return None
        return round(r.cycles * r.clock_hz / 1e6)


def check_board(board: Board) -> None:
    """``--emulate`` for this board, or one line saying why not."""
    if not board.pico_board:
        other = "--run runs it under QEMU" if board.qemu_machine else "--run runs it here"
        raise RipError(f"--emulate runs Pico firmware; {board.name} is not a Pico ({other})")
    if board.emulator != EMULATORS[0]:
        raise RipError(
            f"--emulate: nothing here emulates the {board.chip} ({board.name}); rp2040js runs "
            "RP2040 (pico) firmware only"
        )


def bootrom_path(given: Path | None = None) -> Path:
    """The boot ROM image: ``given`` (``--bootrom``), else ``$RIP_RP2040_BOOTROM``; one line
    saying where to get it when there is none."""
    where = "--bootrom" if given is not None else BOOTROM_ENV
    raw = str(given) if given is not None else os.environ.get(BOOTROM_ENV, "").strip()
    if not raw:
        raise EmulatorMissing(f"--emulate needs the RP2040 boot ROM: {BOOTROM_HINT}")
    path = Path(raw).expanduser()
    if not path.is_file():
        raise EmulatorMissing(f"{where} {path}: no such file; {BOOTROM_HINT}")
    size = path.stat().st_size
    if size != BOOTROM_BYTES:
        raise RipError(f"{where} {path}: {size:,} B, but the RP2040 boot ROM is 16,384 B")
    return path


def prepare(board: Board, bootrom: Path | None = None) -> Path:
    """Everything ``--emulate`` needs, checked before a build: the board, the boot ROM
    (returned), Node.js and the runner with its locked packages (installed on first use)."""
    check_board(board)
    path = bootrom_path(bootrom)
    install()
    return path


def cycle_bound(board: Board, macs: int | None) -> int:
    """Emulated cycles to wait for the first result line (see BOOT_SECONDS)."""
    inference = expected_inference_seconds(board, macs) if macs else None
    seconds = BOOT_SECONDS + 2.0 * (inference or UNKNOWN_INFERENCE_SECONDS)
    return int(board.clock_hz * seconds)


def wall_bound(max_cycles: int) -> float:
    return START_SECONDS + max_cycles / CYCLES_PER_WALL_SECOND_FLOOR


class _Records:
    """The runner's stdout, one JSON object a line, read by a thread into a queue."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.queue: queue.Queue[dict | None] = queue.Queue()
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = {"text": line.strip()}
            self.queue.put(record if isinstance(record, dict) else {"text": line.strip()})
        self.queue.put(None)  # the runner has gone

    def next(self, timeout: float) -> dict | None:
        """The next record; None when the runner has gone or ``timeout`` passed."""
        try:
            return self.queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None


def _stderr_tail(err: IO[bytes]) -> str:
    err.seek(0)
    text = err.read().decode("utf-8", errors="replace")
    return " ".join(text.split())[-300:] or "no message"


def _listen(records: _Records, err: IO[bytes]) -> dict:
    """The runner's two ports, or its error as one line."""
    record = records.next(START_SECONDS)
    if record is not None and "listen" in record:
        return record["listen"]
    if record is not None and "error" in record:
        raise RipError(f"rp2040js runner: {record['error']}")
    raise BuildError(f"the rp2040js runner did not start ({_stderr_tail(err)})")


def _read_until(
    link: serial.Serial, timeout: float, until: str, send: bytes, lines: list[str]
) -> None:
    """UART0's lines into ``lines`` up to the first starting with ``until`` (or the
    timeout), ``send`` written after the first line (the application is up)."""
    for line in LineReader(link).lines(time.monotonic() + timeout):
        lines.append(line)
        if send and len(lines) == 1:
            link.write(send)
        if line.startswith(until):
            break


def _end(records: _Records, timeout: float) -> dict | None:
    """The runner's end record, if it stopped by itself within ``timeout``."""
    deadline = time.monotonic() + timeout
    while (record := records.next(deadline - time.monotonic())) is not None:
        if "end" in record:
            return record
    return None


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so the runner is killed on the
    way out (only the main thread can handle signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_uf2(
    uf2: Path,
    board: Board,
    bootrom: Path,
    max_cycles: int,
    wall_timeout: float,
    until: str | None = None,
    send: bytes = b"",
) -> EmulatedRun:
    """Run ``uf2`` on rp2040js until UART0 prints a result line (then the USB CDC port's
    line is read too), the runner stops at ``max_cycles`` emulated cycles or a BKPT, or
    ``wall_timeout`` seconds pass; the runner is killed in every case. With ``until``, an
    application's own output: UART0's lines up to the first that starts so (``result``
    stays None), ``send`` written to UART0's receive side after its first line."""
    runner = install()
    cmd = [node(), str(runner), "--uf2", str(uf2), "--bootrom", str(bootrom),
           "--clock-hz", str(board.clock_hz), "--max-cycles", str(max_cycles),
           "--max-wall-seconds", f"{wall_timeout:g}"]  # fmt: skip
    t0 = time.monotonic()
    usb: Result | str | None = None
    lines: list[str] = []
    with tempfile.TemporaryFile() as err, _sigterm_as_interrupt():
        proc = processes.spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                               text=True)  # fmt: skip
        try:
            records = _Records(proc)
            ports = _listen(records, err)
            links = []
            try:
                for name in SERIALS:
                    links.append(open_port(f"socket://127.0.0.1:{ports[name]}"))
                uart_link, usb_link = links
                if until is None:
                    result = wait_for_result(uart_link, wall_timeout, collect=lines)
                else:
                    _read_until(uart_link, wall_timeout, until, send, lines)
                    result = None
                if isinstance(result, Result):
                    usb = wait_for_result(usb_link, USB_SECONDS)
            except (serial.SerialException, OSError) as e:
                raise NoDeviceError(f"reading the rp2040js runner's serial ports: {e}") from None
            finally:
                for link in links:
                    link.close()
            end = _end(records, 0.0 if isinstance(result, Result) else 2.0)
        finally:  # also on KeyboardInterrupt and SIGTERM: no runner is left running
            processes.stop(proc)
    return EmulatedRun(result, usb, lines, end, max_cycles, time.monotonic() - t0,
                       f"rp2040js {locked_version()}")  # fmt: skip


def project_uf2(project_dir: Path) -> tuple[Path, dict]:
    """The UF2 the build wrote for the project rip-compile wrote in ``project_dir``, and
    the project's expected.json."""
    expected = read_expected(project_dir)
    uf2 = project_dir / "build" / f"{app_name(str(expected.get('model')))}.uf2"
    if not uf2.is_file():
        raise RipError(f"{uf2}: no such file; build the project first (rip-compile --build)")
    return uf2, expected


def emulate_project(
    project_dir: Path, board: Board, bootrom: Path | None = None, wall_timeout: float | None = None
) -> EmulatedRun:
    """The built firmware of a Pico project run on rp2040js, bounded by the model's MACs
    (expected.json); the outcome as it is (see ``checked`` for the verdict)."""
    check_board(board)
    rom = bootrom_path(bootrom)
    uf2, expected = project_uf2(project_dir)
    macs = expected.get("macs")
    max_cycles = cycle_bound(board, macs if isinstance(macs, int) else None)
    timeout = wall_bound(max_cycles) if wall_timeout is None else wall_timeout
    return run_uf2(uf2, board, rom, max_cycles, timeout)


def describe_end(run: EmulatedRun, board: Board) -> str:
    """Why the emulated board printed no result line, in a few words."""
    bound = f"{run.max_cycles:,} emulated cycles ({run.max_cycles / board.clock_hz:g} s at " \
            f"{board.clock_hz / 1e6:g} MHz)"  # fmt: skip
    end = run.end
    if end is None:
        return f"within {run.wall_seconds:.0f} s of wall time (the bound on {bound})"
    if end["end"] == "breakpoint":
        return f"and stopped at BKPT #{end.get('code')}, pc={end.get('pc')}: a fault or a panic"
    return f"within {bound}; the runner stopped: {end['end']}"


def checked(run: EmulatedRun, board: Board) -> Result:
    """UART0's result, or the failure as an error: no line in time is a NoAnswerError
    (exit 2); a RIP-ERROR line, a fault, or a USB CDC line that is not UART0's is a
    FirmwareError (exit 1)."""
    r = run.result
    where = f"{board.name} on {run.emulator}"
    if r is None:
        error = FirmwareError if run.end and run.end["end"] == "breakpoint" else NoAnswerError
        raise error(f"{where} printed no result line {describe_end(run, board)}")
    if isinstance(r, str):
        raise FirmwareError(f"{where}: the firmware reported an error: {r}")
    usb = run.usb_result
    if usb is not None and (not isinstance(usb, Result) or usb.line() != r.line()):
        shown = usb if isinstance(usb, str) else usb.line()
        raise FirmwareError(f"{where}: USB CDC printed {shown!r}, UART0 {r.line()!r}")
    return r
