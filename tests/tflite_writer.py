"""A small, deterministic writer of int8 TFLite flatbuffers, for tests and the example model.

`ModelBuilder` records tensors and builtin operators and serialises them with the generated
`tflite` builder functions into a schema-3 model with file identifier ``TFL3``. The
``random_*_model`` generators build single-layer models whose weights are random but whose
activation quantization is calibrated on random inputs, as post-training quantization would
do, so outputs spread over the int8 range instead of saturating.

Quantization conventions (those of the TFLite converter, which TFLite Micro assumes):

- activations: int8, one scale and zero point per tensor;
- CONV_2D weights: int8 ``[O, KH, KW, I]``, symmetric, per-channel on axis 0;
- DEPTHWISE_CONV_2D weights: int8 ``[1, KH, KW, C * M]``, symmetric, per-channel on axis 3;
- FULLY_CONNECTED weights: int8 ``[O, I]``, symmetric, per-tensor;
- bias: int32, ``scale = input_scale * weight_scale[c]``, zero point 0;
- SOFTMAX and LOGISTIC outputs: scale 1/256, zero point -128.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import flatbuffers
import numpy as np
import tflite

from rip.shapes import dilated, same_padding

Padding = Literal["SAME", "VALID"]
Activation = Literal["NONE", "RELU", "RELU6"]
DType = Literal["int8", "int32", "float32"]
Pair = int | tuple[int, int]
OptionValue = int | float | bool | tuple[int, ...]
# A generator's padding: a TFLite padding mode, or explicit (top, bottom, left, right).
PaddingSpec = Padding | tuple[int, int, int, int]

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

_PADDING = {"SAME": tflite.Padding.SAME, "VALID": tflite.Padding.VALID}
_ACTIVATION = {
    "NONE": tflite.ActivationFunctionType.NONE,
    "RELU": tflite.ActivationFunctionType.RELU,
    "RELU6": tflite.ActivationFunctionType.RELU6,
}
_TENSOR_TYPE = {
    "int8": tflite.TensorType.INT8,
    "int32": tflite.TensorType.INT32,
    "float32": tflite.TensorType.FLOAT32,
}
_NUMPY_DTYPE = {"int8": np.dtype("<i1"), "int32": np.dtype("<i4"), "float32": np.dtype("<f4")}

# Operator versions the TFLite converter assigns for int8 kernels; TFLite Micro ignores them,
# the full interpreter uses them to pick a kernel.
_OP_VERSION = {
    "ADD": 2,
    "AVERAGE_POOL_2D": 2,
    "CONCATENATION": 2,
    "CONV_2D": 3,
    "DEPTHWISE_CONV_2D": 3,
    "DEQUANTIZE": 2,
    "FULLY_CONNECTED": 4,
    "LOGISTIC": 2,
    "MAX_POOL_2D": 2,
    "MEAN": 2,
    "MUL": 2,
    "PAD": 2,
    "QUANTIZE": 1,
    "RESHAPE": 1,
    "RESIZE_NEAREST_NEIGHBOR": 2,
    "SOFTMAX": 2,
}

# Operator codes from 127 on live only in `builtin_code`; the int8 field holds this marker.
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127

SOFTMAX_OUTPUT_SCALE = 1.0 / 256.0
SOFTMAX_OUTPUT_ZERO_POINT = -128


@dataclass(frozen=True)
class Quantization:
    """Affine quantization of one tensor: ``real = scale[c] * (q - zero_point[c])``.

    Scales are kept as the float32 values the file holds, so a read-back compares equal.
    ``axis`` is the quantized dimension when there is more than one scale.
    """

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int = 0


@dataclass(frozen=True)
class TensorDef:
    """One tensor as written: ``data`` is the little-endian constant contents or None."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    quantization: Quantization | None
    data: bytes | None


@dataclass(frozen=True)
class OperatorDef:
    """One builtin operator as written.

    ``opcode`` is a `tflite.BuiltinOperator` name and ``options_type`` a
    `tflite.BuiltinOptions` name; ``options`` pairs each field's accessor name in the
    generated code (``"StrideW"``) with its value, in write order.
    """

    opcode: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_type: str | None
    options: tuple[tuple[str, OptionValue], ...]


