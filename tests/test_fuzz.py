"""Fuzzing the reader, the validator and the planner (Hypothesis).

Property: whatever the bytes, ``read_model`` returns a graph or raises a one-line
``ModelError``; a graph it returns goes through rewriting, requirements and first-fit
planning to a plan or a ``RipError``, never another exception, a hang or unbounded memory.
The same for ``rip-bounds``'s layer evaluation on arbitrary JSON-like fields, and (issue
22) for board files (an accepted board holds only finite numbers and safe strings), result
lines (an accepted line is exactly the canonical one), UF2 and ELF files (an accepted one
writes only inside the chip's flash), expected.json fields (a bounded wait) and manifests
(only entries inside -o are owned).

CI runs the ``ci`` profile: derandomized (the same examples every run), a bounded number
of examples (tens of seconds in all). ``make fuzz`` runs the ``fuzz`` profile
(``RIP_FUZZ_PROFILE=fuzz``): random, many more examples. A crash it finds is fixed and its
input added to tests/make_bad_models.py (the corpus) as a regression case.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import struct
import sys
import tempfile
from dataclasses import fields as dataclass_fields
from pathlib import Path

import make_bad_inputs as mbi
import make_bad_models as mbm
import numpy as np
import pytest
import tflite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tflite_micro import runtime as tflm_runtime

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.boards import FIELD_RULES, parse_board
from rip.cli.bounds import evaluate
from rip.cli.verify import _checked_expected as checked_expected
from rip.cli.verify import default_timeout_for
from rip.codegen import activation_params
from rip.core.errors import LayerError, ModelError, RipError, Uf2Error
from rip.core.terms import Placer
from rip.firmware.output_dir import _owned as owned_files
from rip.firmware.result import ERROR_PREFIX, PREFIX, parse_result_line
from rip.firmware.serial_port import MAX_WAIT_SECONDS
from rip.firmware.uf2 import check_image, elf_image
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIRST_FIT = PlanOptions(placer=Placer.FIRSTFIT)

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("RIP_FUZZ_EXAMPLES", "5000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile(os.environ.get("RIP_FUZZ_PROFILE", "ci"))

BASE = mbm.base().to_bytes()


def compile_or_refuse(data: bytes) -> None:
    """The property: a plan, or a one-line RipError."""
    try:
        graph = read_model(data, name="fuzz")
    except ModelError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz: ")
        return
    try:
        graph = rewrite(graph)
        req = requirements(graph)
        plan_model(graph, req, "rip", FIRST_FIT)
    except RipError as e:
        assert "\n" not in str(e)


@PROFILE
@given(st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), max_size=8))
def test_byte_mutants(patches: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for at, value in patches:
        data[at] = value
    compile_or_refuse(bytes(data))


@PROFILE
@given(st.integers(0, len(BASE)))
def test_truncations(length: int) -> None:
    compile_or_refuse(BASE[:length])


_TYPES = [getattr(tflite.TensorType, n) for n in vars(tflite.TensorType) if n.isupper()]
_OPTIONS = [n for n in vars(tflite.BuiltinOptions) if n.endswith("Options")][:40]


@st.composite
def structural_mutant(draw: st.DrawFn) -> bytes:
    """The base model with a few fields changed to values ModelBuilder never writes."""
    m = mbm.base()
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 4))):
        t = rng.choice(m.tensors)
        op = rng.choice(m.operators)
        what = draw(st.sampled_from(range(10)))
        if what == 0:
            t.shape = draw(st.lists(st.integers(-2, 70000), max_size=5))
        elif what == 1:
            t.type = draw(st.sampled_from([*_TYPES, 99]))
        elif what == 2:
            t.buffer = draw(st.integers(-1, len(m.buffers) + 2))
        elif what == 3:
            t.scales = draw(st.lists(st.floats(allow_nan=True, width=32), max_size=5))
            t.zero_points = draw(st.lists(st.integers(-300, 300), max_size=5))
            t.axis = draw(st.integers(-1, 4))
        elif what == 4:
            op.inputs = draw(st.lists(st.integers(-2, len(m.tensors) + 1), max_size=4))
        elif what == 5:
            op.outputs = draw(st.lists(st.integers(-2, len(m.tensors) + 1), max_size=2))
        elif what == 6:
            op.options_type = draw(st.sampled_from([None, *_OPTIONS]))
            op.options = ()
        elif what == 7:
            op.opcode = draw(st.sampled_from(sorted(mbm.tw._OP_VERSION)))
        elif what == 8:
            m.inputs = draw(st.lists(st.integers(-1, len(m.tensors)), max_size=3))
            m.outputs = draw(st.lists(st.integers(-1, len(m.tensors)), max_size=3))
        else:
            rng.shuffle(m.operators)
    try:
        return m.to_bytes()
    except Exception:  # the writer cannot serialise it (e.g. a negative buffer index)
        return BASE


@PROFILE
@given(structural_mutant())
def test_structural_mutants(data: bytes) -> None:
    compile_or_refuse(data)


_FIELD_VALUES = st.one_of(
    st.integers(-3, 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(-3, 100), st.booleans(), st.floats()), max_size=5),
)


@PROFILE
@given(
    st.fixed_dictionaries(
        {"input": _FIELD_VALUES, "cin": _FIELD_VALUES, "cout": _FIELD_VALUES},
        optional={
            k: _FIELD_VALUES
            for k in ("kernel", "stride", "dilation", "padding", "scheme", "order", "layout")
        },
    )
)
def test_bounds_fields(fields: dict) -> None:
    try:
        evaluate(fields)
    except LayerError as e:
        assert "\n" not in str(e)
    except RipError as e:  # pragma: no cover - every refusal is a LayerError today
        pytest.fail(f"not a LayerError: {e}")


# ---- issue 22: board files, result lines, UF2 and ELF files, expected.json, manifests ----------
_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from([*list("$`\"'\\\n\r#;{}()<>|&*=,/ -_.+"), "\x1b", "\x07", "\u202e"]),
    ),
    max_size=24,
)
_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    _TEXT,
    st.lists(_TEXT, max_size=4),
    st.lists(st.integers(), max_size=3),
)
# What no accepted board string may hold: anything Make, CMake, a shell or a C comment
# would act on, and any control character (an oracle independent of the board rules).
_DANGER = re.compile(r"[$`\"\\#{}<>|&\n\r\x00-\x1f\x7f]|\*/|/\*")


def _toml(value: object) -> str:
    """A TOML literal for a scalar or a flat list (tomllib reads; nothing in the stdlib
    writes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else "inf"
            if value > 0 and math.isinf(value)
            else ("-inf" if math.isinf(value) else repr(value))
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string (JSON's escapes are TOML's)
    return "[" + ", ".join(_toml(v) for v in value) + "]"  # type: ignore[union-attr]


@PROFILE
@given(
    st.dictionaries(
        st.sampled_from([*sorted(FIELD_RULES), "extra", "name"]), _VALUES, min_size=1, max_size=3
    )
)
def test_board_fields(changes: dict) -> None:
    """A board file with a few fields set to anything: a Board whose every number is finite
    and every string safe for Make, CMake and C, or one line naming the file."""
    table = tomllib.loads(mbi.BOARD)
    table.update(changes)
    text = "".join(f"{k} = {_toml(v)}\n" for k, v in table.items())
    try:
        board = parse_board(text.encode("utf-8", "surrogatepass"), "fuzz.toml")
    except RipError as e:
        assert "\n" not in str(e) and str(e).startswith("board file fuzz.toml: ")
        return
    for f in dataclass_fields(board):
        value = getattr(board, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, float):
                assert math.isfinite(item), (f.name, item)
            if isinstance(item, int) and not isinstance(item, bool):
                assert 0 <= item <= 1 << 32, (f.name, item)
            if isinstance(item, str):
                assert not _DANGER.search(item) and item.isascii(), (f.name, item)


@PROFILE
@given(st.lists(st.tuples(st.integers(0, len(mbi.BOARD) - 1), st.integers(0, 255)), max_size=6))
def test_board_file_bytes(patches: list[tuple[int, int]]) -> None:
    data = bytearray(mbi.BOARD.encode())
    for at, value in patches:
        data[at] = value
    try:
        parse_board(bytes(data), "fuzz.toml")
    except RipError as e:
        assert "\n" not in str(e) and str(e).startswith("board file fuzz.toml: ")


_LINE_CHARS = st.sampled_from(
    [*list("0123456789abcdefABCDEF_+-= x"), "１", "٣", "\x1b", "RIP-RESULT ", "RIP-ERROR ", "\t"]
)


@PROFILE
@given(
    st.lists(
        st.tuples(st.integers(0, len(mbi.GOOD_LINE)), st.integers(0, 2), _LINE_CHARS), max_size=4
    )
)
def test_result_lines(edits: list[tuple[int, int, str]]) -> None:
    """A result line with a few characters inserted, replaced or deleted: no result, or a
    result whose canonical line is exactly the line's text from RIP-RESULT on (so no
    second reading of any field, and nothing lenient, can pass)."""
    line = mbi.GOOD_LINE
    for at, how, text in edits:
        at = min(at, len(line))
        line = (
            line[:at] + text + line[at:]
            if how == 0
            else line[:at] + text + line[at + 1 :]
            if how == 1
            else line[:at] + line[at + 1 :]
        )
    result = parse_result_line(line)
    if result is not None:
        assert result.line() == line[line.index(PREFIX) :], line
        assert line.count(PREFIX) == 1 and ERROR_PREFIX not in line


_UF2_FIELDS = {"flags": 2, "address": 3, "size": 4, "number": 5, "count": 6, "family": 7}


@PROFILE
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from(sorted(_UF2_FIELDS)),
            st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2, 3, 255, 256, 257])),
        ),
        max_size=4,
    ),
    st.integers(1, 4),
)
def test_uf2_mutants(patches: list[tuple[int, str, int]], count: int) -> None:
    """A good image with header words changed: refused, or every block of it is one a Pico
    bootloader writes into its chip's flash (checked here from the raw bytes)."""
    data = bytearray(mbi.image(count))
    for block, name, value in patches:
        if block < count:
            struct.pack_into("<I", data, block * 512 + 4 * _UF2_FIELDS[name], value)
    try:
        family = check_image(bytes(data))
    except Uf2Error as e:
        assert "\n" not in str(e)
        return
    flash = {mbi.RP2040: 2 << 20, mbi.RP2350: 4 << 20}[family]
    words = [struct.unpack_from("<8I", data, k * 512) for k in range(len(data) // 512)]
    assert sorted(w[5] for w in words) == list(range(len(words)))
    for _, _, flags, address, size, _, n, fam in words:
        assert (flags, size, n, fam) == (0x2000, 256, len(words), family)
        assert address % 256 == 0 and mbi.FLASH <= address <= mbi.FLASH + flash - 256
    assert len({w[3] for w in words}) == len(words)


_ELF_FIELDS = {  # offset and struct format of ELF header and first program header fields
    "e_type": (16, "<H"),
    "e_machine": (18, "<H"),
    "e_phoff": (28, "<I"),
    "e_phentsize": (42, "<H"),
    "e_phnum": (44, "<H"),
    "p_offset": (56, "<I"),
    "p_paddr": (64, "<I"),
    "p_filesz": (68, "<I"),
    "p2_paddr": (96, "<I"),
    "p2_filesz": (100, "<I"),
}


@PROFILE
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(_ELF_FIELDS)),
            st.one_of(
                st.integers(0, 2**32 - 1),
                st.sampled_from([0, 1, 2, 32, 40, 64, 65, 65535, 0x10000000, 0x101FFF00]),
            ),
        ),
        max_size=4,
    )
)
def test_elf_mutants(patches: list[tuple[str, int]]) -> None:
    """A good two-segment ELF with header fields changed: refused in one line, or an
    image no larger than the RP2040's flash, inside it."""
    data = bytearray(mbi.elf([(mbi.FLASH, mbi.CODE), (mbi.FLASH + 4096, mbi.CODE)]))
    for name, value in patches:
        offset, fmt = _ELF_FIELDS[name]
        struct.pack_into(fmt, data, offset, value % (1 << (8 * struct.calcsize(fmt))))
    window = (mbi.FLASH, mbi.FLASH + (2 << 20))
    try:
        base, image = elf_image(bytes(data), window, "RP2040")
    except Uf2Error as e:
        assert "\n" not in str(e)
        return
    assert window[0] <= base and base + len(image) <= window[1] and image


