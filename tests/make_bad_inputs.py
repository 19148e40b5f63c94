"""Write the corpus of bad inputs that are not models under tests/data/bad/inputs/ (run from
the repository root).

    python tests/make_bad_inputs.py            # (re)write tests/data/bad/inputs/
    python tests/make_bad_inputs.py --check    # exit 1 if the committed files differ

Kinds, one folder each: ``board`` (board TOML files), ``expected`` (``expected.json`` for
rip-verify), ``line`` (one serial line a board might print: none is a result line),
``elf`` and ``bin`` (rip-uf2 inputs), ``uf2`` (rip-flash inputs). ``EXPECTED.json`` pairs
each file (``kind/name.ext``) with the fragment of the one-line refusal rip must print for
it and the extra arguments of its command (tests/test_bad_inputs.py). Every file is built
here from a small valid one with one fault, by code independent of rip's parsers.
"""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "bad" / "inputs"

# ---- boards ---------------------------------------------------------------------------------
BOARD = """\
name = "bad"
description = "a Pico-like board"
chip = "RP2040"
sram_bytes = 262144
core = "cortex-m0plus"
sdk_static_bytes = 7964
stack_bytes = 2048
alignment = 4
cycle_counter = "timer_us"
pico_board = "pico"
pico_platform = "rp2040"
uf2_family = 0xe48bff56
boot_drive = "RPI-RP2"
flash_bytes = 2097152
clock_hz = 125000000
cycles_per_mac_estimate = 35
"""


def _board(old: str, new: str) -> bytes:
    assert old in BOARD, old
    return BOARD.replace(old, new).encode()


def _board_plus(line: str) -> bytes:
    return (BOARD + line + "\n").encode()


def boards() -> Iterator[tuple[str, bytes, str]]:
    """(name, bytes, fragment of the refusal)."""
    cpm = "cycles_per_mac_estimate = 35"
    yield "cycles_per_mac_1e308", _board(cpm, "cycles_per_mac_estimate = 1e308"), "in 0..10000"
    yield "cycles_per_mac_inf", _board(cpm, "cycles_per_mac_estimate = inf"), "got inf"
    yield "cycles_per_mac_nan", _board(cpm, "cycles_per_mac_estimate = nan"), "got nan"
    yield "clock_hz_huge", _board("clock_hz = 125000000", "clock_hz = 1" + "0" * 30), "clock_hz"
    yield "alignment_2_40", _board("alignment = 4", "alignment = 1099511627776"), "1..4,096"
    yield "alignment_5000_digits", _board("alignment = 4", "alignment = " + "9" * 5000), "digits"
    yield "nested_50000", b"name = " + b"[" * 50000, "nested too deeply"
    yield "too_big", b"# " + b"x" * 70000 + b"\n", "more than a board file may be"
    counter = 'cycle_counter = "timer_us"'
    yield "cycle_counter_evil", _board(counter, 'cycle_counter = "evil"'), "'evil' is not one of"
    family = "uf2_family = 0xe48bff56"
    yield "uf2_family_2_40", _board(family, "uf2_family = 0x10000000000"), "uf2_family must be in"
    yield "flash_negative", _board("flash_bytes = 2097152", "flash_bytes = -1"), "flash_bytes"
    yield "cflags_shell", _board_plus('cflags = ["-O2", "$(shell touch /tmp/rip-pwned)"]'), "cflags"
    yield "cflags_backtick", _board_plus('cflags = ["-DX=`id`"]'), "cflags"
    yield "cflags_plugin", _board_plus('cflags = ["-fplugin=/tmp/evil.so"]'), "cflags"
    yield "cflags_linker", _board_plus('cflags = ["-Wl,--wrap=main"]'), "cflags"
    yield "cflags_space", _board_plus('cflags = ["-O2 -o /etc/passwd"]'), "cflags"
    yield "cflags_not_a_flag", _board_plus('cflags = ["/tmp/evil.c"]'), "cflags"
    desc = 'description = "a Pico-like board"'
    yield "description_newline", _board(desc, 'description = "x\\nall:; touch /tmp/p"'), "descr"
    yield "description_dollar", _board(desc, 'description = "$(shell id)"'), "description"
    yield "description_comment_end", _board(desc, 'description = "x */ int y;"'), "description"
    yield "description_escape", _board(desc, 'description = "\\u001b[2J"'), "description"
    yield "chip_quote", _board('chip = "RP2040"', 'chip = "RP\\"2040"'), "chip"
    yield "pico_board_cmake", _board('pico_board = "pico"', 'pico_board = "pico)\\n"'), "pico_bo"
    yield "boot_drive_glob", _board('boot_drive = "RPI-RP2"', 'boot_drive = "*"'), "boot_drive"
    yield "name_path", _board('name = "bad"', 'name = "../../etc/x"'), "name"
    yield "qemu_machine_space", _board_plus('qemu_machine = "mps2-an505 -s"'), "qemu_machine"
    yield (
        "code_past_4gib",
        _board_plus("code_origin = 0xffff0000\ncode_bytes = 1048576"),
        "ends past the 4 GiB",
    )
    yield "fpu_string", _board_plus('fpu = "yes"'), "fpu has the wrong type"


