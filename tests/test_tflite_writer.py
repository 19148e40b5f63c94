"""The int8 TFLite writer: valid flatbuffers that TFLite Micro runs, read back as written,
deterministic per seed, with quantization that keeps outputs spread over the int8 range."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import tflite
import tflite_writer as tw
from tflite_micro import runtime
from tflite_writer import ModelBuilder

from rip.frontend.tflite_mapping import builtin_name

ALL_OPS = {
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "FULLY_CONNECTED",
    "ADD",
    "MUL",
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    "PAD",
    "RESHAPE",
    "SOFTMAX",
    "LOGISTIC",
    "MEAN",
    "CONCATENATION",
    "RESIZE_NEAREST_NEIGHBOR",
    "QUANTIZE",
    "DEQUANTIZE",
}

# Single-layer generators covering stride, dilation, SAME/VALID/explicit padding, every
# fused activation, per-channel and per-tensor weights and the depth multiplier.
GENERATED: dict[str, Callable[[int], bytes]] = {
    "conv_same_s2_relu6": lambda s: tw.random_conv_model(s, 9, 7, 3, 8, 3, 2, 1, "SAME", "RELU6"),
    "conv_dilated_relu": lambda s: tw.random_conv_model(s, 10, 10, 4, 6, 3, 1, 2, "SAME", "RELU"),
    "conv_pad_valid": lambda s: tw.random_conv_model(s, 8, 8, 4, 5, 3, 1, 1, (1, 2, 0, 1)),
    "conv_valid_rect": lambda s: tw.random_conv_model(
        s, 9, 8, 3, 4, (5, 3), (2, 1), 1, "VALID", per_channel=False
    ),
    "conv_1x1": lambda s: tw.random_conv_model(s, 6, 6, 8, 16, 1),
    "dw_mult2_s2": lambda s: tw.random_depthwise_model(s, 9, 9, 4, 3, 2, depth_multiplier=2),
    "dw_dilated_relu6": lambda s: tw.random_depthwise_model(
        s, 10, 10, 6, 3, 1, (2, 1), activation="RELU6"
    ),
    "dw_pad_valid": lambda s: tw.random_depthwise_model(s, 8, 8, 4, 3, 1, 1, (0, 1, 1, 0)),
    "fully_connected": lambda s: tw.random_fully_connected_model(s, 24, 10, "RELU"),
    "avg_pool_same": lambda s: tw.random_pool_model(s, 7, 7, 4, "avg", 3, 2, "SAME"),
    "max_pool_valid": lambda s: tw.random_pool_model(s, 8, 8, 4, "max", 2, 2, "VALID"),
    "add": lambda s: tw.random_add_model(s, 6, 6, 4),
    "add_relu": lambda s: tw.random_add_model(s, 6, 6, 4, "RELU"),
    "upsample": lambda s: tw.random_upsample_model(s, 4, 5, 3, 2),
    "example": tw.example_model,
}


# ---- reading back -------------------------------------------------------------------------


def read(buf: bytes) -> tuple[tflite.Model, tflite.SubGraph]:
    model = tflite.Model.GetRootAsModel(buf, 0)
    return model, model.Subgraphs(0)


def op_name(model: tflite.Model, op: tflite.Operator) -> str:
    code = model.OperatorCodes(op.OpcodeIndex())
    return builtin_name(code)


def op_names(buf: bytes) -> list[str]:
    model, graph = read(buf)
    return [op_name(model, graph.Operators(i)) for i in range(graph.OperatorsLength())]


def options(op: tflite.Operator, cls: str):
    table = op.BuiltinOptions()
    opts = getattr(tflite, cls)()
    opts.Init(table.Bytes, table.Pos)
    return opts


def shape_of(tensor: tflite.Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()


def constant(model: tflite.Model, tensor: tflite.Tensor) -> np.ndarray:
    dtype = {tflite.TensorType.INT8: np.int8, tflite.TensorType.INT32: np.int32}[tensor.Type()]
    data = model.Buffers(tensor.Buffer()).DataAsNumpy().tobytes()
    return np.frombuffer(data, dtype=dtype).reshape(shape_of(tensor))


def quant(tensor: tflite.Tensor) -> tuple[np.ndarray, np.ndarray, int]:
    q = tensor.Quantization()
    return q.ScaleAsNumpy(), q.ZeroPointAsNumpy(), q.QuantizedDimension()


def assert_round_trip(mb: ModelBuilder, buf: bytes) -> None:
    """Everything the builder recorded reads back identically through the `tflite` package."""
    model, graph = read(buf)
    assert graph.TensorsLength() == len(mb.tensors)
    for i, want in enumerate(mb.tensors):
        got = graph.Tensors(i)
        assert got.Name().decode() == want.name
        assert shape_of(got) == want.shape
        assert got.Type() == getattr(tflite.TensorType, want.dtype.upper())
        if want.quantization is None:
            assert got.Quantization() is None
        else:
            scales, zero_points, axis = quant(got)
            assert tuple(float(s) for s in scales) == want.quantization.scales
            assert tuple(int(z) for z in zero_points) == want.quantization.zero_points
            assert axis == want.quantization.axis
        if want.data is None:
            assert got.Buffer() == 0
        else:
            assert got.Buffer() > 0
            assert model.Buffers(got.Buffer()).DataAsNumpy().tobytes() == want.data
    assert graph.OperatorsLength() == len(mb.operators)
    for i, want in enumerate(mb.operators):
        got = graph.Operators(i)
        assert op_name(model, got) == want.opcode
        assert tuple(got.InputsAsNumpy()) == want.inputs
        assert tuple(got.OutputsAsNumpy()) == want.outputs
        if want.options_type is None:
            assert got.BuiltinOptionsType() == tflite.BuiltinOptions.NONE
            continue
        assert got.BuiltinOptionsType() == getattr(tflite.BuiltinOptions, want.options_type)
        opts = options(got, want.options_type)
        for field, value in want.options:
            if isinstance(value, tuple):
                assert tuple(getattr(opts, f"{field}AsNumpy")()) == value, field
            else:
                assert getattr(opts, field)() == pytest.approx(value), field


# ---- a model with every operator ------------------------------------------------------------


def all_ops_builder(seed: int = 0) -> ModelBuilder:
    """Every supported operator once, with hand-picked (not calibrated) quantization."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()

    def weights(shape, axis):
        q = rng.integers(-127, 128, size=shape).astype(np.int8)
        return q, rng.uniform(0.002, 0.01, size=shape[axis])

    x = mb.activation((1, 8, 8, 3), name="image", dtype="float32")
    q = mb.quantize(x, mb.activation((1, 8, 8, 3), 1 / 64, 0, "quantized"))
    padded = mb.pad(q, ((0, 0), (1, 0), (0, 1), (0, 0)), mb.activation((1, 9, 9, 3), 1 / 64, 0))
    w, s = weights((8, 3, 3, 3), 0)
    conv = mb.conv2d(
        padded,
        mb.constant_int8(w, s, 0, 0),
        mb.bias(rng.integers(-500, 500, 8), 1 / 64, s),
        mb.activation((1, 4, 4, 8), 6 / 255, -128, "conv"),
        stride=2,
        padding="VALID",
        activation="RELU6",
    )
    w, s = weights((1, 3, 3, 16), 3)
    dw = mb.depthwise_conv2d(
        conv,
        mb.constant_int8(w, s, 0, 3),
        mb.bias(rng.integers(-500, 500, 16), 6 / 255, s),
        mb.activation((1, 4, 4, 16), 0.05, 3, "depthwise"),
        depth_multiplier=2,
        dilation=2,
    )
    w, s = weights((16, 1, 1, 16), 0)
    pointwise = mb.conv2d(
        dw,
        mb.constant_int8(w, s, 0, 0),
        mb.bias(rng.integers(-500, 500, 16), 0.05, s),
        mb.activation((1, 4, 4, 16), 0.04, -5, "pointwise"),
        activation="RELU",
    )
    added = mb.add(dw, pointwise, mb.activation((1, 4, 4, 16), 0.08, 0, "add"))
    product = mb.mul(added, added, mb.activation((1, 4, 4, 16), 0.1, -100, "mul"))
    max_pooled = mb.max_pool2d(product, mb.activation((1, 2, 2, 16), 0.1, -100, "max_pool"))
    upsampled = mb.resize_nearest_neighbor(
        max_pooled, mb.activation((1, 4, 4, 16), 0.1, -100, "upsampled")
    )
    avg_pooled = mb.average_pool2d(
        upsampled, mb.activation((1, 2, 2, 16), 0.1, -100, "avg_pool"), padding="SAME"
    )
    joined = mb.concatenation(
        [max_pooled, avg_pooled], mb.activation((1, 2, 2, 32), 0.1, -100, "concat"), axis=3
    )
    mean = mb.mean(joined, (1, 2), mb.activation((1, 1, 1, 32), 0.05, -90, "mean"))
    flat = mb.reshape(mean, mb.activation((1, 32), 0.05, -90, "flat"))
    w, s = weights((10, 32), 0)
    logits = mb.fully_connected(
        flat,
        mb.constant_int8(w, float(s[0])),
        mb.bias(rng.integers(-500, 500, 10), 0.05, s[0]),
        mb.activation((1, 10), 0.05, 0, "logits"),
    )
    probs = mb.softmax(logits, mb.activation((1, 10), 1 / 256, -128, "probs"))
    gates = mb.logistic(logits, mb.activation((1, 10), 1 / 256, -128, "gates"))
    real = mb.dequantize(gates, mb.activation((1, 10), name="gates_float", dtype="float32"))
    mb.inputs([x])
    mb.outputs([probs, real])
    return mb