_EXPECTED_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    _TEXT,
    st.lists(st.integers(), max_size=2),
)


@PROFILE
@given(
    st.dictionaries(
        st.sampled_from(
            ["checksum", "model", "board", "arena_bytes", "macs", "expected_inference_seconds",
             "qemu_machine", "strategy"]
        ),
        _EXPECTED_VALUES,
    )
)  # fmt: skip
def test_expected_fields(fields: dict) -> None:
    """expected.json with any values: refused in one line, or every field rip-verify uses
    has its type, its numbers are finite and in range, and the wait it gives is bounded."""
    try:
        checked = checked_expected(fields, Path("expected.json"))
    except RipError as e:
        assert "\n" not in str(e)
        return
    seconds = default_timeout_for({**checked, "board": "pico2"})
    assert math.isfinite(seconds) and 0 < seconds <= MAX_WAIT_SECONDS
    if checked.get("checksum") is not None:
        assert 0 <= int(checked["checksum"], 16) <= 0xFFFFFFFF


@PROFILE
@given(st.lists(st.one_of(_TEXT, st.sampled_from(["../x", "/etc/passwd", "a/../../b", ".", ""])),
                max_size=6))  # fmt: skip
def test_manifest_entries(files: list[str]) -> None:
    """A manifest listing anything: rip owns only entries that stay inside -o."""
    with tempfile.TemporaryDirectory(prefix="rip-fuzz-") as tmp:
        target = Path(tmp) / "out"
        target.mkdir()
        (target / ".rip-manifest.json").write_text(json.dumps({"files": files}))
        for rel in owned_files(target):
            inside = os.path.normpath(target / rel)
            assert inside.startswith(str(target) + os.sep) and "\n" not in rel, rel


