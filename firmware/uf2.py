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

Inputs are checked against the chip before any work (``rip-uf2``, ``rip-flash``): an ELF
must be a 32-bit little-endian Arm executable with at most ``MAX_PROGRAM_HEADERS``
program headers, whose loaded bytes lie inside the chip's flash (the board file's
``flash_bytes`` from ``FLASH_BASE``) without overlapping; a BIN and its ``--base`` must fit
the same window; a UF2 to be flashed is checked block by block (``check_image``). So memory
and time are bounded by the flash size (16 MiB at most), whatever the file says.
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rip.boards import Board, pico_boards, uf2_families
from rip.core.errors import NO_SPACE_ERRNOS, DiskFullError, Uf2Error

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
# The flags of every block of a Pico image (picotool's and ours): familyID only. Others
# (not-main-flash, file container, MD5, extension tags) make the bootrom skip the block or
# read it otherwise; only the errata block carries an extension tag.
IMAGE_FLAGS = FLAG_FAMILY_ID_PRESENT


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


def flash_window(board: Board) -> tuple[int, int]:
    """The chip's flash as [start, end) addresses: ``FLASH_BASE`` and the board file's
    ``flash_bytes``."""
    if not board.flash_bytes:
        raise Uf2Error(f"board {board.name!r} has no flash_bytes in its board file")
    return FLASH_BASE, FLASH_BASE + board.flash_bytes


def _where(chip: str, window: tuple[int, int]) -> str:
    return f"the {chip}'s flash, 0x{window[0]:08x}..0x{window[1]:08x}"


# ---- UF2 blocks, checked ---------------------------------------------------------------------
def _chips() -> dict[int, tuple[str, tuple[int, int]]]:
    """UF2 family id -> (chip, flash window), from every Pico board file."""
    return {
        b.uf2_family: (b.chip, flash_window(b))
        for b in pico_boards()
        if b.uf2_family is not None and b.flash_bytes
    }


