"""A small, deterministic writer of int8 TFLite flatbuffers: the builder half of the test
suite's writer (`ModelBuilder` records tensors and builtin operators and serialises them
with the generated `tflite` builder functions into a schema-3 model, identifier ``TFL3``).

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

from rip.core.shapes import dilated

Padding = Literal["SAME", "VALID"]
Activation = Literal["NONE", "RELU", "RELU6"]
DType = Literal["int8", "uint8", "int16", "int32", "int64", "float32", "resource"]
Pair = int | tuple[int, int]
OptionValue = int | float | bool | str | tuple[int, ...]
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
    "uint8": tflite.TensorType.UINT8,
    "int16": tflite.TensorType.INT16,
    "resource": tflite.TensorType.RESOURCE,
    "int32": tflite.TensorType.INT32,
    "float32": tflite.TensorType.FLOAT32,
    "int64": tflite.TensorType.INT64,
}
_NUMPY_DTYPE = {
    "int8": np.dtype("<i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float32": np.dtype("<f4"),
}

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
    is_variable: bool = False  # a variable (state) tensor, kept across invokes


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

    def __init__(self, description: str = "rip tests/tflite_writer") -> None:
        self._description = description
        self._tensors: list[TensorDef] = []
        self._operators: list[OperatorDef] = []
        self._inputs: tuple[int, ...] = ()
        self._outputs: tuple[int, ...] = ()
        # opcode -> (deprecated_builtin_code, builtin_code or None: absent) written instead
        # of the converter's pair (set_code_fields)
        self._code_fields: dict[str, tuple[int, int | None]] = {}
        self._subgraphs: list[ModelBuilder] = []  # subgraphs 1, 2, ... (their own tensors)

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
        is_variable: bool = False,
    ) -> int:
        index = len(self._tensors)
        self._tensors.append(
            TensorDef(
                name=name if name is not None else f"tensor_{index}",
                shape=tuple(int(d) for d in shape),
                dtype=dtype,
                quantization=quantization,
                data=data,
                is_variable=is_variable,
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
        dtype: Literal["int8", "uint8", "int16", "int32", "float32"] = "int8",
    ) -> int:
        """A non-constant tensor: int8 (or int16, the converter's 16x8 mode, int32, or uint8,
        an interface a QUANTIZE converts) with one scale and zero point, or unquantized
        float32."""
        ranges = {
            "int8": (-128, 127),
            "uint8": (0, 255),
            "int16": (-32768, 32767),
            "int32": (-(1 << 31), (1 << 31) - 1),
        }
        if dtype in ranges:
            if scale is None:
                raise ValueError(f"an {dtype} activation needs a scale")
            lo, hi = ranges[dtype]
            if not lo <= zero_point <= hi:
                raise ValueError(f"{dtype} zero point {zero_point} outside [{lo}, {hi}]")
            quant = self._quantization(shape, scale, zero_point, 0)
        else:
            if scale is not None:
                raise ValueError("a float32 activation takes no quantization")
            quant = None
        return self._add_tensor(shape, dtype, quant, None, name)

    def variable(
        self, shape: Sequence[int], scale: float, zero_point: int = 0, name: str | None = None,
        dtype: Literal["int8", "int16"] = "int8",
    ) -> int:  # fmt: skip
        """A variable (state) tensor, int8 or int16, with one scale and zero point: an SVDF's
        state."""
        quant = self._quantization(shape, scale, zero_point, 0)
        return self._add_tensor(shape, dtype, quant, None, name, is_variable=True)

    def constant_int64(
        self, array: np.ndarray, scales: float | Sequence[float], name: str | None = None
    ) -> int:
        """An int64 constant with scales and zero point 0: a 16x8 layer's bias."""
        values = np.asarray(array, dtype=np.int64)
        quant = self._quantization(values.shape, scales, 0, 0)
        data = np.ascontiguousarray(values, dtype=_NUMPY_DTYPE["int64"]).tobytes()
        return self._add_tensor(values.shape, "int64", quant, data, name)

    def constant_float32(self, array: np.ndarray, name: str | None = None) -> int:
        """An unquantized float32 constant: a float island's operand."""
        values = np.asarray(array, dtype=np.float32)
        data = np.ascontiguousarray(values, dtype=_NUMPY_DTYPE["float32"]).tobytes()
        return self._add_tensor(values.shape, "float32", None, data, name)

    def constant_int16(self, array: np.ndarray, scale: float, name: str | None = None) -> int:
        """An int16 constant quantized per tensor (zero point 0): SVDF's int16 time weights."""
        values = np.asarray(array)
        if values.dtype != np.int16:
            raise ValueError(f"constant_int16 needs an int16 array, got {values.dtype}")
        quant = self._quantization(values.shape, scale, 0, 0)
        data = np.ascontiguousarray(values, dtype=_NUMPY_DTYPE["int16"]).tobytes()
        return self._add_tensor(values.shape, "int16", quant, data, name)

    def resource(self, name: str | None = None) -> int:
        """A resource tensor (a VAR_HANDLE's output: the handle of a resource variable)."""
        return self._add_tensor((), "resource", None, None, name)

    def var_handle(self, shared_name: str) -> int:
        """VAR_HANDLE of the resource variable ``shared_name``: its handle tensor."""
        h = self.resource(shared_name)
        options = (("SharedName", shared_name),)
        return self.operator("VAR_HANDLE", (), (h,), "VarHandleOptions", options)

    def add_index_output(
        self,
        shape: Sequence[int],
        *,
        dtype: Literal["int32", "int64"] = "int32",
        name: str | None = None,
    ) -> int:
        """An unquantized integer activation: the index output of ARG_MAX / ARG_MIN."""
        return self._add_tensor(shape, dtype, None, None, name)

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
        """Append a builtin operator; returns its first output tensor (-1 without one, as
        ASSIGN_VARIABLE and CALL_ONCE have none)."""
        if not hasattr(tflite.BuiltinOperator, opcode):
            raise ValueError(f"unknown builtin operator {opcode!r}")
        if options_type is not None and not hasattr(tflite.BuiltinOptions, options_type):
            raise ValueError(f"unknown builtin options {options_type!r}")
        for tensor in (*inputs, *outputs):
            if tensor == -1 and tensor in inputs:
                continue  # an absent optional input
            if not 0 <= tensor < len(self._tensors):
                raise ValueError(f"{opcode}: tensor {tensor} does not exist")
        self._operators.append(
            OperatorDef(opcode, tuple(inputs), tuple(outputs), options_type, tuple(options))
        )
        return outputs[0] if outputs else -1

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
        n, h, w, _ = self.shape(x)
        expected = (
            n,
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
        """CONV_2D with weights ``[O, KH, KW, I]`` and int32 bias ``[O]``; ``I`` a proper
        divisor of the input's channels makes it grouped (groups = C_in / I, as TFLite)."""
        o, kh, kw, i = self.shape(weights)
        c_in = self.shape(x)[3]
        if i < 1 or c_in % i or o % (c_in // i):
            raise ValueError(f"CONV_2D: input has {c_in} channels, weights {i}, output {o}")
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

    def reduce(
        self, kind: str, x: int, axes: Sequence[int], out: int, *, keep_dims: bool = False
    ) -> int:
        """MEAN, SUM, REDUCE_MAX or REDUCE_MIN over ``axes`` (an int32 constant); MAX and MIN
        keep the input's quantization."""
        if kind not in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"):
            raise ValueError(f"{kind} is not a ReducerOptions reduction")
        if kind in ("REDUCE_MAX", "REDUCE_MIN"):
            self._check_same_quantization(kind, (x,), out)
        axis_tensor = self.constant_int32(
            np.asarray(axes, dtype=np.int32), name=f"{self._tensors[out].name}/axes"
        )
        return self.operator(
            kind, (x, axis_tensor), (out,), "ReducerOptions", (("KeepDims", keep_dims),)
        )

    def arg_min_max(self, kind: str, x: int, axis: int, out: int) -> int:
        """ARG_MAX or ARG_MIN along ``axis``; ``out`` is an int32 index tensor
        (`add_index_output`)."""
        if kind not in ("ARG_MAX", "ARG_MIN"):
            raise ValueError(f"{kind} is not ARG_MAX or ARG_MIN")
        dtype = self._tensors[out].dtype
        code = {"int32": tflite.TensorType.INT32, "int64": tflite.TensorType.INT64}.get(dtype)
        if code is None:
            raise ValueError(f"{kind}: the output is {dtype}, not an integer index tensor")
        axis_tensor = self.constant_int32(
            np.asarray([axis], dtype=np.int32), name=f"{self._tensors[out].name}/axis"
        )
        options = "ArgMaxOptions" if kind == "ARG_MAX" else "ArgMinOptions"
        return self.operator(kind, (x, axis_tensor), (out,), options, (("OutputType", code),))

    def leaky_relu(self, x: int, out: int, *, alpha: float = 0.2) -> int:
        """LEAKY_RELU: x for x >= 0, alpha x below."""
        return self.operator("LEAKY_RELU", (x,), (out,), "LeakyReluOptions", (("Alpha", alpha),))

    def unary(self, kind: str, x: int, out: int) -> int:
        """An option-less elementwise op of one input: ABS, ELU, LOG_SOFTMAX (whose int8
        output must be scale 16/256, zero point 127), TANH, RELU, ..."""
        if kind == "LOG_SOFTMAX":
            quant = self.quantization(out)
            expected = Quantization((_f32(16.0 / 256.0),), (127,), 0)
            if self._tensors[out].dtype == "int8" and quant != expected:
                raise ValueError("LOG_SOFTMAX: an int8 output needs scale 16/256, zero point 127")
        options = {"ABS": "AbsOptions", "LOG_SOFTMAX": "LogSoftmaxOptions"}.get(kind)
        return self.operator(kind, (x,), (out,), options)

    def binary(self, kind: str, a: int, b: int, out: int) -> int:
        """An option-less binary op with broadcasting: MAXIMUM, MINIMUM, SQUARED_DIFFERENCE,
        PRELU (b is alpha)."""
        options = {
            "MAXIMUM": "MaximumMinimumOptions",
            "MINIMUM": "MaximumMinimumOptions",
            "SQUARED_DIFFERENCE": "SquaredDifferenceOptions",
            "PRELU": None,
        }
        if kind not in options:
            raise ValueError(f"{kind} is not an option-less binary op")
        return self.operator(kind, (a, b), (out,), options[kind])

    def add_n(self, xs: Sequence[int], out: int) -> int:
        """ADD_N of inputs sharing one shape and quantization."""
        return self.operator("ADD_N", tuple(xs), (out,), "AddNOptions")

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

    def batch_matmul(
        self, x: int, y: int, out: int, *, adj_x: bool = False, adj_y: bool = False
    ) -> int:
        """BATCH_MATMUL of ``x`` by ``y`` (each transposed in its last two axes when its adj
        flag is set); the caller makes the output: the broadcast batch axes, then x's rows and
        y's columns."""
        options = (("AdjX", adj_x), ("AdjY", adj_y))
        return self.operator("BATCH_MATMUL", (x, y), (out,), "BatchMatMulOptions", options)

    def svdf(
        self, x: int, feature: int, time: int, bias: int, state: int, out: int, *, rank: int,
        activation: Activation = "NONE",
    ) -> int:  # fmt: skip
        """SVDF of ``x`` (inputs: feature weights [filters, input], time weights [filters,
        memory], bias [filters / rank], the variable state [batch, memory * filters])."""
        options = (("Rank", rank), ("FusedActivationFunction", _ACTIVATION[activation]))
        return self.operator(
            "SVDF", (x, feature, time, bias, state), (out,), "SVDFOptions", options
        )

    def unidirectional_sequence_lstm(
        self, x: int, weights: Sequence[int], biases: Sequence[int], hidden: int, cell: int,
        out: int, *, time_major: bool = False, cell_clip: float = 0.0,
    ) -> int:  # fmt: skip
        """UNIDIRECTIONAL_SEQUENCE_LSTM without peephole, projection or layer norm: the eight
        gate weights (input to input, forget, cell, output gates, then recurrent to them), the
        four gate biases, the variable hidden and cell states (operands 18, 19), the cell
        gate TANH."""
        if len(weights) != 8 or len(biases) != 4:
            raise ValueError("an LSTM takes eight weights and four biases")
        ins = [x, *weights, -1, -1, -1, *biases, -1, -1, hidden, cell, -1, -1, -1, -1]
        options = (
            ("FusedActivationFunction", tflite.ActivationFunctionType.TANH),
            ("CellClip", cell_clip),
            ("TimeMajor", time_major),
        )
        kind, table = "UNIDIRECTIONAL_SEQUENCE_LSTM", "UnidirectionalSequenceLSTMOptions"
        return self.operator(kind, ins, (out,), table, options)

    def shape_op(self, x: int, out: int) -> int:
        """SHAPE of ``x`` into ``out``, an int32 or int64 vector (`add_index_output`)."""
        dtype = self._tensors[out].dtype
        code = {"int32": tflite.TensorType.INT32, "int64": tflite.TensorType.INT64}[dtype]
        return self.operator("SHAPE", (x,), (out,), "ShapeOptions", (("OutType", code),))

    def quantize(self, x: int, out: int) -> int:
        """QUANTIZE float32 to int8, or requantize int8 to another scale."""
        return self.operator("QUANTIZE", (x,), (out,), "QuantizeOptions")

    def dequantize(self, x: int, out: int) -> int:
        """DEQUANTIZE int8 to float32."""
        return self.operator("DEQUANTIZE", (x,), (out,), "DequantizeOptions")

    # ---- data movement and resampling -----------------------------------------------------------
    # Thin wrappers: the caller makes the output tensors (shapes as TFLite would infer them);
    # constant operands (begin, sizes, axes, paddings) become int32 constants here.

    def _ints(self, values: Sequence[int] | Sequence[Sequence[int]]) -> int:
        return self.constant_int32(np.asarray(values, dtype=np.int32))

    def strided_slice(
        self,
        x: int,
        begin: Sequence[int],
        end: Sequence[int],
        strides: Sequence[int],
        out: int,
        *,
        begin_mask: int = 0,
        end_mask: int = 0,
        shrink_axis_mask: int = 0,
    ) -> int:
        options = (
            ("BeginMask", begin_mask),
            ("EndMask", end_mask),
            ("ShrinkAxisMask", shrink_axis_mask),
        )
        ins = [x, self._ints(begin), self._ints(end), self._ints(strides)]
        return self.operator("STRIDED_SLICE", ins, [out], "StridedSliceOptions", options)

    def slice(self, x: int, begin: Sequence[int], size: Sequence[int], out: int) -> int:
        return self.operator("SLICE", [x, self._ints(begin), self._ints(size)], [out])

    def split(self, x: int, axis: int, outs: Sequence[int]) -> int:
        ins = [self._ints([axis]), x]
        return self.operator("SPLIT", ins, outs, "SplitOptions", (("NumSplits", len(outs)),))

    def split_v(self, x: int, sizes: Sequence[int], axis: int, outs: Sequence[int]) -> int:
        ins = [x, self._ints(sizes), self._ints([axis])]
        return self.operator("SPLIT_V", ins, outs, "SplitVOptions", (("NumSplits", len(outs)),))

    def pack(self, xs: Sequence[int], axis: int, out: int) -> int:
        options = (("ValuesCount", len(xs)), ("Axis", axis))
        return self.operator("PACK", xs, [out], "PackOptions", options)

    def unpack(self, x: int, axis: int, outs: Sequence[int]) -> int:
        options = (("Num", len(outs)), ("Axis", axis))
        return self.operator("UNPACK", [x], outs, "UnpackOptions", options)

    def expand_dims(self, x: int, axis: int, out: int) -> int:
        return self.operator("EXPAND_DIMS", [x, self._ints([axis])], [out])

    def depth_to_space(self, x: int, block: int, out: int) -> int:
        return self.operator(
            "DEPTH_TO_SPACE", [x], [out], "DepthToSpaceOptions", (("BlockSize", block),)
        )

    def space_to_depth(self, x: int, block: int, out: int) -> int:
        return self.operator(
            "SPACE_TO_DEPTH", [x], [out], "SpaceToDepthOptions", (("BlockSize", block),)
        )

    def gather(self, x: int, coords: np.ndarray, axis: int, out: int, batch_dims: int = 0) -> int:
        options = (("Axis", axis), ("BatchDims", batch_dims))
        ins = [x, self.constant_int32(np.asarray(coords, dtype=np.int32))]
        return self.operator("GATHER", ins, [out], "GatherOptions", options)

    def padv2(
        self, x: int, paddings: Sequence[tuple[int, int]], value: int | None, out: int
    ) -> int:
        ins = [x, self._ints(paddings)]
        if value is not None:
            q = self.quantization(x)
            assert q is not None
            ins.append(self.constant_int8(np.asarray([value], np.int8), q.scales, q.zero_points))
        return self.operator("PADV2", ins, [out])

    def mirror_pad(
        self, x: int, paddings: Sequence[tuple[int, int]], symmetric: bool, out: int
    ) -> int:
        options = (("Mode", int(symmetric)),)
        return self.operator(
            "MIRROR_PAD", [x, self._ints(paddings)], [out], "MirrorPadOptions", options
        )

    def space_to_batch_nd(
        self, x: int, block: Sequence[int], paddings: Sequence[tuple[int, int]], out: int
    ) -> int:
        ins = [x, self._ints(block), self._ints(paddings)]
        return self.operator("SPACE_TO_BATCH_ND", ins, [out])

    def batch_to_space_nd(
        self, x: int, block: Sequence[int], crops: Sequence[tuple[int, int]], out: int
    ) -> int:
        ins = [x, self._ints(block), self._ints(crops)]
        return self.operator("BATCH_TO_SPACE_ND", ins, [out])

    def resize_bilinear(
        self, x: int, out: int, *, align_corners: bool = False, half_pixel_centers: bool = False
    ) -> int:
        size = self._ints(self.shape(out)[1:3])
        options = (("AlignCorners", align_corners), ("HalfPixelCenters", half_pixel_centers))
        return self.operator("RESIZE_BILINEAR", [x, size], [out], "ResizeBilinearOptions", options)

    def transpose_conv(
        self,
        x: int,
        weights: int,
        bias: int | None,
        out: int,
        *,
        stride: Pair = 1,
        padding: Padding = "SAME",
        activation: Activation = "NONE",
    ) -> int:
        """TRANSPOSE_CONV with weights ``[O, KH, KW, I]``: inputs (output shape, weights,
        input, bias), as the converter writes them."""
        sh, sw = _pair(stride)
        options = (
            ("Padding", _PADDING[padding]),
            ("StrideW", sw),
            ("StrideH", sh),
            ("FusedActivationFunction", _ACTIVATION[activation]),
        )
        ins = [self._ints(self.shape(out)), weights, x, *([] if bias is None else [bias])]
        return self.operator("TRANSPOSE_CONV", ins, [out], "TransposeConvOptions", options)

    def set_code_fields(self, opcode: str, deprecated: int, builtin: int | None) -> None:
        """Write ``opcode``'s operator code entry with these two fields instead of the
        converter's (``deprecated_builtin_code`` = min(code, 127), ``builtin_code`` = code):
        fields that disagree, or an old (schema v3) file without ``builtin_code`` (None)."""
        self._code_fields[opcode] = (deprecated, builtin)

    def inputs(self, tensors: Sequence[int]) -> None:
        """Set the subgraph inputs."""
        self._inputs = tuple(tensors)

    def outputs(self, tensors: Sequence[int]) -> None:
        """Set the subgraph outputs."""
        self._outputs = tuple(tensors)

    def subgraph(self, sub: ModelBuilder) -> int:
        """Append ``sub``'s tensors and operators as the next subgraph (a CALL_ONCE's
        initialiser: it may have no inputs or outputs); returns its index."""
        self._subgraphs.append(sub)
        return len(self._subgraphs)

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
        graphs = [self, *self._subgraphs]
        buffer_tables = [_empty_buffer(b)]
        all_ops = [op for g in graphs for op in g._operators]
        opcodes = sorted(
            {op.opcode for op in all_ops},
            key=lambda name: next(i for i, op in enumerate(all_ops) if op.opcode == name),
        )  # in order of first use, as the converter lists them
        opcode_index = {name: i for i, name in enumerate(opcodes)}
        subgraphs = [
            g._subgraph_table(b, buffer_tables, opcode_index, "main" if g is self else f"sub{k}")
            for k, g in enumerate(graphs)
        ]

        code_tables = [_operator_code(b, name, self._code_fields.get(name)) for name in opcodes]
        codes_vec = _table_vector(b, code_tables)
        subgraphs_vec = _table_vector(b, subgraphs)
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

    def _subgraph_table(
        self, b: flatbuffers.Builder, buffer_tables: list[int], opcode_index: dict[str, int],
        name: str,
    ) -> int:  # fmt: skip
        """This builder's tensors and operators as one SubGraph table, its constants
        appended to the model's ``buffer_tables``."""
        buffer_of: list[int] = []
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
        operator_tables = [_operator(b, op, opcode_index[op.opcode]) for op in self._operators]

        tensors_vec = _table_vector(b, tensor_tables)
        inputs_vec = _int32_vector(b, self._inputs)
        outputs_vec = _int32_vector(b, self._outputs)
        operators_vec = _table_vector(b, operator_tables)
        subgraph_name = b.CreateString(name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, inputs_vec)
        tflite.SubGraphAddOutputs(b, outputs_vec)
        tflite.SubGraphAddOperators(b, operators_vec)
        tflite.SubGraphAddName(b, subgraph_name)
        return tflite.SubGraphEnd(b)


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
    if tensor.is_variable:
        tflite.TensorAddIsVariable(b, True)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    return tflite.TensorEnd(b)


def _options(b: flatbuffers.Builder, op: OperatorDef) -> int:
    assert op.options_type is not None
    cls = op.options_type
    # Vectors must be finished before the table that refers to them is started.
    vectors = {
        field: _int32_vector(b, value) if isinstance(value, tuple) else b.CreateString(value)
        for field, value in op.options
        if isinstance(value, tuple | str)
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


def _operator_code(
    b: flatbuffers.Builder, name: str, fields: tuple[int, int | None] | None = None
) -> int:
    code = getattr(tflite.BuiltinOperator, name)
    tflite.OperatorCodeStart(b)
    if fields is None:  # as the converter writes them
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES))
        tflite.OperatorCodeAddBuiltinCode(b, code)
    else:  # as given, a field equal to its default (0) included
        deprecated, builtin = fields
        b.PrependInt8Slot(0, deprecated, ~deprecated)
        if builtin is not None:
            b.PrependInt32Slot(3, builtin, ~builtin)
    tflite.OperatorCodeAddVersion(b, _OP_VERSION.get(name, 1))
    return tflite.OperatorCodeEnd(b)
