"""rip-verify and rip-monitor: read what a board running a rip project prints.

rip-verify out/ [--port P] [--timeout S]
    waits for the result line, compares its checksum with out/expected.json;
    exit 0 match, 1 mismatch (or the firmware reported an error), 2 timeout, no device,
    or nothing to compare with, 130 Ctrl-C. For a project of an emulated board (qemu-m33,
    qemu-armv6m) without --port it builds the firmware and runs it under QEMU, the UART on
    a local socket read by the same code. The default timeout covers the expected
    inference time of the model on the board (expected.json), a first run included.
rip-verify out/ --emulate [--bootrom FILE]
    for a Pico (RP2040) project: builds it with the Pico SDK ($PICO_SDK_PATH) and runs the
    UF2 on rp2040js with the RP2040 boot ROM, its UART0 and USB CDC read by the same code;
    the wait is bounded in emulated cycles by the model's MACs (--timeout bounds wall time).
rip-monitor [--port P]
    prints every line until Ctrl-C (its normal end: exit 0); exit 2 when there is no
    device.

P is a serial device (/dev/ttyACM0, COM5) or a pyserial URL (socket://host:port, loop://);
without it the Raspberry Pi board on USB is found by its vendor id.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import serial

from rip.boards import load_board
from rip.cli import guarded
from rip.core import jsonio
from rip.core.errors import RipError
from rip.core.printable import printable
from rip.firmware.pico_project import build_pico_project
from rip.firmware.qemu_project import build_qemu_project, dual_board
from rip.firmware.qemu_run import default_timeout, is_emulated, run_elf
from rip.firmware.result import Result
from rip.firmware.rp2040_emulator import bootrom_path, check_board, checked, emulate_project
from rip.firmware.serial_port import (
    MAX_WAIT_SECONDS,
    LineReader,
    NoDeviceError,
    check_wait,
    open_port,
    wait_for_result,
)
from rip.firmware.tools import BUILD_SECONDS
from rip.timing.two_core_run import run_two_core

EXIT_MATCH, EXIT_MISMATCH, EXIT_NO_RESULT = 0, 1, 2


def _port_help() -> str:
    return (
        "serial device or pyserial URL (socket://host:port, loop://); default: the "
        "Raspberry Pi board on USB (vendor id 0x2e8a)"
    )


def _expected(out: Path) -> dict:
    path = out / "expected.json" if out.is_dir() else out
    if not path.is_file():
        raise RipError(f"{path}: no such file; give the folder rip-compile -o wrote")
    try:
        if path.stat().st_size > MAX_EXPECTED_BYTES:
            raise RipError(f"{path}: {path.stat().st_size:,} B, too big for an expected.json")
        expected = jsonio.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, NaN, 1e400, 4,301 digits
        raise RipError(f"{path}: not valid JSON ({' '.join(str(e).split())[:200]})") from None
    except RecursionError:
        raise RipError(f"{path}: not valid JSON (nested too deeply)") from None
    except OSError as e:
        raise RipError(f"{path}: cannot read ({e.strerror})") from None
    return _checked_expected(expected, path)


MAX_EXPECTED_BYTES = 1 << 20  # rip writes a few hundred bytes (a profile: a few KB)
U32 = 0xFFFFFFFF
# expected.json fields rip-verify reads: the JSON types each may have, and for numbers the
# closed range (every number finite: jsonio refuses NaN and Infinity).
_EXPECTED_TYPES: dict[str, tuple[tuple[type, ...], tuple[float, float] | None]] = {
    "checksum": ((str, type(None)), None),
    "checksum_source": ((str, type(None)), None),
    "model": ((str,), None),
    "board": ((str,), None),
    "strategy": ((str,), None),
    "arena_bytes": ((int,), (0, U32)),
    "qemu_machine": ((str, type(None)), None),
    "macs": ((int,), (0, 1 << 63)),
    # any finite time (rip writes what the board file's figures give); the wait is capped
    "expected_inference_seconds": ((int, float, type(None)), (0, math.inf)),
}
CHECKSUM = re.compile(r"0x[0-9a-fA-F]{1,8}", re.ASCII)


def _checked_expected(expected: object, path: Path) -> dict:
    """The fields rip-verify reads have the types and ranges it expects, and the checksum
    is ``0x`` and up to eight ASCII hex digits: one line naming the field otherwise."""
    if not isinstance(expected, dict):
        raise RipError(f"{path}: expected a JSON object, got {type(expected).__name__}")
    for key, (types, span) in _EXPECTED_TYPES.items():
        value = expected.get(key)
        if key not in expected:
            continue
        shown = repr(value)[:60]
        if not isinstance(value, types) or isinstance(value, bool):
            raise RipError(f"{path}: {key} has the wrong type ({shown})")
        if span is not None and isinstance(value, (int, float)) and not span[0] <= value <= span[1]:
            raise RipError(f"{path}: {key} {shown} is outside {span[0]:g}..{span[1]:g}")
    want = expected.get("checksum")
    if want is not None and not CHECKSUM.fullmatch(want):
        raise RipError(f"{path}: checksum {want[:40]!r} is not a 32-bit hex number (0x...)")
    return expected


def _identity_mismatches(expected: dict, result: Result) -> list[str]:
    """Fields that say the board runs another build than the one in ``out``."""
    pairs = (
        ("model", result.model),
        ("board", result.board),
        ("strategy", result.strategy),
        ("arena_bytes", result.arena),
    )
    return [
        f"{key} {got} (expected {expected[key]})"
        for key, got in pairs
        if key in expected and expected[key] != got
    ]


MIN_TIMEOUT = 30.0  # a board's USB serial port may take seconds to appear after a reset
BOOT_SECONDS = 10.0


def default_timeout_for(expected: dict) -> float:
    """Seconds to wait when --timeout is not given: for an emulated board, its expected
    emulation time; for a Pico, the first line comes after one inference (whose expected
    time expected.json carries), and a line missed while the port opened comes one
    inference plus one second later, so two inferences, a second and the boot."""
    if is_emulated(expected):
        try:
            board = load_board(str(expected.get("board")))
        except RipError:
            return 600.0
        return default_timeout(board, expected.get("macs"))
    seconds = float(expected.get("expected_inference_seconds") or 0.0)
    return min(MAX_WAIT_SECONDS, max(MIN_TIMEOUT, 2.0 * seconds + 1.0 + BOOT_SECONDS))


def _read_board(
    expected: dict, out: Path, port: str | None, timeout: float
) -> tuple[object, str | None]:
    """The board's answer (a Result, a RIP-ERROR line or None) and where it came from."""
    if port is None and is_emulated(expected):
        board = load_board(str(expected["board"]))
        if expected.get("cores", 1) == 2:
            board = dual_board(board)
        print(f"rip-verify: building {out} (up to {BUILD_SECONDS:g} s) and running it on QEMU "
              f"{board.qemu_machine}; waiting up to {timeout:g} s", file=sys.stderr)  # fmt: skip
        if expected.get("cores", 1) == 2:  # the critical path, from the two-core plugin
            run, est = run_two_core(build_qemu_project(out, board), board, timeout)
            if est is not None and isinstance(run.result, Result):
                return replace(run.result, cycles=est.instructions), f"QEMU {board.qemu_machine}"
        else:
            run = run_elf(build_qemu_project(out, board), board, timeout)
        return run.result, f"QEMU {board.qemu_machine}"
    link = open_port(port)
    seconds = expected.get("expected_inference_seconds")
    about = f" (one inference takes about {seconds:g} s)" if seconds else ""
    print(f"rip-verify: waiting for the first run's result line on {link.name}{about}; "
          f"up to {timeout:g} s", file=sys.stderr)  # fmt: skip
    try:
        return wait_for_result(link, timeout), link.name
    except (serial.SerialException, OSError) as e:  # unplugged or reset mid-read
        raise NoDeviceError(f"reading {link.name}: {e}") from None
    finally:
        link.close()


