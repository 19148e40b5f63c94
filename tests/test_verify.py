"""rip-verify and rip-monitor against a fake board: a pseudo-terminal whose master side a
thread writes to (as a Pico's USB serial port would), a TCP socket, or ``loop://``."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
import serial

from rip.cli.verify import main_monitor, main_verify
from rip.firmware import serial_port
from rip.firmware.result import Result

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs pseudo-terminals")

CHECKSUM = 0x1A2B3C4D
EXPECTED = {
    "model": "example",
    "board": "pico2",
    "strategy": "rip",
    "arena_bytes": 16384,
    "scratch_bytes": 256,
    "checksum": f"0x{CHECKSUM:08x}",
    "checksum_source": "TFLite Micro on the default test input",
}


def result_line(checksum: int = CHECKSUM, **changes) -> bytes:
    fields = dict(
        model="example",
        board="pico2",
        strategy="rip",
        arena=16384,
        checksum=checksum,
        cycles=123456,
        unit="cycles",
        stack=612,
    )
    fields.update(changes)
    return (Result(**fields).line() + "\r\n").encode()


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "expected.json").write_text(json.dumps(EXPECTED))
    return tmp_path


@contextmanager
def fake_board(pieces: Sequence[bytes], delay: float = 0.05, repeat: bool = True) -> Iterator[str]:
    """A pseudo-terminal; a thread writes ``pieces`` to it one by one, ``delay`` apart,
    and (with ``repeat``) again after a pause, as the firmware prints every second: what
    arrives before the verifier has opened the port is flushed by pyserial's open, as on a
    real port. Yields the device path the verifier opens."""
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)  # no echo, no CR/LF translation: bytes as a USB CDC port gives them
    stop = threading.Event()

    def write() -> None:
        time.sleep(0.2)  # let the verifier open the port first, as a late monitor would
        while not stop.is_set():
            for piece in pieces:
                if stop.is_set():
                    return
                os.write(master, piece)
                time.sleep(delay)
            if not repeat:
                return
            time.sleep(0.3)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield os.ttyname(slave)
    finally:
        stop.set()
        thread.join(timeout=5)
        os.close(master)
        os.close(slave)


def verify(capsys, project: Path, *argv: str) -> tuple[int, str, str]:
    code = main_verify([str(project), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_match(capsys, project):
    with fake_board([result_line()]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 0
    assert f"checksum=0x{CHECKSUM:08x}" in out and "cycles=123456" in out
    assert out.strip().endswith("match")


def test_mismatch(capsys, project):
    with fake_board([result_line(0xDEADBEEF)]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 1
    assert "checksum=0xdeadbeef" in out and f"checksum=0x{CHECKSUM:08x}" in out
    assert "MISMATCH" in out


def test_another_build_on_the_board_is_a_mismatch(capsys, project):
    with fake_board([result_line(arena=20000)]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 1 and "arena_bytes 20000 (expected 16384)" in out


def test_noise_before_the_line(capsys, project):
    noise = [
        b"\xff\xfe\x00garbage\x80 without an end",  # mid-line when the port opened
        b"\r\nboot: rip firmware\r\n",
        b"RIP-RESULT model=example board=pico2\r\n",  # a result line cut short: ignored
        b"\x1b[2J",  # terminal escape
    ]
    with fake_board([*noise, result_line()]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 0, out


def test_line_split_across_reads(capsys, project):
    line = result_line()
    pieces = [line[i : i + 7] for i in range(0, len(line), 7)]
    with fake_board(pieces, delay=0.12) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "20")
    assert code == 0, out


def test_repeated_lines_from_a_running_board(capsys, project):
    """The firmware prints every second; joining mid-stream still finds a whole line."""
    line = result_line()
    with fake_board([line[20:], line, line], delay=0.1, repeat=True) as port:
        code, _, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 0


def test_kernel_error_line_fails(capsys, project):
    with fake_board([b"RIP-ERROR op=3 status=4\r\n"]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 1 and "RIP-ERROR op=3" in out


def test_timeout_exits_2(capsys, project):
    start = time.monotonic()
    code, _, err = verify(capsys, project, "--port", "loop://", "--timeout", "0.5")
    assert code == 2 and "no result line" in err
    assert time.monotonic() - start < 5


def test_timeout_with_only_noise(capsys, project):
    with fake_board([b"hello\r\n", b"RIP-RESULT partial"], repeat=True) as port:
        code, _, _ = verify(capsys, project, "--port", port, "--timeout", "1")
    assert code == 2


def test_no_such_port_exits_2(capsys, project, tmp_path):
    code, _, err = verify(capsys, project, "--port", str(tmp_path / "ttyACM9"), "--timeout", "1")
    assert code == 2 and "cannot open" in err and "\n" not in err.strip()


def test_no_board_found_exits_2(capsys, project, monkeypatch):
    monkeypatch.setattr(serial_port.list_ports, "comports", lambda: [])
    code, _, err = verify(capsys, project, "--timeout", "1")
    assert code == 2 and "no Raspberry Pi board found" in err


def test_board_found_by_vendor_id(capsys, project, monkeypatch):
    with fake_board([result_line()]) as port:
        ports = [
            SimpleNamespace(device="/dev/ttyS0", vid=0x0403),
            SimpleNamespace(device=port, vid=0x2E8A),
        ]
        monkeypatch.setattr(serial_port.list_ports, "comports", lambda: ports)
        code, _, _ = verify(capsys, project, "--timeout", "10")
    assert code == 0


def test_socket_url(capsys, project):
    """An emulator's TCP serial port (QEMU -serial tcp:...) through a pyserial URL."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            time.sleep(0.2)  # pyserial drops what arrived before its open() returned
            conn.sendall(b"noise\n" + result_line()[:30])
            time.sleep(0.2)
            conn.sendall(result_line()[30:])
            time.sleep(0.5)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        code, _, _ = verify(
            capsys, project, "--port", f"socket://127.0.0.1:{port}", "--timeout", "10"
        )
    finally:
        thread.join(timeout=5)
        server.close()
    assert code == 0


