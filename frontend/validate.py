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
- quantization, of the tensors whose quantization a kernel reads (int8, uint8, int16; a
  bias's or a shape's is read by none, as in TFLite Micro): scales finite, zero points
  present; activations per tensor with scale > 0 and normal (no zero, negative, NaN, inf or
  denormal scale); zero points inside the type's range (int8: [-128, 127]), a shorter zero
  point array repeating its first entry as TFLite Micro does; per-channel weight scales one
  per output channel on an axis of that extent (`constraint_filter_scales`);
- the graph: at least one input, output and operator; every operator has outputs; no
  tensor produced twice or produced while being a graph input; every operator reads only
  graph inputs, constants and outputs of earlier operators (no cycle, no out-of-order read,
  no RESHAPE reading its own output, so aliases never loop); a graph output is never a
  constant; extra subgraphs have operators and outputs;
- operators rip supports: input and output counts, the options table's type, and shapes
  consistent with the operator's parameters and weights (channels, depth multiplier,
  fully connected weights, broadcasting, concatenation, element counts of RESHAPE,
  same-shape ops like SOFTMAX);
- sizes: no activation (and no set of activations alive together) over
  ``HOST_LIMIT_BYTES``, no window over ``MAX_KERNEL_WORK``, constants (weights) of at most
  ``MAX_WEIGHT_BYTES`` in all (see rip.core.limits).

The opcode of an operator is TFLite's (``tflite_mapping.builtin_code``: the larger of the
two fields). Option values and constant inputs a kernel depends on are checked where they
are read (the reader: a RESIZE's size, LEAKY_RELU's alpha; codegen: every requantization
multiplier), so that rip computes TFLite Micro's bytes or refuses.

Unsupported operators are left to the reader, which names them; resource variables are
named first (rip.frontend.stateful), before the checks they would fail.
``check_limits`` is the same size check on a (rewritten) IR graph, for a driver that wants
a tighter limit than the host's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import tflite
from flatbuffers.table import Table

