"""The TFLite reader: every shared model parses (or is refused with a clear one-line
message), operators and options match what the flatbuffer says when read independently
with the ``tflite`` accessors, and broken input is a ModelError naming the file."""

from __future__ import annotations

import math
import struct
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tflite
import tflite_writer as tw

from rip.core.errors import ModelError, RipError
from rip.core.operators import spec
from rip.frontend.ir import Padding, PadParams, Quant
from rip.frontend.reader import read_model
from rip.frontend.tflite_mapping import builtin_name

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MODEL_FILES = sorted(MODELS.rglob("*.tflite")) if MODELS.is_dir() else []
REFUSED: set[str] = set()  # every shared model is read (issue 28: SVDF)
NO_MODELS = pytest.param(
    None, marks=pytest.mark.skip(reason=f"{MODELS} is absent (shared models beside the repo)")
)


def model_path(relative: str) -> Path:
    path = MODELS / relative
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared test models live beside the checkout)")
    return path


# ---- independent reads through the tflite accessors ---------------------------------------


def flatbuffer(path: Path) -> tuple[bytes, tflite.Model, tflite.SubGraph]:
    data = path.read_bytes()
    model = tflite.Model.GetRootAsModel(data, 0)
    return data, model, model.Subgraphs(0)


def op_names(path: Path) -> list[str]:
    _, model, sub = flatbuffer(path)
    names = []
    for i in range(sub.OperatorsLength()):
        code = model.OperatorCodes(sub.Operators(i).OpcodeIndex())
        names.append(builtin_name(code))
    return names


def int_constant(model: tflite.Model, sub: tflite.SubGraph, tid: int) -> np.ndarray:
    buffer = model.Buffers(sub.Tensors(tid).Buffer())
    return np.frombuffer(buffer.DataAsNumpy().tobytes(), dtype="<i4")


def with_tensor_type(data: bytes, tid: int, tensor_type: int) -> bytes:
    """The model with tensor ``tid``'s type byte overwritten (the field must be stored)."""
    tensor = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0).Tensors(tid)
    field = tensor._tab.Offset(6)
    assert field, "the type field is not stored for this tensor"
    out = bytearray(data)
    out[tensor._tab.Pos + field] = tensor_type
    return bytes(out)


def with_shape_dim(data: bytes, tid: int, dim: int, value: int, field: int = 4) -> bytes:
    """The model with one entry of tensor ``tid``'s shape (field 4) or shape signature
    (field 18) overwritten."""
    tensor = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0).Tensors(tid)
    assert tensor._tab.Offset(field), "the vector is not stored for this tensor"
    start = tensor._tab.Vector(tensor._tab.Offset(field))
    out = bytearray(data)
    struct.pack_into("<i", out, start + 4 * dim, value)
    return bytes(out)


# ---- every shared model -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", MODEL_FILES or [NO_MODELS], ids=lambda p: p.name if p else "no-models"
)
def test_every_shared_model_parses_or_is_refused_clearly(path: Path) -> None:
    if path.name in REFUSED:
        with pytest.raises(ModelError) as info:
            read_model(path)
        message = str(info.value)
        assert "\n" not in message and message.startswith(str(path))
        return
    graph = read_model(path)
    names = op_names(path)
    assert [op.kind for op in graph.operators] == names
    assert [op.source_index for op in graph.operators] == list(range(len(names)))
    _, _, sub = flatbuffer(path)
    assert graph.inputs == tuple(int(t) for t in sub.InputsAsNumpy())
    assert graph.outputs == tuple(int(t) for t in sub.OutputsAsNumpy())
    produced = {t for op in graph.operators for t in op.outputs}
    state = set(graph.state)
    for op in graph.operators:
        for t in (*op.inputs, *op.outputs):
            if t >= 0:
                assert graph.tensor(t).id == t
                assert graph.tensor(t).is_constant == (t not in produced and t not in graph.inputs)
                assert t not in state  # a variable tensor is no operator's input
    # Inside the graph everything is int8 (the float interface is checked on person-det),
    # but where the op runs a wider type (a 16x8 interface, keyword_scrambled's SOFTMAX)
    for op in graph.operators:
        if op.kind not in ("QUANTIZE", "DEQUANTIZE"):
            ins = graph.tensor(op.inputs[0]).dtype
            assert all(
                graph.tensor(t).dtype == "int8"
                or (ins, graph.tensor(t).dtype) in spec(op.kind).wide_types
                for t in op.outputs
            ), op