def _emulate(
    expected: dict, out: Path, bootrom: Path | None, timeout: float | None
) -> tuple[Result | str | None, str]:
    """The board's answer from rp2040js (the project built first) and where it came from;
    no answer is an error: NoAnswerError (exit 2) in time, FirmwareError (exit 1) for a
    fault, as rip-compile --emulate."""
    board = load_board(str(expected.get("board")))
    check_board(board)
    bootrom_path(bootrom)  # before a build
    print(f"rip-verify: building {out} with the Pico SDK and running it on rp2040js",
          file=sys.stderr)  # fmt: skip
    build_pico_project(out, board)
    run = emulate_project(out, board, bootrom, timeout)
    if not isinstance(run.result, str):  # a RIP-ERROR line is reported below
        checked(run, board)  # raises for no line (saying why) and for USB CDC disagreeing
    return run.result, f"{board.name} on {run.emulator}"


def _say(text: str) -> None:
    """A line of the verdict on stdout: it quotes the board's and expected.json's bytes, so
    their control characters are escaped (no terminal control reaches the terminal)."""
    print(printable(text))


def _verify(
    out: Path, port: str | None, timeout: float | None, emulate: bool, bootrom: Path | None
) -> int:
    expected = _expected(out)
    want = expected.get("checksum")
    folder = out if out.is_dir() else out.parent
    if timeout is not None:
        timeout = check_wait(timeout, "--timeout")
    got: object
    source: str | None
    if emulate:
        got, source = _emulate(expected, folder, bootrom, timeout)
    else:
        if timeout is None:
            timeout = default_timeout_for(expected)
        got, source = _read_board(expected, folder, port, timeout)
    if got is None:
        print(f"rip-verify: no result line from {source} within {timeout:g} s", file=sys.stderr)
        return EXIT_NO_RESULT
    if isinstance(got, str):
        _say(f"device:   {got}")
        _say("FAILED: the firmware reported a kernel error")
        return EXIT_MISMATCH
    assert isinstance(got, Result)
    stack = f" stack={got.stack} B" if got.stack is not None else ""
    clock = f" at {got.clock_hz / 1e6:g} MHz" if got.clock_hz else ""
    print(
        f"device:   checksum=0x{got.checksum:08x} {got.count_key}={got.cycles} "
        f"unit={got.unit}{clock}{stack}"
    )
    _say(f"expected: checksum={want} ({expected.get('checksum_source') or 'no reference'})")
    if want is None:
        print("cannot verify: expected.json has no reference checksum", file=sys.stderr)
        return EXIT_NO_RESULT
    others = _identity_mismatches(expected, got)
    if others:
        _say("MISMATCH: the board runs another build: " + "; ".join(others))
        return EXIT_MISMATCH
    if got.checksum != int(want, 16):
        _say("MISMATCH: the board's output differs from the host's")
        return EXIT_MISMATCH
    _say("match")
    return EXIT_MATCH