# ---- option values against TFLite Micro (issue 22, class 2) ------------------------------

_FLOAT32 = st.one_of(
    st.floats(width=32, allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [2.0**k * s for k in (-150, -126, -40, 24, 30, 31, 32, 33, 100) for s in (1, -1)]
    ),
)
_SCALE = st.floats(2.0**-126, 2.0**127, width=32)
_ALL_BYTES = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)


def _unary_model(kind: str, alpha: float, si: float, zi: int, so: float, zo: int) -> bytes:
    mb = mbm.tw.ModelBuilder()
    x = mb.activation((1, 256), si, zi)
    y = mb.activation((1, 256), so, zo)
    if kind == "LEAKY_RELU":
        mb.leaky_relu(x, y, alpha=alpha)
    else:
        mb.operator(kind, (x,), (y,))
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@PROFILE
@given(
    st.sampled_from(["LEAKY_RELU", "ABS", "ELU"]),
    _FLOAT32,
    _SCALE,
    st.integers(-128, 127),
    _SCALE,
    st.integers(-128, 127),
)
def test_unary_options_agree_with_tflm(
    kind: str, alpha: float, si: float, zi: int, so: float, zo: int
) -> None:
    """A table op with any alpha (extreme, non-finite) and any scales: rip refuses in one
    line, or its table is TFLite Micro's output for every input byte. rip decides first:
    only a model it accepts is run in this process (TFLite Micro aborts on some others)."""
    model = _unary_model(kind, alpha, si, zi, so, zo)
    try:
        graph = read_model(model, name="fuzz")
        op = graph.operators[0]
        table = activation_params.op_params(graph, op)
    except RipError as e:
        assert "\n" not in str(e)
        return
    it = tflm_runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    it.set_input(_ALL_BYTES, 0)
    it.invoke()
    want = np.asarray(it.get_output(0)).astype(np.int8).ravel()
    got = np.frombuffer(table.table, dtype=np.int8)[_ALL_BYTES.view(np.uint8).ravel()]
    assert got.tobytes() == want.tobytes(), (kind, alpha, si, zi, so, zo)


