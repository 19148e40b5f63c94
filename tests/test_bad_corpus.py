"""The broken-model corpus (tests/data/bad/, written by tests/make_bad_models.py): every
file is refused with one line naming the file and the expected fault, exit code 2, no
traceback; and the committed files are what the script writes today."""

from __future__ import annotations

import json
from pathlib import Path

import make_bad_models
import pytest

from rip.cli.compile import main as compile_main
from rip.core.errors import ModelError
from rip.frontend.reader import read_model

BAD = Path(__file__).resolve().parent / "data" / "bad"
EXPECTED: dict[str, str] = json.loads((BAD / "EXPECTED.json").read_text())


def test_corpus_is_what_the_script_writes() -> None:
    assert make_bad_models.main(["--check"]) == 0
    assert sorted(p.stem for p in BAD.glob("*.tflite")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reader_refuses_with_one_line(name: str) -> None:
    path = BAD / f"{name}.tflite"
    with pytest.raises(ModelError) as info:
        read_model(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert EXPECTED[name] in message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rip_compile_exits_2_with_one_line(name: str, capsys: pytest.CaptureFixture) -> None:
    path = BAD / f"{name}.tflite"
    assert compile_main([str(path), "--board", "host", "--placer", "firstfit"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rip-compile: error: ")
    assert "Traceback" not in err
