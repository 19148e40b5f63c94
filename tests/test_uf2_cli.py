"""rip-uf2: the UF2 writer as its own command, from a .bin or an .elf."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rip.cli.uf2 import main
from rip.firmware.uf2 import (
    FLASH_BASE,
    bin_to_uf2,
    parse_uf2,
)

# UF2 family ids as the UF2 specification lists them: an oracle independent of the board
# files the code reads (RP2040; RP2350 "absolute", the errata block; RP2350 ARM secure).
RP2040_FAMILY = 0xE48BFF56
ABSOLUTE_FAMILY = 0xE48BFF57
RP2350_ARM_S_FAMILY = 0xE48BFF59

GCC = shutil.which("arm-none-eabi-gcc")
OBJCOPY = shutil.which("arm-none-eabi-objcopy")
SOURCE = """\
const unsigned table[600] = {1, 2, 3};
unsigned data_word = 0x12345678u;
void _start(void) { for (;;) { } }
"""
LINK = """\
MEMORY { FLASH (rx) : ORIGIN = 0x10000000, LENGTH = 2M
         RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 256K }
SECTIONS { .text : { *(.text*) *(.rodata*) . = ALIGN(4); } > FLASH
           .data : { *(.data*) } > RAM AT > FLASH
           .bss : { *(.bss*) } > RAM }
"""


def test_bin_to_uf2_for_both_chips(tmp_path, capsys):
    image = bytes(range(256)) * 3 + b"\x01"
    (tmp_path / "a.bin").write_bytes(image)
    assert main([str(tmp_path / "a.bin"), "-o", str(tmp_path / "a.uf2"), "--family", "rp2040"]) == 0
    assert (tmp_path / "a.uf2").read_bytes() == bin_to_uf2(image, RP2040_FAMILY)
    assert main([str(tmp_path / "a.bin"), "-o", str(tmp_path / "b.uf2"), "--family", "rp2350"]) == 0
    blocks = parse_uf2((tmp_path / "b.uf2").read_bytes())
    assert blocks[0].family == ABSOLUTE_FAMILY and blocks[1].family == RP2350_ARM_S_FAMILY
    assert "blocks for the rp2350" in capsys.readouterr().out


@pytest.mark.skipif(GCC is None or OBJCOPY is None, reason="needs arm-none-eabi-gcc")
def test_elf_gives_the_uf2_of_its_bin(tmp_path):
    """An ELF (code in flash, .data loaded from flash) makes the same UF2 as the BIN that
    objcopy -O binary (what the SDK's build writes) cuts from it."""
    (tmp_path / "a.c").write_text(SOURCE)
    (tmp_path / "a.ld").write_text(LINK)
    elf, flat = tmp_path / "a.elf", tmp_path / "a.bin"
    subprocess.run([GCC, "-mcpu=cortex-m0plus", "-mthumb", "-O2", "-nostdlib", "-T",
                    str(tmp_path / "a.ld"), str(tmp_path / "a.c"), "-o", str(elf)],
                   check=True)  # fmt: skip
    subprocess.run([OBJCOPY, "-O", "binary", str(elf), str(flat)], check=True)
    assert main([str(elf), "-o", str(tmp_path / "e.uf2"), "--family", "rp2040"]) == 0
    want = bin_to_uf2(flat.read_bytes(), RP2040_FAMILY, FLASH_BASE)
    assert (tmp_path / "e.uf2").read_bytes() == want


def test_bad_input_is_one_line(tmp_path, capsys):
    (tmp_path / "x.elf").write_bytes(b"\x7fELF\x02\x01" + bytes(60))
    assert main([str(tmp_path / "x.elf"), "-o", str(tmp_path / "x.uf2"), "--family", "rp2040"]) == 2
    assert "not a 32-bit little-endian ELF" in capsys.readouterr().err
    assert main([str(Path(tmp_path / "none.bin")), "-o", str(tmp_path / "y.uf2"),
                 "--family", "rp2040"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.bin" in err


def test_empty_input_and_unwritable_output_are_one_line_exit_2(tmp_path, capsys):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert main([str(empty), "-o", str(tmp_path / "x.uf2"), "--family", "rp2040"]) == 2
    assert "is empty" in capsys.readouterr().err and not (tmp_path / "x.uf2").exists()
    full = tmp_path / "one.bin"
    full.write_bytes(b"\x01" * 10)
    assert main([str(full), "-o", str(tmp_path / "no" / "x.uf2"), "--family", "rp2040"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err
