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

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_batch_matmul import assert_matches_on_qemu_m33
from test_svdf import rip_stream, stream_inputs, tflm_stream
from tflite_writer import ModelBuilder

from rip.frontend.reader import read_model

pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")
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
