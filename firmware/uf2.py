"""UF2 files for the RP2040 and RP2350 bootloaders: a flat BIN in, 512-byte blocks out.

The format (Microsoft's UF2, as the Pico SDK's ``boot/uf2.h`` lays it out): every block is
one 512-byte sector, a 32-byte header (two start magics, flags, target address, payload
size, block number, block count, family id), 476 bytes of data of which the first
``payload_size`` count, and an end magic. The bootloader writes each payload at its target
address, so a drag-and-drop copy needs no other tool.

On the RP2350 ``picotool uf2 convert --abs-block`` (which the SDK passes for every board
with ``PICO_RP2350_A2_SUPPORTED``, the Pico 2 among them) puts one extra block first: family
ABSOLUTE (0xe48bff57), target 0x10ffff00 (the last 256 bytes of a 16 MB flash window),
payload 256 bytes of 0xef, flagged with the ``RP2_IGNORE_BLOCK`` extension and numbered as
block 0 of a 2-block "file" that never completes. It is the workaround for erratum
RP2350-E10 (a UF2 whose first family is not ABSOLUTE can be mis-targeted); the bootrom
ignores the block itself. We emit it exactly as picotool does (picotool
``elf2uf2/elf2uf2.cpp: gen_abs_block``) so our UF2 and picotool's are interchangeable:
for the SDK's BIN of a Pico 2 build, which carries the IMAGE_DEF that tells picotool the
chip, the two files are byte for byte the same (tests/test_uf2.py checks this whenever
picotool is installed).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from rip.boards import uf2_families
from rip.core.errors import Uf2Error

MAGIC_START0 = 0x0A324655  # "UF2\n"
MAGIC_START1 = 0x9E5D5157
MAGIC_END = 0x0AB16F30
FLAG_FAMILY_ID_PRESENT = 0x00002000
FLAG_EXTENSION_FLAGS_PRESENT = 0x00008000
EXTENSION_RP2_IGNORE_BLOCK = 0x9957E304  # picotool's tag on the errata block

BLOCK_BYTES = 512
DATA_BYTES = 476
PAYLOAD_BYTES = 256  # what the RP2040/RP2350 bootroms expect: one flash page per block

# The UF2 "absolute" family of picotool's RP2350-E10 errata block: a property of the
# workaround block itself (the board files name which chip needs it).
ABSOLUTE_FAMILY = 0xE48BFF57
FLASH_BASE = 0x10000000  # XIP flash on both chips: where a BIN from the SDK starts
ERRATA_ADDRESS = 0x10FFFF00  # picotool's default --abs-block location (0x11000000 - 256)
ERRATA_FILL = 0xEF

_HEADER = struct.Struct("<8I")
_END = struct.Struct("<I")


@dataclass(frozen=True)
class Uf2Block:
    """One parsed block: where its payload goes and for which chip family."""

    address: int
    payload: bytes
    family: int | None  # None when the familyID flag is clear (then the field is a size)
    flags: int
    block_no: int
    num_blocks: int


def _block(
    flags: int,
    address: int,
    payload: bytes,
    block_no: int,
    num_blocks: int,
    family: int,
    extension: bytes = b"",
) -> bytes:
    data = (payload + extension).ljust(DATA_BYTES, b"\0")
    header = _HEADER.pack(
        MAGIC_START0, MAGIC_START1, flags, address, len(payload), block_no, num_blocks, family
    )
    return header + data + _END.pack(MAGIC_END)


def errata_block() -> bytes:
    """The RP2350-E10 block picotool puts first (see the module docstring)."""
    return _block(
        FLAG_FAMILY_ID_PRESENT | FLAG_EXTENSION_FLAGS_PRESENT,
        ERRATA_ADDRESS,
        bytes([ERRATA_FILL]) * PAYLOAD_BYTES,
        block_no=0,
        num_blocks=2,  # never completes, so the bootrom never acts on this "file"
        family=ABSOLUTE_FAMILY,
        extension=struct.pack("<I", EXTENSION_RP2_IGNORE_BLOCK),
    )


def bin_to_uf2(
    image: bytes, family: int, base_address: int = FLASH_BASE, errata_family: int | None = None
) -> bytes:
    """A UF2 file writing ``image`` at ``base_address`` for chip ``family``.

    The image is cut into 256-byte pages aligned to the address (a partial first or last
    page is padded with zeros, as picotool pads it). ``errata_family`` (the board file's
    ``uf2_errata_family``, set for the RP2350 only) adds the leading errata block.
    """
    if not image:
        raise Uf2Error("cannot make a UF2 from an empty image")
    if errata_family is not None and errata_family != ABSOLUTE_FAMILY:
        raise Uf2Error(f"errata block family 0x{errata_family:08x} is not ABSOLUTE")
    first = base_address - base_address % PAYLOAD_BYTES
    lead = base_address - first
    padded = bytes(lead) + image
    padded += bytes(-len(padded) % PAYLOAD_BYTES)
    count = len(padded) // PAYLOAD_BYTES
    blocks = [errata_block()] if errata_family is not None else []
    for n in range(count):
        page = padded[n * PAYLOAD_BYTES : (n + 1) * PAYLOAD_BYTES]
        blocks.append(
            _block(FLAG_FAMILY_ID_PRESENT, first + n * PAYLOAD_BYTES, page, n, count, family)
        )
    return b"".join(blocks)


def parse_uf2(data: bytes) -> list[Uf2Block]:
    """Every block of a UF2 file, checked (magics, sizes, 512-byte framing)."""
    if len(data) % BLOCK_BYTES:
        raise Uf2Error(f"UF2 size {len(data)} is not a multiple of {BLOCK_BYTES} bytes")
    blocks = []
    for offset in range(0, len(data), BLOCK_BYTES):
        raw = data[offset : offset + BLOCK_BYTES]
        m0, m1, flags, address, size, block_no, num_blocks, family = _HEADER.unpack_from(raw)
        (end,) = _END.unpack_from(raw, BLOCK_BYTES - 4)
        if (m0, m1, end) != (MAGIC_START0, MAGIC_START1, MAGIC_END):
            raise Uf2Error(f"block at byte {offset}: bad magic numbers")
        if size > DATA_BYTES:
            raise Uf2Error(f"block at byte {offset}: payload size {size} > {DATA_BYTES}")
        payload = raw[_HEADER.size : _HEADER.size + size]
        fam = family if flags & FLAG_FAMILY_ID_PRESENT else None
        blocks.append(Uf2Block(address, payload, fam, flags, block_no, num_blocks))
    return blocks


def is_errata_block(block: Uf2Block) -> bool:
    """True for picotool's RP2350-E10 block (the checks of picotool's check_abs_block)."""
    return (
        block.family == ABSOLUTE_FAMILY
        and block.address == ERRATA_ADDRESS
        and block.payload == bytes([ERRATA_FILL]) * PAYLOAD_BYTES
        and block.block_no == 0
        and block.num_blocks == 2
    )


def image_family(data: bytes) -> int | None:
    """The chip family the UF2 targets: that of its first block that is not the errata
    block (None when it names no family)."""
    for block in parse_uf2(data):
        if not is_errata_block(block):
            return block.family
    return None


def write_uf2(
    bin_path: Path, uf2_path: Path, family: int, errata_family: int | None = None
) -> Path:
    """``bin_path`` (the SDK's flat image at the flash base) as a UF2 at ``uf2_path``."""
    uf2_path.write_bytes(bin_to_uf2(bin_path.read_bytes(), family, FLASH_BASE, errata_family))
    return uf2_path


_ELF_HEADER = struct.Struct("<16sHHIIIIIHHHHHH")
_PROGRAM_HEADER = struct.Struct("<8I")
PT_LOAD = 1


def elf_image(data: bytes) -> tuple[int, bytes]:
    """(load address, flat image) of a 32-bit little-endian ARM ELF: its loadable segments
    with file contents, at their physical (load) addresses, gaps filled with zeros, as
    ``objcopy -O binary`` lays them out."""
    if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise Uf2Error("not an ELF file")
    if data[4] != 1 or data[5] != 1:
        raise Uf2Error("not a 32-bit little-endian ELF (the Pico's)")
    fields = _ELF_HEADER.unpack_from(data)
    phoff, phentsize, phnum = fields[5], fields[9], fields[10]
    segments = []
    for k in range(phnum):
        offset = phoff + k * phentsize
        if offset + _PROGRAM_HEADER.size > len(data):
            raise Uf2Error("truncated ELF program headers")
        p_type, p_offset, _vaddr, paddr, filesz, *_ = _PROGRAM_HEADER.unpack_from(data, offset)
        if p_type == PT_LOAD and filesz > 0:
            if p_offset + filesz > len(data):
                raise Uf2Error("truncated ELF segment")
            segments.append((paddr, data[p_offset : p_offset + filesz]))
    if not segments:
        raise Uf2Error("the ELF has no loadable contents")
    base = min(a for a, _ in segments)
    image = bytearray(max(a + len(b) for a, b in segments) - base)
    for address, body in segments:
        image[address - base : address - base + len(body)] = body
    return base, bytes(image)


def convert(source: Path, target: Path, family: str, base_address: int = FLASH_BASE) -> int:
    """``source`` (a .bin at ``base_address``, or an .elf) as a UF2 for ``family``
    (rp2040 or rp2350, which adds picotool's errata block); the number of blocks."""
    families = uf2_families()  # from boards/*.toml, the one home of chip facts
    if family not in families:
        raise Uf2Error(f"unknown family {family!r}; one of {', '.join(families)}")
    try:
        data = source.read_bytes()
    except OSError as e:
        raise Uf2Error(f"{source}: {e.strerror}") from None
    if data[:4] == b"\x7fELF":
        base_address, data = elf_image(data)
    if not data:
        raise Uf2Error(f"{source} is empty: a UF2 of it would flash nothing")
    fam, errata = families[family]
    uf2 = bin_to_uf2(data, fam, base_address, errata)
    try:
        target.write_bytes(uf2)
    except OSError as e:
        raise Uf2Error(f"{target}: cannot write ({e.strerror})") from None
    return len(uf2) // BLOCK_BYTES
