"""Calibrated model generators, the other half of the test suite's writer: the
``random_*_model`` generators build single-layer models whose weights are random but whose
activation quantization is calibrated on random inputs, as post-training quantization would
do, so outputs spread over the int8 range instead of saturating; ``example_model`` is the
bundled example (examples/regenerate.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from rip.core.shapes import same_padding
from tflite_writer.builder import (
    SOFTMAX_OUTPUT_SCALE,
    SOFTMAX_OUTPUT_ZERO_POINT,
    Activation,
    ModelBuilder,
    Padding,
    PaddingSpec,
    Pair,
    Quantization,
    _f32,
    _pair,
    conv_output_size,
)


def _apply_activation(values: np.ndarray, activation: Activation) -> np.ndarray:
    if activation == "RELU":
        return np.maximum(values, 0.0)
    if activation == "RELU6":
        return np.clip(values, 0.0, 6.0)
    return values


def _quant_from_range(lo: float, hi: float) -> tuple[float, int]:
    """Asymmetric int8 parameters covering [lo, hi] and always 0, as the converter picks."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-3
    scale = _f32((hi - lo) / 255.0)
    zero_point = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zero_point


def _fake_quant(values: np.ndarray, quant: Quantization) -> np.ndarray:
    scale, zero_point = quant.scales[0], quant.zero_points[0]
    q = np.clip(np.round(values / scale) + zero_point, -128, 127)
    return (q - zero_point) * scale