def main_verify(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="rip-verify",
        description="Wait for a board's result line and compare it with expected.json.",
    )
    p.add_argument("project", help="folder written by rip-compile -o (or its expected.json)")
    p.add_argument("--port", help=_port_help())
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds to wait for a result line, at most a day (default: enough for the "
        "model's expected inference time on the board, from expected.json, and at least 30)",
    )
    p.add_argument(
        "--emulate",
        action="store_true",
        help="(pico projects) build with the Pico SDK and run on the rp2040js emulator",
    )
    p.add_argument(
        "--bootrom",
        metavar="FILE",
        help="with --emulate: the RP2040 boot ROM image (default $RIP_RP2040_BOOTROM)",
    )
    args = p.parse_args(argv)
    if args.emulate and args.port:
        p.error("--emulate and --port exclude each other")
    bootrom = Path(args.bootrom) if args.bootrom else None
    return guarded(
        "rip-verify",
        lambda: _verify(Path(args.project), args.port, args.timeout, args.emulate, bootrom),
    )


def main_monitor(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="rip-monitor", description="Print a board's serial output line by line."
    )
    p.add_argument("--port", help=_port_help())
    args = p.parse_args(argv)
    return guarded("rip-monitor", lambda: _monitor(open_port(args.port)))


def _monitor(link: serial.Serial) -> int:
    print(
        f"rip-monitor: {link.name} (Ctrl-C to stop); waiting for the first run: a board "
        "prints its first line after one inference, which can take many seconds",
        file=sys.stderr,
    )
    try:
        for line in LineReader(link).lines():
            print(printable(line), flush=True)  # the board's bytes: no terminal control
    except KeyboardInterrupt:
        return 0
    except (serial.SerialException, OSError) as e:  # unplugged or reset
        print(f"rip-monitor: error: {link.name}: {e}", file=sys.stderr)
        return 2
    finally:
        link.close()
    # lines() without a deadline ends only when the port goes away
    print(f"rip-monitor: error: {link.name}: the board went away", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main_verify())