def test_keyword_scrambled_keeps_its_svdf_state_out_of_the_operators() -> None:
    """TFLite Micro's keyword_scrambled_8bit (issue 28): each SVDF's variable tensor is a
    state of the graph, in its params, not an operator input; int16 input, int32 output."""
    path = model_path("tinyml/tflm-keyword_scrambled_8bit.tflite")
    graph = read_model(path)
    _, _, sub = flatbuffer(path)
    variables = {t for t in range(sub.TensorsLength()) if sub.Tensors(t).IsVariable()}
    svdfs = [op for op in graph.operators if op.kind == "SVDF"]
    assert len(svdfs) == 7 and set(graph.state) == variables
    assert [op.params.state for op in svdfs] == list(graph.state)
    assert all(len(op.inputs) == 4 for op in svdfs)
    assert graph.state_bytes == sum(graph.tensor(t).nbytes for t in variables) == 5120
    assert graph.tensor(graph.inputs[0]).dtype == "int16"
    assert graph.tensor(graph.outputs[0]).dtype == "int32"


# ---- operator counts and options against the accessors ------------------------------------


@pytest.mark.parametrize(
    "relative",
    [
        "mcunet/mcunet-in3.tflite",
        "mcunet/person-det.tflite",
        "keras/MobileNetV2.tflite",
        "keras/EfficientNetB0.graph.tflite",
        "tinyml/armzoo-micronet_vww4_128_128_int8.tflite",
        "tinyml/mlperf-kws_ref_model.tflite",
    ],
)
def test_op_counts_match_an_independent_count(relative: str) -> None:
    path = model_path(relative)
    graph = read_model(path)
    assert Counter(op.kind for op in graph.operators) == Counter(op_names(path))


def test_mcunet_in3_counts_and_pads() -> None:
    path = model_path("mcunet/mcunet-in3.tflite")
    graph = read_model(path)
    counts = Counter(op.kind for op in graph.operators)
    assert counts["PAD"] == 54
    _, model, sub = flatbuffer(path)
    for op in graph.operators:
        if op.kind != "PAD":
            continue
        table = int_constant(model, sub, op.inputs[1]).reshape(4, 2)
        assert op.params == PadParams(
            Padding(int(table[1, 0]), int(table[1, 1]), int(table[2, 0]), int(table[2, 1]))
        )
        assert table[0].tolist() == [0, 0] and table[3].tolist() == [0, 0]


def test_channel_pad_is_read_into_pad_params() -> None:
    path = model_path("tinyml/armzoo-micronet_vww4_128_128_int8.tflite")
    graph = read_model(path)
    _, model, sub = flatbuffer(path)
    pads = [op for op in graph.operators if op.kind == "PAD"]
    assert pads
    for op in pads:
        table = int_constant(model, sub, op.inputs[1]).reshape(4, 2)
        assert op.params.channels == (int(table[3, 0]), int(table[3, 1]))
        assert op.params.padding.as_tuple() == (*table[1].tolist(), *table[2].tolist())
    assert any(op.params.channels != (0, 0) for op in pads)