def test_no_reference_checksum_cannot_verify(capsys, tmp_path):
    (tmp_path / "expected.json").write_text(json.dumps(dict(EXPECTED, checksum=None)))
    with fake_board([result_line()]) as port:
        code, out, err = verify(capsys, tmp_path, "--port", port, "--timeout", "10")
    assert code == 2 and "no reference checksum" in err
    assert f"checksum=0x{CHECKSUM:08x}" in out  # the board's figures are still shown


def test_missing_expected_json(capsys, tmp_path):
    code, _, err = verify(capsys, tmp_path, "--port", "loop://")
    assert code == 2 and "expected.json" in err


def monitor_until_unplugged(capsys, data: bytes) -> tuple[int, str]:
    """rip-monitor on a pseudo-terminal that prints ``data`` and is then unplugged; its
    exit code and what it printed."""
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)
    path = os.ttyname(slave)

    def board() -> None:
        time.sleep(0.3)
        os.write(master, data)
        time.sleep(0.5)
        os.close(master)  # unplugged: reads on the port now fail

    thread = threading.Thread(target=board, daemon=True)
    thread.start()
    try:
        os.close(slave)  # the monitor holds the only slave handle, as with a real device
        code = main_monitor(["--port", path])
    finally:
        thread.join(timeout=5)
    return code, capsys.readouterr().out


def test_monitor_prints_lines_until_the_board_goes(capsys):
    code, out = monitor_until_unplugged(capsys, b"first\r\n" + result_line())
    assert out.splitlines()[:2] == ["first", result_line().decode().strip()]
    assert code == 2


def test_monitor_without_a_board_exits_2(capsys, monkeypatch):
    monkeypatch.setattr(serial_port.list_ports, "comports", lambda: [])
    assert main_monitor([]) == 2
    assert "no Raspberry Pi board found" in capsys.readouterr().err


def test_line_reader_joins_pieces():
    """LineReader on loop://: written pieces come back as whole lines, decoded leniently."""
    import serial

    link = serial.serial_for_url("loop://", timeout=0.05)
    reader = serial_port.LineReader(link)
    link.write(b"ab")
    link.write(b"c\r\nd\xffe\n")
    link.write(b"unfinished")
    lines = list(reader.lines(time.monotonic() + 0.5))
    assert lines == ["abc", "d\ufffde"]


class _NoisyPort:
    """A port that delivers ``data`` in chunks of ``chunk`` bytes, then goes away."""

    def __init__(self, data: bytes, chunk: int = 4096) -> None:
        self.data, self.pos, self.chunk = data, 0, chunk

    @property
    def in_waiting(self) -> int:
        return min(self.chunk, len(self.data) - self.pos)

    def read(self, n: int) -> bytes:
        if self.pos >= len(self.data):
            raise serial.SerialException("gone")
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out