# ---- TFLite Micro -----------------------------------------------------------------------------


def run_tflm(buf: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    interpreter = runtime.Interpreter.from_bytes(buf, arena_size=1 << 20)
    for i, array in enumerate(inputs):
        interpreter.set_input(array, i)
    interpreter.invoke()
    _, graph = read(buf)
    return [interpreter.get_output(i) for i in range(graph.OutputsLength())]


def random_inputs(buf: bytes, rng: np.random.Generator) -> list[np.ndarray]:
    _, graph = read(buf)
    arrays = []
    for index in graph.InputsAsNumpy():
        tensor = graph.Tensors(int(index))
        assert tensor.Type() == tflite.TensorType.INT8
        arrays.append(rng.integers(-128, 128, size=shape_of(tensor)).astype(np.int8))
    return arrays


def reference_conv_layer(buf: bytes, x_q: np.ndarray) -> np.ndarray:
    """Float reference of [PAD →] CONV_2D or DEPTHWISE_CONV_2D, from the weights read back.

    Uses the bias scale stored in the file, so a wrong bias convention shows up here.
    """
    model, graph = read(buf)
    scales, zero_points, _ = quant(graph.Tensors(int(graph.Inputs(0))))
    x = (x_q.astype(np.float64) - zero_points[0]) * scales[0]
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        name = op_name(model, op)
        if name == "PAD":
            x = np.pad(x, constant(model, graph.Tensors(int(op.Inputs(1)))))
            continue
        cls = "Conv2DOptions" if name == "CONV_2D" else "DepthwiseConv2DOptions"
        opts = options(op, cls)
        w_tensor, b_tensor = graph.Tensors(int(op.Inputs(1))), graph.Tensors(int(op.Inputs(2)))
        w_scales, _, axis = quant(w_tensor)
        shape = [1] * 4
        shape[axis] = -1
        w = constant(model, w_tensor) * w_scales.reshape(shape if w_scales.size > 1 else ())
        b = constant(model, b_tensor) * quant(b_tensor)[0]
        kh, kw = w.shape[1:3]
        (sh, sw), (dh, dw) = (
            (opts.StrideH(), opts.StrideW()),
            (opts.DilationHFactor(), opts.DilationWFactor()),
        )
        _, h, wd, _ = x.shape
        if opts.Padding() == tflite.Padding.SAME:
            oh, ow = -(-h // sh), -(-wd // sw)
            ph = max((oh - 1) * sh + (kh - 1) * dh + 1 - h, 0)
            pw = max((ow - 1) * sw + (kw - 1) * dw + 1 - wd, 0)
            x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
        else:
            oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (wd - (kw - 1) * dw - 1) // sw + 1
        y = np.zeros((oh, ow, b.size))
        for oy in range(oh):
            for ox in range(ow):
                window = x[
                    0,
                    oy * sh : oy * sh + (kh - 1) * dh + 1 : dh,
                    ox * sw : ox * sw + (kw - 1) * dw + 1 : dw,
                ]
                if name == "CONV_2D":
                    y[oy, ox] = np.tensordot(w, window, axes=([1, 2, 3], [0, 1, 2])) + b
                else:
                    multiplier = opts.DepthMultiplier()
                    y[oy, ox] = (w[0] * np.repeat(window, multiplier, axis=2)).sum((0, 1)) + b
        activation = opts.FusedActivationFunction()
        if activation == tflite.ActivationFunctionType.RELU:
            y = np.maximum(y, 0)
        elif activation == tflite.ActivationFunctionType.RELU6:
            y = np.clip(y, 0, 6)
        out_scales, out_zero_points, _ = quant(graph.Tensors(int(op.Outputs(0))))
        return np.clip(np.round(y / out_scales[0]) + out_zero_points[0], -128, 127)[None]
    raise AssertionError("no convolution in the model")


# ---- tests --------------------------------------------------------------------------------------


def test_file_identifier_schema_version_and_empty_buffer_zero():
    buf = tw.example_model()
    assert buf[4:8] == b"TFL3"
    assert tflite.Model.ModelBufferHasIdentifier(buf, 0)
    model, graph = read(buf)
    assert model.Version() == 3
    assert model.Buffers(0).DataLength() == 0
    assert graph.InputsLength() == 1 and graph.OutputsLength() == 1


def test_all_ops_model_covers_every_operator_and_round_trips():
    mb = all_ops_builder()
    buf = mb.to_bytes()
    assert set(op_names(buf)) == ALL_OPS
    assert_round_trip(mb, buf)


def test_round_trip_of_per_channel_quantization_and_options():
    mb = all_ops_builder()
    _, graph = read(mb.to_bytes())
    conv, depthwise = graph.Operators(2), graph.Operators(3)
    depthwise_weights = graph.Tensors(int(depthwise.Inputs(1)))
    scales, zero_points, axis = quant(depthwise_weights)
    assert (shape_of(depthwise_weights), axis, scales.size) == ((1, 3, 3, 16), 3, 16)
    assert not zero_points.any()
    bias_scales, bias_zero_points, _ = quant(graph.Tensors(int(conv.Inputs(2))))
    weight_scales, _, _ = quant(graph.Tensors(int(conv.Inputs(1))))
    input_scale = quant(graph.Tensors(int(conv.Inputs(0))))[0][0]
    np.testing.assert_allclose(bias_scales, input_scale * weight_scales, rtol=1e-6)
    assert not bias_zero_points.any()
    opts = options(depthwise, "DepthwiseConv2DOptions")
    assert (opts.DepthMultiplier(), opts.DilationHFactor(), opts.DilationWFactor()) == (2, 2, 2)
    opts = options(conv, "Conv2DOptions")
    assert (opts.StrideH(), opts.Padding()) == (2, tflite.Padding.VALID)
    assert opts.FusedActivationFunction() == tflite.ActivationFunctionType.RELU6


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generators_are_deterministic(name):
    make = GENERATED[name]
    assert make(3) == make(3)
    assert make(3) != make(4)


def test_explicit_padding_becomes_pad_then_valid_conv():
    buf = tw.random_conv_model(0, padding=(0, 2, 1, 0), dilation=2)
    assert op_names(buf) == ["PAD", "CONV_2D"]
    model, graph = read(buf)
    pad, conv = graph.Operators(0), graph.Operators(1)
    paddings = constant(model, graph.Tensors(int(pad.Inputs(1))))
    assert paddings.tolist() == [[0, 0], [0, 2], [1, 0], [0, 0]]
    opts = options(conv, "Conv2DOptions")
    assert (opts.Padding(), opts.DilationHFactor()) == (tflite.Padding.VALID, 2)
    pad_in, pad_out = (
        quant(graph.Tensors(int(pad.Inputs(0)))),
        quant(graph.Tensors(int(pad.Outputs(0)))),
    )
    assert (pad_in[0].tolist(), pad_in[1].tolist()) == (pad_out[0].tolist(), pad_out[1].tolist())


def test_builder_rejects_inconsistent_layers():
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 2), 0.1, 0)
    w = mb.constant_int8(np.ones((3, 3, 3, 2), np.int8), [0.1] * 3)
    b = mb.bias(np.zeros(3, np.int32), 0.1, [0.1] * 3)
    with pytest.raises(ValueError, match="output shape"):
        mb.conv2d(x, w, b, mb.activation((1, 4, 4, 3), 0.1, 0), padding="VALID")
    with pytest.raises(ValueError, match="scale 1/256"):
        mb.softmax(x, mb.activation((1, 4, 4, 2), 0.1, 0))
    with pytest.raises(ValueError, match="must match"):
        mb.concatenation([x, x], mb.activation((1, 4, 4, 4), 0.2, 0))
    with pytest.raises(ValueError, match="scales for axis"):
        mb.constant_int8(np.ones((3, 2), np.int8), [0.1, 0.1, 0.1], axis=1)
    with pytest.raises(ValueError, match="inputs and outputs"):
        mb.to_bytes()


