"""The model validator: every structural promise the rest of rip relies on, checked once on
the raw flatbuffer before anything reads the graph (in the spirit of the flatbuffer
verifier, plus TFLite's own invariants).

``validate_model`` runs from ``reader.read_model``. It checks, and refuses with one line
naming the file, the operator index and the tensor (a ``ModelError``, exit code 2):

- the flatbuffer itself: every table, vtable, vector and string the reader touches lies
  inside the file (a truncated or corrupt file is refused, never half read);
- buffers: buffer 0 is the empty sentinel; a tensor's buffer index is in the table;
  activations (graph inputs, operator outputs) carry no data; a constant's data has exactly
  the bytes its shape and type need; external (offset, size) buffers lie inside the file;
- indices: graph inputs and outputs, operator inputs and outputs and opcode indices are in
  range; -1 only as an optional operator input (the bias of CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED);
- types: every referenced tensor's type is one rip knows (int4 and float16 constants, which
  TFLite Micro can run, are refused by name);
- quantization: scales finite; activations per tensor with scale > 0 and normal (no zero,
  negative, NaN, inf or denormal scale); zero points inside the type's range (int8:
  [-128, 127]); per-channel scale and zero point counts match the quantized axis;
- the graph: at least one input, output and operator; every operator has outputs; no
  tensor produced twice or produced while being a graph input; every operator reads only
  graph inputs, constants and outputs of earlier operators (no cycle, no out-of-order read,
  no RESHAPE reading its own output, so aliases never loop); a graph output is never a
  constant; extra subgraphs are not empty;
- operators rip supports: input and output counts, the options table's type, and shapes
  consistent with the operator's parameters and weights (channels, depth multiplier,
  fully connected weights, broadcasting, concatenation, element counts of RESHAPE,
  same-shape ops like SOFTMAX);
- sizes: no activation (and no set of activations alive together) over
  ``HOST_LIMIT_BYTES``, no window over ``MAX_KERNEL_WORK`` (see rip.core.limits).

Unsupported operators are left to the reader, which names them (and recurrent models).
``check_limits`` is the same size check on a (rewritten) IR graph, for a driver that wants
a tighter limit than the host's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import tflite
from flatbuffers.table import Table

from rip.core.errors import ModelError
from rip.core.limits import HOST_LIMIT_BYTES, MAX_EXTENT, MAX_KERNEL_WORK, kernel_work
from rip.frontend.ir import DTYPE_BYTES, Graph
from rip.frontend.liveness import live_bytes

_TYPE_NAMES = {
    getattr(tflite.TensorType, n): n.lower() for n in vars(tflite.TensorType) if n.isupper()
}
_OPTION_NAMES = {
    getattr(tflite.BuiltinOptions, n): n
    for n in vars(tflite.BuiltinOptions)
    if not n.startswith("_") and isinstance(getattr(tflite.BuiltinOptions, n), int)
}
_ZERO_POINT_RANGE = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-32768, 32767),
}
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


# Per supported operator: (min inputs, max inputs or None, optional input positions,
# accepted options table besides NONE, options required).
_OP_SPECS: dict[str, tuple[int, int | None, frozenset[int], str | None, bool]] = {
    "CONV_2D": (2, 3, frozenset({2}), "Conv2DOptions", True),
    "DEPTHWISE_CONV_2D": (2, 3, frozenset({2}), "DepthwiseConv2DOptions", True),
    "FULLY_CONNECTED": (2, 3, frozenset({2}), "FullyConnectedOptions", False),
    "ADD": (2, 2, frozenset(), "AddOptions", False),
    "SUB": (2, 2, frozenset(), "SubOptions", False),
    "MUL": (2, 2, frozenset(), "MulOptions", False),
    "AVERAGE_POOL_2D": (1, 1, frozenset(), "Pool2DOptions", True),
    "MAX_POOL_2D": (1, 1, frozenset(), "Pool2DOptions", True),
    "MEAN": (2, 2, frozenset(), "ReducerOptions", False),
    "PAD": (2, 2, frozenset(), "PadOptions", False),
    "RESHAPE": (1, 2, frozenset(), "ReshapeOptions", False),
    "SQUEEZE": (1, 1, frozenset(), "SqueezeOptions", False),
    "SOFTMAX": (1, 1, frozenset(), "SoftmaxOptions", False),
    "LOGISTIC": (1, 1, frozenset(), None, False),
    "HARD_SWISH": (1, 1, frozenset(), "HardSwishOptions", False),
    "RELU": (1, 1, frozenset(), None, False),
    "RELU6": (1, 1, frozenset(), None, False),
    "CONCATENATION": (1, None, frozenset(), "ConcatenationOptions", True),
    "RESIZE_NEAREST_NEIGHBOR": (2, 2, frozenset(), "ResizeNearestNeighborOptions", False),
    "TRANSPOSE": (2, 2, frozenset(), "TransposeOptions", False),
    "QUANTIZE": (1, 1, frozenset(), "QuantizeOptions", False),
    "DEQUANTIZE": (1, 1, frozenset(), "DequantizeOptions", False),
    "SUM": (2, 2, frozenset(), "ReducerOptions", False),
    "REDUCE_MAX": (2, 2, frozenset(), "ReducerOptions", False),
    "REDUCE_MIN": (2, 2, frozenset(), "ReducerOptions", False),
    "ARG_MAX": (2, 2, frozenset(), "ArgMaxOptions", False),
    "ARG_MIN": (2, 2, frozenset(), "ArgMinOptions", False),
    "LEAKY_RELU": (1, 1, frozenset(), "LeakyReluOptions", False),
    "TANH": (1, 1, frozenset(), None, False),
    "ELU": (1, 1, frozenset(), None, False),
    "LOG_SOFTMAX": (1, 1, frozenset(), "LogSoftmaxOptions", False),
    "ABS": (1, 1, frozenset(), "AbsOptions", False),
    "PRELU": (2, 2, frozenset(), None, False),
    "MAXIMUM": (2, 2, frozenset(), "MaximumMinimumOptions", False),
    "MINIMUM": (2, 2, frozenset(), "MaximumMinimumOptions", False),
    "SQUARED_DIFFERENCE": (2, 2, frozenset(), "SquaredDifferenceOptions", False),
    "ADD_N": (2, None, frozenset(), "AddNOptions", False),
}
# ---- data movement and resampling ---------------------------------------------------------------
_OP_SPECS.update(
    {
        "STRIDED_SLICE": (4, 4, frozenset(), "StridedSliceOptions", False),
        "SLICE": (3, 3, frozenset(), "SliceOptions", False),
        "SPLIT": (2, 2, frozenset(), "SplitOptions", False),
        "SPLIT_V": (3, 3, frozenset(), "SplitVOptions", False),
        "PACK": (1, None, frozenset(), "PackOptions", True),
        "UNPACK": (1, 1, frozenset(), "UnpackOptions", True),
        "EXPAND_DIMS": (2, 2, frozenset(), "ExpandDimsOptions", False),
        "DEPTH_TO_SPACE": (1, 1, frozenset(), "DepthToSpaceOptions", True),
        "SPACE_TO_DEPTH": (1, 1, frozenset(), "SpaceToDepthOptions", True),
        "GATHER": (2, 2, frozenset(), "GatherOptions", False),
        "PADV2": (2, 3, frozenset({2}), "PadV2Options", False),
        "MIRROR_PAD": (2, 2, frozenset(), "MirrorPadOptions", False),
        "SPACE_TO_BATCH_ND": (3, 3, frozenset(), "SpaceToBatchNDOptions", False),
        "BATCH_TO_SPACE_ND": (3, 3, frozenset(), "BatchToSpaceNDOptions", False),
        "RESIZE_BILINEAR": (2, 2, frozenset(), "ResizeBilinearOptions", False),
        "L2_NORMALIZATION": (1, 1, frozenset(), "L2NormOptions", False),
        "TRANSPOSE_CONV": (3, 4, frozenset({3}), "TransposeConvOptions", True),
    }
)
# Operators with one output per piece (their shapes are checked by rip.frontend.movement).
_MULTI_OUTPUT_OPS = frozenset({"SPLIT", "SPLIT_V", "UNPACK"})

_SAME_SHAPE_OPS = frozenset(
    {
        "SOFTMAX",
        "LOGISTIC",
        "HARD_SWISH",
        "RELU",
        "RELU6",
        "QUANTIZE",
        "DEQUANTIZE",
        "LEAKY_RELU",
        "TANH",
        "ELU",
        "ABS",
        "LOG_SOFTMAX",
    }
)
_BROADCAST_OPS = frozenset(
    {"ADD", "SUB", "MUL", "PRELU", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"}
)
_REDUCE_OPS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "ARG_MAX", "ARG_MIN"})
_WINDOW_OPS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"})


class _Corrupt(Exception):
    """A flatbuffer structure that points outside the file."""


def validate_model(buf: bytes, label: str) -> None:
    """Refuse, with one ``ModelError`` line naming ``label``, the operator index and the
    tensor, any model that breaks the invariants listed in the module docstring."""
    try:
        _Validator(buf, label).run()
    except _Corrupt as exc:
        raise ModelError(f"{label}: truncated or corrupt TFLite file ({exc})") from None


def check_limits(graph: Graph, limit_bytes: int, label: str | None = None) -> None:
    """Refuse a graph (e.g. after rewriting) with an activation, or a set of activations
    alive at one step, larger than ``limit_bytes``: the lower bound of any plan's arena."""
    where = label or graph.name
    for tid in graph.activations():
        t = graph.tensors[tid]
        if t.nbytes > limit_bytes:
            raise ModelError(
                f"{where}: tensor {tid} {t.name!r} needs {t.nbytes:,} B, more than the "
                f"{limit_bytes:,} B limit"
            )
    live = live_bytes(graph) if graph.operators else []
    if live and max(live) > limit_bytes:
        step = live.index(max(live))
        op = graph.operators[step]
        raise ModelError(
            f"{where}: operator {op.source_index} ({op.kind}) needs {max(live):,} B of live "
            f"activations, more than the {limit_bytes:,} B limit"
        )


