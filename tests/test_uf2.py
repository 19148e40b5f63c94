"""The UF2 writer: blocks parse back to the image at the right addresses, for the right
chip family, with picotool's RP2350-E10 errata block on the RP2350 only."""

from __future__ import annotations

import random
import struct
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import picotool

from rip.boards import load_board
from rip.firmware import uf2
from rip.firmware.uf2 import (
    BLOCK_BYTES,
    ERRATA_ADDRESS,
    FLASH_BASE,
    PAYLOAD_BYTES,
    Uf2Error,
    bin_to_uf2,
    image_family,
    is_errata_block,
    parse_uf2,
    write_uf2,
)

# UF2 family ids as the UF2 specification lists them: an oracle independent of the board
# files the code reads (RP2040; RP2350 "absolute", the errata block; RP2350 ARM secure).
RP2040_FAMILY = 0xE48BFF56
ABSOLUTE_FAMILY = 0xE48BFF57
RP2350_ARM_S_FAMILY = 0xE48BFF59


def image_of(blocks: list[uf2.Uf2Block], base: int = FLASH_BASE) -> bytes:
    """The flash contents the blocks write, from ``base`` on."""
    data = bytearray()
    for b in blocks:
        end = b.address - base + len(b.payload)
        data.extend(bytes(max(0, end - len(data))))
        data[b.address - base : end] = b.payload
    return bytes(data)


def board_uf2(board_name: str, image: bytes) -> bytes:
    board = load_board(board_name)
    assert board.uf2_family is not None
    return bin_to_uf2(image, board.uf2_family, FLASH_BASE, board.uf2_errata_family)


@settings(max_examples=40, deadline=None)
@given(image=st.binary(min_size=1, max_size=3000), board=st.sampled_from(["pico", "pico2"]))
def test_round_trip(image, board):
    data = board_uf2(board, image)
    assert len(data) % BLOCK_BYTES == 0
    blocks = parse_uf2(data)
    body = [b for b in blocks if not is_errata_block(b)]
    pages = -(-len(image) // PAYLOAD_BYTES)
    assert len(body) == pages
    assert image_of(body)[: len(image)] == image
    assert image_of(body)[len(image) :] == bytes(pages * PAYLOAD_BYTES - len(image))
    assert [b.address for b in body] == [FLASH_BASE + PAYLOAD_BYTES * n for n in range(pages)]
    assert [b.block_no for b in body] == list(range(pages))
    assert {b.num_blocks for b in body} == {pages}
    assert all(len(b.payload) == PAYLOAD_BYTES for b in body)
    want = RP2350_ARM_S_FAMILY if board == "pico2" else RP2040_FAMILY
    assert {b.family for b in body} == {want}
    assert image_family(data) == want
    # the errata block: first, on the RP2350 only, exactly one
    assert len(blocks) - len(body) == (1 if board == "pico2" else 0)
    if board == "pico2":
        assert is_errata_block(blocks[0])


def test_magic_numbers_and_layout():
    data = board_uf2("pico", bytes(range(256)) * 3)
    assert len(data) == 3 * BLOCK_BYTES
    for n in range(3):
        block = data[n * BLOCK_BYTES : (n + 1) * BLOCK_BYTES]
        magic0, magic1, flags, address, size, block_no, count, family = struct.unpack_from(
            "<8I", block
        )
        assert (magic0, magic1) == (0x0A324655, 0x9E5D5157)
        assert block[:4] == b"UF2\n"
        assert struct.unpack_from("<I", block, 508)[0] == 0x0AB16F30
        assert flags == 0x2000  # familyID present, nothing else
        assert (address, size, block_no, count) == (0x10000000 + 256 * n, 256, n, 3)
        assert family == 0xE48BFF56
        assert block[32 + 256 : 508] == bytes(508 - 288)  # unused data is zero


def test_errata_block_is_picotools():
    """Field for field what picotool's gen_abs_block writes."""
    data = board_uf2("pico2", b"\x01" * 10)
    block = data[:BLOCK_BYTES]
    magic0, magic1, flags, address, size, block_no, count, family = struct.unpack_from("<8I", block)
    assert (magic0, magic1) == (0x0A324655, 0x9E5D5157)
    assert flags == 0x2000 | 0x8000  # familyID present + extension tags present
    assert address == ERRATA_ADDRESS == 0x10FFFF00
    assert (size, block_no, count) == (256, 0, 2)
    assert family == ABSOLUTE_FAMILY == 0xE48BFF57
    assert block[32:288] == b"\xef" * 256
    assert struct.unpack_from("<I", block, 288)[0] == 0x9957E304  # RP2_IGNORE_BLOCK
    assert block[292:508] == bytes(216)
    # the image itself follows as a 1-block file for the RP2350
    rest = parse_uf2(data[BLOCK_BYTES:])
    assert [(b.address, b.block_no, b.num_blocks, b.family) for b in rest] == [
        (FLASH_BASE, 0, 1, RP2350_ARM_S_FAMILY)
    ]


def test_unaligned_base_address_pads_the_first_page():
    blocks = parse_uf2(bin_to_uf2(b"\xaa" * 300, RP2040_FAMILY, FLASH_BASE + 16))
    assert [b.address for b in blocks] == [FLASH_BASE, FLASH_BASE + 256]
    assert blocks[0].payload[:16] == bytes(16) and blocks[0].payload[16:] == b"\xaa" * 240
    assert blocks[1].payload[:60] == b"\xaa" * 60 and blocks[1].payload[60:] == bytes(196)


def test_write_uf2_from_a_bin_file(tmp_path):
    bin_path = tmp_path / "app.bin"
    bin_path.write_bytes(b"\x55" * 1000)
    out = write_uf2(bin_path, tmp_path / "app.uf2", RP2350_ARM_S_FAMILY, ABSOLUTE_FAMILY)
    blocks = parse_uf2(out.read_bytes())
    assert len(blocks) == 1 + 4 and is_errata_block(blocks[0])


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\0" * 100, "multiple of 512"),
        (b"\0" * 512, "bad magic"),
    ],
)
def test_parser_rejects_malformed(data, message):
    with pytest.raises(Uf2Error, match=message):
        parse_uf2(data)


