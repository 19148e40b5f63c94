"""UNIDIRECTIONAL_SEQUENCE_LSTM (issue 28): TFLite Micro's integer LSTM, int8 activations
with an int16 cell state (8x8->16) and the 16x8 one (int16 activations, int64 biases),
byte-equal to TFLite Micro over streams of invokes (hidden and cell state persist between
them in the persistent region, reset by rip_model_reset as TFLite Micro's Reset), batch
major and time major, with and without a cell clip, Hypothesis over sizes and
quantization; a model on qemu-m33; the arena at most TFLite Micro's.
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

from rip.cli.compile import main as compile_main
from rip.core.errors import ModelError
from rip.frontend.reader import read_model

pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")
F32 = np.float32


def lstm_model(batch: int, steps: int, features: int, units: int, *, time_major: bool,
               wide: bool, cell_clip: float, scales, rng: np.random.Generator,
               cell_dtype: str = "int16", per_channel: bool = False) -> bytes:  # fmt: skip
    """One LSTM layer over an input [batch, steps, features] ([steps, batch, ...] time
    major), int8 (zero points as given) or 16x8 (zero points 0); ``scales``: input, hidden,
    cell, and a weight scale per gate pair. ``cell_dtype`` and ``per_channel`` make models
    TFLite Micro refuses."""
    s_x, z_x, s_h, z_h, s_c, s_w = scales
    if wide:
        z_x = z_h = 0
    dtype = "int16" if wide else "int8"
    mb = ModelBuilder()
    shape = (steps, batch, features) if time_major else (batch, steps, features)
    x = mb.activation(shape, s_x, z_x, "x", dtype=dtype)
    weights = []
    for k in range(8):
        n = features if k < 4 else units
        data = rng.integers(-127, 128, (units, n), dtype=np.int8)
        scale = [s_w[k]] * units if per_channel and units > 1 else s_w[k]
        weights.append(mb.constant_int8(data, scale, 0, axis=0))
    biases = []
    for k in range(4):
        values = rng.integers(-(1 << 12), 1 << 12, units)
        scale = float(F32(s_x) * F32(s_w[k]))
        make = mb.constant_int64 if wide else mb.constant_int32
        biases.append(make(values, scale))
    hidden = mb.variable((batch, units), s_h, z_h, "hidden", dtype=dtype)
    cell = mb.variable((batch, units), s_c, 0, "cell", dtype=cell_dtype)
    out_shape = (*shape[:2], units)
    y = mb.activation(out_shape, s_h, z_h, "y", dtype=dtype)
    mb.unidirectional_sequence_lstm(x, weights, biases, hidden, cell, y,
                                    time_major=time_major, cell_clip=cell_clip)  # fmt: skip
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def _scale(e: float) -> float:
    return float(F32(math.exp(e)))


@st.composite
def lstm_cases(draw):
    wide = draw(st.booleans())
    sizes = (draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 12)),
             draw(st.integers(1, 10)))  # fmt: skip
    power = draw(st.booleans())  # a power-of-two cell scale, as converters calibrate it
    s_c = 2.0 ** draw(st.integers(-15, -8)) if power else _scale(draw(st.floats(-11.0, -5.0)))
    fine = -8.0 if wide else 0.0  # 16x8: the same range in 256 times more steps
    scales = (
        _scale(draw(st.floats(-6.0, -2.0)) + fine * math.log(2)),
        draw(st.integers(-20, 20)),
        _scale(draw(st.floats(-8.0, -4.0)) + fine * math.log(2)),
        draw(st.integers(-20, 20)),
        s_c,
        [_scale(draw(st.floats(-7.0, -3.0))) for _ in range(8)],
    )
    clip = draw(st.sampled_from([0.0, 0.0, 1.5, 3.0]))
    return sizes, draw(st.booleans()), wide, clip, scales


@settings(max_examples=25, deadline=None)
@given(case=lstm_cases(), seed=st.integers(0, 2**16))
def test_lstm_streams_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """Any sizes, batch or time major, int8 or 16x8, a cell clip or none, power-of-two or
    other cell scales: four invokes of random inputs (the state carried between them), a
    reset, the first again: TFLite Micro's bytes every time, rip's arena at most its."""
    (batch, steps, features, units), time_major, wide, clip, scales = case
    rng = np.random.default_rng(seed)
    model = lstm_model(batch, steps, features, units, time_major=time_major, wide=wide,
                       cell_clip=clip, scales=scales, rng=rng)  # fmt: skip
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 4, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("lstm")) == want


def _model(wide: bool, time_major: bool = False) -> bytes:
    scales = (0.02 / (256 if wide else 1), 3, 1 / 128 / (256 if wide else 1), -2, 2.0**-11,
              [0.01] * 8)  # fmt: skip
    return lstm_model(2, 6, 10, 16, time_major=time_major, wide=wide, cell_clip=0.0,
                      scales=scales, rng=np.random.default_rng(9))  # fmt: skip


def test_the_state_moves_and_resets(tmp_path) -> None:
    """The same input twice gives different outputs (the state moved), and after a reset
    the first output again: the state is kept and reset as TFLite Micro keeps it."""
    model = _model(False)
    graph = read_model(model, name="m")
    first = stream_inputs(graph, 1, 0)[0]
    lines = rip_stream(model, [first, first], tmp_path)
    assert lines[0] != lines[1] and lines[2] == lines[0]
    assert lines == tflm_stream(model, [first, first])


def test_state_is_reported_apart_from_the_arena() -> None:
    """Hidden (int8, 2 x 16) and cell (int16, 2 x 16) state: 96 bytes of persistent region,
    no arena tensor."""
    graph = read_model(_model(False), name="m")
    assert graph.state_bytes == 2 * 16 + 2 * 2 * 16
    assert len(graph.state) == 2


def test_list_ops_shows_the_lstm(capsys) -> None:
    assert compile_main(["--list-ops"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("UNIDIRECTIONAL"))
    assert "rip_lstm" in line and "int16->int16" in line and "persistent state" in line


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
@pytest.mark.parametrize("wide", [False, True], ids=["int8", "16x8"])
def test_lstm_on_qemu_m33(tmp_path, capsys, wide) -> None:
    """An LSTM layer (2 x 6 steps of 10 features, 16 units) compiled for qemu-m33 and run:
    TFLite Micro's checksum."""
    assert_matches_on_qemu_m33(_model(wide, time_major=wide), tmp_path, capsys)


def _refusal(model: bytes) -> str:
    with pytest.raises(ModelError) as err:
        read_model(model, name="m.tflite")
    return str(err.value)


def test_what_tflite_micro_refuses_is_refused_in_one_line() -> None:
    """Per-channel gate weights and an int8 cell state: one line naming the operand or the
    state and what TFLite Micro's integer LSTM takes."""
    scales = (0.02, 0, 1 / 128, 0, 2.0**-11, [0.01] * 8)
    common = {"time_major": False, "wide": False, "cell_clip": 0.0, "scales": scales}
    model = lstm_model(1, 2, 3, 4, rng=np.random.default_rng(0), per_channel=True, **common)
    message = _refusal(model)
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in message and "need one scale" in message
    model = lstm_model(1, 2, 3, 4, rng=np.random.default_rng(0), cell_dtype="int8", **common)
    message = _refusal(model)
    assert "cell state int8" in message and "int16" in message and "\n" not in message
