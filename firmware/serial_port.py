"""The board's serial output: finding the port, and reading whole lines from it.

A port is found by the Raspberry Pi USB vendor id (0x2e8a, which the Pico SDK's USB
serial reports on both chips), or named: a device path (``/dev/ttyACM0``, ``COM5``) or any
pyserial URL (``socket://host:port`` for an emulator's TCP serial, ``loop://``), all opened
through ``serial.serial_for_url``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator

import serial
from serial.tools import list_ports

from rip.core.errors import NoDeviceError, RipError
from rip.core.printable import printable
from rip.firmware.result import ERROR_PREFIX, Result, parse_result_line

RASPBERRY_PI_VID = 0x2E8A
BAUD_RATE = 115200  # UART0's default in the SDK; USB CDC ignores it


def find_ports() -> list[str]:
    """Device names of every serial port a Raspberry Pi USB device provides, sorted."""
    return sorted(p.device for p in list_ports.comports() if p.vid == RASPBERRY_PI_VID)


def open_port(port: str | None = None, timeout: float = 0.1) -> serial.Serial:
    """The named port (a device path or a pyserial URL), or the one Raspberry Pi port
    when ``port`` is None. ``timeout`` bounds each read, so callers can keep deadlines."""
    if port is None:
        ports = find_ports()
        if not ports:
            raise NoDeviceError(
                "no Raspberry Pi board found on USB (vendor id 0x2e8a): plug it in, or name "
                "the port with --port (e.g. /dev/ttyACM0, COM5, socket://host:port)"
            )
        if len(ports) > 1:
            raise NoDeviceError(
                f"several Raspberry Pi boards found ({', '.join(ports)}): choose one with --port"
            )
        port = ports[0]
    try:
        return serial.serial_for_url(port, baudrate=BAUD_RATE, timeout=timeout)
    except (serial.SerialException, ValueError, OSError) as e:
        raise NoDeviceError(f"cannot open {port}: {e}") from None


# The longest any wait for a board's line may be: a day (one inference of the largest model
# rip plans takes minutes on a Pico). rip-verify refuses a longer --timeout and caps the
# wait it computes from expected.json at this.
MAX_WAIT_SECONDS = 86400.0


def check_wait(seconds: float, what: str = "timeout") -> float:
    """``seconds`` if it is a wait rip can keep (finite, > 0, at most a day); a RipError
    (one line, exit 2) otherwise, so that no wait is ever unbounded."""
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise RipError(f"{what} {seconds!r}: not a finite number of seconds")
    if not 0 < seconds <= MAX_WAIT_SECONDS:
        raise RipError(f"{what} {seconds:g} s: give more than 0 and at most {MAX_WAIT_SECONDS:g}")
    return float(seconds)


MAX_LINE_BYTES = 64 * 1024  # a result line is ~200 B; a profiling line well under 1 KiB


def _say_dropped(count: int) -> None:
    sys.stderr.write(
        f"rip: dropped a line of more than {count:,} B without a line end (noise, or a "
        "baud-rate mismatch?)\n"
    )


class LineReader:
    """Whole lines from a serial port, however the bytes arrive: a line split across
    reads is joined, bytes that are not UTF-8 (noise, a baud-rate mismatch) are replaced,
    and a line cut short when the port was opened mid-line is just one more line.

    Linear in the bytes read: each chunk is scanned once for line ends (the partial line is
    kept as a list of pieces, never rescanned), so megabytes of noise cannot delay the next
    valid line. A partial line longer than ``max_line`` bytes is dropped up to its line end,
    and ``on_drop`` (default: one line on stderr) says how many bytes went."""

    def __init__(
        self,
        port: serial.Serial,
        max_line: int = MAX_LINE_BYTES,
        on_drop: Callable[[int], None] = _say_dropped,
    ) -> None:
        self.port = port
        self.max_line = max_line
        self.on_drop = on_drop
        self.dropped_bytes = 0
        self._parts: list[bytes] = []  # the partial line, in pieces
        self._size = 0
        self._dropping = False  # inside an over-long line: discard up to its line end

    def _feed(self, chunk: bytes) -> list[bytes]:
        """The complete lines ``chunk`` ends; its tail joins the partial line."""
        lines = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._dropping:
                self._drop_more(end - start)
                self._dropping = False
            else:
                lines.append(b"".join((*self._parts, chunk[start:end])))
            self._parts, self._size = [], 0
            start = end + 1
        tail = chunk[start:]
        if self._dropping:
            self._drop_more(len(tail))
        elif tail:
            self._parts.append(tail)
            self._size += len(tail)
            if self._size > self.max_line:
                self.dropped_bytes += self._size
                self.on_drop(self.max_line)
                self._parts, self._size, self._dropping = [], 0, True
        return lines

    def _drop_more(self, count: int) -> None:
        self.dropped_bytes += count

    def lines(self, deadline: float | None = None) -> Iterator[str]:
        """Lines (without the line ending) until ``deadline`` (a time.monotonic() value;
        None: for ever). A partial line still pending at the deadline is not yielded."""
        while deadline is None or time.monotonic() < deadline:
            try:
                chunk = self.port.read(max(1, self.port.in_waiting))
            except serial.SerialException:
                # the other end went away (an emulator that exited after its last line,
                # a board unplugged): what it sent is all there is
                if self._parts and not self._dropping:
                    yield _text(b"".join(self._parts))
                self._parts, self._size = [], 0
                return
            if not chunk:
                continue  # the read timed out; look at the deadline again
            for raw in self._feed(chunk):
                yield _text(raw)


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\r").decode("utf-8", errors="replace")


def wait_for_result(
    port: serial.Serial,
    timeout: float,
    echo: bool = False,
    collect: list[str] | None = None,
) -> Result | str | None:
    """The first complete result line within ``timeout`` seconds, as a Result; a
    ``RIP-ERROR`` line as its text; None on timeout. Other lines are ignored (or printed,
    with ``echo``; or appended to ``collect``, e.g. a profiling build's per-op lines)."""
    deadline = time.monotonic() + check_wait(timeout)
    for line in LineReader(port).lines(deadline):
        if collect is not None:
            collect.append(line)
        result = parse_result_line(line)
        if result is not None:
            return result
        if ERROR_PREFIX in line:
            return line[line.index(ERROR_PREFIX) :]
        if echo and line.strip():
            print(printable(line), flush=True)  # the board's bytes: no terminal control
    return None
