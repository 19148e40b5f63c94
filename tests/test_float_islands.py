"""Float islands inside an int8 graph (issue 28): DEQUANTIZE -> float32 ops -> QUANTIZE, as
converters leave them (Keras LayerNorm's DEQUANTIZE -> NEG -> QUANTIZE), byte-equal to
TensorFlow Lite Micro.

Only IEEE-exact ops run in float32 (NEG, ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, the
reshapes): one correctly rounded operation per step, in TFLite Micro's order, so the bits
are the same on the host, the Cortex-M33's FPU and ARMv6-M's software floats. Hypothesis
draws the island's op, shapes that broadcast, a constant float operand, the fused
activation and the quantizations; every model runs on the host against TFLite Micro. A float
op whose result would depend on a libm (ELU, TANH, EXP) is refused naming it and the
converter setting that avoids it.
"""

from __future__ import annotations

import math

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_batch_matmul import assert_matches_on_qemu_m33
from test_svdf import rip_stream, stream_inputs, tflm_stream
from tflite_writer import ModelBuilder

from rip.core.errors import ModelError
from rip.frontend.reader import read_model

pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")
F32 = np.float32
ACTIVATED = ("ADD", "SUB", "MUL", "DIV")  # these carry a fused activation
OPTIONS = {
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "DIV": "DivOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
}
ACTIVATION = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}


def island_model(kind: str, shapes, const: bool, activation: str, quants,
                 rng: np.random.Generator) -> bytes:  # fmt: skip
    """x (int8) -> DEQUANTIZE -> [NEG | kind with a second operand] -> QUANTIZE -> y."""
    (s_x, z_x), (s_b, z_b), (s_y, z_y) = quants
    a_shape, b_shape, out_shape = shapes
    mb = ModelBuilder()
    x = mb.activation(a_shape, s_x, z_x, "x")
    xf = mb.activation(a_shape, name="xf", dtype="float32")
    mb.dequantize(x, xf)
    inputs = [x]
    yf = mb.activation(out_shape, name="yf", dtype="float32")
    if kind == "NEG":
        mb.operator("NEG", (xf,), (yf,), "NegOptions")
    else:
        if const:  # a constant float operand, as a LayerNorm's epsilon or gain
            values = rng.uniform(-3.0, 3.0, b_shape).astype(np.float32)
            if kind == "DIV":
                values = np.where(np.abs(values) < 0.25, 0.5, values).astype(np.float32)
            bf = mb.constant_float32(values, "b")
        else:
            b = mb.activation(b_shape, s_b, z_b, "b")
            bf = mb.activation(b_shape, name="bf", dtype="float32")
            mb.dequantize(b, bf)
            inputs.append(b)
        options = (("FusedActivationFunction", ACTIVATION[activation]),)
        mb.operator(kind, (xf, bf), (yf,), OPTIONS[kind], options if kind in ACTIVATED else ())
    y = mb.activation(out_shape, s_y, z_y, "y")
    mb.quantize(yf, y)
    mb.inputs(inputs)
    mb.outputs([y])
    return mb.to_bytes()


@st.composite
def island_cases(draw):
    kind = draw(st.sampled_from(["NEG", *OPTIONS]))
    rank = draw(st.integers(1, 4))
    out = [draw(st.integers(1, 5)) for _ in range(rank)]
    a = [d if draw(st.integers(0, 3)) else 1 for d in out]
    b = [d if draw(st.integers(0, 3)) else 1 for d in out][draw(st.integers(0, rank - 1)) :]
    out = [max(p, q) for p, q in zip(a, [1] * (rank - len(b)) + b, strict=True)]
    if kind == "NEG":
        b, out = a, a
    scale = st.floats(-5.0, 0.0).map(lambda e: float(F32(math.exp(e))))
    zp = st.integers(-128, 127)
    quants = [(draw(scale), draw(zp)), (draw(scale), draw(zp)), (draw(scale), draw(zp))]
    activation = draw(st.sampled_from(list(ACTIVATION)))
    return kind, (tuple(a), tuple(b), tuple(out)), draw(st.booleans()), activation, quants


@settings(max_examples=30, deadline=None)
@given(case=island_cases(), seed=st.integers(0, 2**16))
def test_float_islands_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """Every op of a float island, any broadcast, a constant or dequantized second operand,
    any fused activation and quantization: three random inputs, TFLite Micro's bytes."""
    kind, shapes, const, activation, quants = case
    model = island_model(kind, shapes, const, activation, quants, np.random.default_rng(seed))
    graph = read_model(model, name="m")
    assert any(t.dtype == "float32" for t in graph.tensors.values())
    sequence = stream_inputs(graph, 3, seed)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("f")) == tflm_stream(model, sequence)


def test_layernorm_island_runs_in_float() -> None:
    """DEQUANTIZE -> NEG -> QUANTIZE (Keras LayerNorm's island) is read as three ops, the
    middle one in float32."""
    model = island_model("NEG", ((2, 8),) * 3, False, "NONE",
                         [(0.05, 3), (0.05, 0), (0.05, -3)], np.random.default_rng(0))  # fmt: skip
    graph = read_model(model, name="m")
    assert [op.kind for op in graph.operators] == ["DEQUANTIZE", "NEG", "QUANTIZE"]


def test_a_float_op_needing_a_libm_is_refused_by_name() -> None:
    """ELU in float32 (as the converter always emits it): refused naming ELU, float32 and the
    converter setting that keeps it int8."""
    mb = ModelBuilder()
    x = mb.activation((1, 8), 0.05, 0, "x")
    xf = mb.activation((1, 8), name="xf", dtype="float32")
    mb.dequantize(x, xf)
    yf = mb.activation((1, 8), name="yf", dtype="float32")
    mb.unary("ELU", xf, yf)
    y = mb.activation((1, 8), 0.05, 0, "y")
    mb.quantize(yf, y)
    mb.inputs([x])
    mb.outputs([y])
    with pytest.raises(ModelError) as info:
        read_model(mb.to_bytes(), name="elu.tflite")
    message = str(info.value)
    assert "operator ELU at index 1" in message and "float32" in message
    assert "TFLITE_BUILTINS_INT8" in message and "\n" not in message


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_float_island_on_the_cores(tmp_path, capsys, board) -> None:
    """A broadcast DIV by a constant with RELU6, then NEG's island, on the M33's FPU and
    ARMv6-M's software floats: TFLite Micro's checksum on each."""
    quants = [(0.07, 5), (0.03, -9), (0.02, 1)]
    rng = np.random.default_rng(1)
    for kind, const, act in (("DIV", True, "RELU6"), ("NEG", False, "NONE")):
        model = island_model(kind, ((2, 3, 4), (3, 1), (2, 3, 4)), const, act, quants, rng)
        (tmp_path / kind).mkdir()
        assert_matches_on_qemu_m33(model, tmp_path / kind, capsys, board)
