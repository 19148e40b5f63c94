"""Resource variables (issue 28): a streaming model's state in VAR_HANDLE / READ_VARIABLE /
ASSIGN_VARIABLE, initialised by CALL_ONCE of a second subgraph, as microWakeWord's wake-word
models keep it (pymicro-wakeword's okay_nabu.tflite compiles and matches too; it is not
bundled). rip keeps each variable in the persistent region beside the arena: a read copies
it out where the model reads it, an assign copies into it where the model assigns it, and
CALL_ONCE's constants are the values rip_model_reset restores.

Models from the TensorFlow-free writer in microWakeWord's shape (per variable: read the last
K frames, concatenate the new one, keep the last K, run a layer over the K + 1); Hypothesis
over K, the channels, the layer, the initial values (the zero point, or other constants) and
quantization; each streamed for many invokes against TFLite Micro, byte for byte.
"""

from __future__ import annotations

import math

import cbuild as cb
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_batch_matmul import assert_matches_on_qemu_m33
from test_svdf import rip_stream, stream_inputs, tflm_stream
from tflite_writer import ModelBuilder

from rip.cli.compile import main as compile_main
from rip.core.errors import EXIT_BAD_INPUT, ModelError
from rip.frontend.reader import read_model

pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")
F32 = np.float32


def streaming_model(frames: list[int], channels: int, init_values: list[int | None],
                    quants, rng: np.random.Generator, layer: str) -> bytes:  # fmt: skip
    """Input [1, 1, 1, C] a frame; per variable k: the last frames[k] frames (READ), the new
    frame concatenated (CONCATENATION on axis 1), the last frames[k] kept (STRIDED_SLICE,
    ASSIGN_VARIABLE) and the window run through ``layer`` (a depthwise conv over the window,
    or a FULLY_CONNECTED of it), feeding the next variable's frame; CALL_ONCE's subgraph
    assigns ``init_values[k]`` everywhere (None: no assignment, the zero point)."""
    (s_x, z_x), (s_w, _), (s_y, z_y) = quants
    init = ModelBuilder()
    mb = ModelBuilder()
    x = mb.activation((1, 1, 1, channels), s_x, z_x, "x")
    for k, (n, value) in enumerate(zip(frames, init_values, strict=True)):
        if value is not None:
            h0 = init.var_handle(f"stream_{k}/states")
            data = np.full((1, n, 1, channels), value, np.int8)
            init.operator("ASSIGN_VARIABLE", (h0, init.constant_int8(data, [s_x], z_x)), ())
    mb.operator("CALL_ONCE", (), (), "CallOnceOptions", (("InitSubgraphIndex", mb.subgraph(init)),))
    handles = [mb.var_handle(f"stream_{k}/states") for k in range(len(frames))]
    frame = x
    for k, n in enumerate(frames):
        state = mb.activation((1, n, 1, channels), s_x, z_x, f"state{k}")
        mb.operator("READ_VARIABLE", (handles[k],), (state,))
        window = mb.activation((1, n + 1, 1, channels), s_x, z_x, f"window{k}")
        mb.concatenation([state, frame], window, axis=1)
        kept = mb.activation((1, n, 1, channels), s_x, z_x, f"kept{k}")
        mb.strided_slice(window, (0, 1, 0, 0), (1, n + 1, 1, channels), (1, 1, 1, 1), kept)
        mb.operator("ASSIGN_VARIABLE", (handles[k], kept), ())
        out = mb.activation((1, 1, 1, channels), s_x, z_x, f"frame{k + 1}")
        bias = mb.bias(rng.integers(-300, 300, channels), s_x, [s_w] * channels)
        if layer == "depthwise":
            data = rng.integers(-127, 128, (1, n + 1, 1, channels), dtype=np.int8)
            w = mb.constant_int8(data, [s_w] * channels, 0, axis=3)
            mb.depthwise_conv2d(window, w, bias, out, padding="VALID")
        else:
            flat = mb.activation((1, (n + 1) * channels), s_x, z_x, f"flat{k}")
            mb.reshape(window, flat)
            data = rng.integers(-127, 128, (channels, (n + 1) * channels), dtype=np.int8)
            fc = mb.activation((1, channels), s_x, z_x, f"fc{k}")
            bias = mb.bias(rng.integers(-300, 300, channels), s_x, s_w)
            mb.fully_connected(flat, mb.constant_int8(data, s_w), bias, fc)
            mb.reshape(fc, out)
        frame = out
    y = mb.activation((1, 1, 1, channels), s_y, z_y, "y")
    mb.quantize(frame, y)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@st.composite
