"""RSQRT int8 (issue 28): TFLite Micro's elementwise.cc RsqrtEvalQuantized as a 256-entry
table (rip_lut_s8), byte-equal to TFLite Micro on every input it accepts.

The table is TFLite Micro's fixed point evaluated at compile time
(codegen.activation_params.rsqrt_params: GetInvSqrtQuantizedMultiplierExp, then two
MultiplyByQuantizedMultiplier); the oracle is TFLite Micro on models from the TensorFlow-free
writer, fed every input byte at or above the input zero point (below it TFLite Micro fails
the invoke). In place at gap 0 like every table op: element i is read before it is stored.
"""

from __future__ import annotations

import math
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_batch_matmul import assert_matches_on_qemu_m33
from test_codegen_host import compile_and_run
from test_lower_elementwise import check, read, tflm
from tflite_micro import runtime
from tflite_writer import ModelBuilder
from tflite_writer.generators import _Calibrated

from rip.allocator.planning.requirements import requirements
from rip.codegen.activation_params import op_params
from rip.codegen.fixedpoint import inv_sqrt_multiplier_exp
from rip.core.errors import RipError
from rip.core.operators import Op, spec
from rip.core.terms import InPlaceKind

F32 = np.float32


def rsqrt_model(n: int, si: float, zi: int, so: float, zo: int) -> bytes:
    mb = ModelBuilder()
    x, y = mb.activation((1, n), si, zi), mb.activation((1, n), so, zo)
    mb.unary("RSQRT", x, y)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


scales = st.floats(-9.0, 1.0).map(lambda e: float(F32(math.exp(e))))


@settings(max_examples=30, deadline=None)
@given(si=scales, so=scales, zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_rsqrt_matches_tflm_on_every_valid_byte(kernel_objs, tmp_path_factory, si, so, zi,
                                                zo) -> None:  # fmt: skip
    """Every input byte from the zero point up (0 included: TFLite Micro's 127), out of
    place and in place over the input: the C kernel's bytes are TFLite Micro's."""
    xs = np.arange(zi, 128, dtype=np.int8).reshape(1, -1)
    model = rsqrt_model(xs.size, si, zi, so, zo)
    graph = read(model)
    want = tflm(model, [xs])
    inputs = {graph.inputs[0]: xs}
    work = tmp_path_factory.mktemp("rsqrt")
    check(graph, want, inputs, [*kernel_objs], work)
    check(graph, want, inputs, [*kernel_objs], work, inplace=InPlaceKind.ELEMENTWISE)


@settings(max_examples=60, deadline=None)
@given(si=st.floats(2.0**-126, 2.0**127, width=32), so=st.floats(2.0**-126, 2.0**127, width=32),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))  # fmt: skip
def test_any_scales_refused_in_one_line_or_tflite_micros_table(si, so, zi, zo) -> None:
    """Scales from the smallest normal float32 to the largest: rip refuses in one line (a
    multiplier TFLite Micro cannot form) or its table is TFLite Micro's on every valid
    byte. rip decides first: only a model it accepts is run here."""
    xs = np.arange(zi, 128, dtype=np.int8).reshape(1, -1)
    model = rsqrt_model(xs.size, si, zi, so, zo)
    graph = read(model)
    try:
        table = op_params(graph, graph.operators[0])
    except RipError as e:
        assert "\n" not in str(e)
        return
    got = np.frombuffer(table.table, np.int8)[xs.view(np.uint8)]
    assert got.tobytes() == tflm(model, [xs])


def test_inv_sqrt_is_gemmlowps_newton_raphson() -> None:
    """The host port of GetInvSqrtQuantizedMultiplierExp gives 1 / sqrt(v) to within the
    iteration's error (its exact bits are checked against TFLite Micro above)."""
    for v in (2, 3, 7, 100, 255, 1 << 20, (1 << 29) + 5, (1 << 31) - 1):
        m, shift = inv_sqrt_multiplier_exp(v, -1)
        assert m * 2.0 ** (shift - 31) == pytest.approx(1 / math.sqrt(v), rel=1e-5)
    assert inv_sqrt_multiplier_exp(1, -1) == ((1 << 31) - 1, 0)


def test_below_the_zero_point_tflite_micro_fails_and_the_table_says_127() -> None:
    """A negative real input: TFLite Micro fails the invoke; a table cannot, its entry is
    127 (as for a zero input)."""
    model = rsqrt_model(1, 0.1, 5, 0.05, 0)
    it = runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    it.set_input(np.array([[4]], np.int8), 0)
    with pytest.raises(Exception):  # noqa: B017  (the runtime raises a bare RuntimeError)
        it.invoke()
    graph = read(model)
    table = np.frombuffer(op_params(graph, graph.operators[0]).table, np.int8)
    assert table[4] == table[5] == 127


def test_rsqrt_is_in_place_at_gap_zero() -> None:
    graph = read(rsqrt_model(16, 0.1, -128, 0.05, -128))
    assert spec(Op.RSQRT).in_place is InPlaceKind.ELEMENTWISE
    assert [c.gap for c in requirements(graph).ops[0].candidates] == [0]


def norm_model(seed: int = 0) -> bytes:
    """A Keras-LayerNorm-like int8 tail: conv (RELU, so its output is at or above its zero
    point), RSQRT of it, times the conv output (MUL)."""
    net = _Calibrated(seed)
    x = net.input((1, 6, 6, 3))
    h = net.conv(x, 8, 3, activation="RELU")
    v = net.values[h]
    inv = 1.0 / np.sqrt(np.maximum(v, net.mb.quantization(h).scales[0]))
    hi = float(inv.max())
    r = net.mb.activation((1, 6, 6, 8), float(F32(hi / 255.0)), -128, "rsqrt")
    net.values[r] = inv
    net.mb.unary("RSQRT", h, r)
    prod = net.values[h] * inv
    out = net.mb.activation((1, 6, 6, 8), float(F32(max(float(prod.max()), 1e-3) / 255.0)),
                            -128, "scaled")  # fmt: skip
    net.mb.mul(h, r, out)
    return net.finish([x], [out])


@pytest.mark.parametrize("strategy", ["rip", "dual"])
def test_compiled_model_with_rsqrt_matches_tflm(tmp_path, strategy) -> None:
    got, want, _ = compile_and_run(norm_model(), tmp_path, strategy)
    assert got == want, f"{strategy}: 0x{got:08x} != 0x{want:08x}"


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_rsqrt_model_on_qemu_m33(tmp_path: Path, capsys) -> None:
    assert_matches_on_qemu_m33(norm_model(2), tmp_path, capsys)