from rip.core.errors import ModelError
from rip.core.limits import (
    HOST_LIMIT_BYTES,
    MAX_EXTENT,
    MAX_KERNEL_WORK,
    MAX_WEIGHT_BYTES,
    kernel_work,
)
from rip.core.operators import Op
from rip.frontend.ir import DTYPE_BYTES, Graph
from rip.frontend.liveness import live_bytes
from rip.frontend.stateful import resource_operands, resource_plan, resource_variables
from rip.frontend.tflite_mapping import FORMATS, TFLITE_OPS, builtin_code

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
        # resource variables: named before the checks they would fail, misnamed; rip runs
        # their reads and assigns as copies, CALL_ONCE's constants as the reset values
        self.resources = None
        if resource_variables(model) is not None:
            plan = resource_plan(model)
            if isinstance(plan, str):
                raise self.fail(f"resource variables: {plan}")
            self.resources = plan
        for s in range(1, model.SubgraphsLength()):
            if self.resources is not None and s == self.resources.init_subgraph:
                continue  # assigns constants only (resource_plan checked it)
            extra = model.Subgraphs(s)
            if not extra.OperatorsLength():
                raise self.fail(f"subgraph {s} is empty (no operators)")
            if not extra.OutputsLength():
                n = extra.OperatorsLength()
                raise self.fail(f"subgraph {s} has {n} operator{'s' * (n != 1)} and no outputs")
        self.sub = sub = model.Subgraphs(0)
        self.n_tensors = sub.TensorsLength()
        self.n_buffers = model.BuffersLength()
        if self.n_buffers and model.Buffers(0).DataLength():
            raise self.fail(
                f"buffer 0 holds {model.Buffers(0).DataLength()} bytes; TFLite reserves it "
                "as the empty buffer of every activation"
            )
        codes = [builtin_code(model.OperatorCodes(j)) for j in range(model.OperatorCodesLength())]
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
            if self.resources is not None:
                ins, outs = resource_operands(self.resources, i, ins, outs)
            self.ops.append((op, ins, outs))
        self.indices()
        self.graph_order()
        self.tensors()
        for i in range(len(self.ops)):
            if self.kinds[i] in FORMATS:
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
            if self.resources is not None and (
                i in self.resources.dropped or (i in self.resources.of_op and not outs)
            ):
                continue  # VAR_HANDLE, CALL_ONCE, ASSIGN_VARIABLE: no output tensor
            if not outs:
                raise self.op_fail(i, None, "has no output tensor")
            fmt = FORMATS.get(kind)  # type: ignore[call-overload]  # a name finds its Op
            for pos, t in enumerate(ins):
                if t == -1 and (fmt is None or pos in fmt.optional):
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
            if fmt is not None:
                lo, hi = fmt.min_inputs, fmt.max_inputs
                if len(ins) < lo or (hi is not None and len(ins) > hi):
                    want = f"{lo}" if lo == hi else f"{lo} to {hi if hi is not None else 'any'}"
                    raise self.op_fail(i, None, f"has {len(ins)} inputs, {kind} takes {want}")
                if len(outs) != 1 and not fmt.multi_output:
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
        self.constant_buffers: dict[int, int] = {}  # buffer index -> bytes
        for tid in sorted(referenced):
            self.tensor(tid)
        total = sum(self.constant_buffers.values())
        if total > MAX_WEIGHT_BYTES:
            raise self.fail(
                f"the model's constants (weights) hold {total:,} B, more than rip's "
                f"{MAX_WEIGHT_BYTES:,} B limit (the most flash an RP2350 maps)"
            )

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
        self.quantization(tid, raw, where, is_activation, dtype)

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
        if not is_activation and size:
            self.constant_buffers[index] = size

    def quantization(
        self,
        tid: int,
        raw: Any,
        where: str,
        is_activation: bool,
        dtype: str,
    ) -> None:
        """What TFLite Micro reads of a tensor's quantization (micro_allocator.cc): only
        when both arrays are non-empty, ``scale[0]`` and ``zero_point[0]`` as the tensor's
        parameters and the arrays for the per-channel kernels, a zero point array shorter
        than the scales repeating its first entry. An integer tensor's quantization (a
        bias's, a shape's: the int32 and int64 types) is read by no kernel, so it is not
        checked; per-channel scales are checked where a kernel reads them (the filter
        rules)."""
        q = raw.Quantization()
        bounds = _ZERO_POINT_RANGE.get(dtype)
        if q is None or not q.ScaleLength() or bounds is None:
            return
        scales = q.ScaleAsNumpy().astype(np.float64)
        n = len(scales)
        if not np.isfinite(scales).all():
            raise self.fail(f"{where}: quantization scale {scales.tolist()[:4]} is not finite")
        if not q.ZeroPointLength():
            raise self.fail(
                f"{where}: {n} quantization scales but no zero points (TFLite Micro reads "
                "such a tensor as not quantized)"
            )
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
        zps = q.ZeroPointAsNumpy()
        lo, hi = bounds
        if int(zps.min()) < lo or int(zps.max()) > hi:
            bad = next(int(z) for z in zps if not lo <= z <= hi)
            raise self.fail(f"{where}: {dtype} zero point {bad} outside [{lo}, {hi}]")

    # ---- operators ----------------------------------------------------------------------

    def options(self, i: int) -> Any:
        op = self.ops[i][0]
        kind = self.kinds[i]
        fmt = FORMATS[kind]  # type: ignore[index]  # a name finds its Op
        name = fmt.options
        got = op.BuiltinOptionsType()
        if got == tflite.BuiltinOptions.NONE:
            if fmt.options_required:
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
        opts = fmt.options_class()()
        table = op.BuiltinOptions()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def operator(self, i: int) -> None:
        """The options table, then every rule of the op (`RULES`), in order."""
        kind = TFLITE_OPS[self.kinds[i]]
        _, ins, outs = self.ops[i]
        check = OpCheck(self, i, kind, ins, outs, self.options(i))
        for rule in RULES[kind]:
            rule(check)

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

    def scale_count(self, tid: int) -> tuple[int, int]:
        """(number of quantization scales, quantized_dimension) of tensor ``tid``."""
        q = self.sub.Tensors(tid).Quantization()
        return (q.ScaleLength(), q.QuantizedDimension()) if q is not None else (0, 0)

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


# ---- the per-operator rules ------------------------------------------------------------
# Each rule is one small function whose docstring says, for users, what rip requires (as
# Vela's ``constraint_*`` functions): `rip-compile --list-ops --rules` prints them
# (rip.cli.list_ops).


