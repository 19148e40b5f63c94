"""16x8 kernels (issue 28: int16 activations, int8 weights, the converter's
EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 mode), byte-equal to TFLite
Micro's reference integer kernels.

So far FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D: Hypothesis over batch, depths,
kernel sizes, strides, dilations, depth multipliers, per-tensor or per-channel weights, an
int64, int32 or no bias, the fused activation and the scales; dense and convolutional 16x8
models (int16 end to end) on the host and on qemu-m33 / qemu-armv6m.
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
from test_svdf import rip_stream, stream_inputs, tflm_stream
from tflite_writer import ModelBuilder
from tflite_writer.generators import unrolled_gru_model, unrolled_lstm_model

from rip.frontend.reader import read_model

runtime = pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle").runtime
F32 = np.float32


def dense16_model(layers: list[tuple[int, str, str, bool]], depth: int, batch: int,
                  scale: float, rng: np.random.Generator) -> bytes:  # fmt: skip
    """int16 input [batch, depth] through FULLY_CONNECTED layers (units, bias type
    int64 / int32 / none, activation, per-channel weights), int16 all along."""
    mb = ModelBuilder()
    x = mb.activation((batch, depth), scale, 0, "x", dtype="int16")
    first, s_x, d = x, scale, depth
    for k, (units, bias, activation, per_channel) in enumerate(layers):
        s_w = [
            float(F32(math.exp(rng.uniform(-7, -4)))) for _ in range(units if per_channel else 1)
        ]
        w = mb.constant_int8(rng.integers(-127, 128, (units, d), dtype=np.int8), s_w, 0, axis=0)
        b = -1
        if bias != "none":
            values = rng.integers(-(1 << 20), 1 << 20, units)
            scales = [float(F32(s_x) * F32(s)) for s in (s_w * units if len(s_w) == 1 else s_w)]
            b = (mb.constant_int64(values, scales) if bias == "int64"
                 else mb.constant_int32(values, scales))  # fmt: skip
        s_y = float(F32(s_x * s_w[0] * 40 * math.sqrt(d) * rng.uniform(0.2, 2.0)))
        y = mb.activation((batch, units), s_y, 0, f"y{k}", dtype="int16")
        mb.fully_connected(x, w, b, y, activation=activation)
        x, s_x, d = y, s_y, units
    mb.inputs([first])
    mb.outputs([x])
    return mb.to_bytes()


@st.composite
def dense_cases(draw):
    layers = [
        (
            draw(st.integers(1, 24)),
            draw(st.sampled_from(["int64", "int32", "none"])),
            draw(st.sampled_from(["NONE", "RELU", "RELU6"])),
            draw(st.booleans()),
        )
        for _ in range(draw(st.integers(1, 3)))
    ]
    scale = float(F32(math.exp(draw(st.floats(-9.0, -4.0)))))
    return layers, draw(st.integers(1, 40)), draw(st.integers(1, 3)), scale


@settings(max_examples=15, deadline=None)
@given(case=dense_cases(), seed=st.integers(0, 2**16))
def test_fully_connected_16x8_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """Any depths, batch, bias type, activation, per-tensor or per-channel weights: three
    random int16 inputs over the whole range, TFLite Micro's bytes."""
    layers, depth, batch, scale = case
    model = dense16_model(layers, depth, batch, scale, np.random.default_rng(seed))
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("fc16")) == want


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_dense_16x8_on_the_cores(tmp_path, capsys, board) -> None:
    """A three-layer 16x8 dense model (int64 bias, per-channel, RELU) and a conv -> depthwise
    16x8 model (strided, dilated, SAME) on both cores."""
    layers = [(16, "int64", "RELU", True), (8, "int32", "NONE", False), (4, "int64", "RELU6", True)]
    model = dense16_model(layers, 32, 1, 0.001, np.random.default_rng(5))
    (tmp_path / "dense").mkdir()
    assert_matches_on_qemu_m33(model, tmp_path / "dense", capsys, board)
    convs = [
        ("conv", 3, 2, 1, "SAME", 6, "int32", "RELU"),
        ("dw", 3, 1, 2, "SAME", 2, "int64", "NONE"),
    ]
    (tmp_path / "conv").mkdir()
    model = conv16_model((9, 7), 3, convs, np.random.default_rng(6))
    assert_matches_on_qemu_m33(model, tmp_path / "conv", capsys, board)