def test_weights_quantization_and_data_match_the_accessors() -> None:
    path = model_path("tinyml/mlperf-str_ww_ref_model.tflite")
    graph = read_model(path)
    _, model, sub = flatbuffer(path)
    for op in graph.operators:
        if op.kind not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            continue
        tid = op.inputs[1]
        raw = sub.Tensors(tid)
        q = raw.Quantization()
        tensor = graph.tensor(tid)
        assert tensor.is_constant and tensor.dtype == "int8"
        assert tensor.data == model.Buffers(raw.Buffer()).DataAsNumpy().tobytes()
        assert tensor.quant == Quant(
            tuple(float(s) for s in q.ScaleAsNumpy()),
            tuple(int(z) for z in q.ZeroPointAsNumpy()),
            q.QuantizedDimension(),
        )
        # Per-channel along the output channels: axis 0 for CONV_2D, 3 for depthwise.
        assert tensor.quant.axis == (3 if op.kind == "DEPTHWISE_CONV_2D" else 0)
        assert len(tensor.quant.scale) == tensor.shape[tensor.quant.axis]


def test_mean_axes_come_from_the_axis_tensor() -> None:
    path = model_path("keras/MobileNetV2.tflite")
    graph = read_model(path)
    _, model, sub = flatbuffer(path)
    (mean,) = [op for op in graph.operators if op.kind == "MEAN"]
    assert mean.params.axes == tuple(int_constant(model, sub, mean.inputs[1]).tolist()) == (1, 2)


def test_person_det_has_a_float_interface_and_int8_inside() -> None:
    graph = read_model(model_path("mcunet/person-det.tflite"))
    assert [graph.tensor(t).dtype for t in graph.inputs] == ["float32"]
    assert [graph.tensor(t).dtype for t in graph.outputs] == ["float32"] * 3
    assert graph.operators[0].kind == "QUANTIZE"
    assert Counter(op.kind for op in graph.operators)["DEQUANTIZE"] == 3
    inside = [t for op in graph.operators if op.kind not in ("DEQUANTIZE",) for t in op.outputs]
    assert {graph.tensor(t).dtype for t in inside} == {"int8"}


def test_graph_only_keras_models_have_no_weights() -> None:
    graph_only = read_model(model_path("keras/MobileNetV2.graph.tflite"))
    full = read_model(model_path("keras/MobileNetV2.tflite"))
    assert graph_only.has_weights is False and full.has_weights is True
    conv = next(op for op in graph_only.operators if op.kind == "CONV_2D")
    weights = graph_only.tensor(conv.inputs[1])
    assert weights.is_constant and weights.data is None and weights.nbytes > 0
    conv = next(op for op in full.operators if op.kind == "CONV_2D")
    assert full.tensor(conv.inputs[1]).data is not None
    # Same graph, shapes and options either way.
    assert [op.params for op in graph_only.operators] == [op.params for op in full.operators]


def test_graph_only_pads_are_inferred_from_shapes() -> None:
    graph = read_model(model_path("keras/ResNet50.graph.tflite"))
    pads = [op for op in graph.operators if op.kind == "PAD"]
    # keras ResNet50: ZeroPadding2D(3) before conv1 and ZeroPadding2D(1) before pool1.
    assert [op.params.padding for op in pads] == [Padding(3, 3, 3, 3), Padding(1, 1, 1, 1)]
    assert any("inferred" in note for note in graph.notes)


def test_leading_dynamic_batch_in_the_signature_is_accepted() -> None:
    path = model_path("tinyml/mlperf-kws_ref_model.tflite")
    _, _, sub = flatbuffer(path)
    signature = sub.Tensors(int(sub.Inputs(0))).ShapeSignatureAsNumpy().tolist()
    assert signature[0] == -1  # the file really has a dynamic batch
    assert read_model(path).tensor(int(sub.Inputs(0))).shape[0] == 1


# ---- refusals of supported ops with unsupported data ---------------------------------------


