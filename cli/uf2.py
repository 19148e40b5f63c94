"""rip-uf2: a UF2 file for the RP2040 or RP2350 bootloader from a .bin or .elf.

rip-uf2 in.bin|in.elf -o out.uf2 --family rp2040|rp2350 [--base 0x10000000]

For a project edited and built by hand without picotool (PICO_NO_PICOTOOL=1): the UF2
that rip-compile --build would write, the RP2350's errata block included.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rip.boards import uf2_families
from rip.cli import guarded
from rip.firmware.uf2 import FLASH_BASE, convert


def _address(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rip-uf2", description=__doc__.splitlines()[0])
    p.add_argument("input", help="a flat .bin (at --base) or an .elf (its load addresses)")
    p.add_argument("-o", "--output", required=True, metavar="UF2", help="the UF2 to write")
    p.add_argument("--family", required=True, choices=sorted(uf2_families()), help="the chip")
    p.add_argument("--base", type=_address, default=FLASH_BASE,
                   help="load address of a .bin (default 0x10000000, the XIP flash)")  # fmt: skip
    args = p.parse_args(argv)

    def work() -> int:
        blocks = convert(Path(args.input), Path(args.output), args.family, args.base)
        print(f"wrote {args.output}: {blocks} blocks for the {args.family}")
        return 0

    return guarded("rip-uf2", work)


if __name__ == "__main__":
    sys.exit(main())