def _conv_stack(mb: ModelBuilder, hw: tuple[int, int], c: int, convs,
                rng: np.random.Generator):  # fmt: skip
    """int16 [1, H, W, C] through CONV_2D / DEPTHWISE_CONV_2D layers (kind, kernel, stride,
    dilation, padding, out channels or depth multiplier, bias type, activation), int16 all
    along, per-channel int8 weights: (builder, last tensor, input, (H, W, C, scale))."""
    s_x = 0.002
    x = mb.activation((1, *hw, c), s_x, 0, "x", dtype="int16")
    first, h, w = x, *hw
    for k, (kind, kernel, stride, dilation, padding, width, bias, activation) in enumerate(convs):
        co = c * width if kind == "dw" else width
        s_w = [float(F32(math.exp(rng.uniform(-6, -3)))) for _ in range(co)]
        if kind == "dw":
            data = rng.integers(-127, 128, (1, kernel, kernel, co), dtype=np.int8)
            wt = mb.constant_int8(data, s_w, 0, axis=3)
        else:
            data = rng.integers(-127, 128, (co, kernel, kernel, c), dtype=np.int8)
            wt = mb.constant_int8(data, s_w, 0, axis=0)
        scales = [float(F32(s_x) * F32(s)) for s in s_w]
        values = rng.integers(-(1 << 18), 1 << 18, co)
        make = mb.constant_int64 if bias == "int64" else mb.constant_int32
        b = make(values, scales)
        span = dilation * (kernel - 1) + 1
        if padding == "SAME":
            h, w = -(-h // stride), -(-w // stride)
        else:
            h, w = (h - span) // stride + 1, (w - span) // stride + 1
        taps = kernel * kernel * (1 if kind == "dw" else c)
        s_y = float(F32(s_x * s_w[0] * 30 * math.sqrt(taps)))
        y = mb.activation((1, h, w, co), s_y, 0, f"y{k}", dtype="int16")
        common = {"stride": stride, "dilation": dilation, "padding": padding,
                  "activation": activation}  # fmt: skip
        if kind == "dw":
            mb.depthwise_conv2d(x, wt, b, y, depth_multiplier=width, **common)
        else:
            mb.conv2d(x, wt, b, y, **common)
        x, s_x, c = y, s_y, co
    return mb, x, first, (h, w, c, s_x)


def conv16_model(hw: tuple[int, int], c: int, convs, rng: np.random.Generator) -> bytes:
    """The conv stack of `_conv_stack` as a model: its last tensor the output."""
    mb, x, first, _ = _conv_stack(ModelBuilder(), hw, c, convs, rng)
    mb.inputs([first])
    mb.outputs([x])
    return mb.to_bytes()


@st.composite
def conv_cases(draw):
    hw = (draw(st.integers(3, 9)), draw(st.integers(3, 9)))
    c = draw(st.integers(1, 6))
    convs = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["conv", "dw"]))
        kernel = draw(st.integers(1, 3))
        stride, dilation = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        width = draw(st.integers(1, 2)) if kind == "dw" else draw(st.integers(1, 8))
        # TFLite Micro's int16 depthwise reads an int64 bias only
        bias = "int64" if kind == "dw" else draw(st.sampled_from(["int64", "int32"]))
        activation = draw(st.sampled_from(["NONE", "RELU", "RELU6"]))
        convs.append((kind, kernel, stride, dilation, "SAME", width, bias, activation))
    return hw, c, convs


@settings(max_examples=15, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2**16))
def test_convolutions_16x8_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """CONV_2D and DEPTHWISE_CONV_2D 16x8: kernel sizes 1-3, strides, dilations, SAME
    padding (padded taps count nothing), depth multipliers, int64 / int32 bias, activations:
    three random int16 inputs, TFLite Micro's bytes."""
    hw, c, convs = case
    model = conv16_model(hw, c, convs, np.random.default_rng(seed))
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("conv16")) == want