# ---- expected.json --------------------------------------------------------------------------
EXPECTED_BASE = {
    "model": "example",
    "board": "pico2",
    "strategy": "rip",
    "arena_bytes": 16384,
    "checksum": "0x23c68d3f",
}


def _expected(**changes: object) -> bytes:
    return json.dumps({**EXPECTED_BASE, **changes}).encode()


def _expected_raw(field: str, raw: str) -> bytes:
    """The base with ``field`` set to ``raw`` (JSON text json.dumps would not write)."""
    return (json.dumps(EXPECTED_BASE)[:-1] + f', "{field}": {raw}}}').encode()


def expecteds() -> Iterator[tuple[str, bytes, str]]:
    seconds = "expected_inference_seconds"
    yield "seconds_infinity", _expected_raw(seconds, "Infinity"), "Infinity is not a JSON number"
    yield "seconds_nan", _expected_raw(seconds, "NaN"), "NaN is not a JSON number"
    yield "seconds_1e400", _expected_raw(seconds, "1e400"), "too large"
    yield "seconds_negative", _expected(expected_inference_seconds=-1), "is outside"
    yield "macs_negative", _expected(macs=-5), "macs -5 is outside"
    yield "macs_float", _expected(macs=1.5), "macs has the wrong type"
    yield "arena_2_40", _expected(arena_bytes=1 << 40), "arena_bytes 1099511627776 is outside"
    yield "arena_5000_digits", _expected_raw("arena_bytes", "1" * 5000), "not valid JSON"
    yield "checksum_underscore", _expected(checksum="0x23c6_8d3f"), "not a 32-bit hex number"
    yield "checksum_plus", _expected(checksum="+0x23c68d3f"), "not a 32-bit hex number"
    yield "checksum_fullwidth", _expected(checksum="0x２３ｃ６"), "not a 32-bit hex number"
    yield "checksum_spaces", _expected(checksum=" 0x23c68d3f "), "not a 32-bit hex number"
    yield "board_wrong_type", _expected(board=["pico2"]), "board has the wrong type"


# ---- serial lines ---------------------------------------------------------------------------
GOOD_LINE = (
    "RIP-RESULT model=example board=pico2 strategy=rip arena=16384 checksum=0x23c68d3f "
    "cycles=123456 unit=cycles stack=612"
)


def _line(old: str, new: str) -> bytes:
    assert old in GOOD_LINE, old
    return GOOD_LINE.replace(old, new).encode()


def lines() -> Iterator[tuple[str, bytes, str]]:
    """Lines none of which is a result line (the fragment is what the test names)."""
    wrong = GOOD_LINE.replace("0x23c68d3f", "0xdeadbeef")
    yield "checksum_underscore", _line("0x23c68d3f", "0x23c6_8d3f"), "no result"
    yield "checksum_plus", _line("0x23c68d3f", "+0x23c68d3f"), "no result"
    yield "checksum_upper", _line("0x23c68d3f", "0x23C68D3F"), "no result"
    yield "checksum_nine_digits", _line("0x23c68d3f", "0x023c68d3f"), "no result"
    yield "checksum_fullwidth", _line("0x23c68d3f", "0x２３ｃ６８ｄ３ｆ"), "no result"
    yield "arena_plus", _line("arena=16384", "arena=+16384"), "no result"
    yield "arena_underscore", _line("arena=16384", "arena=16_384"), "no result"
    yield "arena_fullwidth", _line("arena=16384", "arena=１６３８４"), "no result"
    yield "arena_arabic_indic", _line("arena=16384", "arena=١٦٣٨٤"), "no result"
    yield "arena_leading_zero", _line("arena=16384", "arena=016384"), "no result"
    yield "arena_past_u32", _line("arena=16384", "arena=4294967296"), "no result"
    yield "wrong_then_right", f"{wrong} {GOOD_LINE}".encode(), "no result"
    yield "wrong_then_right_no_space", f"{wrong}{GOOD_LINE}".encode(), "no result"
    yield "right_then_error", f"RIP-ERROR op=3 status=2 {GOOD_LINE}".encode(), "no result"
    yield "duplicate_checksum", _line("cycles=", "checksum=0xdeadbeef cycles="), "no result"
    yield "trailing_field", (GOOD_LINE + " extra=1").encode(), "no result"
    yield "unit_mismatch", _line("cycles=123456", "instructions=123456"), "no result"
    yield "unknown_unit", _line("unit=cycles", "unit=ms"), "no result"
    yield "model_escape", _line("model=example", "model=ex\x1b[2Jample"), "no result"
    yield "missing_arena", _line("arena=16384 ", ""), "no result"
    yield "fields_reordered", _line("board=pico2 strategy=rip", "strategy=rip board=pico2"), "no r"


