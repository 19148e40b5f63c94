"""TFLite flatbuffer to graph IR: subgraph 0, its operators in file order as the schedule.

Everything is read through the ``tflite`` package's generated accessors; this module only
decides what the fields mean and refuses, with one line naming the file, what rip cannot
compile (unsupported operators, float or int16 activations, dynamic shapes, stateful
tensors). Other subgraphs (e.g. of control-flow ops, which rip refuses anyway) are ignored.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import tflite

from rip.core.errors import ModelError
from rip.core.shapes import conv_out_size, same_padding
from rip.frontend import movement
from rip.frontend.ir import (
    BlockParams,
    ConcatParams,
    Conv2DParams,
    DepthwiseParams,
    ElementwiseParams,
    FullyConnectedParams,
    Graph,
    LeakyReluParams,
    MirrorPadParams,
    NoParams,
    Operator,
    PackParams,
    Padding,
    PadParams,
    PadValueParams,
    PoolParams,
    Quant,
    ReduceParams,
    ResizeParams,
    SoftmaxParams,
    Tensor,
    TransposeParams,
    describe,
)
from rip.frontend.validate import validate_model

FILE_IDENTIFIER = b"TFL3"

SUPPORTED_OPS = frozenset(
    {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
        "ADD",
        "SUB",
        "MUL",
        "AVERAGE_POOL_2D",
        "MAX_POOL_2D",
        "MEAN",
        "PAD",
        "RESHAPE",
        "SQUEEZE",
        "SOFTMAX",
        "LOGISTIC",
        "HARD_SWISH",
        "RELU",
        "RELU6",
        "CONCATENATION",
        "RESIZE_NEAREST_NEIGHBOR",
        "TRANSPOSE",
        "QUANTIZE",
        "DEQUANTIZE",
        # reductions (kernels/rip_reduce.h)
        "SUM",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "ARG_MAX",
        "ARG_MIN",
        # activations and elementwise (kernels/rip_activation.h, rip_elementwise.h)
        "TANH",
        "LEAKY_RELU",
        "ELU",
        "LOG_SOFTMAX",
        "ABS",
        "PRELU",
        "MAXIMUM",
        "MINIMUM",
        "SQUARED_DIFFERENCE",
        "ADD_N",
    }
)

# Reductions with ReducerOptions and an axis tensor.
REDUCER_OPS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"})
# Ops whose int8 input gives an int32 output (an index).
INDEX_OPS = frozenset({"ARG_MAX", "ARG_MIN"})

# Ops TFLite Micro has no int8 kernel for (float32 only): nothing to be bit-exact with.
FLOAT_ONLY_IN_TFLM = frozenset({"NEG", "L2_POOL_2D"})

# ---- data movement and resampling ---------------------------------------------------------------
MOVEMENT_OPS = frozenset(
    {
        "STRIDED_SLICE",
        "SLICE",
        "SPLIT",
        "SPLIT_V",
        "PACK",
        "UNPACK",
        "EXPAND_DIMS",
        "DEPTH_TO_SPACE",
        "SPACE_TO_DEPTH",
        "GATHER",
        "PADV2",
        "MIRROR_PAD",
        "SPACE_TO_BATCH_ND",
        "BATCH_TO_SPACE_ND",
        "RESIZE_BILINEAR",
        "L2_NORMALIZATION",
        "TRANSPOSE_CONV",
    }
)
SUPPORTED_OPS |= MOVEMENT_OPS

# Ops that only occur in recurrent or stateful models (cells, gates, state variables): their
# presence turns "unsupported operator" into "recurrent models are not supported".
RECURRENT_MARKERS = frozenset(
    {
        "SVDF",
        "LSTM",
        "RNN",
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "UNIDIRECTIONAL_SEQUENCE_RNN",
        "BIDIRECTIONAL_SEQUENCE_LSTM",
        "BIDIRECTIONAL_SEQUENCE_RNN",
        "TANH",
        "VAR_HANDLE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
    }
)

_TYPE_NAMES = {
    getattr(tflite.TensorType, n): n.lower() for n in vars(tflite.TensorType) if n.isupper()
}
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
# Fused activations that int8 kernels implement as a clamp of the output; others are refused.
_CLAMP_ACTIVATIONS = frozenset({"NONE", "RELU", "RELU_N1_TO_1", "RELU6"})

# Flatbuffers does not bound-check offsets: a truncated or corrupt file shows up as one of
# these while reading (numpy raises ValueError for a vector past the end of the buffer,
# flatbuffers TypeError for a garbage offset that does not fit its type).
_CORRUPT_ERRORS = (
    IndexError,
    struct.error,
    ValueError,
    OverflowError,
    TypeError,
    ZeroDivisionError,
)


def read_model(source: str | Path | bytes, name: str | None = None) -> Graph:
    """Read subgraph 0 of a TFLite model (a path or the file's bytes) into a ``Graph``.

    ``name`` names the graph and, for bytes, the model in error messages (default: the
    file's stem, or ``"model"``). ``Graph.tensors`` holds the tensors the graph refers to
    (inputs, outputs, operator operands), keyed by their index in the file. Raises
    ``ModelError`` with one line naming the file for anything rip cannot read or compile.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        buf = bytes(source)
        label = name or "<bytes>"
        graph_name = name or "model"
    else:
        path = Path(source)
        label = str(path)
        graph_name = name or path.name.removesuffix(".tflite")
        try:
            buf = path.read_bytes()
        except OSError as exc:
            raise ModelError(f"{label}: cannot read the file ({exc.strerror})") from None
    if len(buf) < 8 or buf[4:8] != FILE_IDENTIFIER:
        raise ModelError(
            f"{label}: not a TFLite file (no {FILE_IDENTIFIER.decode()!r} identifier at bytes 4..8)"
        )
    try:
        validate_model(buf, label)  # rip.frontend.validate: refuses malformed models
        return _Reader(buf, label, graph_name).graph()
    except _CORRUPT_ERRORS as exc:
        kind = type(exc).__name__ if type(exc) is not struct.error else "struct.error"
        detail = " ".join(f"{kind}: {exc}".split())
        raise ModelError(f"{label}: truncated or corrupt TFLite file ({detail})") from None


def _tensor_desc(t: Tensor) -> str:
    return f"tensor {t.id} {t.name!r}"


class _Reader:
    """One pass over the flatbuffer; ``graph()`` validates and builds the IR."""

    def __init__(self, buf: bytes, label: str, graph_name: str) -> None:
        self.buf = buf
        self.label = label
        self.graph_name = graph_name
        self.notes: list[str] = []
        # Graph-only models lost their constant tensors: counts of what shapes stood in for.
        self.inferred: Counter[str] = Counter()

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.label}: {message}")

    def graph(self) -> Graph:
        model = tflite.Model.GetRootAsModel(self.buf, 0)
        if model.SubgraphsLength() < 1:
            raise self.fail("the model has no subgraph")
        self.model = model
        sub = model.Subgraphs(0)
        n_tensors = sub.TensorsLength()

        def ids(values: Any, length: int, what: str) -> tuple[int, ...]:
            out = tuple(int(v) for v in values) if length else ()
            for t in out:
                if not -1 <= t < n_tensors:
                    raise self.fail(f"{what} refers to tensor {t}, past the {n_tensors} tensors")
            return out

        graph_inputs = ids(sub.InputsAsNumpy(), sub.InputsLength(), "the graph input list")
        graph_outputs = ids(sub.OutputsAsNumpy(), sub.OutputsLength(), "the graph output list")

        codes = [self.op_name(model.OperatorCodes(i)) for i in range(model.OperatorCodesLength())]
        raw_ops = []
        for i in range(sub.OperatorsLength()):
            op = sub.Operators(i)
            if op.OpcodeIndex() >= len(codes):
                raise self.fail(f"operator {i} has opcode index {op.OpcodeIndex()}, past the table")
            ins = ids(op.InputsAsNumpy(), op.InputsLength(), f"operator {i}")
            outs = ids(op.OutputsAsNumpy(), op.OutputsLength(), f"operator {i}")
            raw_ops.append((codes[op.OpcodeIndex()], ins, outs, op))

        referenced = {t for t in (*graph_inputs, *graph_outputs) if t >= 0}
        for _, ins, outs, _ in raw_ops:
            referenced.update(t for t in (*ins, *outs) if t >= 0)
        activation_ids = {*graph_inputs, *(t for _, _, outs, _ in raw_ops for t in outs)}
        raw_tensors = {tid: sub.Tensors(tid) for tid in sorted(referenced)}

        self.check_operators(raw_ops, raw_tensors)
        tensors = {
            tid: self.tensor(tid, raw, tid not in activation_ids)
            for tid, raw in raw_tensors.items()
        }
        self.check_activations(raw_ops, tensors, graph_inputs, graph_outputs)

        operators = tuple(
            Operator(kind, ins, outs, self.params(i, kind, op, ins, outs, tensors), i)
            for i, (kind, ins, outs, op) in enumerate(raw_ops)
        )
        op_inputs = {t for op in operators for t in op.inputs if t >= 0}
        missing = [
            t for t in sorted(op_inputs) if tensors[t].is_constant and tensors[t].data is None
        ]
        has_weights = not any(tensors[t].nbytes for t in missing)
        if not has_weights:
            self.notes.insert(
                0, f"graph-only model: {len(missing)} constant tensors have no data (no weights)"
            )
        self.notes += [
            f"graph-only model: {what} of {n} ops inferred from tensor shapes"
            for what, n in self.inferred.items()
        ]
        return Graph(
            name=self.graph_name,
            tensors=tensors,
            operators=operators,
            inputs=graph_inputs,
            outputs=graph_outputs,
            has_weights=has_weights,
            notes=tuple(self.notes),
        )

    @staticmethod
    def op_name(code: Any) -> str:
        # Codes past 127 live only in BuiltinCode; old files only fill the deprecated field.
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == tflite.BuiltinOperator.CUSTOM:
            custom = code.CustomCode()
            return f"CUSTOM {custom.decode(errors='replace')!r}" if custom else "CUSTOM"
        return tflite.BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}")

    def check_operators(self, raw_ops: list, raw_tensors: dict[int, Any]) -> None:
        kinds = {kind for kind, *_ in raw_ops}
        stateful = any(t.IsVariable() for t in raw_tensors.values())
        markers = sorted(kinds & RECURRENT_MARKERS)
        for i, (kind, _, outs, _) in enumerate(raw_ops):
            if kind in SUPPORTED_OPS:
                continue
            if outs and outs[0] >= 0:
                out_name = (raw_tensors[outs[0]].Name() or b"").decode(errors="replace")
                where = describe(kind, i, output=outs[0], output_name=out_name)
            else:
                where = describe(kind, i, output=-1)
            message = f"unsupported {where}"
            if kind in FLOAT_ONLY_IN_TFLM:
                message += "; TFLite Micro runs it on float32 only (no int8 kernel to match)"
            if markers or stateful:
                uses = ", ".join(markers) or "variable tensors"
                message += f"; recurrent models are not supported (this one uses {uses})"
            raise self.fail(message)
        if stateful:
            raise self.fail("variable (state) tensors: stateful models are not supported")

    def tensor(self, tid: int, raw: Any, is_constant: bool) -> Tensor:
        name = (raw.Name() or b"").decode(errors="replace")
        shape = tuple(int(d) for d in raw.ShapeAsNumpy()) if raw.ShapeLength() else ()
        signature = (
            tuple(int(d) for d in raw.ShapeSignatureAsNumpy()) if raw.ShapeSignatureLength() else ()
        )
        # A converter leaves -1 as the batch of a fixed batch-1 model; anything else is a
        # shape only known at run time, which a static memory plan cannot hold.
        dynamic = any(d < 0 for d in shape) or any(
            d < 0 and not (j == 0 and shape[:1] == (1,)) for j, d in enumerate(signature)
        )
        if dynamic:
            raise self.fail(
                f"dynamic shape on tensor {tid} {name!r} (shape {list(shape)}, "
                f"signature {list(signature)}): only static shapes are supported"
            )
        dtype = _TYPE_NAMES.get(raw.Type(), f"type{raw.Type()}")
        data = None if not is_constant else self.buffer_bytes(raw.Buffer(), tid)
        return Tensor(
            id=tid,
            name=name,
            shape=shape,
            dtype=dtype,
            quant=self.quant(raw.Quantization()),
            is_constant=is_constant,
            data=data,
        )

    def buffer_bytes(self, index: int, tid: int) -> bytes | None:
        if index >= self.model.BuffersLength():
            raise self.fail(f"tensor {tid} refers to buffer {index}, past the buffer table")
        buffer = self.model.Buffers(index)
        if buffer.DataLength():
            return buffer.DataAsNumpy().tobytes()
        # Models over 2 GB keep buffers after the flatbuffer, addressed by file offset.
        offset, size = buffer.Offset(), buffer.Size()
        if offset > 1 and size:
            if offset + size > len(self.buf):
                raise IndexError(f"buffer {index} ends past the end of the file")
            return self.buf[offset : offset + size]
        return None

    @staticmethod
    def quant(q: Any) -> Quant | None:
        if q is None or not q.ScaleLength():
            return None
        scale = tuple(float(s) for s in q.ScaleAsNumpy())
        zps = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q.ZeroPointLength() else ()
        zero_point = zps if len(zps) == len(scale) else (zps[:1] or (0,)) * len(scale)
        return Quant(scale=scale, zero_point=zero_point, axis=int(q.QuantizedDimension()))

    def check_activations(
        self,
        raw_ops: list,
        tensors: dict[int, Tensor],
        graph_inputs: tuple[int, ...],
        graph_outputs: tuple[int, ...],
    ) -> None:
        producer: dict[int, int] = {}
        consumers: dict[int, list[int]] = {}
        for i, (_, ins, outs, _) in enumerate(raw_ops):
            for t in outs:
                producer[t] = i
            for t in ins:
                if t >= 0:
                    consumers.setdefault(t, []).append(i)
        order = [*graph_inputs, *(t for _, _, outs, _ in raw_ops for t in outs)]
        for tid in dict.fromkeys(t for t in order if t >= 0):
            t = tensors[tid]
            if t.dtype == "int8":
                if t.quant is None:
                    raise self.fail(f"int8 {_tensor_desc(t)} has no quantization parameters")
                continue
            index_op = raw_ops[producer[tid]][0] if tid in producer else None
            if index_op in INDEX_OPS:
                if t.dtype == "int32":
                    continue
                raise self.fail(
                    f"{index_op} output {_tensor_desc(t)} is {t.dtype}: TFLite Micro's "
                    f"{index_op} writes int32 indices only"
                )
            made_by = (
                f"output of {describe(raw_ops[producer[tid]][0], producer[tid])}"
                if tid in producer
                else "graph input"
            )
            if t.dtype == "float32":
                users = [raw_ops[c][0] for c in consumers.get(tid, [])]
                quantized_input = tid in graph_inputs and tid not in producer
                quantized_input = quantized_input and all(u == "QUANTIZE" for u in users)
                dequantized_output = (
                    tid in graph_outputs
                    and tid in producer
                    and raw_ops[producer[tid]][0] == "DEQUANTIZE"
                    and not users
                )
                if quantized_input or dequantized_output:
                    continue
                raise self.fail(
                    f"float activations inside the graph are not supported: {_tensor_desc(t)} "
                    f"({made_by}); only a float model input consumed by QUANTIZE or a float "
                    "output produced by DEQUANTIZE is allowed"
                )
            if t.dtype == "int16":
                raise self.fail(
                    f"int16 activations (16x8 quantization) are not supported: "
                    f"{_tensor_desc(t)} ({made_by})"
                )
            raise self.fail(
                f"{t.dtype} activations are not supported (int8 only): {_tensor_desc(t)} "
                f"({made_by})"
            )

    # ---- operator options ------------------------------------------------------------

    def options(self, op: Any, cls: type, index: int, kind: str, required: bool = True) -> Any:
        table = op.BuiltinOptions()
        if table is None:
            if required:
                raise self.fail(f"{describe(kind, index)} has no options")
            return None
        opts = cls()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def activation(self, code: int, index: int, kind: str) -> str:
        act = _ACTIVATIONS.get(code, f"code {code}")
        if act not in _CLAMP_ACTIVATIONS:
            raise self.fail(f"unsupported fused activation {act} on {describe(kind, index)}")
        return act

    def constant_ints(self, tid: int, tensors: dict[int, Tensor]) -> list[int] | None:
        t = tensors[tid]
        if t.data is None:
            return None
        dtype = {"int32": "<i4", "int64": "<i8"}.get(t.dtype)
        if dtype is None or not t.is_constant:
            raise self.fail(f"{_tensor_desc(t)} should be a constant int32 tensor")
        return [int(v) for v in np.frombuffer(t.data, dtype=dtype)]

    def window_padding(
        self,
        code: int,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        kernel: tuple[int, int],
        stride: tuple[int, int],
        dilation: tuple[int, int],
        where: str,
    ) -> Padding:
        """SAME/VALID as explicit padding, checked against the output's height and width."""
        if len(in_shape) != 4 or len(out_shape) != 4:
            raise self.fail(f"{where}: expected 4-D NHWC tensors, got {in_shape} -> {out_shape}")
        if min(*stride, *dilation, *kernel) < 1:
            raise self.fail(f"{where}: stride, dilation and kernel must be at least 1")
        if code == tflite.Padding.SAME:
            top, bottom = same_padding(in_shape[1], kernel[0], stride[0], dilation[0])
            left, right = same_padding(in_shape[2], kernel[1], stride[1], dilation[1])
            padding = Padding(top, bottom, left, right)
        elif code == tflite.Padding.VALID:
            padding = Padding()
        else:
            raise self.fail(f"{where}: unknown padding code {code}")
        expected = (
            conv_out_size(
                in_shape[1] + padding.top + padding.bottom, kernel[0], stride[0], dilation[0]
            ),
            conv_out_size(
                in_shape[2] + padding.left + padding.right, kernel[1], stride[1], dilation[1]
            ),
        )
        if expected != out_shape[1:3]:
            raise self.fail(
                f"{where}: output {out_shape} does not match input {in_shape} with kernel "
                f"{kernel}, stride {stride}, dilation {dilation}"
            )
        return padding

    def params(
        self,
        index: int,
        kind: str,
        op: Any,
        ins: tuple[int, ...],
        outs: tuple[int, ...],
        tensors: dict[int, Tensor],
    ) -> Any:
        where = describe(kind, index)
        in_shape = tensors[ins[0]].shape if ins and ins[0] >= 0 else ()
        out_shape = tensors[outs[0]].shape if outs and outs[0] >= 0 else ()

        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            depthwise = kind == "DEPTHWISE_CONV_2D"
            cls = tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions
            o = self.options(op, cls, index, kind)
            filter_shape = tensors[ins[1]].shape
            if len(filter_shape) != 4:
                raise self.fail(f"{where}: filter shape {filter_shape} is not 4-D")
            stride = (o.StrideH(), o.StrideW())
            dilation = (o.DilationHFactor(), o.DilationWFactor())
            padding = self.window_padding(
                o.Padding(), in_shape, out_shape, filter_shape[1:3], stride, dilation, where
            )
            act = self.activation(o.FusedActivationFunction(), index, kind)
            if not depthwise:
                return Conv2DParams(stride, dilation, padding, act)
            # The kernels use channels_out / channels_in; old converters wrote 0 here.
            if out_shape[3] % in_shape[3]:
                raise self.fail(f"{where}: {out_shape[3]} output channels for {in_shape[3]} in")
            return DepthwiseParams(stride, dilation, padding, act, out_shape[3] // in_shape[3])

        if kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            o = self.options(op, tflite.Pool2DOptions, index, kind)
            size = (o.FilterHeight(), o.FilterWidth())
            stride = (o.StrideH(), o.StrideW())
            padding = self.window_padding(
                o.Padding(), in_shape, out_shape, size, stride, (1, 1), where
            )
            act = self.activation(o.FusedActivationFunction(), index, kind)
            return PoolParams(size, stride, padding, act)

        if kind == "FULLY_CONNECTED":
            o = self.options(op, tflite.FullyConnectedOptions, index, kind, required=False)
            if o is None:
                return FullyConnectedParams()
            if o.WeightsFormat() != 0:
                raise self.fail(f"{where}: shuffled weights format is not supported")
            act = self.activation(o.FusedActivationFunction(), index, kind)
            return FullyConnectedParams(act, bool(o.KeepNumDims()))

        if kind in ("ADD", "SUB", "MUL"):
            cls = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions, "MUL": tflite.MulOptions}
            o = self.options(op, cls[kind], index, kind, required=False)
            act = "NONE" if o is None else self.activation(o.FusedActivationFunction(), index, kind)
            return ElementwiseParams(act)

        if kind in INDEX_OPS:
            axis_tensor = tensors[ins[1]]
            if axis_tensor.dtype != "int32":
                raise self.fail(
                    f"{where}: axis {_tensor_desc(axis_tensor)} is {axis_tensor.dtype}; "
                    f"TFLite Micro's {kind} takes an int32 axis"
                )
            axes = self.constant_ints(ins[1], tensors)
            if axes is None or len(axes) != 1:
                raise self.fail(f"{where}: the axis tensor must hold one constant axis")
            rank = len(in_shape)
            if not -rank <= axes[0] < rank:
                raise self.fail(f"{where}: axis {axes[0]} out of range for rank {rank}")
            return self.reduce_params(in_shape, out_shape, (axes[0] % rank,), False, where)

        if kind == "LEAKY_RELU":
            o = self.options(op, tflite.LeakyReluOptions, index, kind, required=False)
            return LeakyReluParams(float(o.Alpha()) if o is not None else 0.0)

        if kind in REDUCER_OPS:
            axis_tensor = tensors[ins[1]]
            if axis_tensor.dtype != "int32":
                raise self.fail(
                    f"{where}: axis {_tensor_desc(axis_tensor)} is {axis_tensor.dtype}; "
                    f"TFLite Micro's {kind} takes an int32 axis"
                )
            o = self.options(op, tflite.ReducerOptions, index, kind, required=False)
            keep_dims = bool(o.KeepDims()) if o is not None else False
            rank = len(in_shape)
            axes = self.constant_ints(ins[1], tensors)
            if axes is None:
                axes = self.infer_mean_axes(in_shape, out_shape, tensors[ins[1]], keep_dims, where)
            if any(not -rank <= a < rank for a in axes):
                raise self.fail(f"{where}: axes {axes} out of range for rank {rank}")
            axes = sorted({a % rank for a in axes})
            return self.reduce_params(in_shape, out_shape, tuple(axes), keep_dims, where)

        if kind == "PAD":
            return self.pad_params(ins, in_shape, out_shape, tensors, where)

        if kind == "SOFTMAX":
            o = self.options(op, tflite.SoftmaxOptions, index, kind, required=False)
            return SoftmaxParams(float(o.Beta()) if o is not None else 1.0)

        if kind == "CONCATENATION":
            o = self.options(op, tflite.ConcatenationOptions, index, kind)
            act = self.activation(o.FusedActivationFunction(), index, kind)
            rank = len(out_shape)
            if not -rank <= o.Axis() < rank:
                raise self.fail(f"{where}: axis {o.Axis()} out of range for rank {rank}")
            return ConcatParams(o.Axis() % rank, act)

        if kind == "RESIZE_NEAREST_NEIGHBOR":
            o = self.options(op, tflite.ResizeNearestNeighborOptions, index, kind, required=False)
            if o is None:
                return ResizeParams()
            return ResizeParams(bool(o.AlignCorners()), bool(o.HalfPixelCenters()))

        if kind == "TRANSPOSE":
            perm = self.constant_ints(ins[1], tensors)
            if perm is None:
                raise self.fail(f"{where}: the permutation tensor has no data")
            if sorted(perm) != list(range(len(in_shape))):
                raise self.fail(f"{where}: {perm} is not a permutation of rank {len(in_shape)}")
            return TransposeParams(tuple(perm))

        if kind in MOVEMENT_OPS:
            try:
                return self.movement_params(index, kind, op, ins, outs, tensors)
            except movement.Refused as exc:
                raise self.fail(f"{where}: {exc}") from None

        # RESHAPE, SQUEEZE (the output shape says it all), LOGISTIC, HARD_SWISH, RELU, RELU6,
        # QUANTIZE, DEQUANTIZE, ELU, ABS, PRELU, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ADD_N.
        return NoParams()

    def reduce_params(
        self,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        axes: tuple[int, ...],
        keep_dims: bool,
        where: str,
    ) -> ReduceParams:
        """The reduction's axes, checked against the output: it holds the kept extents."""
        kept = [d for j, d in enumerate(in_shape) if j not in axes]
        if math.prod(kept) != math.prod(out_shape):
            raise self.fail(
                f"{where}: output {list(out_shape)} does not hold {list(in_shape)} reduced over"
                f" axes {list(axes)}"
            )
        return ReduceParams(axes, keep_dims)

    def infer_mean_axes(
        self,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        axes_tensor: Tensor,
        keep_dims: bool,
        where: str,
    ) -> list[int]:
        """Axes of a graph-only model's MEAN (its axis tensor was emptied), from shapes."""
        count = axes_tensor.shape[0] if axes_tensor.shape else 1
        rank = len(in_shape)

        def result(axes: tuple[int, ...]) -> tuple[int, ...]:
            if keep_dims:
                return tuple(1 if j in axes else d for j, d in enumerate(in_shape))
            return tuple(d for j, d in enumerate(in_shape) if j not in axes)

        fits = [c for c in combinations(range(rank), count) if result(c) == tuple(out_shape)]
        if len(fits) > 1 and (1, 2) in fits and rank == 4:
            fits = [(1, 2)]  # keras global average pooling: the spatial axes of NHWC
        if len(fits) != 1:
            raise self.fail(f"{where}: the axis tensor has no data and shapes do not fix it")
        self.inferred["MEAN axes"] += 1
        return list(fits[0])

    def pad_params(
        self,
        ins: tuple[int, ...],
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        tensors: dict[int, Tensor],
        where: str,
    ) -> PadParams:
        if len(in_shape) != 4 or len(out_shape) != 4:
            raise self.fail(f"{where}: only 4-D NHWC PAD is supported, got {in_shape}")
        values = self.constant_ints(ins[1], tensors)
        if values is None:
            # Graph-only model: the amounts are gone; split each total like SAME does. Only
            # planning uses these files, and the planner needs the sizes, not the split.
            totals = [o - i for i, o in zip(in_shape, out_shape, strict=True)]
            if min(totals) < 0:
                raise self.fail(f"{where}: output {out_shape} smaller than input {in_shape}")
            values = [v for t in totals for v in (t // 2, t - t // 2)]
            self.inferred["PAD paddings"] += 1
        if len(values) != 8:
            raise self.fail(f"{where}: paddings should be 4x2, got {len(values)} values")
        pairs = [(values[2 * j], values[2 * j + 1]) for j in range(4)]
        if min(values) < 0:
            raise self.fail(f"{where}: negative paddings {pairs}")
        if pairs[0] != (0, 0):
            raise self.fail(f"{where}: pads the batch axis ({pairs}); not supported")
        expected = tuple(d + sum(p) for d, p in zip(in_shape, pairs, strict=True))
        if expected != tuple(out_shape):
            raise self.fail(
                f"{where}: paddings {pairs} turn {in_shape} into {expected}, not {out_shape}"
            )
        return PadParams(Padding(*pairs[1], *pairs[2]), pairs[3])

    # ---- data movement and resampling -----------------------------------------------------------

    def movement_params(
        self,
        index: int,
        kind: str,
        op: Any,
        ins: tuple[int, ...],
        outs: tuple[int, ...],
        tensors: dict[int, Tensor],
    ) -> Any:
        """Params of a MOVEMENT_OPS operator (rip.frontend.movement); raises Refused."""

        def shape(t: int) -> tuple[int, ...]:
            return tensors[t].shape

        def ints(t: int) -> list[int]:
            values = self.constant_ints(t, tensors)
            if values is None:
                raise movement.Refused(f"tensor {t} {tensors[t].name!r} has no data")
            return values

        def pairs(t: int, rank: int) -> tuple[tuple[int, int], ...]:
            v = ints(t)
            if len(v) != 2 * rank:
                raise movement.Refused(f"{len(v)} padding values for rank {rank}")
            return tuple((v[2 * k], v[2 * k + 1]) for k in range(rank))

        x, y = ins[0], outs[0]
        if kind == "EXPAND_DIMS":
            if math.prod(shape(x)) != math.prod(shape(y)):
                raise movement.Refused(f"{list(shape(x))} and {list(shape(y))} differ in size")
            return NoParams()
        if kind == "SLICE":
            return movement.slice_(shape(x), ints(ins[1]), ints(ins[2]), shape(y))
        if kind == "STRIDED_SLICE":
            o = self.options(op, tflite.StridedSliceOptions, index, kind, required=False)
            masks: tuple[int, int, int] = (
                (o.BeginMask(), o.EndMask(), o.ShrinkAxisMask()) if o else (0, 0, 0)
            )
            if o is not None and (o.EllipsisMask() or o.NewAxisMask() or o.Offset()):
                raise movement.Refused(
                    "ellipsis or new-axis masks or offset (TFLite Micro ignores them)"
                )
            return movement.strided_slice(
                shape(x), ints(ins[1]), ints(ins[2]), ints(ins[3]), *masks, shape(y)
            )
        out_shapes = [shape(t) for t in outs]
        if kind == "SPLIT":
            axis, data = ints(ins[0]), shape(ins[1])
            rank = len(data)
            if len(axis) != 1 or not -rank <= axis[0] < rank:
                raise movement.Refused(f"axis {axis} for rank {rank}")
            n = len(outs)
            if data[axis[0] % rank] % n:
                raise movement.Refused(f"axis of size {data[axis[0] % rank]} into {n} pieces")
            return movement.split(data, axis[0], [data[axis[0] % rank] // n] * n, out_shapes)
        if kind == "SPLIT_V":
            axis = ints(ins[2])
            if len(axis) != 1:
                raise movement.Refused(f"axis {axis}")
            return movement.split(shape(x), axis[0], ints(ins[1]), out_shapes)
        if kind == "UNPACK":
            o = self.options(op, tflite.UnpackOptions, index, kind)
            return movement.unpack(shape(x), o.Axis(), o.Num(), out_shapes)
        if kind == "PACK":
            o = self.options(op, tflite.PackOptions, index, kind)
            rank = len(shape(y))
            if not -rank <= o.Axis() < rank:
                raise movement.Refused(f"axis {o.Axis()} out of range for rank {rank}")
            axis = o.Axis() % rank
            want = (*shape(x)[:axis], len(ins), *shape(x)[axis:])
            if any(shape(t) != shape(x) for t in ins) or want != shape(y):
                raise movement.Refused(f"inputs of {list(shape(x))} do not pack into {shape(y)}")
            return PackParams(axis)
        if kind in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"):
            cls = tflite.DepthToSpaceOptions if kind[0] == "D" else tflite.SpaceToDepthOptions
            b = self.options(op, cls, index, kind).BlockSize()
            (n, h, w, c), up = nhwc4(shape(x)), kind == "DEPTH_TO_SPACE"
            want = (n, h * b, w * b, c // (b * b)) if up else (n, h // b, w // b, c * b * b)
            exact = c % (b * b) == 0 if up else h % b == 0 and w % b == 0
            if b < 1 or not exact or len(shape(x)) != 4 or want != shape(y):
                raise movement.Refused(f"block {b} turns {list(shape(x))} into {list(want)}")
            return BlockParams(b)
        if kind == "GATHER":
            o = self.options(op, tflite.GatherOptions, index, kind, required=False)
            g_axis, batch_dims = (o.Axis(), o.BatchDims()) if o is not None else (0, 0)
            return movement.gather(
                shape(x), g_axis, batch_dims, shape(ins[1]), ints(ins[1]), shape(y)
            )
        if kind in ("PADV2", "MIRROR_PAD"):
            pads = pairs(ins[1], len(shape(x)))
            want = tuple(d + lo + hi for d, (lo, hi) in zip(shape(x), pads, strict=True))
            if min(v for p in pads for v in p) < 0 or want != shape(y) or len(want) > 4:
                raise movement.Refused(f"paddings {pads} turn {list(shape(x))} into {list(want)}")
            if kind == "PADV2":
                value = None
                if len(ins) > 2 and ins[2] >= 0:
                    v = tensors[ins[2]]
                    if v.dtype != "int8" or v.data is None or len(v.data) != 1:
                        raise movement.Refused("constant_values is not one constant int8 value")
                    value = int(np.frombuffer(v.data, dtype=np.int8)[0])
                return PadValueParams(pads, value)
            o = self.options(op, tflite.MirrorPadOptions, index, kind, required=False)
            symmetric = o is not None and o.Mode() == tflite.MirrorPadMode.SYMMETRIC
            limit = 0 if symmetric else 1  # REFLECT may not repeat the edge
            if any(p > d - limit for d, pair in zip(shape(x), pads, strict=True) for p in pair):
                raise movement.Refused(f"paddings {pads} exceed the input {list(shape(x))}")
            return MirrorPadParams(pads, symmetric)
        if kind in ("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"):
            block, pads = ints(ins[1]), pairs(ins[2], 2)
            if len(shape(x)) != 4 or len(block) != 2 or min(block) < 1:
                raise movement.Refused(f"block {block} on {list(shape(x))}: 4-D NHWC only")
            return movement.space_batch(kind, shape(x), (block[0], block[1]), pads, shape(y))
        if kind == "RESIZE_BILINEAR":
            o = self.options(op, tflite.ResizeBilinearOptions, index, kind, required=False)
            if len(shape(x)) != 4 or shape(x)[::3] != shape(y)[::3]:
                raise movement.Refused(f"{list(shape(x))} -> {list(shape(y))}: 4-D, same N, C")
            if o is None:
                return ResizeParams()
            if o.AlignCorners() and o.HalfPixelCenters():
                raise movement.Refused("align_corners with half_pixel_centers")
            return ResizeParams(bool(o.AlignCorners()), bool(o.HalfPixelCenters()))
        if kind == "TRANSPOSE_CONV":
            return self.transpose_conv_params(index, op, ins, outs, tensors)
        if kind == "L2_NORMALIZATION":
            o = self.options(op, tflite.L2NormOptions, index, kind, required=False)
            act = "NONE" if o is None else self.activation(o.FusedActivationFunction(), index, kind)
            if act != "NONE" or shape(x) != shape(y) or not 1 <= len(shape(x)) <= 4:
                raise movement.Refused(f"{list(shape(x))} -> {list(shape(y))}, fused {act}")
            return ElementwiseParams(act)
        raise movement.Refused("no parameters")  # pragma: no cover (MOVEMENT_OPS is complete)

    def transpose_conv_params(
        self,
        index: int,
        op: Any,
        ins: tuple[int, ...],
        outs: tuple[int, ...],
        tensors: dict[int, Tensor],
    ) -> Conv2DParams:
        """TRANSPOSE_CONV (inputs: output shape, weights [O, KH, KW, I], input, bias):
        padding as TFLite Micro's Prepare computes it, SAME/VALID of the convolution whose
        transpose this is (from the output's size); only the top and left amounts are used."""
        kind = "TRANSPOSE_CONV"
        o = self.options(op, tflite.TransposeConvOptions, index, kind)
        x, w, y = tensors[ins[2]].shape, tensors[ins[1]].shape, tensors[outs[0]].shape
        if len(x) != 4 or len(w) != 4 or len(y) != 4:
            raise movement.Refused(f"needs 4-D tensors, got {list(x)}, {list(w)}, {list(y)}")
        if w[3] != x[3] or w[0] != y[3] or x[0] != y[0]:
            raise movement.Refused(f"weights {list(w)} do not map {list(x)} to {list(y)}")
        stride = (o.StrideH(), o.StrideW())
        if min(stride) < 1:
            raise movement.Refused(f"stride {stride}")
        shape = self.constant_ints(ins[0], tensors)
        if shape is not None and tuple(shape) != tuple(y):
            raise movement.Refused(f"output_shape {shape} differs from the output {list(y)}")
        if o.Padding() == tflite.Padding.SAME:
            top = same_padding(y[1], w[1], stride[0])[0]
            left = same_padding(y[2], w[2], stride[1])[0]
        elif o.Padding() == tflite.Padding.VALID:
            top = left = 0
        else:
            raise movement.Refused(f"unknown padding code {o.Padding()}")
        act = self.activation(o.FusedActivationFunction(), index, kind)
        return Conv2DParams(stride, (1, 1), Padding(top, 0, left, 0), act)


def nhwc4(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """``shape`` as (n, h, w, c) when 4-D, else zeros (the caller refuses it)."""
    return (shape[0], shape[1], shape[2], shape[3]) if len(shape) == 4 else (0, 0, 0, 0)