def ds_cnn16_model(rng: np.random.Generator, pool: str = "avg") -> bytes:
    """A keyword-spotting DS-CNN in 16x8 (int16 activations end to end): a strided 3x3
    CONV_2D, two depthwise-separable blocks (3x3 DEPTHWISE_CONV_2D, 1x1 CONV_2D, RELU), a
    global pool, RESHAPE and FULLY_CONNECTED, int64 biases, per-channel weights."""
    convs = [
        ("conv", 3, 2, 1, "SAME", 8, "int64", "RELU"),
        ("dw", 3, 1, 1, "SAME", 1, "int64", "RELU"),
        ("conv", 1, 1, 1, "SAME", 12, "int64", "RELU"),
        ("dw", 3, 1, 1, "SAME", 1, "int64", "RELU"),
        ("conv", 1, 1, 1, "SAME", 12, "int64", "RELU"),
    ]
    mb, x, first, (h, w, c, s_x) = _conv_stack(ModelBuilder(), (13, 8), 1, convs, rng)
    pooled = mb.activation((1, 1, 1, c), s_x, 0, "pooled", dtype="int16")
    make = mb.average_pool2d if pool == "avg" else mb.max_pool2d
    make(x, pooled, filter_size=(h, w), stride=1, padding="VALID")
    flat = mb.activation((1, c), s_x, 0, "flat", dtype="int16")
    mb.reshape(pooled, flat)
    s_w = [float(F32(0.01))] * 6
    wt = mb.constant_int8(rng.integers(-127, 128, (6, c), dtype=np.int8), s_w, 0, axis=0)
    b = mb.constant_int64(rng.integers(-1000, 1000, 6), [float(F32(s_x) * F32(0.01))] * 6)
    y = mb.activation((1, 6), float(F32(s_x * 0.01 * 40)), 0, "logits", dtype="int16")
    mb.fully_connected(flat, wt, b, y)
    mb.inputs([first])
    mb.outputs([y])
    return mb.to_bytes()


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_ds_cnn_16x8_streams_as_tflite_micro(tmp_path, pool) -> None:
    """The 16x8 DS-CNN: five random int16 inputs, TFLite Micro's bytes, the arena below its
    own (rip_stream checks it)."""
    model = ds_cnn16_model(np.random.default_rng(3), pool)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 5, 1)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_ds_cnn_16x8_on_qemu_m33(tmp_path, capsys) -> None:
    """The 16x8 DS-CNN compiled for qemu-m33 and run: TFLite Micro's checksum."""
    assert_matches_on_qemu_m33(ds_cnn16_model(np.random.default_rng(3)), tmp_path, capsys)


def binary16_model(kind: str, shapes, quants, activation: str, constant: bool,
                   rng: np.random.Generator) -> bytes:  # fmt: skip
    """One 16x8 ADD, SUB or MUL of int16 operands of broadcasting shapes, each (scale, zero
    point); ``constant``: the second operand a constant."""
    mb = ModelBuilder()
    (s1, z1), (s2, z2), (so, zo) = quants
    a = mb.activation(shapes[0], s1, z1, "a", dtype="int16")
    if constant:
        b = mb.constant_int16(rng.integers(-32768, 32768, shapes[1], dtype=np.int16), s2)
    else:
        b = mb.activation(shapes[1], s2, z2, "b", dtype="int16")
    out_shape = np.broadcast_shapes(shapes[0], shapes[1])
    y = mb.activation(out_shape, so, zo, "y", dtype="int16")
    if kind in ("MAXIMUM", "MINIMUM"):
        mb.binary(kind, a, b, y)
    else:
        options = (("FusedActivationFunction", {"NONE": 0, "RELU": 1, "RELU6": 3}[activation]),)
        mb.operator(kind, (a, b), (y,), f"{kind.title()}Options", options)
    mb.inputs([a] if constant else [a, b])
    mb.outputs([y])
    return mb.to_bytes()


@st.composite
def binary_cases(draw):
    kind = draw(st.sampled_from(["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"]))
    rank = draw(st.integers(1, 4))
    full = [draw(st.integers(1, 5)) for _ in range(rank)]
    shapes = [
        tuple(d if draw(st.booleans()) else 1 for d in full)[draw(st.integers(0, rank - 1)) :]
        for _ in range(2)
    ]
    shapes[draw(st.integers(0, 1))] = tuple(full)  # one operand full-size, as converters emit
    scale = st.floats(-12.0, -2.0).map(lambda e: float(F32(math.exp(e))))
    # TFLite Micro's 16x8 MUL takes zero points 0 only; ADD and SUB any; MAXIMUM and MINIMUM
    # compare raw values of one quantization
    zero = st.just(0) if kind == "MUL" else st.sampled_from([0, 0, 3, -100])
    quants = [(draw(scale), draw(zero)) for _ in range(3)]
    if kind in ("MAXIMUM", "MINIMUM"):
        quants = [quants[0]] * 3
    activation = draw(st.sampled_from(["NONE", "RELU", "RELU6"]))
    return kind, shapes, quants, activation, draw(st.booleans())