@PROFILE
@given(
    st.sampled_from(["RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"]),
    st.lists(st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-1, 13)), max_size=3),
)
def test_resize_sizes_are_the_outputs(kind: str, size: list[int]) -> None:
    """A RESIZE whose size input holds anything: accepted only when it is the output's
    (H, W) (TFLite Micro writes size[0] x size[1] pixels whatever the output's shape)."""
    mb = mbm.tw.ModelBuilder()
    x = mb.activation((1, 3, 2, 4), 0.05, 3)
    y = mb.activation((1, 6, 4, 4), 0.05, 3)
    s = mb.constant_int32(np.asarray(size, dtype=np.int32), name="size")
    opts = (
        "ResizeNearestNeighborOptions"
        if kind == "RESIZE_NEAREST_NEIGHBOR"
        else "ResizeBilinearOptions"
    )
    mb.operator(kind, (x, s), (y,), opts, (("AlignCorners", False),))
    mb.inputs([x])
    mb.outputs([y])
    try:
        read_model(mb.to_bytes(), name="fuzz")
    except RipError as e:
        assert "\n" not in str(e) and size != [6, 4]
        return
    assert size == [6, 4]


@PROFILE
@given(
    st.sampled_from(["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"]),
    st.integers(-128, 127),
    st.one_of(st.none(), st.integers(0, 300)),
)
def test_opcode_fields(opcode: str, deprecated: int, builtin: int | None) -> None:
    """Any pair of opcode fields: rip refuses in one line or reads the operator TFLite's
    GetBuiltinCode names (schema_utils.cc: the larger of the two; an absent builtin_code
    is 0)."""
    mb = mbm.tw.ModelBuilder()
    a = mb.activation((1, 2, 2, 3), 0.05, 3)
    b = mb.activation((1, 2, 2, 3), 0.05, 3)
    y = mb.activation((1, 2, 2, 3), 0.05, 3)
    mb.operator(opcode, (a, b), (y,))
    mb.set_code_fields(opcode, deprecated, builtin)
    mb.inputs([a, b])
    mb.outputs([y])
    try:
        graph = read_model(mb.to_bytes(), name="fuzz")
    except RipError as e:
        assert "\n" not in str(e)
        return
    code = max(deprecated, builtin or 0)
    assert graph.operators[0].kind.value == tflite.opcode2name(code)
