"""The bad-input corpus that is not models (tests/data/bad/inputs/, written by
tests/make_bad_inputs.py): board files, expected.json files, serial lines, rip-uf2's ELF and
BIN inputs, rip-flash's UF2 files. Each is refused through the command a user runs, with
one line naming the fault and exit code 2, nothing written; and the committed files are
what the script writes today."""

from __future__ import annotations

import json
from pathlib import Path

import make_bad_inputs
import pytest

from rip.boards import parse_board
from rip.cli.flash import main as flash_main
from rip.cli.uf2 import main as uf2_main
from rip.cli.verify import main_verify
from rip.core.errors import RipError
from rip.firmware.result import parse_result_line

INPUTS = Path(__file__).resolve().parent / "data" / "bad" / "inputs"
EXPECTED: dict[str, dict] = json.loads((INPUTS / "EXPECTED.json").read_text())


def of(kind: str) -> list[str]:
    return sorted(k for k in EXPECTED if k.startswith(f"{kind}/"))


def one_line(err: str, prog: str, fragment: str) -> None:
    assert err.count("\n") == 1 and err.startswith(f"{prog}: error: "), err
    assert fragment in err and "Traceback" not in err, err


def test_corpus_is_what_the_script_writes() -> None:
    assert make_bad_inputs.main(["--check"]) == 0


@pytest.mark.parametrize("name", of("board"))
def test_a_bad_board_file_is_one_line(name: str) -> None:
    with pytest.raises(RipError) as info:
        parse_board((INPUTS / name).read_bytes(), name)
    message = str(info.value)
    assert message.startswith(f"board file {name}: ") and "\n" not in message, message
    assert EXPECTED[name]["expect"] in message and info.value.exit_code == 2, message


def test_the_base_board_of_the_corpus_parses() -> None:
    """The corpus's faults are its only faults: the board it starts from is accepted."""
    assert parse_board(make_bad_inputs.BOARD.encode(), "base.toml").name == "bad"


@pytest.mark.parametrize("name", of("expected"))
def test_a_bad_expected_json_is_one_line(name: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "expected.json").write_bytes((INPUTS / name).read_bytes())
    assert main_verify([str(tmp_path), "--port", "loop://", "--timeout", "0.1"]) == 2
    one_line(capsys.readouterr().err, "rip-verify", EXPECTED[name]["expect"])


@pytest.mark.parametrize("name", of("line"))
def test_no_line_of_the_corpus_is_a_result(name: str) -> None:
    line = (INPUTS / name).read_bytes().decode("utf-8")
    assert parse_result_line(line) is None, line


def test_the_base_line_of_the_corpus_is_a_result() -> None:
    result = parse_result_line(make_bad_inputs.GOOD_LINE)
    assert (
        result is not None
        and result.checksum == 0x23C68D3F
        and result.line() == (make_bad_inputs.GOOD_LINE)
    )


@pytest.mark.parametrize("name", of("elf") + of("bin"))
def test_a_bad_firmware_input_is_refused_before_a_uf2_is_written(
    name: str, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out.uf2"
    args = EXPECTED[name].get("args", [])
    code = uf2_main([str(INPUTS / name), "-o", str(out), "--family", "rp2040", *args])
    assert code == 2
    one_line(capsys.readouterr().err, "rip-uf2", EXPECTED[name]["expect"])
    assert not out.exists()


def test_the_base_elf_of_the_corpus_converts(tmp_path: Path) -> None:
    elf = tmp_path / "good.elf"
    elf.write_bytes(make_bad_inputs.elf([(make_bad_inputs.FLASH, make_bad_inputs.CODE)]))
    assert uf2_main([str(elf), "-o", str(tmp_path / "g.uf2"), "--family", "rp2040"]) == 0


def drive(tmp_path: Path) -> Path:
    """A folder that looks like the RP2040's BOOTSEL drive."""
    folder = tmp_path / "RPI-RP2"
    folder.mkdir()
    (folder / "INFO_UF2.TXT").write_text("UF2 Bootloader v3.0\nBoard-ID: RPI-RP2\n")
    return folder


@pytest.mark.parametrize("name", of("uf2"))
def test_a_bad_uf2_is_never_copied(name: str, tmp_path: Path, capsys) -> None:
    target = drive(tmp_path)
    before = sorted(p.name for p in target.iterdir())
    assert flash_main([str(INPUTS / name), "--drive", str(target)]) == 2
    one_line(capsys.readouterr().err, "rip-flash", EXPECTED[name]["expect"])
    assert sorted(p.name for p in target.iterdir()) == before


def test_the_base_uf2_of_the_corpus_is_copied(tmp_path: Path, capsys) -> None:
    good = tmp_path / "good.uf2"
    good.write_bytes(make_bad_inputs.image())
    target = drive(tmp_path)
    assert flash_main([str(good), "--drive", str(target)]) == 0, capsys.readouterr().err
    assert (target / "good.uf2").read_bytes() == good.read_bytes()