@settings(max_examples=30, deadline=None)
@given(case=binary_cases(), seed=st.integers(0, 2**16))
def test_binary_16x8_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """ADD, SUB, MUL, MAXIMUM and MINIMUM 16x8: any broadcast of shapes up to rank 4, scales
    over ten octaves, zero points, fused activations, a constant or a second input: three
    random int16 inputs, TFLite Micro's bytes."""
    kind, shapes, quants, activation, constant = case
    rng = np.random.default_rng(seed)
    model = binary16_model(kind, shapes, quants, activation, constant, rng)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("bin16")) == want


def unary16_model(kind: str, n: int, s_in: float, s_out: float = 2.0**-15) -> bytes:
    """One int16 LOGISTIC or TANH over n elements, input scale s_in, zero points 0."""
    mb = ModelBuilder()
    x = mb.activation((1, n), float(F32(s_in)), 0, "x", dtype="int16")
    y = mb.activation((1, n), s_out, 0, "y", dtype="int16")
    mb.operator(kind, (x,), (y,))
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def _tflm_one(model: bytes, x: np.ndarray) -> np.ndarray:
    it = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    it.set_input(x.astype(np.int16).reshape(1, -1), 0)
    it.invoke()
    return it.get_output(0).reshape(-1).astype(np.int64)


def test_sigmoid_table_is_tflite_micros() -> None:
    """The kernel's sigmoid table, entry by entry, read back from TFLite Micro's int16 TANH:
    at input scale 1/48 an integer input x lands on entry x with no interpolation, the
    output entry - 32768; the last entry through an input whose interpolation weight is
    255/256 of the way from entry 254 (it adds the difference, 0 or 1)."""
    text = (Path(__file__).parents[1] / "kernels" / "rip_activation.c").read_text()
    body = text.split("sigmoid_table[256] = {", 1)[1].split("}", 1)[0]
    table = [int(v) for v in body.replace("\n", " ").split(",") if v.strip()]
    assert len(table) == 256
    got = _tflm_one(unary16_model("TANH", 255, 1 / 48), np.arange(255)) + 32768
    assert list(got) == table[:255]
    # scale 0.02232125: x = 238 lands at 254 * 256 + 255 (the kernel's rescaling, checked
    # by the Hypothesis test below)
    last = _tflm_one(unary16_model("TANH", 1, 0.022321250289678574), np.array([238]))
    assert int(last[0]) + 32768 - table[254] == table[255] - table[254]


@st.composite
def sigmoid_cases(draw):
    kind = draw(st.sampled_from(["LOGISTIC", "TANH"]))
    pot = draw(st.booleans())  # a power-of-two input scale: the multiplier-free path
    s_in = 2.0 ** draw(st.integers(-16, -8)) if pot else math.exp(draw(st.floats(-14.0, -2.0)))
    return kind, draw(st.integers(1, 300)), s_in


@settings(max_examples=25, deadline=None)
@given(case=sigmoid_cases(), seed=st.integers(0, 2**16))
def test_logistic_tanh_16x8_byte_equal_to_tflite_micro(tmp_path_factory, case, seed) -> None:
    """LOGISTIC and TANH 16x8: power-of-two and other input scales from 2^-20 to 0.13,
    three random int16 inputs over the whole range, TFLite Micro's bytes."""
    kind, n, s_in = case
    model = unary16_model(kind, n, s_in)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("sig16")) == want


def test_logistic_16x8_exhaustive(tmp_path) -> None:
    """Every int16 input through LOGISTIC and TANH at three scales (one a power of two),
    all 65,536 values at once against TFLite Micro's."""
    x = np.arange(-32768, 32768, dtype=np.int64)
    for kind in ("LOGISTIC", "TANH"):
        for s_in in (2.0**-12, 1 / 3000, 0.0007):
            model = unary16_model(kind, x.size, s_in)
            sequence = [[x.astype(np.int16)]]
            want = tflm_stream(model, sequence)
            (tmp_path / f"{kind}{s_in}").mkdir()
            assert rip_stream(model, sequence, tmp_path / f"{kind}{s_in}") == want, (kind, s_in)


