"""The board's serial output: finding the port, and reading whole lines from it.

A port is found by the Raspberry Pi USB vendor id (0x2e8a, which the Pico SDK's USB
serial reports on both chips), or named: a device path (``/dev/ttyACM0``, ``COM5``) or any
pyserial URL (``socket://host:port`` for an emulator's TCP serial, ``loop://``), all opened
through ``serial.serial_for_url``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import serial
from serial.tools import list_ports

from rip.errors import NoDeviceError
from rip.firmware.result import Result, parse_result_line

RASPBERRY_PI_VID = 0x2E8A
BAUD_RATE = 115200  # UART0's default in the SDK; USB CDC ignores it
ERROR_PREFIX = "RIP-ERROR"


def find_ports() -> list[str]:
    """Device names of every serial port a Raspberry Pi USB device provides, sorted."""
    return sorted(p.device for p in list_ports.comports() if p.vid == RASPBERRY_PI_VID)


def open_port(port: str | None = None, timeout: float = 0.1) -> serial.SerialBase:
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


class LineReader:
    """Whole lines from a serial port, however the bytes arrive: a line split across
    reads is joined, bytes that are not UTF-8 (noise, a baud-rate mismatch) are replaced,
    and a line cut short when the port was opened mid-line is just one more line."""

    def __init__(self, port: serial.SerialBase) -> None:
        self.port = port
        self._pending = b""

    def lines(self, deadline: float | None = None) -> Iterator[str]:
        """Lines (without the line ending) until ``deadline`` (a time.monotonic() value;
        None: for ever). A partial line still pending at the deadline is not yielded."""
        while deadline is None or time.monotonic() < deadline:
            chunk = self.port.read(max(1, self.port.in_waiting))
            if not chunk:
                continue  # the read timed out; look at the deadline again
            self._pending += chunk
            *complete, self._pending = self._pending.split(b"\n")
            for raw in complete:
                yield raw.rstrip(b"\r").decode("utf-8", errors="replace")


def wait_for_result(
    port: serial.SerialBase, timeout: float, echo: bool = False
) -> Result | str | None:
    """The first complete result line within ``timeout`` seconds, as a Result; a
    ``RIP-ERROR`` line as its text; None on timeout. Other lines are ignored (or printed,
    with ``echo``)."""
    deadline = time.monotonic() + timeout
    for line in LineReader(port).lines(deadline):
        result = parse_result_line(line)
        if result is not None:
            return result
        if ERROR_PREFIX in line:
            return line[line.index(ERROR_PREFIX) :]
        if echo and line.strip():
            print(line, flush=True)
    return None