def test_int16_activation_is_refused() -> None:
    path = model_path("mcunet/mcunet-in0.tflite")
    data, _, sub = flatbuffer(path)
    tid = int(sub.Operators(0).Outputs(0))
    patched = with_tensor_type(data, tid, tflite.TensorType.INT16)
    with pytest.raises(ModelError, match=rf"^in0\.tflite: int16 activations .*tensor {tid} "):
        read_model(patched, name="in0.tflite")


def test_float_activation_inside_the_graph_is_refused() -> None:
    path = model_path("mcunet/mcunet-in0.tflite")
    data, _, sub = flatbuffer(path)
    tid = int(sub.Operators(3).Outputs(0))
    patched = with_tensor_type(data, tid, tflite.TensorType.FLOAT32)
    with pytest.raises(ModelError, match=rf"float32 tensor {tid} .*rip runs float32 only") as e:
        read_model(patched, name="in0.tflite")
    assert "TFLITE_BUILTINS_INT8" in str(e.value)


def test_dynamic_shape_is_refused() -> None:
    path = model_path("mcunet/mcunet-in0.tflite")
    data, _, sub = flatbuffer(path)
    tid = int(sub.Operators(2).Outputs(0))
    with pytest.raises(ModelError, match=rf"dynamic shape on tensor {tid} "):
        read_model(with_shape_dim(data, tid, 1, -1), name="in0.tflite")


def test_dynamic_signature_beyond_the_batch_is_refused() -> None:
    path = model_path("tinyml/mlperf-kws_ref_model.tflite")
    data, _, sub = flatbuffer(path)
    tid = int(sub.Inputs(0))
    assert sub.Tensors(tid).ShapeSignatureAsNumpy().tolist()[0] == -1
    read_model(with_shape_dim(data, tid, 0, -1, field=18), name="kws")  # batch: accepted
    with pytest.raises(ModelError, match=rf"dynamic shape on tensor {tid} .*signature \[-1, -1"):
        read_model(with_shape_dim(data, tid, 1, -1, field=18), name="kws")


# ---- broken files ---------------------------------------------------------------------------


def check_one_line(error: RipError, label: str) -> None:
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"{label}: ")
    assert isinstance(error, ModelError) and error.exit_code == 2


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "noise.tflite"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ModelError, match="not a TFLite file") as info:
        read_model(path)
    check_one_line(info.value, str(path))


def test_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not a model\nat all\n")
    with pytest.raises(ModelError, match="not a TFLite file") as info:
        read_model(str(path))
    check_one_line(info.value, str(path))


def test_wrong_identifier() -> None:
    data = model_path("mcunet/mcunet-in0.tflite").read_bytes()
    with pytest.raises(ModelError, match="not a TFLite file") as info:
        read_model(data[:4] + b"TFL2" + data[8:], name="renamed.tflite")
    check_one_line(info.value, "renamed.tflite")


@pytest.mark.parametrize("fraction", [0.5, 0.1, 0.9])
def test_truncated_model(tmp_path: Path, fraction: float) -> None:
    data = model_path("mcunet/mcunet-in0.tflite").read_bytes()
    path = tmp_path / "in0-cut.tflite"
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ModelError, match="truncated or corrupt") as info:
        read_model(path)
    check_one_line(info.value, str(path))


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a TFLite file"):
        read_model(b"", name="empty.tflite")
    missing = tmp_path / "missing.tflite"
    with pytest.raises(ModelError, match="cannot read") as info:
        read_model(missing)
    check_one_line(info.value, str(missing))


# ---- small models written by the test writer ------------------------------------------------


