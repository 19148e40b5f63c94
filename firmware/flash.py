"""Putting a built UF2 on a board: ``picotool load`` when picotool is installed, else a
copy onto the bootloader's USB drive (``RPI-RP2`` on the RP2040, ``RP2350`` on the RP2350)
that the board shows while BOOTSEL is held at power-up."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from rip.boards import boot_drives, load_board, uf2_chips
from rip.core import jsonio, processes
from rip.core.errors import FlashError, RipError
from rip.firmware.uf2 import Uf2Error, check_image, max_uf2_bytes

BOOT_LABELS = tuple(boot_drives())  # from boards/*.toml: ("RPI-RP2", "RP2350")
INFO_FILE = "INFO_UF2.TXT"  # every UF2 bootloader drive has it; a plain folder does not
# Where desktop Linux (udisks: /media/$USER, /run/media/$USER), plain mounts and macOS put
# a removable drive with a volume label.
DRIVE_PATTERNS = tuple(
    pattern.format(label=label)
    for label in BOOT_LABELS
    for pattern in (
        "/media/*/{label}",
        "/media/{label}",
        "/run/media/*/{label}",
        "/mnt/{label}",
        "/mnt/*/{label}",
        "/Volumes/{label}",
    )
)
FAMILY_CHIPS = uf2_chips()  # from boards/*.toml
PICOTOOL_SECONDS = 120.0  # a 4 MB image loads in well under a minute


def _mounted_drives() -> list[Path]:
    """Mount points listed in /proc/mounts whose last component is a bootloader label
    (any mount location, not just the usual ones)."""
    try:
        text = Path("/proc/mounts").read_text(encoding="utf-8")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 1:
            mount = Path(fields[1].replace("\\040", " "))  # /proc/mounts escapes spaces
            if mount.name in BOOT_LABELS:
                found.append(mount)
    return found


def _windows_drives() -> list[Path]:
    if sys.platform != "win32":
        return []
    return [Path(f"{letter}:\\") for letter in "DEFGHIJKLMNOPQRSTUVWXYZ"]


def is_boot_drive(path: Path) -> bool:
    return (path / INFO_FILE).is_file()


def find_boot_drives(patterns: Sequence[str] | None = None) -> list[Path]:
    """Every mounted RP2040/RP2350 bootloader drive, each confirmed by its INFO_UF2.TXT.
    By default: the usual mount locations, the system's mount table and (on Windows) the
    drive letters; ``patterns`` (globs) replaces all three."""
    if patterns is None:
        candidates = [Path(p) for pattern in DRIVE_PATTERNS for p in sorted(glob.glob(pattern))]
        candidates += _mounted_drives() + _windows_drives()
    else:
        candidates = [Path(p) for pattern in patterns for p in sorted(glob.glob(pattern))]
    return list(dict.fromkeys(c for c in candidates if is_boot_drive(c)))


def drive_chip(drive: Path) -> str | None:
    """RP2040 or RP2350, from the drive's INFO_UF2.TXT (``Board-ID: RPI-RP2`` or
    ``RP2350``), else from its name; None when neither says."""
    try:
        info = (drive / INFO_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        info = ""
    for line in info.splitlines():
        if line.lower().startswith("board-id:"):
            board_id = line.split(":", 1)[1].strip()
            for label, board in boot_drives().items():
                if board_id.startswith(label):
                    return board.chip
    named = boot_drives().get(drive.name)
    return named.chip if named else None


def find_uf2(target: Path) -> Path:
    """The UF2 to flash: ``target`` itself, or the one in ``target/build`` (or ``target``)
    of a generated project, preferring the file named after its model."""
    if target.is_file():
        if target.suffix.lower() != ".uf2":
            raise FlashError(f"{target} is not a .uf2 file")
        return target
    if not target.is_dir():
        raise FlashError(f"{target}: no such file or folder")
    found = sorted((target / "build").glob("*.uf2")) or sorted(target.glob("*.uf2"))
    if not found:
        raise FlashError(
            f"{target}: no .uf2 in {target / 'build'}; build it first (rip-compile ... --build)"
        )
    if len(found) > 1:
        expected = target / "expected.json"
        if expected.is_file():
            from rip.firmware.pico_project import app_name

            stem = app_name(str(_expected(expected).get("model")))
            named = [f for f in found if f.stem == stem]
            if named:
                return named[0]
        raise FlashError(f"{target}: several .uf2 files ({', '.join(f.name for f in found)})")
    return found[0]


def _expected(path: Path) -> dict:
    """A project's expected.json as a dict ({} when it is unreadable, not JSON, holds a
    non-finite number or is not an object)."""
    try:
        data = jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def project_family(target: Path) -> tuple[str, int] | None:
    """(board, UF2 family id) of the project folder ``target`` (its expected.json names
    the board; boards/*.toml give the family), or None when it does not say."""
    expected = target / "expected.json"
    if not target.is_dir() or not expected.is_file():
        return None
    try:
        board = load_board(str(_expected(expected)["board"]))
    except (KeyError, RipError):
        return None
    if board is None or board.uf2_family is None:
        return None
    return board.name, board.uf2_family


def check_uf2(uf2: Path, want: tuple[str, int] | None = None) -> bytes:
    """Refuse, before anything is copied or loaded, a UF2 the bootloader would ignore or
    misuse (``uf2.check_image``: empty, too big, a bad block, inconsistent block numbers
    or counts, an address outside the chip's flash or unaligned, no Pico family), or the
    family of another board than the project's (``want``: board name and family id). The
    file's size is checked before it is read; the bytes checked are returned, and they are
    what is copied (the file may change on disk meanwhile)."""
    try:
        if uf2.stat().st_size > max_uf2_bytes():
            raise FlashError(f"{uf2}: {uf2.stat().st_size:,} B, more than any Pico's flash takes")
        data = uf2.read_bytes()
    except OSError as e:
        raise FlashError(f"{uf2}: cannot read ({e.strerror})") from None
    if not data:
        raise FlashError(f"{uf2} is empty: rebuild it (rip-compile ... --build)")
    try:
        family = check_image(data)
    except Uf2Error as e:
        raise FlashError(f"{uf2}: not a valid Pico UF2 ({e})") from None
    if want is not None and family != want[1]:
        raise FlashError(
            f"{uf2} is for the {FAMILY_CHIPS[family]}, but the project is for {want[0]} "
            f"({FAMILY_CHIPS.get(want[1], 'another chip')}): rebuild it"
        )
    return data


def copy_to_drive(uf2: Path, drive: Path, data: bytes | None = None) -> Path:
    """Copy ``uf2`` (its checked bytes ``data``; checked here when not given) onto a
    bootloader drive, after checking the chip matches; the board reboots into the new
    firmware once the last block is written."""
    if not drive.is_dir():
        raise FlashError(f"{drive}: no such drive (is the board in BOOTSEL mode?)")
    if data is None:
        data = check_uf2(uf2)
    want, have = FAMILY_CHIPS.get(check_image(data)), drive_chip(drive)
    if want and have and want != have:
        raise FlashError(
            f"{uf2.name} is for the {want} but {drive} is an {have} bootloader: compile for "
            f"--board {next(b.name for b in boot_drives().values() if b.chip == have)}"
        )
    dest = drive / uf2.name
    try:
        with dest.open("wb") as dst:
            dst.write(data)
            dst.flush()
            os.fsync(dst.fileno())  # the bootloader acts on blocks, not on file close
    except OSError as e:
        raise FlashError(f"copying {uf2.name} to {drive} failed: {e}") from None
    return dest


def picotool_load(uf2: Path, picotool: str) -> None:
    """``picotool load -x UF2 -f``: write, then run. ``-f`` lets picotool reboot a board
    running firmware with the SDK's USB reset interface (as rip's does) into BOOTSEL, so
    re-flashing needs no button."""
    try:
        proc = processes.run([picotool, "load", "-x", str(uf2), "-f"], PICOTOOL_SECONDS)
    except subprocess.TimeoutExpired:
        raise FlashError(f"picotool load did not finish within {PICOTOOL_SECONDS:g} s") from None
    if proc.returncode != 0:
        words = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
        raise FlashError(f"picotool load failed: {words[-1]}")


def flash(target: Path, drive: Path | None = None, use_picotool: bool | None = None) -> str:
    """Put the UF2 of ``target`` (a project folder or a .uf2) on a board; returns one
    line saying how. ``drive`` names the bootloader drive and skips picotool;
    ``use_picotool`` None means: when it is on PATH. When picotool fails (no board in
    BOOTSEL, no USB permission) and a bootloader drive is mounted, the drive is used."""
    uf2 = find_uf2(target)
    data = check_uf2(uf2, project_family(target))
    if drive is not None:
        return f"copied {uf2.name} to {copy_to_drive(uf2, drive, data)}"
    picotool = shutil.which("picotool") if use_picotool in (None, True) else None
    if use_picotool and picotool is None:
        raise FlashError("picotool is not on PATH")
    picotool_error = None
    if picotool is not None:
        try:
            picotool_load(uf2, picotool)
            return f"loaded {uf2.name} with picotool and started it"
        except FlashError as e:
            picotool_error = e
    drives = find_boot_drives()
    if not drives:
        if picotool_error is not None:
            raise picotool_error
        raise FlashError(
            "no RPI-RP2 or RP2350 drive is mounted and picotool is not installed: hold "
            "BOOTSEL while plugging the board in, or name the drive with --drive PATH"
        )
    if len(drives) > 1:
        raise FlashError(
            f"several bootloader drives are mounted ({', '.join(map(str, drives))}): "
            "choose one with --drive PATH"
        )
    return f"copied {uf2.name} to {copy_to_drive(uf2, drives[0], data)}"