def streaming_cases(draw):
    n_vars = draw(st.integers(1, 3))
    frames = [draw(st.integers(1, 6)) for _ in range(n_vars)]
    channels = draw(st.integers(1, 9))
    inits = [draw(st.sampled_from([None, -128, 0, 17])) for _ in range(n_vars)]
    s_x = float(F32(math.exp(draw(st.floats(-4.0, -1.0)))))
    s_w = float(F32(math.exp(draw(st.floats(-6.0, -3.0)))))
    s_y = float(F32(s_x * draw(st.floats(0.3, 3.0))))
    quants = [(s_x, draw(st.integers(-128, 127))), (s_w, 0), (s_y, draw(st.integers(-20, 20)))]
    return frames, channels, inits, quants, draw(st.sampled_from(["depthwise", "fc"]))


@settings(max_examples=10, deadline=None)
@given(case=streaming_cases(), seed=st.integers(0, 2**16))
def test_streaming_state_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """Every invoke of a 15-invoke stream equals TFLite Micro's (its interpreter reset first:
    CALL_ONCE then assigns on the first invoke, as rip's reset does); after
    rip_model_reset the first input gives the first output again."""
    frames, channels, inits, quants, layer = case
    rng = np.random.default_rng(seed)
    model = streaming_model(frames, channels, inits, quants, rng, layer)
    graph = read_model(model, name="m")
    assert len(graph.state) == len(frames)
    sequence = stream_inputs(graph, 15, seed)
    want = tflm_stream(model, sequence)
    assume(len(set(want[:-1])) > 1)  # a stream that moves the output (not saturated)
    got = rip_stream(model, sequence, tmp_path_factory.mktemp("stream"))
    # the reset line: TFLite Micro's Reset restores the zero point and does not run CALL_ONCE
    # again, rip's restores CALL_ONCE's values; they agree where those are the zero point
    assert got[:-1] == want[:-1]
    assert got[-1] == got[0]
    if all(v in (None, quants[0][1]) for v in inits):
        assert want[-1] == want[0]


def test_the_variables_leave_no_operator_behind_and_are_reported() -> None:
    """VAR_HANDLE and CALL_ONCE are gone, each READ / ASSIGN is a copy of its variable, the
    variables are state tensors with CALL_ONCE's bytes as their reset values."""
    rng = np.random.default_rng(0)
    quants = [(0.05, -128), (0.01, 0), (0.05, 3)]
    model = streaming_model([3, 2], 4, [-128, None], quants, rng, "fc")
    graph = read_model(model, name="m")
    kinds = [op.kind for op in graph.operators]
    assert "VAR_HANDLE" not in kinds and "CALL_ONCE" not in kinds
    assert kinds.count("READ_VARIABLE") == kinds.count("ASSIGN_VARIABLE") == 2
    first, second = graph.state
    assert graph.state_init == {first: bytes([0x80]) * 12}  # the second has no CALL_ONCE value
    assert graph.tensor(second).nbytes == 8 and graph.state_bytes == 20
    assert any("resource variables: 2 kept in the persistent region" in n for n in graph.notes)


def test_an_initialisation_that_computes_is_refused_by_name(tmp_path, capsys) -> None:
    """A CALL_ONCE subgraph that does more than assign constants: one line, exit 2."""
    init = ModelBuilder()
    h0 = init.var_handle("s")
    a = init.constant_int8(np.zeros((1, 4), np.int8), [0.05], 0)
    b = init.activation((1, 4), 0.05, 0)
    init.operator("RELU", (a,), (b,))
    init.operator("ASSIGN_VARIABLE", (h0, b), ())
    mb = ModelBuilder()
    x = mb.activation((1, 4), 0.05, 0, "x")
    mb.operator("CALL_ONCE", (), (), "CallOnceOptions", (("InitSubgraphIndex", mb.subgraph(init)),))
    h = mb.var_handle("s")
    state = mb.activation((1, 4), 0.05, 0, "state")
    mb.operator("READ_VARIABLE", (h,), (state,))
    y = mb.add(x, state, mb.activation((1, 4), 0.05, 0, "y"))
    mb.operator("ASSIGN_VARIABLE", (h, y), ())
    mb.inputs([x])
    mb.outputs([y])
    with pytest.raises(ModelError, match="assigns constants only"):
        read_model(mb.to_bytes(), name="m.tflite")
    path = tmp_path / "computes.tflite"
    path.write_bytes(mb.to_bytes())
    assert compile_main([str(path), "-o", str(tmp_path / "out")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "resource variables" in err[0] and "RELU" in err[0]


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_streaming_model_on_qemu_m33(tmp_path, capsys) -> None:
    """A two-variable streaming model compiled for qemu-m33 and run (its first invoke, the
    state as CALL_ONCE sets it): TFLite Micro's checksum."""
    quants = [(0.05, -128), (0.01, 0), (0.05, 3)]
    model = streaming_model([3, 2], 8, [-128, 17], quants, np.random.default_rng(2), "depthwise")
    assert_matches_on_qemu_m33(model, tmp_path, capsys)
