"""Issue 22, class 2: on a model TFLite Micro runs, rip computes TFLite Micro's bytes or
refuses with one line, for the fields and option values whose meaning a reader could get
wrong: the two opcode fields, a RESIZE's size input, LEAKY_RELU's alpha and SOFTMAX's beta
at their extremes. Each accepted case is lowered, built as C and run against TFLite Micro
(tests/test_lower_elementwise.py's harness); the random generators of such options are
tests/test_fuzz.py's ``test_unary_options_agree_with_tflm`` and
``test_resize_sizes_are_the_outputs``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import tflite
from test_lower_elementwise import check_model, finish, kernel_objects, layout, read  # noqa: F401
from tflite_writer import ModelBuilder

from rip.cli.compile import main as compile_main
from rip.codegen.lowerings import lowering_for
from rip.core.errors import RipError
from rip.core.operators import Op
from rip.frontend.reader import read_model

SUB = tflite.BuiltinOperator.SUB
ADD = tflite.BuiltinOperator.ADD
MUL = tflite.BuiltinOperator.MUL


def binary_model(opcode: str, fields: tuple[int, int | None]) -> bytes:
    """One ``opcode`` op (its own options table) whose code entry holds ``fields``
    (deprecated_builtin_code, builtin_code or None: absent)."""
    mb = ModelBuilder()
    a = mb.activation((1, 4, 4, 3), 0.05, 3)
    b = mb.activation((1, 4, 4, 3), 0.04, -7)
    y = mb.activation((1, 4, 4, 3), 0.08, 1)
    options = (("FusedActivationFunction", tflite.ActivationFunctionType.NONE),)
    mb.operator(opcode, (a, b), (y,), f"{opcode.title()}Options", options)
    mb.set_code_fields(opcode, *fields)
    return finish(mb, [a, b], [y])


@pytest.mark.parametrize(
    ("opcode", "fields", "runs"),
    [
        ("SUB", (ADD, SUB), Op.SUB),  # the tflite package's BuiltinCode() said ADD
        ("SUB", (SUB, ADD), Op.SUB),  # builtin_code 0 (ADD, the default) loses to 41
        ("SUB", (SUB, None), Op.SUB),  # a schema v3 file: only the deprecated field
        ("MUL", (ADD, MUL), Op.MUL),
        ("ADD", (ADD, ADD), Op.ADD),  # both 0, written explicitly
    ],
)
def test_opcode_fields_follow_tflites_rule(
    kernel_objects: list[Path],  # noqa: F811
    tmp_path: Path,
    opcode: str,
    fields: tuple[int, int | None],
    runs: Op,
) -> None:
    """GetBuiltinCode (schema_utils.cc): the larger of the two fields is the operator
    TFLite Micro runs; rip reads the same one and its bytes are TFLite Micro's."""
    model = binary_model(opcode, fields)
    assert [op.kind for op in read_model(model).operators] == [runs]
    check_model(model, np.random.default_rng(len(opcode)), kernel_objects, tmp_path)


def resize_model(kind: str, size: object, dtype: str = "int32") -> bytes:
    mb = ModelBuilder()
    x = mb.activation((1, 3, 2, 4), 0.05, 3)
    y = mb.activation((1, 6, 4, 4), 0.05, 3)
    if size is None:  # the size an activation (a graph input)
        s = mb._add_tensor((2,), "int32", None, None, "size")
        inputs = [x, s]
    else:
        data = np.asarray(size, dtype=np.int64 if dtype == "int64" else np.int32)
        s = mb._add_tensor(data.shape, dtype, None, data.tobytes(), "size")
        inputs = [x]
    options = (("AlignCorners", False), ("HalfPixelCenters", False))
    name = "ResizeNearestNeighborOptions" if kind == "RESIZE_NEAREST_NEIGHBOR" else None
    mb.operator(kind, (x, s), (y,), name or "ResizeBilinearOptions", options)
    return finish(mb, inputs, [y])