# ---- ELF and BIN inputs of rip-uf2 ------------------------------------------------------------
FLASH = 0x10000000


def elf(
    segments: list[tuple[int, bytes]],
    machine: int = 40,
    kind: int = 2,
    ident: bytes = b"\x7fELF\x01\x01\x01",
    phnum: int | None = None,
    phentsize: int = 32,
    pad: int = 0,
) -> bytes:
    """A 32-bit ELF with one PT_LOAD per (load address, bytes), laid out by hand."""
    count = len(segments) if phnum is None else phnum
    table = 52 + 32 * len(segments)
    header = struct.pack(
        "<16sHHIIIIIHHHHHH",
        ident.ljust(16, b"\0"),
        kind,
        machine,
        1,
        segments[0][0] | 1 if segments else 0,
        52,
        0,
        0x05000200,
        52,
        phentsize,
        count,
        40,
        0,
        0,
    )
    offset, headers, bodies = table, b"", b""
    for address, body in segments:
        headers += struct.pack("<8I", 1, offset, address, address, len(body), len(body), 5, 4)
        bodies += body
        offset += len(body)
    return header + headers + bodies + bytes(pad)


CODE = bytes(range(256)) * 2


def elfs() -> Iterator[tuple[str, bytes, str]]:
    yield "x86", elf([(FLASH, CODE)], machine=3), "an ELF for x86, not for Arm"
    yield "x86_64", elf([(FLASH, CODE)], machine=62), "an ELF for x86-64"
    yield "elf64", elf([(FLASH, CODE)], ident=b"\x7fELF\x02\x01\x01"), "not a 32-bit"
    yield "big_endian", elf([(FLASH, CODE)], ident=b"\x7fELF\x01\x02\x01"), "little-endian"
    yield "relocatable", elf([(FLASH, CODE)], kind=1), "not an executable"
    yield (
        "65535_headers_size_0",
        elf([], phnum=65535, phentsize=0, pad=60000),
        "65,535 program headers",
    )
    yield "65_headers", elf([(FLASH + 256 * k, CODE[:256]) for k in range(65)]), "65 program"
    yield "header_size_0", elf([(FLASH, CODE)], phentsize=0), "program header size 0"
    yield "no_headers", elf([], phnum=0), "no program headers"
    yield "segments_256mb_apart", elf([(FLASH, CODE), (FLASH + (256 << 20), CODE)]), "outside"
    yield "segment_4gb_wrap", elf([(0xFFFFFF00, CODE)]), "outside the RP2040's flash"
    yield "load_address_0", elf([(0, CODE)]), "loads 0x00000000..0x00000200, outside"
    yield "segment_in_ram", elf([(0x20000000, CODE)]), "outside the RP2040's flash"
    yield "past_flash_end", elf([(FLASH + (2 << 20) - 256, CODE)]), "outside the RP2040's flash"
    yield "overlapping", elf([(FLASH, CODE), (FLASH + 256, CODE)]), "overlap"
    truncated = elf([(FLASH, CODE)])[:-100]
    yield "truncated_segment", truncated, "truncated"


def bins() -> Iterator[tuple[str, bytes, str, list[str]]]:
    """(name, bytes, fragment, the rip-uf2 arguments beyond input, -o and --family)."""
    yield "base_ffffff00", CODE, "--base 0xffffff00 is outside", ["--base", "0xFFFFFF00"]
    yield "base_minus_1", CODE, "--base -1 is outside", ["--base", "-1"]
    yield "base_0", CODE, "--base 0x00000000 is outside", ["--base", "0"]
    yield "base_ram", CODE, "--base 0x20000000 is outside", ["--base", "0x20000000"]
    yield "past_flash_end", CODE, "to the end of the RP2040's flash", ["--base", "0x101fff00"]