def _window_slices(
    padded: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out_hw: tuple[int, int],
) -> list[tuple[int, int, np.ndarray]]:
    """Every kernel tap (i, j) with the strided input plane it multiplies."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_hw
    return [
        (
            i,
            j,
            padded[
                :,
                i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                :,
            ],
        )
        for i in range(kh)
        for j in range(kw)
    ]


def _explicit_pads(
    hw: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: Padding,
) -> tuple[int, int, int, int]:
    if padding == "VALID":
        return 0, 0, 0, 0
    top, bottom = same_padding(hw[0], kernel[0], stride[0], dilation[0])
    left, right = same_padding(hw[1], kernel[1], stride[1], dilation[1])
    return top, bottom, left, right


class _Calibrated:
    """Builds a model layer by layer, tracking float values of a random calibration batch.

    Each layer's float output (computed from the previous layer's fake-quantized values and
    the dequantized weights) sets its output range, exactly as post-training quantization
    would; the stored values are then fake-quantized so the next layer sees int8 inputs.
    """

    def __init__(self, seed: int, batch: int = 8) -> None:
        self.rng = np.random.default_rng(seed)
        self.batch = batch
        self.mb = ModelBuilder()
        self.values: dict[int, np.ndarray] = {}
        self._count = 0

    def _name(self, kind: str) -> str:
        self._count += 1
        return f"{kind}_{self._count}"

    def _output(
        self,
        values: np.ndarray,
        activation: Activation,
        kind: str,
        quant: Quantization | None = None,
        leading: int = 1,
    ) -> int:
        """An output tensor for calibrated ``values`` (rows are calibration samples); its
        shape is the model's: ``leading`` (the model's batch) then the value shape."""
        values = _apply_activation(values, activation)
        if quant is None:
            scale, zero_point = _quant_from_range(float(values.min()), float(values.max()))
        else:
            scale, zero_point = quant.scales[0], quant.zero_points[0]
        out = self.mb.activation((leading, *values.shape[1:]), scale, zero_point, self._name(kind))
        self.values[out] = _fake_quant(values, self.mb.quantization(out))
        return out

    def input(self, shape: Sequence[int]) -> int:
        """A model input with random quantization around [-1, 1] and random int8 contents."""
        scale = _f32(2.0 / 255.0 * self.rng.uniform(0.5, 2.0))
        zero_point = int(self.rng.integers(-32, 33))
        x = self.mb.activation(tuple(shape), scale, zero_point, self._name("input"))
        q = self.rng.integers(-128, 128, size=(self.batch, *tuple(shape)[1:]))
        self.values[x] = (q - zero_point) * scale
        return x

    def _weights(
        self, shape: tuple[int, ...], axis: int, fan_in: int, per_channel: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric int8 weights (He-scaled, random per-channel gains) and their scales."""
        w = self.rng.normal(0.0, math.sqrt(2.0 / fan_in), size=shape)
        gain_shape = [1] * len(shape)
        gain_shape[axis] = shape[axis]
        w *= self.rng.uniform(0.5, 2.0, size=shape[axis]).reshape(gain_shape)
        reduce_axes = tuple(a for a in range(len(shape)) if a != axis)
        amax = np.abs(w).max(axis=reduce_axes) if per_channel else np.array([np.abs(w).max()])
        scales = np.maximum(amax, 1e-8).astype(np.float32) / np.float32(127.0)
        scale_b = scales.reshape(gain_shape) if per_channel else scales
        q = np.clip(np.round(w / scale_b), -127, 127).astype(np.int8)
        return q, scales

    def _bias(
        self, x: int, pre_bias: np.ndarray, weight_scales: np.ndarray
    ) -> tuple[int, np.ndarray]:
        """A random int32 bias about a fifth of each channel's spread, and its real values."""
        channels = pre_bias.shape[-1]
        spread = pre_bias.reshape(-1, channels).std(axis=0) + 1e-6
        input_scale = np.float32(self.mb.quantization(x).scales[0])
        bias_scales = input_scale * np.broadcast_to(weight_scales, (channels,)).astype(np.float32)
        real = self.rng.normal(0.0, 0.2, size=channels) * spread
        q = np.round(real / bias_scales).astype(np.int64)
        tensor = self.mb.bias(q, float(input_scale), weight_scales.tolist(), self._name("bias"))
        return tensor, q * bias_scales.astype(np.float64)

    def pad(self, x: int, pads: tuple[int, int, int, int]) -> int:
        """Explicit spatial PAD with the input's quantization (real zero at the zero point)."""
        top, bottom, left, right = pads
        values = np.pad(self.values[x], ((0, 0), (top, bottom), (left, right), (0, 0)))
        quant = self.mb.quantization(x)
        out = self.mb.activation(
            (1, *values.shape[1:]), quant.scales[0], quant.zero_points[0], self._name("pad")
        )
        self.values[out] = values
        return self.mb.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), out)

    def conv(
        self,
        x: int,
        c_out: int,
        kernel: Pair,
        stride: Pair = 1,
        dilation: Pair = 1,
        padding: PaddingSpec = "SAME",
        activation: Activation = "NONE",
        per_channel: bool = True,
        groups: int = 1,
    ) -> int:
        """CONV_2D, or PAD then a VALID CONV_2D for explicit (top, bottom, left, right);
        ``groups`` > 1 a grouped one (filter [C_out, KH, KW, C_in / groups])."""
        if not isinstance(padding, str):
            x, padding = self.pad(x, padding), "VALID"
        kh, kw = _pair(kernel)
        c_in = self.mb.shape(x)[3] // groups
        q, scales = self._weights((c_out, kh, kw, c_in), 0, kh * kw * c_in, per_channel)
        w_real = q * scales.reshape(-1, 1, 1, 1) if per_channel else q * scales[0]
        stride_hw, dilation_hw = _pair(stride), _pair(dilation)
        top, bottom, left, right = _explicit_pads(
            self.mb.shape(x)[1:3], (kh, kw), stride_hw, dilation_hw, padding
        )
        padded = np.pad(self.values[x], ((0, 0), (top, bottom), (left, right), (0, 0)))
        out_hw = tuple(
            conv_output_size(n, k, s, d, padding)
            for n, k, s, d in zip(
                self.mb.shape(x)[1:3], (kh, kw), stride_hw, dilation_hw, strict=True
            )
        )
        acc = np.zeros((self.batch, *out_hw, c_out))
        per_group = c_out // groups
        for i, j, plane in _window_slices(padded, (kh, kw), stride_hw, dilation_hw, out_hw):
            for g in range(groups):
                outs, ins = (
                    slice(g * per_group, (g + 1) * per_group),
                    slice(g * c_in, (g + 1) * c_in),
                )
                acc[..., outs] += plane[..., ins] @ w_real[outs, i, j, :].T
        bias, bias_real = self._bias(x, acc, scales)
        weights = self.mb.constant_int8(q, scales.tolist(), 0, 0, self._name("conv_weights"))
        out = self._output(acc + bias_real, activation, "conv")
        return self.mb.conv2d(
            x,
            weights,
            bias,
            out,
            stride=stride_hw,
            dilation=dilation_hw,
            padding=padding,
            activation=activation,
        )

    def depthwise(
        self,
        x: int,
        kernel: Pair,
        stride: Pair = 1,
        dilation: Pair = 1,
        padding: PaddingSpec = "SAME",
        activation: Activation = "NONE",
        depth_multiplier: int = 1,
        per_channel: bool = True,
    ) -> int:
        """DEPTHWISE_CONV_2D (explicit padding through PAD, as for ``conv``)."""
        if not isinstance(padding, str):
            x, padding = self.pad(x, padding), "VALID"
        kh, kw = _pair(kernel)
        c_out = self.mb.shape(x)[3] * depth_multiplier
        q, scales = self._weights((1, kh, kw, c_out), 3, kh * kw, per_channel)
        w_real = q * scales if per_channel else q * scales[0]
        stride_hw, dilation_hw = _pair(stride), _pair(dilation)
        top, bottom, left, right = _explicit_pads(
            self.mb.shape(x)[1:3], (kh, kw), stride_hw, dilation_hw, padding
        )
        # Output channel c * M + m reads input channel c.
        padded = np.repeat(
            np.pad(self.values[x], ((0, 0), (top, bottom), (left, right), (0, 0))),
            depth_multiplier,
            axis=3,
        )
        out_hw = tuple(
            conv_output_size(n, k, s, d, padding)
            for n, k, s, d in zip(
                self.mb.shape(x)[1:3], (kh, kw), stride_hw, dilation_hw, strict=True
            )
        )
        acc = np.zeros((self.batch, *out_hw, c_out))
        for i, j, plane in _window_slices(padded, (kh, kw), stride_hw, dilation_hw, out_hw):
            acc += plane * w_real[0, i, j, :]
        bias, bias_real = self._bias(x, acc, scales)
        weights = self.mb.constant_int8(q, scales.tolist(), 0, 3, self._name("depthwise_weights"))
        out = self._output(acc + bias_real, activation, "depthwise")
        return self.mb.depthwise_conv2d(
            x,
            weights,
            bias,
            out,
            depth_multiplier=depth_multiplier,
            stride=stride_hw,
            dilation=dilation_hw,
            padding=padding,
            activation=activation,
        )

    def fully_connected(
        self,
        x: int,
        units: int,
        activation: Activation = "NONE",
        logit_std: float | None = None,
        per_channel: bool = False,
    ) -> int:
        """FULLY_CONNECTED, per-tensor weights (or one scale per output unit, which TFLite
        Micro also runs); ``logit_std`` rescales them to that spread."""
        features = self.values[x].reshape(self.batch, -1)
        w = self.rng.normal(
            0.0, math.sqrt(2.0 / features.shape[1]), size=(units, features.shape[1])
        )
        if logit_std is not None:
            w *= logit_std / max(float((features @ w.T).std()), 1e-6)
        if per_channel:
            w *= self.rng.uniform(0.2, 3.0, size=(units, 1))
            scale = (np.maximum(np.abs(w).max(axis=1), 1e-8) / 127.0).astype(np.float32)
        else:
            scale = np.array([max(np.abs(w).max(), 1e-8) / 127.0], dtype=np.float32)
        q = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8)
        acc = features @ (q * scale[:, None]).T
        bias, bias_real = self._bias(x, acc, scale)
        weights = self.mb.constant_int8(q, scale.tolist(), 0, 0, self._name("fc_weights"))
        out = self._output(
            acc + bias_real, activation, "fully_connected", leading=self.mb.shape(x)[0]
        )
        return self.mb.fully_connected(x, weights, bias, out, activation=activation)

    def add(self, a: int, b: int, activation: Activation = "NONE") -> int:
        """ADD of two int8 tensors of one shape."""
        out = self._output(self.values[a] + self.values[b], activation, "add")
        return self.mb.add(a, b, out, activation=activation)

    def pool(
        self, x: int, kind: Literal["avg", "max"], size: Pair, stride: Pair, padding: Padding
    ) -> int:
        """AVERAGE_POOL_2D or MAX_POOL_2D, output quantized like the input."""
        size_hw, stride_hw = _pair(size), _pair(stride)
        top, bottom, left, right = _explicit_pads(
            self.mb.shape(x)[1:3], size_hw, stride_hw, (1, 1), padding
        )
        # NaN marks padding: SAME pooling averages or maxes only the real pixels.
        padded = np.pad(
            self.values[x], ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=np.nan
        )
        out_hw = tuple(
            conv_output_size(n, k, s, 1, padding)
            for n, k, s in zip(self.mb.shape(x)[1:3], size_hw, stride_hw, strict=True)
        )
        planes = np.stack(
            [p for _, _, p in _window_slices(padded, size_hw, stride_hw, (1, 1), out_hw)]
        )
        values = np.nanmean(planes, axis=0) if kind == "avg" else np.nanmax(planes, axis=0)
        out = self._output(values, "NONE", f"{kind}_pool", self.mb.quantization(x))
        method = self.mb.average_pool2d if kind == "avg" else self.mb.max_pool2d
        return method(x, out, filter_size=size_hw, stride=stride_hw, padding=padding)

    def mean(self, x: int, axes: Sequence[int]) -> int:
        """MEAN over ``axes`` keeping dimensions, requantized to its own range."""
        values = self.values[x].mean(axis=tuple(axes), keepdims=True)
        out = self._output(values, "NONE", "mean")
        return self.mb.mean(x, axes, out, keep_dims=True)

    def reshape(self, x: int, shape: Sequence[int]) -> int:
        """RESHAPE keeping the quantization."""
        quant = self.mb.quantization(x)
        values = self.values[x].reshape(self.batch, *tuple(shape)[1:])
        out = self._output(values, "NONE", "reshape", quant)
        return self.mb.reshape(x, out)

    def softmax(self, x: int) -> int:
        """SOFTMAX with the fixed int8 output quantization."""
        logits = self.values[x] - self.values[x].max(axis=-1, keepdims=True)
        probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        quant = Quantization((_f32(SOFTMAX_OUTPUT_SCALE),), (SOFTMAX_OUTPUT_ZERO_POINT,), 0)
        out = self._output(probs, "NONE", "softmax", quant)
        return self.mb.softmax(x, out)

    def upsample(self, x: int, factor: Pair) -> int:
        """RESIZE_NEAREST_NEIGHBOR by an integer factor, quantized like the input."""
        fh, fw = _pair(factor)
        values = np.repeat(np.repeat(self.values[x], fh, axis=1), fw, axis=2)
        out = self._output(values, "NONE", "upsample", self.mb.quantization(x))
        return self.mb.resize_nearest_neighbor(x, out)

    def finish(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        """Set the interface and serialise."""
        self.mb.inputs(inputs)
        self.mb.outputs(outputs)
        return self.mb.to_bytes()


def random_conv_model(
    seed: int,
    h: int = 8,
    w: int = 8,
    c_in: int = 4,
    c_out: int = 8,
    kernel: Pair = 3,
    stride: Pair = 1,
    dilation: Pair = 1,
    padding: PaddingSpec = "SAME",
    activation: Activation = "NONE",
    per_channel: bool = True,
    groups: int = 1,
) -> bytes:
    """A single CONV_2D model (grouped when ``groups`` > 1); explicit (top, bottom, left,
    right) padding becomes PAD + VALID."""
    net = _Calibrated(seed)
    x = net.input((1, h, w, c_in))
    y = net.conv(x, c_out, kernel, stride, dilation, padding, activation, per_channel, groups)
    return net.finish([x], [y])


def random_depthwise_model(
    seed: int,
    h: int = 8,
    w: int = 8,
    channels: int = 8,
    kernel: Pair = 3,
    stride: Pair = 1,
    dilation: Pair = 1,
    padding: PaddingSpec = "SAME",
    activation: Activation = "NONE",
    depth_multiplier: int = 1,
    per_channel: bool = True,
) -> bytes:
    """A single DEPTHWISE_CONV_2D model (explicit padding through PAD + VALID)."""
    net = _Calibrated(seed)
    x = net.input((1, h, w, channels))
    y = net.depthwise(
        x, kernel, stride, dilation, padding, activation, depth_multiplier, per_channel
    )
    return net.finish([x], [y])


def random_fully_connected_model(
    seed: int,
    features: int = 16,
    units: int = 8,
    activation: Activation = "NONE",
    per_channel: bool = False,
    batch: int = 1,
) -> bytes:
    """A single FULLY_CONNECTED model on a ``[batch, features]`` input."""
    net = _Calibrated(seed)
    x = net.input((batch, features))
    y = net.fully_connected(x, units, activation, per_channel=per_channel)
    return net.finish([x], [y])


def random_pool_model(
    seed: int,
    h: int = 8,
    w: int = 8,
    channels: int = 4,
    kind: Literal["avg", "max"] = "avg",
    size: Pair = 2,
    stride: Pair = 2,
    padding: Padding = "VALID",
) -> bytes:
    """A single AVERAGE_POOL_2D or MAX_POOL_2D model."""
    net = _Calibrated(seed)
    x = net.input((1, h, w, channels))
    y = net.pool(x, kind, size, stride, padding)
    return net.finish([x], [y])


def random_add_model(
    seed: int, h: int = 8, w: int = 8, channels: int = 4, activation: Activation = "NONE"
) -> bytes:
    """A single ADD of two model inputs with different quantization."""
    net = _Calibrated(seed)
    a = net.input((1, h, w, channels))
    b = net.input((1, h, w, channels))
    y = net.add(a, b, activation)
    return net.finish([a, b], [y])


def random_upsample_model(
    seed: int, h: int = 4, w: int = 4, channels: int = 4, factor: Pair = 2
) -> bytes:
    """A single RESIZE_NEAREST_NEIGHBOR model that scales H and W by ``factor``."""
    net = _Calibrated(seed)
    x = net.input((1, h, w, channels))
    y = net.upsample(x, factor)
    return net.finish([x], [y])


def example_model(seed: int = 0) -> bytes:
    """A small MobileNetV2-like int8 CNN on a 32x32x3 input, ten-way softmax output.

    conv 3x3/2 → depthwise 3x3 → 1x1 expand → depthwise 3x3 → 1x1 project → ADD residual →
    average pool 2x2 → MEAN → RESHAPE → FULLY_CONNECTED → SOFTMAX, with RELU6 after every
    layer but the projection. Weights are random; quantization is calibrated.
    """
    net = _Calibrated(seed)
    x = net.input((1, 32, 32, 3))
    stem = net.conv(x, 16, 3, stride=2, activation="RELU6")
    block_in = net.depthwise(stem, 3, activation="RELU6")
    expand = net.conv(block_in, 48, 1, activation="RELU6")
    depthwise = net.depthwise(expand, 3, activation="RELU6")
    project = net.conv(depthwise, 16, 1)
    residual = net.add(block_in, project)
    pooled = net.pool(residual, "avg", 2, 2, "VALID")
    mean = net.mean(pooled, (1, 2))
    flat = net.reshape(mean, (1, 16))
    logits = net.fully_connected(flat, 10, logit_std=2.0)
    probs = net.softmax(logits)
    return net.finish([x], [probs])


def movement_sample_model(seed: int = 0) -> bytes:
    """One model through issue 14's operators, for whole-compiler and QEMU runs: a conv whose
    output is split by rows into two views; bilinear resizing, concatenation along W,
    DEPTH_TO_SPACE, L2_NORMALIZATION, a strided slice and a gather on one branch; MIRROR_PAD
    and a transposed convolution on the other. Two outputs."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.activation((1, 8, 8, 3), 0.05, -3)
    w = mb.constant_int8(rng.integers(-127, 128, size=(8, 3, 3, 3)).astype(np.int8), 0.02)
    t = mb.activation((1, 8, 8, 8), 0.25, 3)
    mb.conv2d(x, w, mb.bias(rng.integers(-300, 300, size=8), 0.05, 0.02), t)
    top, bottom = mb.activation((1, 3, 8, 8), 0.25, 3), mb.activation((1, 5, 8, 8), 0.25, 3)
    mb.split_v(t, [3, 5], 1, [top, bottom])
    grown = mb.activation((1, 5, 8, 8), 0.25, 3)
    mb.resize_bilinear(top, grown, half_pixel_centers=True)
    wide = mb.activation((1, 5, 16, 8), 0.25, 3)
    mb.concatenation([grown, bottom], wide, axis=2)
    deep = mb.activation((1, 10, 32, 2), 0.25, 3)
    mb.depth_to_space(wide, 2, deep)
    unit = mb.activation((1, 10, 32, 2), 1 / 128, 0)
    mb.operator("L2_NORMALIZATION", [deep], [unit], "L2NormOptions")
    every_other = mb.activation((1, 10, 16, 2), 1 / 128, 0)
    mb.strided_slice(unit, [0, 0, 1, 0], [1, 10, 32, 2], [1, 1, 2, 1], every_other)
    picked = mb.activation((1, 3, 16, 2), 1 / 128, 0)
    mb.gather(every_other, np.array([9, 0, 3], np.int32), 1, picked)
    padded = mb.activation((1, 7, 10, 8), 0.25, 3)
    mb.mirror_pad(bottom, [(0, 0), (1, 1), (1, 1), (0, 0)], False, padded)
    wt = mb.constant_int8(rng.integers(-127, 128, size=(4, 3, 3, 8)).astype(np.int8), 0.01)
    up = mb.activation((1, 14, 20, 4), 0.2, -5)
    mb.transpose_conv(
        padded, wt, mb.bias(rng.integers(-300, 300, size=4), 0.25, 0.01), up, stride=2
    )
    mb.inputs([x])
    mb.outputs([picked, up])
    return mb.to_bytes()


def unet_model(seed: int = 0, size: int = 16) -> bytes:
    """A tiny U-Net: two 3x3 convolutions down (the second of stride 2), one at the bottom,
    nearest-neighbour upsampling, a 1x1 convolution, the skip connection as an ADD with the
    first layer's output (alive across the whole bottom), and a 3x3 head."""
    net = _Calibrated(seed)
    x = net.input((1, size, size, 3))
    e1 = net.conv(x, 8, 3, activation="RELU")
    e2 = net.conv(e1, 16, 3, stride=2, activation="RELU")
    mid = net.conv(e2, 16, 3, activation="RELU")
    up = net.upsample(mid, 2)
    d = net.conv(up, 8, 1, activation="RELU")
    skip = net.add(d, e1)
    y = net.conv(skip, 4, 3)
    return net.finish([x], [y])


def unrolled_gru_model(
    seed: int = 0,
    steps: int = 8,
    features: int = 16,
    hidden: int = 16,
    sequences: bool = True,
    wide: bool = False,
) -> bytes:
    """A GRU layer unrolled over ``steps`` as a converter unrolls it: the input sequence
    (1, T, F) UNPACKed into one piece a step; per step two FULLY_CONNECTED gate projections
    (of x_t and of h), each SPLIT into the z, r, n parts, z = LOGISTIC(xz + hz), r =
    LOGISTIC(xr + hr), n = TANH(xn + r * hn), h' = n + z * (h - n); with ``sequences`` every
    h_t PACKed into the (1, T, H) output (return_sequences), else h_T. The quantization is
    fixed rather than calibrated: the model serves memory plans and byte equality, not
    accuracy. ``wide``: the converter's 16x8 mode (int16 activations with zero point 0 and
    256 times finer scales, int64 biases, LOGISTIC and TANH onto 2^-15)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    h_dim, f_dim = hidden, features

    def act(shape: Sequence[int], scale: float, zero: int, name: str) -> int:
        if wide:  # 16x8: symmetric, the same real range in 256 times more steps
            probability = scale in (1 / 256, 1 / 128)
            scale, zero = (2.0**-15 if probability else scale / 256), 0
            return mb.activation(shape, scale, zero, name, dtype="int16")
        return mb.activation(shape, scale, zero, name)

    x = act((1, steps, f_dim), 0.05, -3, "x")
    h = act((1, h_dim), 0.02, 0, "h0")
    inputs = [x, h]

    def fc(v: int, n: int, name: str) -> int:
        k = mb.shape(v)[-1]
        w = mb.constant_int8(rng.integers(-127, 128, (n, k), dtype=np.int8), 0.01)
        s_v = mb.quantization(v).scales[0]
        if wide:
            b = mb.constant_int64(
                rng.integers(-(1 << 16), 1 << 16, n), float(np.float32(s_v) * np.float32(0.01))
            )
        else:
            b = mb.bias(rng.integers(-500, 500, n), s_v, 0.01)
        out = act((1, n), 0.1, 1, name)
        mb.fully_connected(v, w, b, out)
        return out

    flat = act((steps, f_dim), 0.05, -3, "x_steps")
    mb.reshape(x, flat)
    xs = [act((1, f_dim), 0.05, -3, f"x{t}") for t in range(steps)]
    mb.unpack(flat, 0, xs)
    hs = []
    for t in range(steps):
        gates = []
        for g, part in ((fc(xs[t], 3 * h_dim, f"gx{t}"), "x"), (fc(h, 3 * h_dim, f"gh{t}"), "h")):
            outs = [act((1, h_dim), 0.1, 1, f"{part}{p}{t}") for p in "zrn"]
            mb.split(g, 1, outs)
            gates.append(outs)
        (xz, xr, xn), (hz, hr, hn) = gates
        sz, sr = act((1, h_dim), 0.15, 0, f"sz{t}"), act((1, h_dim), 0.15, 0, f"sr{t}")
        mb.add(xz, hz, sz)
        mb.add(xr, hr, sr)
        z, r = act((1, h_dim), 1 / 256, -128, f"z{t}"), act((1, h_dim), 1 / 256, -128, f"r{t}")
        mb.operator("LOGISTIC", (sz,), (z,))
        mb.operator("LOGISTIC", (sr,), (r,))
        rh, sn = act((1, h_dim), 0.05, 0, f"rh{t}"), act((1, h_dim), 0.12, 0, f"sn{t}")
        mb.mul(r, hn, rh)
        mb.add(xn, rh, sn)
        n = act((1, h_dim), 1 / 128, 0, f"n{t}")
        mb.unary("TANH", sn, n)
        d, zd = act((1, h_dim), 0.02, 0, f"d{t}"), act((1, h_dim), 0.02, 0, f"zd{t}")
        mb.operator("SUB", (h, n), (d,), "SubOptions", (("FusedActivationFunction", 0),))
        mb.mul(z, d, zd)
        h = act((1, h_dim), 0.02, 0, f"h{t + 1}")
        mb.add(zd, n, h)
        hs.append(h)
    y = h
    if sequences:
        y = act((1, steps, h_dim), 0.02, 0, "y")
        mb.pack(hs, 1, y)
    mb.inputs(inputs)
    mb.outputs([y])
    return mb.to_bytes()


def unrolled_lstm_model(
    seed: int = 0, steps: int = 6, features: int = 8, hidden: int = 8, wide: bool = False
) -> bytes:
    """An LSTM layer unrolled over ``steps`` as a converter unrolls Keras' LSTM(unroll=True):
    the input (1, T, F) UNPACKed a step at a time; per step FULLY_CONNECTED projections of
    x_t and of h added and SPLIT into the i, f, g, o gates, i, f, o = LOGISTIC, g = TANH,
    c' = f * c + i * g, h' = o * TANH(c'); the last h the output, the first h and c inputs.
    ``wide``: the 16x8 mode (int16 activations with zero point 0, int64 biases, LOGISTIC and
    TANH onto 2^-15), else int8. Fixed quantization, for byte equality and plans."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()

    def act(shape: Sequence[int], scale: float, zero: int, name: str) -> int:
        if wide:
            probability = scale in (1 / 256, 1 / 128)
            scale, zero = (2.0**-15 if probability else scale / 256), 0
            return mb.activation(shape, scale, zero, name, dtype="int16")
        return mb.activation(shape, scale, zero, name)

    def fc(v: int, n: int, name: str) -> int:
        k = mb.shape(v)[-1]
        w = mb.constant_int8(rng.integers(-127, 128, (n, k), dtype=np.int8), 0.01)
        s_v = float(np.float32(mb.quantization(v).scales[0]))
        if wide:
            b = mb.constant_int64(rng.integers(-(1 << 16), 1 << 16, n), s_v * 0.01)
        else:
            b = mb.bias(rng.integers(-500, 500, n), s_v, 0.01)
        out = act((1, n), 0.1, 0, name)
        mb.fully_connected(v, w, b, out)
        return out

    x = act((1, steps, features), 0.05, 0, "x")
    h, c = act((1, hidden), 1 / 128, 0, "h0"), act((1, hidden), 0.05, 0, "c0")
    inputs = [x, h, c]
    flat = act((steps, features), 0.05, 0, "x_steps")
    mb.reshape(x, flat)
    xs = [act((1, features), 0.05, 0, f"x{t}") for t in range(steps)]
    mb.unpack(flat, 0, xs)
    for t in range(steps):
        z = act((1, 4 * hidden), 0.12, 0, f"z{t}")
        mb.add(fc(xs[t], 4 * hidden, f"zx{t}"), fc(h, 4 * hidden, f"zh{t}"), z)
        parts = [act((1, hidden), 0.12, 0, f"{g}{t}_in") for g in "ifgo"]
        mb.split(z, 1, parts)
        i, f, o = (act((1, hidden), 1 / 256, -128, f"{g}{t}") for g in "ifo")
        g = act((1, hidden), 1 / 128, 0, f"g{t}")
        for gate, src in ((i, parts[0]), (f, parts[1]), (o, parts[3])):
            mb.operator("LOGISTIC", (src,), (gate,))
        mb.unary("TANH", parts[2], g)
        fc_, ig = act((1, hidden), 0.05, 0, f"fc{t}"), act((1, hidden), 1 / 128, 0, f"ig{t}")
        mb.mul(f, c, fc_)
        mb.mul(i, g, ig)
        c = act((1, hidden), 0.05, 0, f"c{t + 1}")
        mb.add(fc_, ig, c)
        tc = act((1, hidden), 1 / 128, 0, f"tc{t}")
        mb.unary("TANH", c, tc)
        h = act((1, hidden), 1 / 128, 0, f"h{t + 1}")
        mb.mul(o, tc, h)
    mb.inputs(inputs)
    mb.outputs([h])
    return mb.to_bytes()