@dataclass(frozen=True)
class OpCheck:
    """What a rule sees of operator ``index``: its kind, operands and options table, the
    shapes of its first input (``xs``) and output (``ys``)."""

    validator: _Validator
    index: int
    kind: Op
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    opts: Any

    @property
    def x(self) -> int:
        return self.ins[0]

    @property
    def out(self) -> int:
        return self.outs[0]

    @property
    def xs(self) -> tuple[int, ...]:
        return self.shape(self.ins[0])

    @property
    def ys(self) -> tuple[int, ...]:
        return self.shape(self.outs[0])

    def shape(self, tid: int) -> tuple[int, ...]:
        return self.validator.shapes[tid]

    def need(self, cond: bool, tid: int | None, message: str) -> None:
        """Refuse the op with ``message`` (naming tensor ``tid``) unless ``cond``."""
        if not cond:
            raise self.validator.op_fail(self.index, tid, message)


Rule = Callable[[OpCheck], None]


def constraint_nhwc_window(c: OpCheck) -> None:
    """Input and output are 4-D NHWC tensors with the same batch."""
    xs, ys = c.xs, c.ys
    c.need(len(xs) == 4, c.x, f"{c.kind} needs a 4-D NHWC input, got {list(xs)}")
    c.need(len(ys) == 4, c.out, f"{c.kind} needs a 4-D NHWC output, got {list(ys)}")
    c.need(ys[0] == xs[0], c.out, f"batch {ys[0]} differs from the input's {xs[0]}")


def constraint_filter_window(c: OpCheck) -> None:
    """The filter is 4-D; its window and dilation are at least 1 and within rip's limit."""
    w = c.ins[1]
    ws = c.shape(w)
    c.need(len(ws) == 4, w, f"filter shape {list(ws)} is not 4-D")
    c.validator.window(c.index, w, ws[1], ws[2], c.opts.DilationHFactor(), c.opts.DilationWFactor())


def constraint_conv_channels(c: OpCheck) -> None:
    """The filter [O, KH, KW, I] has the output's channels O and the input's channels I,
    or a proper divisor of them (a grouped convolution of C_in / I groups, O a multiple of
    the groups, as TFLite Micro runs it); the bias, if any, has O entries."""
    w, xs, ys = c.ins[1], c.xs, c.ys
    ws = c.shape(w)
    c.need(
        ws[3] > 0 and xs[3] % ws[3] == 0,
        w,
        f"filter has {ws[3]} input channels, input {xs[3]}: not a divisor, so neither a "
        "convolution nor a grouped one",
    )
    groups = xs[3] // ws[3]
    c.need(
        ws[0] % groups == 0,
        w,
        f"grouped convolution of {groups} groups: {ws[0]} output channels is not a multiple",
    )
    c.need(ws[0] == ys[3], w, f"filter has {ws[0]} output channels, output {ys[3]}")
    c.validator.bias(c.index, c.ins, ws[0])


