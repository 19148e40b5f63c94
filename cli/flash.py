"""rip-flash: put a built project on a Pico.

rip-flash out/ [--drive PATH] [--no-picotool]

Uses ``picotool load -x`` when picotool is installed; otherwise (or when picotool finds no
board) copies the UF2 onto the mounted RPI-RP2 / RP2350 bootloader drive. ``out`` is the
folder rip-compile -o wrote (its build/*.uf2) or a .uf2 file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rip.cli import guarded
from rip.firmware.flash import flash


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rip-flash", description="Flash a built rip project.")
    p.add_argument("target", help="project folder (rip-compile -o ... --build) or a .uf2 file")
    p.add_argument(
        "--drive",
        metavar="PATH",
        help="the bootloader drive to copy to (skips picotool); default: found "
        "among mounted drives",
    )
    p.add_argument(
        "--no-picotool",
        action="store_true",
        help="copy to the bootloader drive even when picotool is installed",
    )
    args = p.parse_args(argv)

    def work() -> int:
        message = flash(
            Path(args.target),
            drive=Path(args.drive) if args.drive else None,
            use_picotool=False if args.no_picotool else None,
        )
        print(f"rip-flash: {message}")
        return 0

    return guarded("rip-flash", work)


if __name__ == "__main__":
    sys.exit(main())
