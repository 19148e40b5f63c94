"""SHAPE and the int32 shape arithmetic after it folded when the model is read (issue 28,
rip.frontend.constants): the folded ops leave the graph with a note naming them, their
outputs are constants holding what TFLite Micro computes, and the model compiles and
matches TFLite Micro."""

from __future__ import annotations

import numpy as np
import pytest
from test_codegen_host import compile_and_run
from tflite_micro import runtime
from tflite_writer import ModelBuilder

from rip.core.errors import ModelError
from rip.frontend.reader import read_model


def flatten_model(pack_order: str = "batch_first") -> bytes:
    """x -> SHAPE -> STRIDED_SLICE (the batch, shrunk to a scalar) -> PACK with -1 ->
    RESHAPE(x, that) -> FULLY_CONNECTED: Keras's ``tf.reshape(x, [tf.shape(x)[0], -1])``."""
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 2), 0.05, 3, "x")
    s = mb.add_index_output((4,), name="shape")
    mb.shape_op(x, s)
    b = mb.add_index_output((), name="batch")
    mb.strided_slice(s, [0], [1], [1], b, shrink_axis_mask=1)
    minus1 = mb.constant_int32(np.asarray(-1, np.int32), name="minus1")
    new = mb.add_index_output((2,), name="newshape")
    parts = (b, minus1) if pack_order == "batch_first" else (minus1, b)
    mb.operator("PACK", parts, (new,), "PackOptions", (("ValuesCount", 2), ("Axis", 0)))
    flat = mb.activation((1, 32), 0.05, 3, "flat")
    mb.operator("RESHAPE", (x, new), (flat,), "ReshapeOptions")
    w = mb.constant_int8(np.random.default_rng(0).integers(-127, 128, (5, 32), np.int8), [0.01])
    bias = mb.bias(np.zeros(5, np.int64), 0.05, [0.01])
    y = mb.activation((1, 5), 0.2, -4, "y")
    mb.fully_connected(flat, w, bias, y)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def test_shape_chain_is_folded_with_a_note() -> None:
    graph = read_model(flatten_model(), name="m")
    assert [op.kind for op in graph.operators] == ["RESHAPE", "FULLY_CONNECTED"]
    note = next(n for n in graph.notes if n.startswith("fold_constants"))
    assert "SHAPE 0, STRIDED_SLICE 1, PACK 2" in note
    shape_input = graph.tensors[graph.operators[0].inputs[1]]
    assert shape_input.is_constant
    assert np.frombuffer(shape_input.data, "<i4").tolist() == [1, -1]


def test_folded_values_are_tflite_micros() -> None:
    """The folded SHAPE and slice hold what TFLite Micro's kernels write (read back from
    its interpreter's intermediate tensors)."""
    model = flatten_model()
    graph = read_model(model, name="m")
    keep = runtime.InterpreterConfig.kPreserveAllTensors
    it = runtime.Interpreter.from_bytes(model, arena_size=1 << 16, intrepreter_config=keep)
    it.set_input(np.zeros((1, 4, 4, 2), np.int8), 0)
    it.invoke()
    shape_input = graph.tensors[graph.operators[0].inputs[1]]
    want = it.GetTensor(shape_input.id, 0)["tensor_data"].astype("<i4").tobytes()
    assert shape_input.data == want


@pytest.mark.parametrize("order", ["batch_first", "batch_last"])
def test_folded_model_matches_tflm(tmp_path, order) -> None:
    got, want, _ = compile_and_run(flatten_model(order), tmp_path, "rip")
    assert got == want


def test_int32_arithmetic_on_a_real_activation_is_not_folded() -> None:
    """A slice of an int32 graph input is no constant: it stays, and is refused."""
    mb = ModelBuilder()
    x = mb.add_index_output((4,), name="x")
    y = mb.add_index_output((1,), name="y")
    mb.strided_slice(x, [0], [1], [1], y)
    mb.inputs([x])
    mb.outputs([y])
    with pytest.raises(ModelError, match="int32"):
        read_model(mb.to_bytes(), name="m")