@pytest.mark.parametrize("kind", ["RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"])
@pytest.mark.parametrize(
    ("size", "dtype"),
    [
        ([0, 0], "int32"),  # TFLite Micro writes nothing: the output is whatever was there
        ([0, 4], "int32"),
        ([12, 8], "int32"),  # past the output's end
        ([3, 2], "int32"),  # a quarter of the output written
        ([4, 6], "int32"),  # H and W swapped
        ([-6, 4], "int32"),
        ([6, 4, 1], "int32"),
        ([6, 4], "int64"),
        (None, "int32"),  # not a constant
    ],
)
def test_a_resize_size_that_is_not_the_outputs_is_refused(
    kind: str, size: object, dtype: str, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    model = tmp_path / "resize.tflite"
    model.write_bytes(resize_model(kind, size, dtype))
    expect = "int32 activations are not supported" if size is None else "size input"
    with pytest.raises(RipError, match=expect):
        read_model(model)
    assert compile_main([str(model), "--board", "host", "--placer", "firstfit"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expect in err


@pytest.mark.parametrize("kind", ["RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"])
def test_a_resize_size_equal_to_the_output_still_matches(
    kind: str,
    kernel_objects: list[Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    check_model(resize_model(kind, [6, 4]), np.random.default_rng(1), kernel_objects, tmp_path)


def unary_model(kind: str, option: str, value: float) -> bytes:
    mb = ModelBuilder()
    x = mb.activation((1, 256), 0.05, 3)
    if kind == "SOFTMAX":
        y = mb.activation((1, 256), 1.0 / 256.0, -128)
    else:
        y = mb.activation((1, 256), 0.07, -2)
    mb.operator(kind, (x,), (y,), f"{kind.title().replace('_', '')}Options", ((option, value),))
    return finish(mb, [x], [y])


EXTREMES = [
    0.0,
    -0.0,
    1e-45,  # the smallest float32 denormal
    -1e-30,
    0.25,
    -3.5,
    1e8,
    2.0**31,  # the largest left shift TFLite Micro's arithmetic defines
    2.0**33,
    1e30,
    -1e30,
    3.4028235e38,
    -3.4028235e38,
    math.inf,
    -math.inf,
    math.nan,
]


@pytest.mark.parametrize("value", EXTREMES, ids=repr)
@pytest.mark.parametrize(("kind", "option"), [("LEAKY_RELU", "Alpha"), ("SOFTMAX", "Beta")])
def test_extreme_float_options_agree_with_tflm_or_are_refused(
    kind: str,
    option: str,
    value: float,
    kernel_objects: list[Path],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    """Every input byte once; a refusal is one line at the CLI (exit 2), an acceptance
    TFLite Micro's bytes from the built C kernel."""
    model = unary_model(kind, option, value)
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    try:  # rip first: TFLite Micro aborts the process on some values rip refuses (beta 0)
        graph = read(model)
        op = graph.operators[0]
        lowering_for(graph, op)(graph, op, 0, layout(graph, op, None, 0, 0).buffers, "op0")
    except RipError:
        out = str(tmp_path / "out")
        code = compile_main([str(path), "--board", "host", "--placer", "firstfit", "-o", out])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        return
    check_model(model, np.random.default_rng(0), kernel_objects, tmp_path)


def test_leaky_relu_alpha_1e30_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The issue's sample: TFLite Micro's 1 << 100 is undefined (x86 masks the count, Arm
    gives 0), so no byte-exact code exists; nothing is written in -o."""
    path = tmp_path / "leaky.tflite"
    path.write_bytes(unary_model("LEAKY_RELU", "Alpha", 1e30))
    out = tmp_path / "out"
    assert compile_main([str(path), "--board", "host", "--placer", "firstfit", "-o", str(out)]) == 2
    assert "1 << 100" in capsys.readouterr().err
    assert not out.exists()