def mobilenet16_model(rng: np.random.Generator) -> bytes:
    """A small MobileNetV2 in 16x8: a strided 3x3 stem, an inverted residual block (1x1
    expand, 3x3 depthwise, 1x1 project, ADD of its input), a strided one without the
    residual, the spatial MEAN, FULLY_CONNECTED, SOFTMAX; int64 biases, per-channel
    weights, RELU6 inside the blocks."""
    mb = ModelBuilder()
    stem = [("conv", 3, 2, 1, "SAME", 8, "int64", "RELU6")]
    mb, x, first, (h, w, c, s_x) = _conv_stack(mb, (16, 16), 3, stem, rng)

    def block(x, hw, c, s_x, stride: int, out: int, tag: str):
        """1x1 expand x3, 3x3 depthwise (stride), 1x1 project: (tensor, hw, channels, scale)."""
        layers = []
        for kind, k, st_, width, act in (("conv", 1, 1, 3 * c, "RELU6"), ("dw", 3, stride, 1,
                                        "RELU6"), ("conv", 1, 1, out, "NONE")):  # fmt: skip
            co = c * width if kind == "dw" else width
            s_w = [float(F32(math.exp(rng.uniform(-6, -3)))) for _ in range(co)]
            shape = (1, k, k, co) if kind == "dw" else (co, k, k, c)
            wt = mb.constant_int8(rng.integers(-127, 128, shape, dtype=np.int8), s_w, 0,
                                  axis=3 if kind == "dw" else 0)  # fmt: skip
            b = mb.constant_int64(rng.integers(-(1 << 14), 1 << 14, co),
                                  [float(F32(s_x) * F32(s)) for s in s_w])  # fmt: skip
            hw = (-(-hw[0] // st_), -(-hw[1] // st_))
            taps = k * k * (1 if kind == "dw" else c)
            s_y = float(F32(s_x * s_w[0] * 30 * math.sqrt(taps)))
            y = mb.activation((1, *hw, co), s_y, 0, f"{tag}{len(layers)}", dtype="int16")
            common = {"stride": st_, "padding": "SAME", "activation": act}
            if kind == "dw":
                mb.depthwise_conv2d(x, wt, b, y, depth_multiplier=1, **common)
            else:
                mb.conv2d(x, wt, b, y, **common)
            layers.append(y)
            x, s_x, c = y, s_y, co
        return x, hw, c, s_x

    y, hw, c2, s_y = block(x, (h, w), c, s_x, 1, c, "b1_")
    s_sum = float(F32(max(s_x, s_y) * 1.5))
    res = mb.activation((1, *hw, c2), s_sum, 0, "residual", dtype="int16")
    mb.add(x, y, res)
    x, hw, c, s_x = block(res, hw, c2, s_sum, 2, 12, "b2_")
    flat = mb.activation((1, c), s_x, 0, "flat", dtype="int16")
    mb.reduce("MEAN", x, [1, 2], flat)  # Keras' GlobalAveragePooling2D
    wt = mb.constant_int8(rng.integers(-127, 128, (5, c), dtype=np.int8), [0.01] * 5, 0, axis=0)
    b = mb.constant_int64(rng.integers(-1000, 1000, 5), [float(F32(s_x) * F32(0.01))] * 5)
    logits = mb.activation((1, 5), float(F32(s_x * 0.01 * 40)), 0, "logits", dtype="int16")
    mb.fully_connected(flat, wt, b, logits)
    probabilities = mb.activation((1, 5), 1 / 32768, 0, "probabilities", dtype="int16")
    mb.operator("SOFTMAX", (logits,), (probabilities,), "SoftmaxOptions", (("Beta", 1.0),))
    mb.inputs([first])
    mb.outputs([probabilities])
    return mb.to_bytes()


# the 16x8 models: a GRU and an LSTM (unrolled, as converters emit them) and a
# small MobileNet, besides the DS-CNN above
MODELS16 = {
    "gru": lambda: unrolled_gru_model(4, 5, 8, 8, wide=True),
    "lstm": lambda: unrolled_lstm_model(5, 5, 8, 8, wide=True),
    "mobilenet": lambda: mobilenet16_model(np.random.default_rng(7)),
}


@pytest.mark.parametrize("name", sorted(MODELS16))
def test_models_16x8_stream_as_tflite_micro(tmp_path, name) -> None:
    """The 16x8 GRU, LSTM and MobileNet: four random int16 inputs each, TFLite Micro's bytes,
    rip's arena at most TFLite Micro's (rip_stream checks it)."""
    model = MODELS16[name]()
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 4, 2)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)


