"""Refusals that name the real reason (issue 28): the operator or the feature, and what
TFLite Micro does with it, in one line; TANH is no sign of recurrence.

Every model is generated with the TensorFlow-free writer (tests/tflite_writer). Whether
TFLite Micro has a kernel for an op is asked of its interpreter on the same kind of model
(`test_tflite_micro_has_the_kernels_the_refusals_say_it_has`), so the messages' claims are
checked, not assumed.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from test_codegen_host import compile_and_run
from tflite_micro import runtime
from tflite_writer import ModelBuilder
from tflite_writer.generators import _Calibrated

from rip.core.errors import ModelError
from rip.frontend.reader import read_model


def _refusal(model: bytes) -> str:
    with pytest.raises(ModelError) as info:
        read_model(model, name="m.tflite")
    message = str(info.value)
    assert "\n" not in message and message.startswith("m.tflite: ")
    return message


def _tanh(net: _Calibrated, x: int) -> int:
    """TANH with TFLite Micro's int8 output quantization (1/128, 0), its values calibrated."""
    out = net.mb.activation(net.mb.shape(x), 1.0 / 128.0, 0, f"tanh_{x}")
    net.values[out] = np.tanh(net.values[x])
    return net.mb.unary("TANH", x, out)


def unrolled_tanh_cell(seed: int = 0) -> bytes:
    """Two unrolled steps of a tanh RNN cell, h2 = tanh(W x2 + U tanh(W x1)): recurrence
    without state, every op one rip compiles."""
    net = _Calibrated(seed)
    x1, x2 = net.input((1, 12)), net.input((1, 12))
    h1 = _tanh(net, net.fully_connected(x1, 8))
    h2 = _tanh(net, net.add(net.fully_connected(x2, 8), net.fully_connected(h1, 8)))
    return net.finish([x1, x2], [h2])


def test_an_unrolled_model_with_tanh_compiles_and_matches(tmp_path) -> None:
    """TANH is no longer read as a sign of recurrence: the unrolled cell compiles, and its
    outputs are TFLite Micro's."""
    got, want, _ = compile_and_run(unrolled_tanh_cell(), tmp_path, "rip")
    assert got == want


def _one_op(kind: str, n_inputs: int = 1, options: str | None = None, with_tanh: bool = False):
    """A model whose op ``kind`` reads an int8 [1, 4, 4] activation (inputs past the first
    absent, -1), after a TANH when ``with_tanh``."""
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4), 0.05, 0, "x")
    first = x
    if with_tanh:
        t = mb.activation((1, 4, 4), 1.0 / 128.0, 0, "t")
        first = mb.unary("TANH", x, t)
    ins = (first, first) if kind == "BATCH_MATMUL" else (first, *([-1] * (n_inputs - 1)))
    y = mb.activation((1, 4, 4), 0.05, 0, "y")
    mb.operator(kind, ins, (y,), options)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def test_batch_matmul_next_to_tanh_is_read_not_refused_as_recurrence() -> None:
    """An attention block's BATCH_MATMUL next to a TANH: no longer refused (rip runs it,
    tests/test_batch_matmul.py), and TANH is not read as recurrence."""
    graph = read_model(_one_op("BATCH_MATMUL", with_tanh=True), name="m.tflite")
    assert [op.kind for op in graph.operators] == ["TANH", "BATCH_MATMUL"]