# ---- UF2 files for rip-flash ----------------------------------------------------------------
RP2040 = 0xE48BFF56
RP2350 = 0xE48BFF59


def block(address: int, number: int, count: int, family: int = RP2040, size: int = 256,
          flags: int = 0x2000, end: int = 0x0AB16F30) -> bytes:  # fmt: skip
    """One 512-byte UF2 block (the UF2 specification's layout)."""
    head = struct.pack("<8I", 0x0A324655, 0x9E5D5157, flags, address, size, number, count, family)
    return head + bytes([number & 0xFF]) * 476 + struct.pack("<I", end)


def image(count: int = 3, **changes: dict) -> bytes:
    """``count`` blocks of a good image; ``changes`` {index: block() keyword changes}."""
    out = b""
    for k in range(count):
        fields = {"address": FLASH + 256 * k, "number": k, "count": count}
        fields.update(changes.get(f"b{k}", {}))
        out += block(**fields)
    return out


def uf2s() -> Iterator[tuple[str, bytes, str]]:
    yield "count_inconsistent", image(b1={"count": 4}), "says 4 blocks"
    yield "payload_empty", image(b0={"size": 0}), "payload 0 B"
    yield "payload_short", image(b2={"size": 100}), "payload 100 B"
    yield "address_unaligned", image(b1={"address": FLASH + 260}), "not 256-byte aligned"
    yield "address_in_ram", image(b0={"address": 0x20000000}), "outside the RP2040's flash"
    yield "address_0", image(b0={"address": 0}), "outside the RP2040's flash"
    yield "address_past_flash", image(b2={"address": FLASH + (2 << 20)}), "outside the RP2040"
    yield "number_repeated", image(b2={"number": 1}), "outside 0..2 or repeated"
    yield "number_past_count", image(b2={"number": 7}), "outside 0..2 or repeated"
    yield "block_missing", image(3)[:1024], "holds 2 blocks of a 3-block image"
    yield "address_repeated", image(b2={"address": FLASH}), "a second block for address"
    yield "flag_not_main_flash", image(b1={"flags": 0x2001}), "flags 0x00002001"
    yield "flag_file_container", image(b1={"flags": 0x3000}), "flags 0x00003000"
    yield "families_mixed", image(b1={"family": RP2350}), "several chip families"
    yield "family_foreign", image(b0={"family": 0x12345678}, b1={"family": 0x12345678},
                                  b2={"family": 0x12345678}), "is not a Pico's"  # fmt: skip
    yield "end_magic", image(b1={"end": 0}), "bad magic"
    yield "no_family_flag", image(b0={"flags": 0}, b1={"flags": 0}, b2={"flags": 0}), "no chip"


# ---- the corpus -----------------------------------------------------------------------------
def build() -> dict[str, tuple[bytes, dict]]:
    """``kind/name.ext`` -> (bytes, EXPECTED.json entry)."""
    out: dict[str, tuple[bytes, dict]] = {}
    for kind, ext, cases in (
        ("board", "toml", boards()),
        ("expected", "json", expecteds()),
        ("line", "txt", lines()),
        ("elf", "elf", elfs()),
        ("uf2", "uf2", uf2s()),
    ):
        for name, data, fragment in cases:
            out[f"{kind}/{name}.{ext}"] = (data, {"expect": fragment})
    for name, data, fragment, args in bins():
        out[f"bin/{name}.bin"] = (data, {"expect": fragment, "args": args})
    return out


def main(argv: list[str]) -> int:
    files = build()
    index = json.dumps({k: v[1] for k, v in files.items()}, indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        stale = [k for k, (data, _) in files.items() if _read(OUT / k) != data]
        if _read(OUT / "EXPECTED.json") != index.encode():
            stale.append("EXPECTED.json")
        extra = sorted(
            p.relative_to(OUT).as_posix()
            for p in OUT.rglob("*")
            if p.is_file() and p.name != "EXPECTED.json"
        )
        stale += [k for k in extra if k not in files]
        if stale:
            print(f"stale corpus files (run tests/make_bad_inputs.py): {stale}", file=sys.stderr)
            return 1
        return 0
    for old in OUT.rglob("*"):
        if old.is_file() and old.relative_to(OUT).as_posix() not in files:
            old.unlink()
    for name, (data, _) in files.items():
        (OUT / name).parent.mkdir(parents=True, exist_ok=True)
        (OUT / name).write_bytes(data)
    (OUT / "EXPECTED.json").write_text(index)
    print(f"wrote {len(files)} inputs to {OUT}")
    return 0


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