def _shape_elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for x, y in zip((1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(out)


class _Validator:
    def __init__(self, buf: bytes, label: str) -> None:
        self.buf = buf
        self.size = len(buf)
        self.label = label

    # ---- messages ---------------------------------------------------------------------

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.label}: {message}")

    def tname(self, tid: int) -> str:
        if 0 <= tid < self.n_tensors:
            name = (self.sub.Tensors(tid).Name() or b"").decode(errors="replace")
            return f"tensor {tid} {name!r}"
        return f"tensor {tid}"

    def op_fail(self, i: int, tid: int | None, message: str) -> ModelError:
        where = f"operator {i} ({self.kinds[i]})"
        if tid is not None:
            where += f", {self.tname(tid)}"
        return self.fail(f"{where}: {message}")

    # ---- flatbuffer structure -------------------------------------------------------------

    def table(self, tab: Table, what: str) -> None:
        """The table at ``tab.Pos``, its vtable and every field slot lie inside the file."""
        pos = tab.Pos
        if not 0 <= pos <= self.size - 4:
            raise _Corrupt(f"{what} starts outside the file")
        vtable = pos - int.from_bytes(self.buf[pos : pos + 4], "little", signed=True)
        if not 0 <= vtable <= self.size - 4:
            raise _Corrupt(f"{what}'s vtable lies outside the file")
        vt_size = int.from_bytes(self.buf[vtable : vtable + 2], "little")
        t_size = int.from_bytes(self.buf[vtable + 2 : vtable + 4], "little")
        if vt_size < 4 or vt_size % 2 or vtable + vt_size > self.size or pos + t_size > self.size:
            raise _Corrupt(f"{what}'s vtable or fields lie outside the file")
        for slot in range(vtable + 4, vtable + vt_size, 2):
            off = int.from_bytes(self.buf[slot : slot + 2], "little")
            if off and off + 1 > t_size:
                raise _Corrupt(f"{what} has a field past its end")

    def vector(self, tab: Table, slot: int, elem: int, what: str) -> int:
        """Length of the vector in field ``slot`` (0 when absent), checked to fit the file."""
        o = tab.Offset(slot)
        if not o:
            return 0
        at = tab.Pos + o
        if at + 4 > self.size:
            raise _Corrupt(f"{what} offset lies outside the file")
        start = at + int.from_bytes(self.buf[at : at + 4], "little")
        if start + 4 > self.size:
            raise _Corrupt(f"{what} lies outside the file")
        n = int.from_bytes(self.buf[start : start + 4], "little")
        if start + 4 + n * elem > self.size:
            raise _Corrupt(f"{what} ({n} entries) runs past the end of the file")
        return n

    def sub_table(self, tab: Table, slot: int, what: str) -> None:
        """The table referenced by field ``slot`` (if any) lies inside the file."""
        o = tab.Offset(slot)
        if o:
            at = tab.Pos + o
            if at + 4 > self.size:
                raise _Corrupt(f"{what} offset lies outside the file")
            self.table(Table(self.buf, at + int.from_bytes(self.buf[at : at + 4], "little")), what)

    def table_vector(self, tab: Table, slot: int, what: str) -> int:
        n = self.vector(tab, slot, 4, what)
        if n:
            start = tab.Vector(tab.Offset(slot))
            for j in range(n):
                at = start + 4 * j
                self.table(
                    Table(self.buf, at + int.from_bytes(self.buf[at : at + 4], "little")),
                    f"{what} entry {j}",
                )
        return n

    def structure(self, model: Any) -> None:
        self.table(model._tab, "the model table")
        mt = model._tab
        self.table_vector(mt, 6, "the operator code table")
        for j in range(model.OperatorCodesLength()):
            self.vector(model.OperatorCodes(j)._tab, 6, 1, f"operator code {j}'s name")
        n_sub = self.table_vector(mt, 8, "the subgraph table")
        self.vector(mt, 10, 1, "the description")
        n_buf = self.table_vector(mt, 12, "the buffer table")
        for j in range(n_buf):
            self.vector(model.Buffers(j)._tab, 4, 1, f"buffer {j}")
        for s in range(n_sub):
            sub = model.Subgraphs(s)
            st, what = sub._tab, f"subgraph {s}"
            n_t = self.table_vector(st, 4, f"{what}'s tensor table")
            self.vector(st, 6, 4, f"{what}'s input list")
            self.vector(st, 8, 4, f"{what}'s output list")
            n_op = self.table_vector(st, 10, f"{what}'s operator table")
            self.vector(st, 12, 1, f"{what}'s name")
            if s:
                continue  # other subgraphs: only their tables are read
            for t in range(n_t):
                tt = sub.Tensors(t)._tab
                self.vector(tt, 4, 4, f"tensor {t}'s shape")
                self.vector(tt, 10, 1, f"tensor {t}'s name")
                self.vector(tt, 18, 4, f"tensor {t}'s shape signature")
                self.sub_table(tt, 12, f"tensor {t}'s quantization")
                q = sub.Tensors(t).Quantization()
                if q is not None:
                    self.vector(q._tab, 8, 4, f"tensor {t}'s scales")
                    self.vector(q._tab, 10, 8, f"tensor {t}'s zero points")
            for i in range(n_op):
                ot = sub.Operators(i)._tab
                self.vector(ot, 6, 4, f"operator {i}'s inputs")
                self.vector(ot, 8, 4, f"operator {i}'s outputs")
                self.sub_table(ot, 12, f"operator {i}'s options")

    # ---- the checks ---------------------------------------------------------------------

    def run(self) -> None:
        model = tflite.Model.GetRootAsModel(self.buf, 0)
        self.structure(model)
        self.model = model
        if model.SubgraphsLength() < 1:
            raise self.fail("the model has no subgraph")
        for s in range(1, model.SubgraphsLength()):
            extra = model.Subgraphs(s)
            if not extra.OperatorsLength() or not extra.OutputsLength():
                raise self.fail(f"subgraph {s} is empty (no operators or no outputs)")
        self.sub = sub = model.Subgraphs(0)
        self.n_tensors = sub.TensorsLength()
        self.n_buffers = model.BuffersLength()
        if self.n_buffers and model.Buffers(0).DataLength():
            raise self.fail(
                f"buffer 0 holds {model.Buffers(0).DataLength()} bytes; TFLite reserves it "
                "as the empty buffer of every activation"
            )
        codes = [
            max(c.BuiltinCode(), c.DeprecatedBuiltinCode())
            for c in (model.OperatorCodes(j) for j in range(model.OperatorCodesLength()))
        ]
        self.ops: list[tuple[Any, tuple[int, ...], tuple[int, ...]]] = []
        self.kinds: list[str] = []
        for i in range(sub.OperatorsLength()):
            op = sub.Operators(i)
            if not 0 <= op.OpcodeIndex() < len(codes):
                raise self.fail(f"operator {i} has opcode index {op.OpcodeIndex()}, past the table")
            code = codes[op.OpcodeIndex()]
            self.kinds.append(tflite.BUILTIN_OPCODE2NAME.get(code, f"BUILTIN_{code}"))
            ins = tuple(int(v) for v in op.InputsAsNumpy()) if op.InputsLength() else ()
            outs = tuple(int(v) for v in op.OutputsAsNumpy()) if op.OutputsLength() else ()
            self.ops.append((op, ins, outs))
        self.indices()
        self.graph_order()
        self.tensors()
        for i in range(len(self.ops)):
            if self.kinds[i] in _OP_SPECS:
                self.operator(i)
        self.live_set()

    def indices(self) -> None:
        sub, n = self.sub, self.n_tensors
        self.inputs = tuple(int(t) for t in sub.InputsAsNumpy()) if sub.InputsLength() else ()
        self.outputs = tuple(int(t) for t in sub.OutputsAsNumpy()) if sub.OutputsLength() else ()
        for what, ids in (("graph input", self.inputs), ("graph output", self.outputs)):
            for t in ids:
                if not 0 <= t < n:
                    past = "absent" if t == -1 else f"past the {n} tensors"
                    raise self.fail(f"{what} list refers to tensor {t} ({past})")
        if not self.inputs:
            raise self.fail("the graph has no inputs")
        if not self.outputs:
            raise self.fail("the graph has no outputs")
        if not self.ops:
            raise self.fail("the graph has no operators")
        for i, (_, ins, outs) in enumerate(self.ops):
            kind = self.kinds[i]
            if not outs:
                raise self.op_fail(i, None, "has no output tensor")
            spec = _OP_SPECS.get(kind)
            for pos, t in enumerate(ins):
                if t == -1 and (spec is None or pos in spec[2]):
                    continue
                if not 0 <= t < n:
                    raise self.op_fail(
                        i,
                        None,
                        f"input {pos} refers to tensor {t}, past the {n} tensors"
                        if t != -1
                        else f"input {pos} is -1 (absent), but {kind} needs it",
                    )
            for pos, t in enumerate(outs):
                if not 0 <= t < n:
                    raise self.op_fail(
                        i, None, f"output {pos} refers to tensor {t}, past the {n} tensors"
                    )
            if spec is not None:
                lo, hi, _, _, _ = spec
                if len(ins) < lo or (hi is not None and len(ins) > hi):
                    want = f"{lo}" if lo == hi else f"{lo} to {hi if hi is not None else 'any'}"
                    raise self.op_fail(i, None, f"has {len(ins)} inputs, {kind} takes {want}")
                if len(outs) != 1 and kind not in _MULTI_OUTPUT_OPS:
                    raise self.op_fail(i, None, f"has {len(outs)} outputs, {kind} has one")

    def graph_order(self) -> None:
        """Producers are unique and precede their readers: no cycle, no alias loop."""
        graph_inputs = set(self.inputs)
        self.producer: dict[int, int] = {}
        for i, (_, _, outs) in enumerate(self.ops):
            for t in outs:
                if t in graph_inputs:
                    raise self.op_fail(i, t, "writes a graph input")
                if t in self.producer:
                    raise self.op_fail(
                        i, t, f"writes a tensor operator {self.producer[t]} already wrote"
                    )
                self.producer[t] = i
        self.first_reader: dict[int, int] = {}
        for i, (_, ins, _) in enumerate(self.ops):
            for t in ins:
                self.first_reader.setdefault(t, i)
                j = self.producer.get(t)
                if j is None:
                    continue
                if j == i:
                    raise self.op_fail(i, t, "reads its own output (a loop)")
                if j > i:
                    raise self.op_fail(
                        i,
                        t,
                        f"reads it before operator {j} writes it (operators out of "
                        "order or a cycle)",
                    )
        for t in self.outputs:
            if t not in graph_inputs and t not in self.producer:
                raise self.fail(
                    f"graph output {self.tname(t)} is a constant (no operator writes it)"
                )
        self.activations = graph_inputs | set(self.producer)

    def tensors(self) -> None:
        referenced = set(self.inputs) | set(self.outputs)
        for _, ins, outs in self.ops:
            referenced.update(t for t in (*ins, *outs) if t >= 0)
        self.shapes: dict[int, tuple[int, ...]] = {}
        self.dtypes: dict[int, str] = {}
        for tid in sorted(referenced):
            self.tensor(tid)

    def tensor(self, tid: int) -> None:
        raw = self.sub.Tensors(tid)
        where = f"{self.tname(tid)}"
        users = self.first_user(tid)
        if users is not None:
            where = f"operator {users} ({self.kinds[users]}), {where}"
        shape = tuple(int(d) for d in raw.ShapeAsNumpy()) if raw.ShapeLength() else ()
        dtype = _TYPE_NAMES.get(raw.Type())
        if dtype is None:
            raise self.fail(f"{where}: unknown tensor type code {raw.Type()}")
        if dtype == "int4":
            raise self.fail(
                f"{where}: int4 (packed 4-bit) tensors are not supported; quantize the "
                "weights to int8"
            )
        if dtype not in DTYPE_BYTES:
            raise self.fail(f"{where}: {dtype} tensors are not supported")
        self.dtypes[tid] = dtype
        is_activation = tid in self.activations
        if any(d < 0 for d in shape):
            name = (raw.Name() or b"").decode(errors="replace")
            prefix = where.removesuffix(self.tname(tid))
            raise self.fail(
                f"{prefix}dynamic shape on tensor {tid} {name!r} (shape {list(shape)}): "
                "only static shapes are supported"
            )
        if is_activation and 0 in shape:
            raise self.fail(f"{where}: shape {list(shape)} has a zero extent")
        if any(d > MAX_EXTENT * MAX_EXTENT for d in shape):
            raise self.fail(f"{where}: shape {list(shape)} is too large")
        self.shapes[tid] = shape
        nbytes = _shape_elements(shape) * DTYPE_BYTES[dtype]
        if is_activation and nbytes > HOST_LIMIT_BYTES:
            raise self.fail(
                f"{where}: {list(shape)} {dtype} needs {nbytes:,} B, more than rip's "
                f"{HOST_LIMIT_BYTES:,} B limit for one activation"
            )
        self.buffer(tid, raw, where, is_activation, nbytes)
        self.quantization(tid, raw, where, is_activation, dtype, shape)

    def first_user(self, tid: int) -> int | None:
        return self.producer.get(tid, self.first_reader.get(tid))

    def buffer(self, tid: int, raw: Any, where: str, is_activation: bool, nbytes: int) -> None:
        index = raw.Buffer()
        if not 0 <= index < self.n_buffers:
            raise self.fail(f"{where}: buffer {index} is past the {self.n_buffers} buffers")
        buffer = self.model.Buffers(index)
        size = buffer.DataLength()
        offset, external = buffer.Offset(), buffer.Size()
        if not size and offset > 1 and external:
            if offset + external > self.size:
                raise self.fail(f"{where}: buffer {index} ends past the end of the file")
            size = external
        if is_activation and size:
            raise self.fail(
                f"{where}: an activation (graph input or operator output) carries {size} B "
                f"of constant data (buffer {index})"
            )
        if not is_activation and size and size != nbytes:
            raise self.fail(
                f"{where}: buffer {index} holds {size} B, the shape and type need {nbytes} B"
            )

    def quantization(
        self,
        tid: int,
        raw: Any,
        where: str,
        is_activation: bool,
        dtype: str,
        shape: tuple[int, ...],
    ) -> None:
        q = raw.Quantization()
        if q is None or not q.ScaleLength():
            return
        scales = q.ScaleAsNumpy().astype(np.float64)
        n = len(scales)
        if not np.isfinite(scales).all():
            raise self.fail(f"{where}: quantization scale {scales.tolist()[:4]} is not finite")
        if is_activation:
            if n != 1:
                raise self.fail(f"{where}: an activation has {n} scales (per-channel)")
            s = float(scales[0])
            if not s >= _FLOAT32_TINY:
                raise self.fail(f"{where}: quantization scale {s!r} must be positive and normal")
        else:
            # Weights may carry zero or negative per-channel scales (mcunet-in3 does, and
            # TFLite Micro runs it): only denormals are refused.
            small = scales[(scales != 0) & (np.abs(scales) < _FLOAT32_TINY)]
            if small.size:
                raise self.fail(f"{where}: denormal quantization scale {float(small[0])!r}")
        n_zp = q.ZeroPointLength()
        if n_zp not in (0, 1, n):
            raise self.fail(f"{where}: {n_zp} zero points for {n} scales")
        if n > 1:
            axis = q.QuantizedDimension()
            if not 0 <= axis < len(shape) or shape[axis] != n:
                raise self.fail(
                    f"{where}: {n} per-channel scales on axis {axis} of shape {list(shape)}"
                )
        bounds = _ZERO_POINT_RANGE.get(dtype)
        if n_zp and bounds is not None:
            zps = q.ZeroPointAsNumpy()
            lo, hi = bounds
            if int(zps.min()) < lo or int(zps.max()) > hi:
                bad = next(int(z) for z in zps if not lo <= z <= hi)
                raise self.fail(f"{where}: {dtype} zero point {bad} outside [{lo}, {hi}]")

    # ---- operators ----------------------------------------------------------------------

    def options(self, i: int) -> Any:
        op = self.ops[i][0]
        kind = self.kinds[i]
        _, _, _, name, required = _OP_SPECS[kind]
        got = op.BuiltinOptionsType()
        if got == tflite.BuiltinOptions.NONE:
            if required:
                raise self.op_fail(i, None, f"has no {name}")
            return None
        if name is None or _OPTION_NAMES.get(got) != name:
            raise self.op_fail(
                i,
                None,
                f"carries {_OPTION_NAMES.get(got, f'options type {got}')}, "
                f"{kind} takes {name or 'no options'}",
            )
        if op.BuiltinOptions() is None:
            raise self.op_fail(i, None, f"names {name} but stores no table")
        opts = getattr(tflite, name)()
        table = op.BuiltinOptions()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def operator(self, i: int) -> None:
        kind = self.kinds[i]
        _, ins, outs = self.ops[i]
        opts = self.options(i)
        out = outs[0]
        x = ins[0]
        xs, ys = self.shapes[x], self.shapes[out]

        def need(cond: bool, tid: int | None, message: str) -> None:
            if not cond:
                raise self.op_fail(i, tid, message)

        if kind in _WINDOW_OPS:
            need(len(xs) == 4, x, f"{kind} needs a 4-D NHWC input, got {list(xs)}")
            need(len(ys) == 4, out, f"{kind} needs a 4-D NHWC output, got {list(ys)}")
            need(ys[0] == xs[0], out, f"batch {ys[0]} differs from the input's {xs[0]}")
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w = ins[1]
            ws = self.shapes[w]
            need(len(ws) == 4, w, f"filter shape {list(ws)} is not 4-D")
            self.window(i, w, ws[1], ws[2], opts.DilationHFactor(), opts.DilationWFactor())
            if kind == "CONV_2D":
                need(ws[3] == xs[3], w, f"filter has {ws[3]} input channels, input {xs[3]}")
                need(ws[0] == ys[3], w, f"filter has {ws[0]} output channels, output {ys[3]}")
                channels = ws[0]
            else:
                need(ws[0] == 1, w, f"depthwise filter shape {list(ws)} must start with 1")
                need(ws[3] == ys[3], w, f"filter has {ws[3]} channels, output {ys[3]}")
                need(
                    ys[3] % xs[3] == 0,
                    out,
                    f"{ys[3]} output channels is not a multiple of {xs[3]} input channels",
                )
                mult = opts.DepthMultiplier()
                need(
                    mult in (0, ys[3] // xs[3]),
                    out,
                    f"depth multiplier {mult} contradicts {xs[3]} -> {ys[3]} channels",
                )
                channels = ys[3]
            self.bias(i, ins, channels)
        elif kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            need(ys[3] == xs[3], out, f"{ys[3]} channels, the input has {xs[3]}")
            self.window(i, None, opts.FilterHeight(), opts.FilterWidth(), 1, 1)
        elif kind == "FULLY_CONNECTED":
            w = ins[1]
            ws = self.shapes[w]
            need(len(ws) == 2, w, f"weights shape {list(ws)} is not 2-D [out, in]")
            n_in = _shape_elements(xs)
            need(
                ws[1] > 0 and n_in % ws[1] == 0,
                w,
                f"weights {list(ws)} do not fit input {list(xs)}",
            )
            need(bool(ys) and ys[-1] == ws[0], out, f"output {list(ys)} does not end in {ws[0]}")
            need(
                _shape_elements(ys) == n_in // max(ws[1], 1) * ws[0],
                out,
                f"output {list(ys)} does not hold {n_in // max(ws[1], 1)} rows of {ws[0]}",
            )
            self.bias(i, ins, ws[0])
        elif kind in _BROADCAST_OPS:
            b = self.shapes[ins[1]]
            need(
                _broadcast(xs, b) == ys,
                out,
                f"output {list(ys)} is not the broadcast of {list(xs)} and {list(b)}",
            )
        elif kind in ("RESHAPE", "SQUEEZE"):
            need(
                _shape_elements(xs) == _shape_elements(ys),
                out,
                f"{list(xs)} and {list(ys)} differ in size",
            )
        elif kind in _SAME_SHAPE_OPS:
            need(ys == xs, out, f"output {list(ys)} differs from input {list(xs)}")
        elif kind == "CONCATENATION":
            rank = len(ys)
            axis = opts.Axis()
            need(-rank <= axis < rank, out, f"axis {axis} out of range for rank {rank}")
            axis %= rank
            total = 0
            for t in ins:
                s = self.shapes[t]
                same = len(s) == rank and all(s[j] == ys[j] for j in range(rank) if j != axis)
                need(same, t, f"shape {list(s)} does not concatenate into {list(ys)}")
                total += s[axis]
            need(total == ys[axis], out, f"axis {axis} sums to {total}, output has {ys[axis]}")
        elif kind == "RESIZE_NEAREST_NEIGHBOR":
            need(len(xs) == 4 and len(ys) == 4, out, f"needs 4-D NHWC, got {list(xs)}")
            need(
                xs[0] == ys[0] and xs[3] == ys[3],
                out,
                f"output {list(ys)} changes batch or channels of {list(xs)}",
            )
        elif kind == "TRANSPOSE":
            need(
                sorted(ys) == sorted(xs),
                out,
                f"output {list(ys)} is not a permutation of {list(xs)}",
            )
        elif kind == "ADD_N":
            for t in ins:
                need(
                    self.shapes[t] == ys,
                    t,
                    f"shape {list(self.shapes[t])} differs from the output's {list(ys)}",
                )
        elif kind in _REDUCE_OPS:
            need(
                _shape_elements(ys) <= _shape_elements(xs),
                out,
                f"output {list(ys)} larger than input {list(xs)}",
            )

    def window(self, i: int, tid: int | None, kh: int, kw: int, dh: int, dw: int) -> None:
        if min(kh, kw, dh, dw) < 1:
            raise self.op_fail(i, tid, f"window {kh}x{kw}, dilation {dh}x{dw}: must be >= 1")
        if kernel_work(kh, kw) > MAX_KERNEL_WORK or max(dh * (kh - 1), dw * (kw - 1)) >= MAX_EXTENT:
            raise self.op_fail(
                i,
                tid,
                f"window {kh}x{kw} (dilation {dh}x{dw}) is beyond rip's limit "
                "(see docs/RELIABILITY.md)",
            )

    def bias(self, i: int, ins: tuple[int, ...], channels: int) -> None:
        if len(ins) < 3 or ins[2] < 0:
            return
        b = ins[2]
        if _shape_elements(self.shapes[b]) != channels:
            raise self.op_fail(
                i, b, f"bias shape {list(self.shapes[b])} does not have {channels} entries"
            )

    def live_set(self) -> None:
        """The activations alive together at each step stay within the host limit (a lower
        bound on any plan; RESHAPE outputs counted as copies, which only rewriting
        removes)."""
        n = len(self.ops)
        last: dict[int, int] = {t: 0 for t in self.inputs}
        for i, (_, ins, outs) in enumerate(self.ops):
            for t in (*ins, *outs):
                if t in self.activations:
                    last[t] = i
        for t in self.outputs:
            last[t] = n - 1
        delta = [0] * (n + 1)
        for t, end in last.items():
            start = self.producer.get(t, 0)
            size = _shape_elements(self.shapes[t]) * DTYPE_BYTES[self.dtypes[t]]
            delta[start] += size
            delta[end + 1] -= size
        live = 0
        for i in range(n):
            live += delta[i]
            if live > HOST_LIMIT_BYTES:
                raise self.op_fail(
                    i,
                    None,
                    f"needs {live:,} B of live activations, more than rip's "
                    f"{HOST_LIMIT_BYTES:,} B limit",
                )