def test_all_ops_model_runs_in_tflite_micro():
    buf = all_ops_builder().to_bytes()
    image = np.random.default_rng(0).uniform(-1, 1, size=(1, 8, 8, 3)).astype(np.float32)
    probs, gates = run_tflm(buf, [image])
    assert probs.shape == (1, 10) and probs.dtype == np.int8
    assert gates.shape == (1, 10) and gates.dtype == np.float32
    assert abs((probs.astype(np.float64) + 128).sum() / 256 - 1) < 0.05
    assert ((gates >= 0) & (gates <= 1)).all()


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_models_run_in_tflite_micro_with_spread_outputs(name):
    buf = GENERATED[name](0)
    rng = np.random.default_rng(1)
    (out,) = run_tflm(buf, random_inputs(buf, rng))
    _, graph = read(buf)
    assert out.shape == shape_of(graph.Tensors(int(graph.Outputs(0))))
    assert out.dtype == np.int8
    assert len(np.unique(out)) >= min(5, out.size // 2)
    saturated = np.mean(out == 127)
    assert saturated < 0.05, f"{saturated:.0%} of outputs at +127"


@pytest.mark.parametrize(
    "name",
    [
        "conv_same_s2_relu6",
        "conv_dilated_relu",
        "conv_pad_valid",
        "conv_valid_rect",
        "conv_1x1",
        "dw_mult2_s2",
        "dw_dilated_relu6",
        "dw_pad_valid",
    ],
)
def test_convolutions_match_a_float_reference_within_one_step(name):
    buf = GENERATED[name](5)
    (x,) = random_inputs(buf, np.random.default_rng(2))
    (out,) = run_tflm(buf, [x])
    expected = reference_conv_layer(buf, x)
    assert np.abs(out.astype(np.int64) - expected).max() <= 1


def test_example_model_output_is_not_degenerate():
    buf = tw.example_model()
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN", "SOFTMAX"} <= set(op_names(buf))
    rng = np.random.default_rng(0)
    outputs = [run_tflm(buf, random_inputs(buf, rng))[0] for _ in range(4)]
    for out in outputs:
        assert out.shape == (1, 10)
        assert len(np.unique(out)) >= 4
        assert abs((out.astype(np.float64) + 128).sum() / 256 - 1) < 0.05
    assert len({out.tobytes() for out in outputs}) == len(outputs)


def test_builder_checks_of_the_issue_14_operators() -> None:
    """REDUCE_MAX keeps its input's quantization, LOG_SOFTMAX's int8 output is 16/256 and
    127, ARG_MAX writes an integer index tensor: the builder refuses anything else."""
    mb = ModelBuilder()
    x = mb.activation((2, 3), 0.1, 0)
    with pytest.raises(ValueError, match="must match"):
        mb.reduce("REDUCE_MAX", x, [1], mb.activation((2,), 0.2, 0))
    with pytest.raises(ValueError, match="16/256"):
        mb.unary("LOG_SOFTMAX", x, mb.activation((2, 3), 0.1, 0))
    with pytest.raises(ValueError, match="not an integer index"):
        mb.arg_min_max("ARG_MAX", x, 1, mb.activation((2,), 0.1, 0))
    y = mb.add_index_output((2,))
    assert mb.arg_min_max("ARG_MIN", x, -1, y) == y
    assert mb.operators[-1].options == (("OutputType", tflite.TensorType.INT32),)