def test_line_reader_is_linear_and_drops_an_over_long_line():
    """10 MB of noise without a line end used to delay the next line by ~20 s (the whole
    pending buffer rescanned on every read); now it is dropped, said once, and the valid
    line after it comes at once."""
    line = Result("m", "pico2", "rip", 1024, 0x1234ABCD, 99, "cycles").line()
    noise = bytes(range(11, 256)) * (10_000_000 // 245)
    port = _NoisyPort(b"first\n" + noise + b"\n" + line.encode() + b"\n")
    drops: list[int] = []
    reader = serial_port.LineReader(port, on_drop=drops.append)  # type: ignore[arg-type]
    t0 = time.monotonic()
    lines = list(reader.lines(time.monotonic() + 30))
    lines_seconds = time.monotonic() - t0
    assert lines[0] == "first" and lines[-1] == line and len(lines) == 2
    assert len(drops) == 1 and reader.dropped_bytes == len(noise)
    assert lines_seconds < 5, f"{lines_seconds:.1f} s"


def test_wait_for_result_finds_the_line_after_noise(capsys):
    line = Result("m", "pico2", "rip", 1024, 0x1234ABCD, 99, "cycles").line()
    port = _NoisyPort(b"\xff" * 3_000_000 + b"\n" + line.encode() + b"\n")
    got = serial_port.wait_for_result(port, timeout=20)  # type: ignore[arg-type]
    assert isinstance(got, Result) and got.checksum == 0x1234ABCD
    assert "dropped a line of more than 65,536 B" in capsys.readouterr().err


# ---- issue 22: exact grammar, escaped device bytes, bounded waits ------------------------------
def test_a_wrong_result_followed_by_the_right_one_is_no_result(capsys, project):
    """One result per line: a line with the wrong checksum and then the right one matched
    (the last field won); now it is no result line at all."""
    wrong = result_line(0xDEADBEEF).rstrip(b"\r\n")
    with fake_board([wrong + b" " + result_line()]) as port:
        code, out, err = verify(capsys, project, "--port", port, "--timeout", "1.5")
    assert code == 2 and "no result line" in err and "match" not in out


@pytest.mark.parametrize(
    "old, new",
    [
        (b"checksum=0x1a2b3c4d", b"checksum=0x1a2b_3c4d"),
        (b"checksum=0x1a2b3c4d", b"checksum=+0x1a2b3c4d"),
        (b"arena=16384", "arena=１６３８４".encode()),
        (b"arena=16384", "arena=١٦٣٨٤".encode()),
    ],
    ids=["underscore", "plus", "full-width", "arabic-indic"],
)
def test_lenient_numbers_are_no_result(capsys, project, old, new):
    line = result_line()
    assert old in line
    with fake_board([line.replace(old, new)]) as port:
        code, out, err = verify(capsys, project, "--port", port, "--timeout", "1.5")
    assert code == 2 and "no result line" in err and "match" not in out


def test_terminal_control_from_the_board_is_escaped(capsys, project):
    """ESC and BEL from the board reached the terminal through the error line; now they
    are shown as escapes."""
    with fake_board([b"RIP-ERROR op=3 status=4 \x1b]0;owned\x07\x1b[2J\r\n"]) as port:
        code, out, _ = verify(capsys, project, "--port", port, "--timeout", "10")
    assert code == 1 and "RIP-ERROR op=3" in out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;owned\\x07" in out


def test_terminal_control_from_expected_json_is_escaped(capsys, tmp_path):
    (tmp_path / "expected.json").write_text(
        json.dumps(dict(EXPECTED, model="ex\x1b[2Jample", checksum_source="\x1b[31mred"))
    )
    with fake_board([result_line()]) as port:
        code, out, _ = verify(capsys, tmp_path, "--port", port, "--timeout", "10")
    assert code == 1 and "MISMATCH" in out and "\x1b" not in out and "\\x1b[2J" in out


def test_monitor_escapes_terminal_control(capsys):
    code, out = monitor_until_unplugged(capsys, b"hello \x1b[2J\x07world\r\n")
    assert code == 2 and "hello \\x1b[2J\\x07world" in out
    assert "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e9"])
def test_a_timeout_without_a_finite_bound_is_refused(capsys, project, value):
    start = time.monotonic()
    code, _, err = verify(capsys, project, "--port", "loop://", "--timeout", value)
    assert code == 2 and err.count("\n") == 1 and "--timeout" in err, err
    assert time.monotonic() - start < 5


def test_verify_never_waits_past_its_stated_bound(capsys, project):
    """A board that prints noise without end: rip-verify stops at the bound it states."""
    with fake_board([b"noise " * 200 + b"\r\n"], delay=0.01) as port:
        start = time.monotonic()
        code, _, err = verify(capsys, project, "--port", port, "--timeout", "2")
        seconds = time.monotonic() - start
    assert code == 2 and "up to 2 s" in err and "within 2 s" in err
    assert seconds < 2 + 1.0, f"{seconds:.2f} s"


def test_the_default_wait_is_capped_at_a_day():
    from rip.boards import load_board
    from rip.cli.verify import default_timeout_for
    from rip.firmware.qemu_run import default_timeout
    from rip.firmware.serial_port import MAX_WAIT_SECONDS

    assert default_timeout_for({"expected_inference_seconds": 1e11}) == MAX_WAIT_SECONDS
    assert default_timeout(load_board("qemu-m33"), 1 << 62) == MAX_WAIT_SECONDS