def _pair(value: Pair) -> tuple[int, int]:
    """Expand an int to an (h, w) pair."""
    if isinstance(value, int):
        return value, value
    h, w = value
    return int(h), int(w)


def _f32(value: float) -> float:
    """Round to the float32 the file will hold."""
    return float(np.float32(value))


def conv_output_size(size: int, kernel: int, stride: int, dilation: int, padding: Padding) -> int:
    """Output extent of a convolution or pooling window along one axis."""
    if padding == "SAME":
        return -(-size // stride)
    k_eff = dilated(kernel, dilation)
    if size < k_eff:
        raise ValueError(f"VALID window of extent {k_eff} does not fit input extent {size}")
    return (size - k_eff) // stride + 1


class ModelBuilder:
    """Collects tensors and operators of one subgraph and writes them as a TFLite model.

    Tensors are created first (``activation``, ``constant_*``), then operators connect
    them by index; every operator method returns its output tensor index so calls chain.
    """

    def __init__(self, description: str = "rip tests/tflite_writer.py") -> None:
        self._description = description
        self._tensors: list[TensorDef] = []
        self._operators: list[OperatorDef] = []
        self._inputs: tuple[int, ...] = ()
        self._outputs: tuple[int, ...] = ()

    @property
    def tensors(self) -> tuple[TensorDef, ...]:
        """Tensors in index order."""
        return tuple(self._tensors)

    @property
    def operators(self) -> tuple[OperatorDef, ...]:
        """Operators in execution order."""
        return tuple(self._operators)

    def shape(self, tensor: int) -> tuple[int, ...]:
        """Shape of tensor ``tensor``."""
        return self._tensors[tensor].shape

    def quantization(self, tensor: int) -> Quantization | None:
        """Quantization of tensor ``tensor``."""
        return self._tensors[tensor].quantization

    # ---- tensors -------------------------------------------------------------------------

    def _add_tensor(
        self,
        shape: Sequence[int],
        dtype: DType,
        quantization: Quantization | None,
        data: bytes | None,
        name: str | None,
    ) -> int:
        index = len(self._tensors)
        self._tensors.append(
            TensorDef(
                name=name if name is not None else f"tensor_{index}",
                shape=tuple(int(d) for d in shape),
                dtype=dtype,
                quantization=quantization,
                data=data,
            )
        )
        return index

    @staticmethod
    def _quantization(
        shape: Sequence[int],
        scales: float | Sequence[float],
        zero_points: int | Sequence[int],
        axis: int,
    ) -> Quantization:
        scale_tuple = tuple(_f32(s) for s in np.atleast_1d(np.asarray(scales, dtype=np.float64)))
        zp_array = np.atleast_1d(np.asarray(zero_points, dtype=np.int64))
        if zp_array.size == 1 and len(scale_tuple) > 1:
            zp_array = np.repeat(zp_array, len(scale_tuple))
        if zp_array.size != len(scale_tuple):
            raise ValueError(f"{zp_array.size} zero points for {len(scale_tuple)} scales")
        if len(scale_tuple) > 1:
            if not 0 <= axis < len(shape):
                raise ValueError(f"quantized axis {axis} outside shape {tuple(shape)}")
            if shape[axis] != len(scale_tuple):
                raise ValueError(
                    f"{len(scale_tuple)} scales for axis {axis} of extent {shape[axis]}"
                )
        if any(not (s > 0 and math.isfinite(s)) for s in scale_tuple):
            raise ValueError(f"scales must be positive and finite, got {scale_tuple}")
        return Quantization(scale_tuple, tuple(int(z) for z in zp_array), int(axis))

    def activation(
        self,
        shape: Sequence[int],
        scale: float | None = None,
        zero_point: int = 0,
        name: str | None = None,
        *,
        dtype: Literal["int8", "float32"] = "int8",
    ) -> int:
        """A non-constant tensor: int8 with one scale and zero point, or unquantized float32."""
        if dtype == "int8":
            if scale is None:
                raise ValueError("an int8 activation needs a scale")
            if not -128 <= zero_point <= 127:
                raise ValueError(f"int8 zero point {zero_point} outside [-128, 127]")
            quant = self._quantization(shape, scale, zero_point, 0)
        else:
            if scale is not None:
                raise ValueError("a float32 activation takes no quantization")
            quant = None
        return self._add_tensor(shape, dtype, quant, None, name)

    def constant_int8(
        self,
        array: np.ndarray,
        scales: float | Sequence[float],
        zero_points: int | Sequence[int] = 0,
        axis: int = 0,
        name: str | None = None,
    ) -> int:
        """An int8 constant, per-tensor (one scale) or per-channel along ``axis``."""
        values = np.asarray(array)
        if values.dtype != np.int8:
            raise ValueError(f"constant_int8 needs an int8 array, got {values.dtype}")
        quant = self._quantization(values.shape, scales, zero_points, axis)
        data = np.ascontiguousarray(values, dtype=_NUMPY_DTYPE["int8"]).tobytes()
        return self._add_tensor(values.shape, "int8", quant, data, name)

    def constant_int32(
        self,
        array: np.ndarray | Sequence[int],
        scales: float | Sequence[float] | None = None,
        zero_points: int | Sequence[int] = 0,
        axis: int = 0,
        name: str | None = None,
    ) -> int:
        """An int32 constant: a quantized bias, or (without scales) a shape or axis list."""
        values = np.asarray(array)
        info = np.iinfo(np.int32)
        if values.dtype.kind not in "iu":
            raise ValueError(f"constant_int32 needs integers, got {values.dtype}")
        if values.size and (values.min() < info.min or values.max() > info.max):
            raise ValueError("constant_int32 needs integers that fit int32")
        quant = (
            None if scales is None else self._quantization(values.shape, scales, zero_points, axis)
        )
        data = np.ascontiguousarray(values, dtype=_NUMPY_DTYPE["int32"]).tobytes()
        return self._add_tensor(values.shape, "int32", quant, data, name)

    def bias(
        self,
        array: np.ndarray | Sequence[int],
        input_scale: float,
        weight_scales: float | Sequence[float],
        name: str | None = None,
    ) -> int:
        """An int32 bias with ``scale = input_scale * weight_scale`` and zero point 0."""
        values = np.asarray(array, dtype=np.int64)
        weight = np.atleast_1d(np.asarray(weight_scales, dtype=np.float32))
        scales = np.float32(input_scale) * weight
        return self.constant_int32(values, scales.tolist(), 0, 0, name)

    # ---- operators -----------------------------------------------------------------------

    def operator(
        self,
        opcode: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options_type: str | None = None,
        options: Sequence[tuple[str, OptionValue]] = (),
    ) -> int:
        """Append a builtin operator; returns its first output tensor."""
        if not hasattr(tflite.BuiltinOperator, opcode):
            raise ValueError(f"unknown builtin operator {opcode!r}")
        if options_type is not None and not hasattr(tflite.BuiltinOptions, options_type):
            raise ValueError(f"unknown builtin options {options_type!r}")
        for tensor in (*inputs, *outputs):
            if not 0 <= tensor < len(self._tensors):
                raise ValueError(f"{opcode}: tensor {tensor} does not exist")
        self._operators.append(
            OperatorDef(opcode, tuple(inputs), tuple(outputs), options_type, tuple(options))
        )
        return outputs[0]

    def _check_window_output(
        self,
        op: str,
        x: int,
        out: int,
        channels: int,
        kernel: tuple[int, int],
        stride: tuple[int, int],
        dilation: tuple[int, int],
        padding: Padding,
    ) -> None:
        _, h, w, _ = self.shape(x)
        expected = (
            1,
            conv_output_size(h, kernel[0], stride[0], dilation[0], padding),
            conv_output_size(w, kernel[1], stride[1], dilation[1], padding),
            channels,
        )
        if self.shape(out) != expected:
            raise ValueError(f"{op}: output shape {self.shape(out)}, expected {expected}")

    def _check_same_quantization(self, op: str, inputs: Sequence[int], out: int) -> None:
        # These int8 kernels copy or compare bytes without requantizing: TFLite Micro rejects a
        # mismatch for pools and CONCATENATION and silently misreads it for PAD, RESHAPE and
        # RESIZE_NEAREST_NEIGHBOR.
        for tensor in inputs:
            if self.quantization(tensor) != self.quantization(out):
                raise ValueError(
                    f"{op}: input {tensor} is quantized {self.quantization(tensor)},"
                    f" output {out} {self.quantization(out)}; they must match"
                )

    def conv2d(
        self,
        x: int,
        weights: int,
        bias: int,
        out: int,
        *,
        stride: Pair = 1,
        dilation: Pair = 1,
        padding: Padding = "SAME",
        activation: Activation = "NONE",
    ) -> int:
        """CONV_2D with weights ``[O, KH, KW, I]`` and int32 bias ``[O]``."""
        o, kh, kw, i = self.shape(weights)
        if self.shape(x)[3] != i:
            raise ValueError(f"CONV_2D: input has {self.shape(x)[3]} channels, weights {i}")
        sh, sw = _pair(stride)
        dh, dw = _pair(dilation)
        self._check_window_output("CONV_2D", x, out, o, (kh, kw), (sh, sw), (dh, dw), padding)
        options = (
            ("Padding", _PADDING[padding]),
            ("StrideW", sw),
            ("StrideH", sh),
            ("FusedActivationFunction", _ACTIVATION[activation]),
            ("DilationWFactor", dw),
            ("DilationHFactor", dh),
        )
        return self.operator("CONV_2D", (x, weights, bias), (out,), "Conv2DOptions", options)

    def depthwise_conv2d(
        self,
        x: int,
        weights: int,
        bias: int,
        out: int,
        *,
        depth_multiplier: int = 1,
        stride: Pair = 1,
        dilation: Pair = 1,
        padding: Padding = "SAME",
        activation: Activation = "NONE",
    ) -> int:
        """DEPTHWISE_CONV_2D with weights ``[1, KH, KW, C * depth_multiplier]``."""
        one, kh, kw, c_out = self.shape(weights)
        c_in = self.shape(x)[3]
        if one != 1 or c_out != c_in * depth_multiplier:
            raise ValueError(
                f"DEPTHWISE_CONV_2D: weights {self.shape(weights)} do not fit {c_in} channels"
                f" with depth multiplier {depth_multiplier}"
            )
        sh, sw = _pair(stride)
        dh, dw = _pair(dilation)
        self._check_window_output(
            "DEPTHWISE_CONV_2D", x, out, c_out, (kh, kw), (sh, sw), (dh, dw), padding
        )
        options = (
            ("Padding", _PADDING[padding]),
            ("StrideW", sw),
            ("StrideH", sh),
            ("DepthMultiplier", depth_multiplier),
            ("FusedActivationFunction", _ACTIVATION[activation]),
            ("DilationWFactor", dw),
            ("DilationHFactor", dh),
        )
        return self.operator(
            "DEPTHWISE_CONV_2D", (x, weights, bias), (out,), "DepthwiseConv2DOptions", options
        )

    def fully_connected(
        self,
        x: int,
        weights: int,
        bias: int,
        out: int,
        *,
        activation: Activation = "NONE",
        keep_num_dims: bool = False,
    ) -> int:
        """FULLY_CONNECTED with weights ``[O, I]``; the input is flattened to ``[-1, I]``."""
        o, i = self.shape(weights)
        if math.prod(self.shape(x)) % i or self.shape(out)[-1] != o:
            raise ValueError(
                f"FULLY_CONNECTED: weights {(o, i)} do not fit input {self.shape(x)}"
                f" and output {self.shape(out)}"
            )
        options = (
            ("FusedActivationFunction", _ACTIVATION[activation]),
            ("KeepNumDims", keep_num_dims),
        )
        return self.operator(
            "FULLY_CONNECTED", (x, weights, bias), (out,), "FullyConnectedOptions", options
        )

    def add(self, a: int, b: int, out: int, *, activation: Activation = "NONE") -> int:
        """Element-wise ADD (with broadcasting)."""
        options = (("FusedActivationFunction", _ACTIVATION[activation]),)
        return self.operator("ADD", (a, b), (out,), "AddOptions", options)

    def mul(self, a: int, b: int, out: int, *, activation: Activation = "NONE") -> int:
        """Element-wise MUL (with broadcasting)."""
        options = (("FusedActivationFunction", _ACTIVATION[activation]),)
        return self.operator("MUL", (a, b), (out,), "MulOptions", options)

    def _pool(
        self,
        opcode: str,
        x: int,
        out: int,
        filter_size: Pair,
        stride: Pair,
        padding: Padding,
        activation: Activation,
    ) -> int:
        self._check_same_quantization(opcode, (x,), out)
        fh, fw = _pair(filter_size)
        sh, sw = _pair(stride)
        self._check_window_output(
            opcode, x, out, self.shape(x)[3], (fh, fw), (sh, sw), (1, 1), padding
        )
        options = (
            ("Padding", _PADDING[padding]),
            ("StrideW", sw),
            ("StrideH", sh),
            ("FilterWidth", fw),
            ("FilterHeight", fh),
            ("FusedActivationFunction", _ACTIVATION[activation]),
        )
        return self.operator(opcode, (x,), (out,), "Pool2DOptions", options)

    def average_pool2d(
        self,
        x: int,
        out: int,
        *,
        filter_size: Pair = 2,
        stride: Pair = 2,
        padding: Padding = "VALID",
        activation: Activation = "NONE",
    ) -> int:
        """AVERAGE_POOL_2D; int8 kernels keep the input's quantization on the output."""
        return self._pool("AVERAGE_POOL_2D", x, out, filter_size, stride, padding, activation)

    def max_pool2d(
        self,
        x: int,
        out: int,
        *,
        filter_size: Pair = 2,
        stride: Pair = 2,
        padding: Padding = "VALID",
        activation: Activation = "NONE",
    ) -> int:
        """MAX_POOL_2D; int8 kernels keep the input's quantization on the output."""
        return self._pool("MAX_POOL_2D", x, out, filter_size, stride, padding, activation)

    def pad(self, x: int, paddings: Sequence[tuple[int, int]], out: int) -> int:
        """PAD with an explicit int32 ``[rank, 2]`` paddings tensor; pads with the zero point."""
        table = np.asarray(paddings, dtype=np.int32)
        if table.shape != (len(self.shape(x)), 2):
            raise ValueError(f"PAD: paddings of shape {table.shape} for rank {len(self.shape(x))}")
        expected = tuple(int(d + lo + hi) for d, (lo, hi) in zip(self.shape(x), table, strict=True))
        if self.shape(out) != expected:
            raise ValueError(f"PAD: output shape {self.shape(out)}, expected {expected}")
        self._check_same_quantization("PAD", (x,), out)
        pads = self.constant_int32(table, name=f"{self._tensors[out].name}/paddings")
        return self.operator("PAD", (x, pads), (out,), "PadOptions")

    def reshape(self, x: int, out: int) -> int:
        """RESHAPE to the output tensor's shape, given both as a shape tensor and an option."""
        new_shape = self.shape(out)
        if math.prod(new_shape) != math.prod(self.shape(x)):
            raise ValueError(f"RESHAPE: {self.shape(x)} and {new_shape} differ in size")
        self._check_same_quantization("RESHAPE", (x,), out)
        shape = self.constant_int32(
            np.asarray(new_shape, dtype=np.int32), name=f"{self._tensors[out].name}/shape"
        )
        options = (("NewShape", new_shape),)
        return self.operator("RESHAPE", (x, shape), (out,), "ReshapeOptions", options)

    def _check_probability_output(self, op: str, out: int) -> None:
        # TFLite Micro's int8 SOFTMAX and LOGISTIC kernels require this fixed output range.
        quant = self.quantization(out)
        expected = Quantization((_f32(SOFTMAX_OUTPUT_SCALE),), (SOFTMAX_OUTPUT_ZERO_POINT,), 0)
        if self._tensors[out].dtype == "int8" and quant != expected:
            raise ValueError(f"{op}: an int8 output needs scale 1/256 and zero point -128")

    def softmax(self, x: int, out: int, *, beta: float = 1.0) -> int:
        """SOFTMAX over the last axis; int8 output scale 1/256, zero point -128."""
        self._check_probability_output("SOFTMAX", out)
        return self.operator("SOFTMAX", (x,), (out,), "SoftmaxOptions", (("Beta", beta),))

    def logistic(self, x: int, out: int) -> int:
        """LOGISTIC (sigmoid); int8 output scale 1/256, zero point -128."""
        self._check_probability_output("LOGISTIC", out)
        return self.operator("LOGISTIC", (x,), (out,))

    def mean(self, x: int, axes: Sequence[int], out: int, *, keep_dims: bool = True) -> int:
        """MEAN over ``axes`` (an int32 constant); int8 requantizes to the output's scale."""
        axis_tensor = self.constant_int32(
            np.asarray(axes, dtype=np.int32), name=f"{self._tensors[out].name}/axes"
        )
        return self.operator(
            "MEAN", (x, axis_tensor), (out,), "ReducerOptions", (("KeepDims", keep_dims),)
        )

    def concatenation(
        self, xs: Sequence[int], out: int, *, axis: int = -1, activation: Activation = "NONE"
    ) -> int:
        """CONCATENATION along ``axis``; int8 inputs share the output's quantization."""
        self._check_same_quantization("CONCATENATION", xs, out)
        options = (("Axis", axis), ("FusedActivationFunction", _ACTIVATION[activation]))
        return self.operator("CONCATENATION", tuple(xs), (out,), "ConcatenationOptions", options)

    def resize_nearest_neighbor(
        self,
        x: int,
        out: int,
        *,
        align_corners: bool = False,
        half_pixel_centers: bool = False,
    ) -> int:
        """RESIZE_NEAREST_NEIGHBOR to the output's (H, W), given as an int32 size tensor."""
        self._check_same_quantization("RESIZE_NEAREST_NEIGHBOR", (x,), out)
        size = self.constant_int32(
            np.asarray(self.shape(out)[1:3], dtype=np.int32), name=f"{self._tensors[out].name}/size"
        )
        options = (("AlignCorners", align_corners), ("HalfPixelCenters", half_pixel_centers))
        return self.operator(
            "RESIZE_NEAREST_NEIGHBOR", (x, size), (out,), "ResizeNearestNeighborOptions", options
        )

    def quantize(self, x: int, out: int) -> int:
        """QUANTIZE float32 to int8, or requantize int8 to another scale."""
        return self.operator("QUANTIZE", (x,), (out,), "QuantizeOptions")

    def dequantize(self, x: int, out: int) -> int:
        """DEQUANTIZE int8 to float32."""
        return self.operator("DEQUANTIZE", (x,), (out,), "DequantizeOptions")

    def inputs(self, tensors: Sequence[int]) -> None:
        """Set the subgraph inputs."""
        self._inputs = tuple(tensors)

    def outputs(self, tensors: Sequence[int]) -> None:
        """Set the subgraph outputs."""
        self._outputs = tuple(tensors)

    # ---- serialisation -------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Serialise as a schema-3 TFLite flatbuffer with file identifier ``TFL3``.

        Buffer 0 is the empty sentinel every TFLite model starts with; non-constant tensors
        point at it, and each constant gets a buffer of its own, 16-byte aligned so that
        int32 bias reads are aligned in place.
        """
        if not self._inputs or not self._outputs:
            raise ValueError("set the model's inputs and outputs before writing it")
        b = flatbuffers.Builder(1024)

        buffer_of: list[int] = []
        buffer_tables = [_empty_buffer(b)]
        for tensor in self._tensors:
            if tensor.data is None:
                buffer_of.append(0)
            else:
                buffer_of.append(len(buffer_tables))
                buffer_tables.append(_data_buffer(b, tensor.data))

        tensor_tables = [
            _tensor(b, tensor, buffer)
            for tensor, buffer in zip(self._tensors, buffer_of, strict=True)
        ]

        opcodes = sorted({op.opcode for op in self._operators}, key=self._first_use)
        opcode_index = {name: i for i, name in enumerate(opcodes)}
        operator_tables = [_operator(b, op, opcode_index[op.opcode]) for op in self._operators]

        tensors_vec = _table_vector(b, tensor_tables)
        inputs_vec = _int32_vector(b, self._inputs)
        outputs_vec = _int32_vector(b, self._outputs)
        operators_vec = _table_vector(b, operator_tables)
        subgraph_name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, inputs_vec)
        tflite.SubGraphAddOutputs(b, outputs_vec)
        tflite.SubGraphAddOperators(b, operators_vec)
        tflite.SubGraphAddName(b, subgraph_name)
        subgraph = tflite.SubGraphEnd(b)

        code_tables = [_operator_code(b, name) for name in opcodes]
        codes_vec = _table_vector(b, code_tables)
        subgraphs_vec = _table_vector(b, [subgraph])
        description = b.CreateString(self._description)
        buffers_vec = _table_vector(b, buffer_tables)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, SCHEMA_VERSION)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subgraphs_vec)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, buffers_vec)
        model = tflite.ModelEnd(b)
        b.Finish(model, file_identifier=FILE_IDENTIFIER)
        return bytes(b.Output())

    def _first_use(self, opcode: str) -> int:
        # Operator codes are listed in order of first use, as the converter does.
        return next(i for i, op in enumerate(self._operators) if op.opcode == opcode)


def _empty_buffer(b: flatbuffers.Builder) -> int:
    tflite.BufferStart(b)
    return tflite.BufferEnd(b)


def _data_buffer(b: flatbuffers.Builder, data: bytes) -> int:
    b.StartVector(1, len(data), 16)
    b.head = b.head - len(data)
    b.Bytes[b.head : b.head + len(data)] = data
    vector = b.EndVector()
    tflite.BufferStart(b)
    tflite.BufferAddData(b, vector)
    return tflite.BufferEnd(b)


def _int32_vector(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    return b.CreateNumpyVector(np.asarray(values, dtype="<i4"))


def _table_vector(b: flatbuffers.Builder, offsets: Sequence[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _tensor(b: flatbuffers.Builder, tensor: TensorDef, buffer: int) -> int:
    name = b.CreateString(tensor.name)
    shape = _int32_vector(b, tensor.shape)
    quant = None
    if tensor.quantization is not None:
        q = tensor.quantization
        scales = b.CreateNumpyVector(np.asarray(q.scales, dtype="<f4"))
        zero_points = b.CreateNumpyVector(np.asarray(q.zero_points, dtype="<i8"))
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        tflite.QuantizationParametersAddZeroPoint(b, zero_points)
        tflite.QuantizationParametersAddQuantizedDimension(b, q.axis)
        quant = tflite.QuantizationParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, _TENSOR_TYPE[tensor.dtype])
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    return tflite.TensorEnd(b)


def _options(b: flatbuffers.Builder, op: OperatorDef) -> int:
    assert op.options_type is not None
    cls = op.options_type
    # Vectors must be finished before the table that refers to them is started.
    vectors = {
        field: _int32_vector(b, value) for field, value in op.options if isinstance(value, tuple)
    }
    getattr(tflite, f"{cls}Start")(b)
    for field, value in op.options:
        getattr(tflite, f"{cls}Add{field}")(b, vectors.get(field, value))
    return getattr(tflite, f"{cls}End")(b)


def _operator(b: flatbuffers.Builder, op: OperatorDef, opcode_index: int) -> int:
    inputs = _int32_vector(b, op.inputs)
    outputs = _int32_vector(b, op.outputs)
    options = _options(b, op) if op.options_type is not None else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode_index)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options_type))
        tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _operator_code(b: flatbuffers.Builder, name: str) -> int:
    code = getattr(tflite.BuiltinOperator, name)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, _OP_VERSION.get(name, 1))
    return tflite.OperatorCodeEnd(b)


# ---- calibrated random models -----------------------------------------------------------


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
    ) -> int:
        """CONV_2D, or PAD then a VALID CONV_2D for explicit (top, bottom, left, right)."""
        if not isinstance(padding, str):
            x, padding = self.pad(x, padding), "VALID"
        kh, kw = _pair(kernel)
        c_in = self.mb.shape(x)[3]
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
        for i, j, plane in _window_slices(padded, (kh, kw), stride_hw, dilation_hw, out_hw):
            acc += plane @ w_real[:, i, j, :].T
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
) -> bytes:
    """A single CONV_2D model; explicit (top, bottom, left, right) padding becomes PAD + VALID."""
    net = _Calibrated(seed)
    x = net.input((1, h, w, c_in))
    y = net.conv(x, c_out, kernel, stride, dilation, padding, activation, per_channel)
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