def conv_model(h: int, w: int, k: int, stride: int, dilation: int, depthwise: bool) -> bytes:
    b = tw.ModelBuilder()
    c_in, c_out = 4, 8
    x = b.activation((1, h, w, c_in), 0.05, -3, "x")
    out = b.activation((1, math.ceil(h / stride), math.ceil(w / stride), c_out), 0.1, 2, "y")
    scales = [0.01] * c_out
    if depthwise:
        weights = b.constant_int8(np.ones((1, k, k, c_out), np.int8), scales, axis=3)
        bias = b.bias(np.zeros(c_out), 0.05, scales)
        b.depthwise_conv2d(
            x,
            weights,
            bias,
            out,
            depth_multiplier=2,
            stride=stride,
            dilation=dilation,
            padding="SAME",
        )
    else:
        weights = b.constant_int8(np.ones((c_out, k, k, c_in), np.int8), scales, axis=0)
        bias = b.bias(np.zeros(c_out), 0.05, scales)
        b.conv2d(x, weights, bias, out, stride=stride, dilation=dilation, padding="SAME")
    b.inputs([x])
    b.outputs([out])
    return b.to_bytes()


@pytest.mark.parametrize(
    ("h", "w", "k", "stride", "dilation", "expected"),
    [
        (8, 8, 3, 2, 1, Padding(0, 1, 0, 1)),  # the odd pixel goes to the bottom/right
        (7, 7, 3, 2, 1, Padding(1, 1, 1, 1)),
        (8, 8, 3, 1, 2, Padding(2, 2, 2, 2)),  # dilated kernel extent 5
        (10, 7, 4, 3, 1, Padding(1, 2, 1, 2)),
        (5, 5, 1, 1, 1, Padding()),
    ],
)
@pytest.mark.parametrize("depthwise", [False, True])
def test_same_padding_becomes_explicit(
    h: int, w: int, k: int, stride: int, dilation: int, expected: Padding, depthwise: bool
) -> None:
    graph = read_model(conv_model(h, w, k, stride, dilation, depthwise), name="conv")
    (op,) = graph.operators
    assert op.params.padding == expected
    assert op.params.stride == (stride, stride) and op.params.dilation == (dilation, dilation)
    if depthwise:
        assert op.params.depth_multiplier == 2


def test_float_interface_and_unsupported_op_in_a_written_model() -> None:
    b = tw.ModelBuilder()
    x = b.activation((1, 4, 4, 2), dtype="float32", name="x")
    q = b.activation((1, 4, 4, 2), 0.1, 0, "q")
    t = b.activation((1, 4, 4, 2), 1 / 128, 0, "t")
    y = b.activation((1, 4, 4, 2), dtype="float32", name="y")
    b.quantize(x, q)
    b.operator("LOG", (q,), (t,))
    b.dequantize(t, y)
    b.inputs([x])
    b.outputs([y])
    with pytest.raises(ModelError, match=r"^m: unsupported operator LOG at index 1 .*'t'"):
        read_model(b.to_bytes(), name="m")


def test_float_between_dequantize_and_quantize_is_an_island() -> None:
    """A float32 tensor between a DEQUANTIZE and a QUANTIZE is a float island (issue 28,
    tests/test_float_islands.py), read as the two ops."""
    b = tw.ModelBuilder()
    x = b.activation((1, 4, 4, 2), 0.1, 0, "x")
    f = b.activation((1, 4, 4, 2), dtype="float32", name="f")
    y = b.activation((1, 4, 4, 2), 0.1, 0, "y")
    b.dequantize(x, f)
    b.quantize(f, y)
    b.inputs([x])
    b.outputs([y])
    graph = read_model(b.to_bytes(), name="m")
    assert [op.kind for op in graph.operators] == ["DEQUANTIZE", "QUANTIZE"]
    assert graph.tensor(f).dtype == "float32"


# ---- speed ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "target_seconds"),
    [("mcunet/mcunet-in3.tflite", 1.0), ("keras/EfficientNetV2L.graph.tflite", 10.0)],
)
def test_parse_time(relative: str, target_seconds: float) -> None:
    path = model_path(relative)
    start = time.perf_counter()
    read_model(path)
    seconds = time.perf_counter() - start
    print(f"{relative}: parsed in {seconds:.3f} s (target {target_seconds} s)")
    assert seconds < 10 * target_seconds  # loose: a slow CI machine must not fail this