def test_an_lstm_without_its_weights_is_refused_naming_the_operand() -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM runs (tests/test_lstm.py); one whose weights are absent is
    refused in one line naming the operand."""
    message = _refusal(_one_op("UNIDIRECTIONAL_SEQUENCE_LSTM", 24))
    assert "operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): input 1 is -1 (absent)" in message


def test_a_recurrent_op_tflite_micro_lacks_says_so() -> None:
    message = _refusal(_one_op("UNIDIRECTIONAL_SEQUENCE_RNN", 5))
    assert "TFLite Micro has no kernel for either" in message and "unrolled" in message


def resource_variable_model() -> bytes:
    """A streaming cell as microWakeWord keeps it: subgraph 0 runs CALL_ONCE of subgraph 1
    (which assigns zeros to the variable: operators, no outputs), reads the state, adds the
    input and assigns the sum back."""
    init = ModelBuilder()
    h0 = init.resource("h")
    init.operator("VAR_HANDLE", (), (h0,))
    zeros = init.constant_int8(np.zeros((1, 4), np.int8), [0.05], 0, 0, "zeros")
    init.operator("ASSIGN_VARIABLE", (h0, zeros), ())

    mb = ModelBuilder()
    x = mb.activation((1, 4), 0.05, 0, "x")
    index = mb.subgraph(init)
    mb.operator("CALL_ONCE", (), (), "CallOnceOptions", (("InitSubgraphIndex", index),))
    h = mb.resource("h")
    mb.operator("VAR_HANDLE", (), (h,))
    state = mb.activation((1, 4), 0.05, 0, "state")
    mb.operator("READ_VARIABLE", (h,), (state,))
    y = mb.add(x, state, mb.activation((1, 4), 0.05, 0, "y"))
    mb.operator("ASSIGN_VARIABLE", (h, y), ())
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def test_resource_variables_are_read_not_refused() -> None:
    """A streaming cell of unnamed handles (TFLite Micro finds a variable by its shared
    name, absent here: one variable): read as a copy out of the persistent region, the ADD,
    a copy back; CALL_ONCE's zeros are the reset value (tests/test_resource_variables.py
    runs such models against TFLite Micro)."""
    graph = read_model(resource_variable_model(), name="m.tflite")
    assert [op.kind for op in graph.operators] == ["READ_VARIABLE", "ADD", "ASSIGN_VARIABLE"]
    (state,) = graph.state
    assert graph.state_init == {state: bytes(4)}


def test_a_subgraph_with_operators_and_no_outputs_is_not_called_empty() -> None:
    """Without resource variables, a subgraph of operators and no outputs is described as
    it is."""
    extra = ModelBuilder()
    a = extra.activation((1, 4), 0.05, 0)
    extra.operator("RELU", (a,), (extra.activation((1, 4), 0.05, 0),))
    mb = ModelBuilder()
    x = mb.activation((1, 4), 0.05, 0)
    y = mb.activation((1, 4), 0.05, 0)
    mb.operator("RELU", (x,), (y,))
    mb.subgraph(extra)
    mb.inputs([x])
    mb.outputs([y])
    assert "subgraph 1 has 1 operator and no outputs" in _refusal(mb.to_bytes())


def test_int16_activations_are_refused_naming_the_16x8_mode() -> None:
    """A 16x8 op rip has no 16x8 kernel for yet (ABS on int16): one line naming int16
    activations, the converter setting, that TFLite Micro runs them and the 16x8 kernels
    rip has."""
    mb = ModelBuilder()
    x = mb.activation((1, 5, 5, 4), 1.0 / 4096, 0, "x", dtype="int16")
    y = mb.activation((1, 5, 5, 4), 1.0 / 4096, 0, "y", dtype="int16")
    mb.unary("ABS", x, y)
    mb.inputs([x])
    mb.outputs([y])
    message = _refusal(mb.to_bytes())
    assert "int16 activations (16x8 quantization" in message
    assert "INT16_WEIGHTS_INT8" in message and "TFLite Micro runs them" in message
    assert "tensor 0 'x' (graph input)" in message
    assert "16x8 kernels so far: ADD, AVERAGE_POOL_2D, CONCATENATION, CONV_2D" in message


@pytest.mark.parametrize(
    ("kind", "n_inputs", "has_kernel"),
    [
        ("BATCH_MATMUL", 2, True),
        ("SVDF", 5, True),
        ("UNIDIRECTIONAL_SEQUENCE_LSTM", 24, True),
        ("UNIDIRECTIONAL_SEQUENCE_RNN", 5, False),
    ],
)
def test_tflite_micro_has_the_kernels_the_refusals_say_it_has(kind, n_inputs, has_kernel, capfd):
    """The interpreter resolves the op (and runs it, or fails later on this model's absent
    operands) exactly when the refusal says TFLite Micro runs it."""
    model = _one_op(kind, n_inputs)
    with contextlib.suppress(RuntimeError):  # a kernel found, this model's operands not
        runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    log = capfd.readouterr()
    missing = f"Didn't find op for builtin opcode '{kind}'" in log.out + log.err
    assert missing != has_kernel