def test_unrolled_lstm_int8_streams_as_tflite_micro(tmp_path) -> None:
    """The same LSTM cell in int8 (the gates' LOGISTIC onto 1/256, TANH onto 1/128)."""
    model = unrolled_lstm_model(5, 5, 8, 8)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 4, 2)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
@pytest.mark.parametrize("name", sorted(MODELS16))
def test_models_16x8_on_qemu_m33(tmp_path, capsys, name) -> None:
    """The 16x8 GRU, LSTM and MobileNet compiled for qemu-m33 and run: TFLite Micro's
    checksum."""
    assert_matches_on_qemu_m33(MODELS16[name](), tmp_path, capsys)


def movement16_model(shape, perm, stride_axis: int, rng: np.random.Generator) -> bytes:
    """int16 data movement: x TRANSPOSEd by ``perm``; a STRIDED_SLICE of it taking every
    other element along ``stride_axis`` (the last axis: each value's two bytes apart);
    CONCATENATION of the slice and x's transpose along axis 0, at another scale (int16
    CONCATENATION copies values whatever the scales)."""
    mb = ModelBuilder()
    x = mb.activation(shape, 0.001, 0, "x", dtype="int16")
    t_shape = tuple(shape[p] for p in perm)
    t = mb.activation(t_shape, 0.001, 0, "t", dtype="int16")
    mb.operator("TRANSPOSE", (x, mb._ints(perm)), (t,))
    rank = len(shape)
    strides = [2 if a == stride_axis else 1 for a in range(rank)]
    s_shape = tuple(-(-d // 2) if a == stride_axis else d for a, d in enumerate(t_shape))
    s = mb.activation(s_shape, 0.001, 0, "s", dtype="int16")
    mb.strided_slice(t, [0] * rank, list(t_shape), strides, s)
    c_shape = (s_shape[0] + t_shape[0], *s_shape[1:])
    if s_shape[1:] != t_shape[1:]:
        c_shape, parts = s_shape, [s]
    else:
        parts = [s, t]
    y = mb.activation(c_shape, 0.002, 0, "y", dtype="int16")
    mb.operator("CONCATENATION", tuple(parts), (y,), "ConcatenationOptions",
                (("Axis", 0), ("FusedActivationFunction", 0)))  # fmt: skip
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@settings(max_examples=10, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple),
    data=st.data(),
    seed=st.integers(0, 2**16),
)
def test_movement_16x8_byte_equal_to_tflite_micro(tmp_path_factory, shape, data, seed) -> None:
    """TRANSPOSE, STRIDED_SLICE (a stride on the last axis too) and CONCATENATION of int16
    values: the int8 movement kernels moving two bytes a value, TFLite Micro's bytes."""
    perm = data.draw(st.permutations(range(len(shape))))
    axis = data.draw(st.integers(0, len(shape) - 1))
    model = movement16_model(shape, tuple(perm), axis, np.random.default_rng(seed))
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 2, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("move16")) == want


def softmax16_model(shape, s_in: float, beta: float) -> bytes:
    """One int16 SOFTMAX over the last axis, zero points 0, output scale 1/32768."""
    mb = ModelBuilder()
    x = mb.activation(shape, float(F32(s_in)), 0, "x", dtype="int16")
    y = mb.activation(shape, 1 / 32768, 0, "y", dtype="int16")
    mb.operator("SOFTMAX", (x,), (y,), "SoftmaxOptions", (("Beta", beta),))
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@settings(max_examples=20, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 40)),
    s_in=st.floats(-14.0, -4.0).map(math.exp),
    beta=st.sampled_from([1.0, 0.5, 2.0]),
    seed=st.integers(0, 2**16),
)
def test_softmax_16x8_byte_equal_to_tflite_micro(tmp_path_factory, shape, s_in, beta, seed):
    """SOFTMAX 16x8 (its exp and reciprocal tables computed by the generator as TFLite
    Micro's Prepare computes them): rows of 1-40, input scales over ten octaves, beta:
    three random int16 inputs, TFLite Micro's bytes."""
    model = softmax16_model(shape, s_in, beta)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("softmax16")) == want