def constraint_depthwise_channels(c: OpCheck) -> None:
    """The filter is [1, KH, KW, C_out]; C_out is a multiple of the input's channels that
    the depth multiplier (if not 0) agrees with; the bias, if any, has C_out entries."""
    w, xs, ys = c.ins[1], c.xs, c.ys
    ws = c.shape(w)
    c.need(ws[0] == 1, w, f"depthwise filter shape {list(ws)} must start with 1")
    c.need(ws[3] == ys[3], w, f"filter has {ws[3]} channels, output {ys[3]}")
    c.need(
        ys[3] % xs[3] == 0,
        c.out,
        f"{ys[3]} output channels is not a multiple of {xs[3]} input channels",
    )
    mult = c.opts.DepthMultiplier()
    c.need(
        mult in (0, ys[3] // xs[3]),
        c.out,
        f"depth multiplier {mult} contradicts {xs[3]} -> {ys[3]} channels",
    )
    c.validator.bias(c.index, c.ins, ys[3])


def constraint_pool_window(c: OpCheck) -> None:
    """The output keeps the input's channels; the window is at least 1 and within rip's
    limit."""
    c.need(c.ys[3] == c.xs[3], c.out, f"{c.ys[3]} channels, the input has {c.xs[3]}")
    c.validator.window(c.index, None, c.opts.FilterHeight(), c.opts.FilterWidth(), 1, 1)


def constraint_filter_scales(c: OpCheck) -> None:
    """Per-channel weight scales, if there are several, are one per output channel, on an
    axis (``quantized_dimension``) of that extent: what TFLite Micro checks
    (PopulateConvolutionQuantizationParams, CalculateOpDataFullyConnected). No kernel
    reads any other tensor's axis (a bias's included), so none is checked."""
    w = c.ins[1]
    ws = c.shape(w)
    n, axis = c.validator.scale_count(w)
    if n <= 1 or not ws:
        return
    channels = ws[3] if c.kind == Op.DEPTHWISE_CONV_2D else ws[0]
    c.need(
        n == channels and 0 <= axis < len(ws) and ws[axis] == n,
        w,
        f"{n} per-channel scales on axis {axis} of shape {list(ws)} for {channels} output channels",
    )


def constraint_fully_connected(c: OpCheck) -> None:
    """The weights are 2-D [out, in], ``in`` divides the input's elements into rows, the
    output holds those rows of ``out`` units (its last axis); the bias, if any, has ``out``
    entries."""
    w, xs, ys = c.ins[1], c.xs, c.ys
    ws = c.shape(w)
    c.need(len(ws) == 2, w, f"weights shape {list(ws)} is not 2-D [out, in]")
    n_in = _shape_elements(xs)
    c.need(ws[1] > 0 and n_in % ws[1] == 0, w, f"weights {list(ws)} do not fit input {list(xs)}")
    c.need(bool(ys) and ys[-1] == ws[0], c.out, f"output {list(ys)} does not end in {ws[0]}")
    c.need(
        _shape_elements(ys) == n_in // max(ws[1], 1) * ws[0],
        c.out,
        f"output {list(ys)} does not hold {n_in // max(ws[1], 1)} rows of {ws[0]}",
    )
    c.validator.bias(c.index, c.ins, ws[0])


def constraint_broadcast(c: OpCheck) -> None:
    """The output is the broadcast of the two inputs' shapes (NumPy's rule)."""
    b = c.shape(c.ins[1])
    c.need(
        _broadcast(c.xs, b) == c.ys,
        c.out,
        f"output {list(c.ys)} is not the broadcast of {list(c.xs)} and {list(b)}",
    )


def constraint_same_size(c: OpCheck) -> None:
    """Input and output have the same number of elements."""
    xs, ys = c.xs, c.ys
    c.need(
        _shape_elements(xs) == _shape_elements(ys),
        c.out,
        f"{list(xs)} and {list(ys)} differ in size",
    )


def constraint_same_shape(c: OpCheck) -> None:
    """The output has the input's shape."""
    c.need(c.ys == c.xs, c.out, f"output {list(c.ys)} differs from input {list(c.xs)}")


def constraint_concatenation(c: OpCheck) -> None:
    """The axis is in range; every input has the output's shape off the axis, and their
    extents along it add up to the output's."""
    ys = c.ys
    rank = len(ys)
    axis = c.opts.Axis()
    c.need(-rank <= axis < rank, c.out, f"axis {axis} out of range for rank {rank}")
    axis %= rank
    total = 0
    for t in c.ins:
        s = c.shape(t)
        same = len(s) == rank and all(s[j] == ys[j] for j in range(rank) if j != axis)
        c.need(same, t, f"shape {list(s)} does not concatenate into {list(ys)}")
        total += s[axis]
    c.need(total == ys[axis], c.out, f"axis {axis} sums to {total}, output has {ys[axis]}")


def constraint_resize_nearest(c: OpCheck) -> None:
    """Input and output are 4-D NHWC with the same batch and channels."""
    xs, ys = c.xs, c.ys
    c.need(len(xs) == 4 and len(ys) == 4, c.out, f"needs 4-D NHWC, got {list(xs)}")
    c.need(
        xs[0] == ys[0] and xs[3] == ys[3],
        c.out,
        f"output {list(ys)} changes batch or channels of {list(xs)}",
    )


def constraint_permutation(c: OpCheck) -> None:
    """The output's extents are a permutation of the input's."""
    c.need(
        sorted(c.ys) == sorted(c.xs),
        c.out,
        f"output {list(c.ys)} is not a permutation of {list(c.xs)}",
    )


def constraint_inputs_like_output(c: OpCheck) -> None:
    """Every input has the output's shape."""
    for t in c.ins:
        c.need(
            c.shape(t) == c.ys,
            t,
            f"shape {list(c.shape(t))} differs from the output's {list(c.ys)}",
        )


def constraint_reduces(c: OpCheck) -> None:
    """The output has no more elements than the input."""
    c.need(
        _shape_elements(c.ys) <= _shape_elements(c.xs),
        c.out,
        f"output {list(c.ys)} larger than input {list(c.xs)}",
    )


_CONV = (constraint_nhwc_window, constraint_filter_window, constraint_filter_scales)
_POOL = (constraint_nhwc_window, constraint_pool_window)
_SAME = (constraint_same_shape,)
_BROADCAST = (constraint_broadcast,)
_REDUCE = (constraint_reduces,)

# The validator's rules of every op it accepts, in the order they run (tests/test_operators.py
# checks that these are exactly the accepted ops). An op without rules has its shapes
# checked by its reader decoder (rip.frontend.reader.DECODERS, e.g. rip.frontend.movement).
RULES: dict[Op, tuple[Rule, ...]] = {
    Op.CONV_2D: (*_CONV, constraint_conv_channels),
    Op.DEPTHWISE_CONV_2D: (*_CONV, constraint_depthwise_channels),
    Op.AVERAGE_POOL_2D: _POOL,
    Op.MAX_POOL_2D: _POOL,
    Op.FULLY_CONNECTED: (constraint_fully_connected, constraint_filter_scales),
    Op.ADD: _BROADCAST,
    Op.SUB: _BROADCAST,
    Op.MUL: _BROADCAST,
    Op.PRELU: _BROADCAST,
    Op.MAXIMUM: _BROADCAST,
    Op.MINIMUM: _BROADCAST,
    Op.SQUARED_DIFFERENCE: _BROADCAST,
    Op.ADD_N: (constraint_inputs_like_output,),
    Op.RESHAPE: (constraint_same_size,),
    Op.SQUEEZE: (constraint_same_size,),
    Op.SOFTMAX: _SAME,
    Op.LOGISTIC: _SAME,
    Op.HARD_SWISH: _SAME,
    Op.RELU: _SAME,
    Op.RELU6: _SAME,
    Op.QUANTIZE: _SAME,
    Op.DEQUANTIZE: _SAME,
    Op.NEG: _SAME,
    Op.DIV: _BROADCAST,
    Op.LEAKY_RELU: _SAME,
    Op.TANH: _SAME,
    Op.ELU: _SAME,
    Op.RSQRT: _SAME,
    Op.ABS: _SAME,
    Op.LOG_SOFTMAX: _SAME,
    Op.CONCATENATION: (constraint_concatenation,),
    Op.RESIZE_NEAREST_NEIGHBOR: (constraint_resize_nearest,),
    Op.TRANSPOSE: (constraint_permutation,),
    Op.TRANSPOSE_CONV: (constraint_filter_scales,),
    Op.MEAN: _REDUCE,
    Op.SUM: _REDUCE,
    Op.REDUCE_MAX: _REDUCE,
    Op.REDUCE_MIN: _REDUCE,
    Op.ARG_MAX: _REDUCE,
    Op.ARG_MIN: _REDUCE,
    # shapes checked by the reader's decoders (rip.frontend.movement)
    **dict.fromkeys(
        (
            Op.STRIDED_SLICE,
            Op.SLICE,
            Op.SPLIT,
            Op.SPLIT_V,
            Op.PACK,
            Op.UNPACK,
            Op.EXPAND_DIMS,
            Op.DEPTH_TO_SPACE,
            Op.SPACE_TO_DEPTH,
            Op.GATHER,
            Op.PADV2,
            Op.MIRROR_PAD,
            Op.SPACE_TO_BATCH_ND,
            Op.BATCH_TO_SPACE_ND,
            Op.RESIZE_BILINEAR,
            Op.L2_NORMALIZATION,
            Op.PAD,
            Op.BATCH_MATMUL,
            Op.SVDF,
            Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
            Op.READ_VARIABLE,
            Op.ASSIGN_VARIABLE,
        ),
        (),
    ),
}