def max_uf2_bytes() -> int:
    """The largest UF2 any Pico's flash can take: one block per 256-byte page, the errata
    block, and as many again (a file of twice that is no image for these chips)."""
    pages = max((w[1] - w[0]) // PAYLOAD_BYTES for _, w in _chips().values())
    return (pages + 1) * BLOCK_BYTES


def check_image(data: bytes) -> int:
    """The family of a UF2 that a Pico bootloader writes as one whole image: every block
    well framed, for one known Pico family, 256-byte payloads at 256-byte aligned
    addresses inside that chip's flash, no flag the bootrom would skip or misuse, block
    numbers 0..n-1 each once with the same count n in every block and n blocks in the file,
    no two blocks for one address; picotool's RP2350-E10 errata block is allowed first. A
    Uf2Error naming the first block that breaks a rule."""
    if not data:
        raise Uf2Error("is empty")
    if len(data) > max_uf2_bytes():
        raise Uf2Error(f"{len(data):,} B, more than any Pico's flash takes as a UF2")
    blocks = parse_uf2(data)
    chips = _chips()
    body = [(k, b) for k, b in enumerate(blocks) if not (k == 0 and is_errata_block(b))]
    if not body:
        raise Uf2Error("holds no block to write (only the errata block)")
    families = {b.family for _, b in body}
    if None in families:
        raise Uf2Error("a block names no chip family; not a Pico UF2")
    unknown = sorted(f for f in families if f is not None and f not in chips)
    if unknown:
        known = ", ".join(f"{chip} 0x{fam:08x}" for fam, (chip, _) in chips.items())
        raise Uf2Error(f"family 0x{unknown[0]:08x} is not a Pico's ({known})")
    if len(families) > 1:
        raise Uf2Error("blocks for several chip families; not one firmware image")
    family = families.pop()
    assert family is not None
    chip, window = chips[family]
    count = body[0][1].num_blocks
    seen_numbers: set[int] = set()
    seen_addresses: set[int] = set()
    for k, b in body:
        at = f"block {k} (byte {k * BLOCK_BYTES})"
        if b.flags != IMAGE_FLAGS:
            raise Uf2Error(f"{at}: flags 0x{b.flags:08x}, not a Pico image's 0x{IMAGE_FLAGS:08x}")
        if len(b.payload) != PAYLOAD_BYTES:
            raise Uf2Error(f"{at}: payload {len(b.payload)} B, the bootrom takes {PAYLOAD_BYTES}")
        if b.address % PAYLOAD_BYTES:
            raise Uf2Error(f"{at}: address 0x{b.address:08x} is not 256-byte aligned")
        if not (window[0] <= b.address and b.address + PAYLOAD_BYTES <= window[1]):
            raise Uf2Error(f"{at}: address 0x{b.address:08x} is outside {_where(chip, window)}")
        if b.num_blocks != count:
            raise Uf2Error(f"{at}: says {b.num_blocks} blocks, block {body[0][0]} says {count}")
        if not 0 <= b.block_no < count or b.block_no in seen_numbers:
            raise Uf2Error(f"{at}: number {b.block_no} is outside 0..{count - 1} or repeated")
        if b.address in seen_addresses:
            raise Uf2Error(f"{at}: a second block for address 0x{b.address:08x}")
        seen_numbers.add(b.block_no)
        seen_addresses.add(b.address)
    if len(body) != count:
        raise Uf2Error(f"holds {len(body)} blocks of a {count}-block image")
    return family


# ---- ELF and BIN inputs ------------------------------------------------------------------------
_ELF_HEADER = struct.Struct("<16sHHIIIIIHHHHHH")
_PROGRAM_HEADER = struct.Struct("<8I")
PT_LOAD = 1
ET_EXEC = 2
EM_ARM = 40
# A Pico SDK executable has 3 to 6 program headers; 64 is far more than any linker script
# of these chips needs, and bounds the work before any segment is looked at.
MAX_PROGRAM_HEADERS = 64
MAX_ELF_BYTES = 256 << 20  # with debug information a large firmware's ELF is a few MB
_MACHINES = {3: "x86", 62: "x86-64", 183: "AArch64", 243: "RISC-V", 8: "MIPS"}


def elf_image(
    data: bytes, window: tuple[int, int] = (0, 1 << 32), chip: str = "chip"
) -> tuple[int, bytes]:
    """(load address, flat image) of a 32-bit little-endian Arm executable: its loadable
    segments with file contents, at their physical (load) addresses, gaps filled with
    zeros, as ``objcopy -O binary`` lays them out. Every loaded byte must lie in
    ``window`` (the chip's flash), segments must not overlap, and at most
    ``MAX_PROGRAM_HEADERS`` program headers are read, so the image is never larger than
    the flash and the work is bounded."""
    if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise Uf2Error("not an ELF file")
    if data[4] != 1 or data[5] != 1:
        raise Uf2Error("not a 32-bit little-endian ELF (the Pico's)")
    fields = _ELF_HEADER.unpack_from(data)
    e_type, machine, phoff, phentsize, phnum = (
        fields[1],
        fields[2],
        fields[5],
        fields[9],
        fields[10],
    )
    if machine != EM_ARM:
        name = _MACHINES.get(machine, f"machine {machine}")
        raise Uf2Error(f"an ELF for {name}, not for Arm (the {chip}'s core)")
    if e_type != ET_EXEC:
        raise Uf2Error(f"ELF type {e_type}, not an executable (a linked firmware is type 2)")
    if phnum == 0:
        raise Uf2Error("the ELF has no program headers (no loadable contents)")
    if phnum > MAX_PROGRAM_HEADERS:
        raise Uf2Error(
            f"{phnum:,} program headers, more than a firmware has ({MAX_PROGRAM_HEADERS})"
        )
    if phentsize != _PROGRAM_HEADER.size:
        raise Uf2Error(f"program header size {phentsize}, not the 32 of a 32-bit ELF")
    if phoff + phnum * phentsize > len(data):
        raise Uf2Error("truncated ELF program headers")
    segments = []
    for k in range(phnum):
        p_type, p_offset, _vaddr, paddr, filesz, *_ = _PROGRAM_HEADER.unpack_from(
            data, phoff + k * phentsize
        )
        if p_type != PT_LOAD or filesz == 0:
            continue
        if p_offset + filesz > len(data):
            raise Uf2Error(f"segment {k} is truncated (ends past the file)")
        if not (window[0] <= paddr and paddr + filesz <= window[1]):
            raise Uf2Error(
                f"segment {k} loads 0x{paddr:08x}..0x{paddr + filesz:08x}, outside "
                f"{_where(chip, window)}"
            )
        segments.append((paddr, filesz, p_offset, k))
    if not segments:
        raise Uf2Error("the ELF has no loadable contents")
    segments.sort()
    for (a, n, _, j), (b, _, _, k) in itertools.pairwise(segments):
        if a + n > b:
            raise Uf2Error(f"segments {j} and {k} overlap at 0x{b:08x}")
    base = segments[0][0]
    image = bytearray(segments[-1][0] + segments[-1][1] - base)
    for address, size, offset, _ in segments:
        image[address - base : address - base + size] = data[offset : offset + size]
    return base, bytes(image)


def _input(source: Path, limit: int, room: str) -> bytes:
    """The input file's bytes, refused above ``limit`` (``room`` says where they would
    go) before they are read."""
    try:
        size = source.stat().st_size
        if size > limit:
            raise Uf2Error(f"{source}: {size:,} B, more than {room} ({limit:,} B)")
        return source.read_bytes()
    except OSError as e:
        raise Uf2Error(f"{source}: {e.strerror}") from None


def convert(source: Path, target: Path, family: str, base_address: int = FLASH_BASE) -> int:
    """``source`` (a .bin at ``base_address``, or an .elf) as a UF2 for ``family``
    (rp2040 or rp2350, which adds picotool's errata block); the number of blocks. The
    input is checked against the chip's flash first (see the module docstring)."""
    families = uf2_families()  # from boards/*.toml, the one home of chip facts
    if family not in families:
        raise Uf2Error(f"unknown family {family!r}; one of {', '.join(families)}")
    fam, errata = families[family]
    board = next(b for b in pico_boards() if b.uf2_family == fam)
    window = flash_window(board)
    if not window[0] <= base_address < window[1]:
        raise Uf2Error(f"--base {_hex(base_address)} is outside {_where(board.chip, window)}")
    if _head(source) == b"\x7fELF":
        raw = _input(source, MAX_ELF_BYTES, "an ELF of these chips needs")
        try:
            base_address, data = elf_image(raw, window, board.chip)
        except Uf2Error as e:
            raise Uf2Error(f"{source}: {e}") from None
    else:
        room = f"fits from --base {_hex(base_address)} to the end of the {board.chip}'s flash"
        data = _input(source, window[1] - base_address, room)
    if not data:
        raise Uf2Error(f"{source} is empty: a UF2 of it would flash nothing")
    uf2 = bin_to_uf2(data, fam, base_address, errata)
    try:
        _write(target, uf2)
    except OSError as e:
        if e.errno in NO_SPACE_ERRNOS:
            raise DiskFullError(f"{target}: no space left on the device ({e.strerror})") from None
        raise Uf2Error(f"{target}: cannot write ({e.strerror})") from None
    return len(uf2) // BLOCK_BYTES


def _write(target: Path, data: bytes) -> None:
    """``data`` at ``target``, never half of it in a file: a regular file (or a new one) is
    written beside it and renamed onto it; anything else (a device, a pipe) is written to
    as it is, and never removed."""
    if os.path.lexists(target) and not target.is_file():
        target.write_bytes(data)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.rip-tmp-", dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        if hasattr(os, "fchmod"):  # as a plain open() would create it, not mkstemp's 0600
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _hex(address: int) -> str:
    return f"0x{address:08x}" if address >= 0 else str(address)


def _head(source: Path) -> bytes:
    """The first four bytes (an ELF's magic), or b"" when the file cannot be read."""
    try:
        with source.open("rb") as f:
            return f.read(4)
    except OSError:
        return b""