def test_parser_rejects_a_corrupt_end_magic():
    data = bytearray(board_uf2("pico", b"\x01" * 10))
    data[508] ^= 0xFF
    with pytest.raises(Uf2Error, match="bad magic"):
        parse_uf2(bytes(data))


def test_writer_rejects_empty_image_and_wrong_errata_family():
    with pytest.raises(Uf2Error, match="empty"):
        bin_to_uf2(b"", RP2040_FAMILY)
    with pytest.raises(Uf2Error, match="ABSOLUTE"):
        bin_to_uf2(b"\0", RP2350_ARM_S_FAMILY, errata_family=RP2040_FAMILY)


@pytest.mark.skipif(
    picotool() is None, reason="no picotool ($RIP_PICOTOOL, as .ci/run builds it, or on PATH)"
)
@pytest.mark.parametrize(
    "family, name, extra",
    [(RP2040_FAMILY, "rp2040", []), (RP2350_ARM_S_FAMILY, "rp2350-arm-s", ["--abs-block"])],
)
def test_byte_for_byte_what_picotool_writes(tmp_path, family, name, extra):
    """`picotool uf2 convert` (2.2.0) of the same BIN gives the same file; on the RP2350
    the SDK passes --abs-block (the RP2350-E10 erratum's block at the end of flash)."""
    rng = random.Random(7)
    image = bytes(rng.getrandbits(8) for _ in range(5000))
    bin_path = tmp_path / "app.bin"
    bin_path.write_bytes(image)
    theirs = tmp_path / "picotool.uf2"
    subprocess.run(
        [str(picotool()), "uf2", "convert", str(bin_path), str(theirs), "--family", name, *extra],
        check=True,
        capture_output=True,
    )
    errata = ABSOLUTE_FAMILY if extra else None
    assert bin_to_uf2(image, family, FLASH_BASE, errata) == theirs.read_bytes()