def test_softmax_16x8_tables_over_every_difference(tmp_path) -> None:
    """Rows of two: 0 and every int16 value d, so the exp table is read at every difference
    a scale maps onto it, and the reciprocal at every sum 1 + exp(d): TFLite Micro's bytes
    for all 65,536 rows at two scales."""
    d = np.arange(-32768, 32768, dtype=np.int64)
    rows = np.stack([np.zeros_like(d), d], axis=1).reshape(-1).astype(np.int16)
    for s_in in (10 / 65535, 0.00013):
        model = softmax16_model((d.size, 2), s_in, 1.0)
        sequence = [[rows]]
        want = tflm_stream(model, sequence)
        (tmp_path / str(s_in)).mkdir()
        assert rip_stream(model, sequence, tmp_path / str(s_in)) == want, s_in


def reduce16_model(kind: str, shape, axes, keep_dims: bool, s_in: float, s_out: float) -> bytes:
    """One int16 MEAN or SUM over ``axes``, zero points 0."""
    mb = ModelBuilder()
    x = mb.activation(shape, float(F32(s_in)), 0, "x", dtype="int16")
    kept = [1 if a in axes else d for a, d in enumerate(shape)] if keep_dims else [
        d for a, d in enumerate(shape) if a not in axes]  # fmt: skip
    y = mb.activation(tuple(kept), float(F32(s_out)), 0, "y", dtype="int16")
    mb.reduce(kind, x, axes, y, keep_dims=keep_dims)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["MEAN", "SUM"]),
    shape=st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple),
    data=st.data(),
    keep_dims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_reductions_16x8_byte_equal_to_tflite_micro(tmp_path_factory, kind, shape, data,
                                                    keep_dims, seed) -> None:  # fmt: skip
    """MEAN and SUM 16x8 over any axes (the spatial MEAN of a 4-D tensor, Keras'
    GlobalAveragePooling2D, among them): three random int16 inputs, TFLite Micro's bytes."""
    axes = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    s_in = float(F32(math.exp(data.draw(st.floats(-9.0, -4.0)))))
    s_out = float(F32(s_in * data.draw(st.floats(0.3, 3.0)) * (len(axes) if kind == "SUM" else 1)))
    model = reduce16_model(kind, shape, axes, keep_dims, s_in, s_out)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("reduce16")) == want


def pad16_model(rng: np.random.Generator, pads, value: int | None) -> bytes:
    """int16 PAD (``value`` None) or PADV2 of [1, 5, 4, 3] by ``pads`` into a strided 3x3
    16x8 CONV_2D (Keras' ZeroPadding2D before a VALID strided convolution), and the padded
    tensor an output too."""
    mb = ModelBuilder()
    x = mb.activation((1, 5, 4, 3), 0.001, 0, "x", dtype="int16")
    shape = tuple(d + lo + hi for d, (lo, hi) in zip((1, 5, 4, 3), pads, strict=True))
    padded = mb.activation(shape, 0.001, 0, "padded", dtype="int16")
    if value is None:
        mb.operator("PAD", (x, mb._ints(pads)), (padded,))
    else:
        v = mb.constant_int16(np.asarray([value], np.int16), 0.001)
        mb.operator("PADV2", (x, mb._ints(pads), v), (padded,))
    s_w = [float(F32(0.02))] * 4
    wt = mb.constant_int8(rng.integers(-127, 128, (4, 3, 3, shape[3]), dtype=np.int8), s_w, 0)
    b = mb.constant_int64(rng.integers(-1000, 1000, 4), [float(F32(0.001) * F32(0.02))] * 4)
    ho, wo = (shape[1] - 3) // 2 + 1, (shape[2] - 3) // 2 + 1
    y = mb.activation((1, ho, wo, 4), 0.002, 0, "y", dtype="int16")
    mb.conv2d(padded, wt, b, y, stride=2, padding="VALID")
    mb.inputs([x])
    mb.outputs([y, padded])
    return mb.to_bytes()


@pytest.mark.parametrize(
    ("pads", "value"),
    [
        (((0, 0), (1, 1), (1, 1), (0, 0)), None),
        (((0, 0), (0, 1), (2, 0), (1, 2)), None),
        (((0, 0), (1, 0), (0, 1), (0, 0)), -1),
    ],
)
def test_pad_16x8_byte_equal_to_tflite_micro(tmp_path, pads, value) -> None:
    """PAD (spatial and channel amounts) and PADV2 (value -1) of int16 values, read by a 16x8
    convolution: TFLite Micro's bytes for both outputs."""
    model = pad16_model(np.random.default_rng(4), pads, value)
    graph = read_model(model, name="m")
    sequence = stream_inputs(graph, 2, 5)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)


RESIZES = [((8, 6), False, False), ((5, 7), False, True), ((6, 9), True, False),
           ((2, 3), False, False)]  # fmt: skip


@pytest.mark.parametrize(("size", "align", "half"), RESIZES)
def test_resize_nearest_16x8_byte_equal_to_tflite_micro(tmp_path, size, align, half) -> None:
    """RESIZE_NEAREST_NEIGHBOR of int16 values (up and down, the corner modes): the byte
    kernel moving each pixel's value pairs, TFLite Micro's bytes."""
    mb = ModelBuilder()
    x = mb.activation((1, 4, 3, 5), 0.001, 0, "x", dtype="int16")
    y = mb.activation((1, *size, 5), 0.001, 0, "y", dtype="int16")
    mb.resize_nearest_neighbor(x, y, align_corners=align, half_pixel_centers=half)
    mb.inputs([x])
    mb.outputs([y])
    model = mb.to_bytes()
    sequence = stream_inputs(read_model(model, name="m"), 2, 1)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)


@settings(max_examples=12, deadline=None)
@given(
    kind=st.sampled_from(["RELU", "RELU6"]),
    s_in=st.floats(-12.0, -3.0).map(lambda e: float(F32(math.exp(e)))),
    ratio=st.floats(0.3, 3.0),
    seed=st.integers(0, 2**16),
)
def test_relu_16x8_byte_equal_to_tflite_micro(tmp_path_factory, kind, s_in, ratio, seed) -> None:
    """A standalone RELU (requantized onto another scale) or RELU6 of int16 values: three
    random inputs, TFLite Micro's bytes."""
    mb = ModelBuilder()
    x = mb.activation((2, 7), s_in, 0, "x", dtype="int16")
    s_out = s_in if kind == "RELU6" else float(F32(s_in * ratio))
    y = mb.activation((2, 7), s_out, 0, "y", dtype="int16")
    mb.operator(kind, (x,), (y,))
    mb.inputs([x])
    mb.outputs([y])
    model = mb.to_bytes()
    sequence = stream_inputs(read_model(model, name="m"), 3, seed)
    want = tflm_stream(model, sequence)
    assert rip_stream(model, sequence, tmp_path_factory.mktemp("relu16")) == want


def test_deep_sums_16x8_byte_equal_to_tflite_micro(tmp_path) -> None:
    """Sums longer than the fast kernels' int32 runs of 511 products: a 3x3 convolution over
    64 channels (576 taps), a 1x1 one after it, a 600-deep FULLY_CONNECTED; TFLite Micro's
    bytes."""
    rng = np.random.default_rng(11)
    convs = [("conv", 3, 1, 1, "SAME", 9, "int64", "NONE"),
             ("conv", 1, 1, 1, "SAME", 6, "int32", "RELU")]  # fmt: skip
    for k, model in enumerate(
        (
            conv16_model((5, 4), 64, convs, rng),
            dense16_model([(7, "int64", "NONE", True)], 600, 2, 0.001, rng),
        )
    ):
        sequence = stream_inputs(read_model(model, name="m"), 2, k)
        (tmp_path / str(k)).mkdir()
        assert rip_stream(model, sequence, tmp_path / str(k)) == tflm_stream(model, sequence)


def test_a_strided_slice_of_a_unit_led_int16_tensor(tmp_path) -> None:
    """Every other int16 value of a [1, 1, 1, 3] tensor (the byte view needs a fifth axis,
    the leading unit axis moves nothing): TFLite Micro's bytes."""
    mb = ModelBuilder()
    x = mb.activation((1, 1, 1, 3), 0.001, 0, "x", dtype="int16")
    y = mb.activation((1, 1, 1, 2), 0.001, 0, "y", dtype="int16")
    mb.strided_slice(x, [0, 0, 0, 0], [1, 1, 1, 3], [1, 1, 1, 2], y)
    mb.inputs([x])
    mb.outputs([y])
    model = mb.to_bytes()
    sequence = stream_inputs(read_model(model, name="m"), 2, 0)
    assert rip_stream(model, sequence, tmp_path) == tflm_stream(model, sequence)
