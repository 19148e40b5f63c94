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
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import tflite

from rip.core.errors import ModelError
from rip.core.operators import SPECS, Op, spec
from rip.core.shapes import conv_out_size, same_padding
from rip.core.terms import Activation
from rip.frontend import constants, movement
from rip.frontend.ir import (
    BatchMatMulParams,
    BlockParams,
    ConcatParams,
    Conv2DParams,
    DepthwiseParams,
    ElementwiseParams,
    FullyConnectedParams,
    GatherParams,
    Graph,
    LeakyReluParams,
    LstmParams,
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
    SliceParams,
    SoftmaxParams,
    SpaceBatchParams,
    SplitParams,
    SvdfParams,
    Tensor,
    TransposeParams,
    VariableParams,
    describe,
)
from rip.frontend.stateful import resource_plan, resource_variables
from rip.frontend.tflite_mapping import (
    FORMATS,
    TFLITE_OPS,
    accepted,
    builtin_code,
    builtin_name,
)
from rip.frontend.validate import validate_model

FILE_IDENTIFIER = b"TFL3"

_TYPE_NAMES = {
    getattr(tflite.TensorType, n): n.lower() for n in vars(tflite.TensorType) if n.isupper()
}
# TFLite's ActivationFunctionType codes (the int8 kernels implement the clamping ones).
_ACTIVATIONS = {getattr(tflite.ActivationFunctionType, a.value): a for a in Activation}

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


def _ops_running(pair: tuple[str, str]) -> str:
    """The ops whose kernels run ``pair`` (OpSpec.wide_types), as refusals name them."""
    return ", ".join(sorted(op for op, s in SPECS.items() if pair in s.wide_types))


FLOAT_OPS = _ops_running(("float32", "float32"))  # a float island's ops
INT16_OPS = _ops_running(("int16", "int16"))  # the ops with a 16x8 kernel
# the ops whose variable (state) tensors rip keeps (resource variables have none)
STATEFUL_OPS = ", ".join(
    sorted(op for op, s in SPECS.items() if s.keeps_state and not s.resource_variable)
)


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

        variables = self.resource_variables(model, raw_ops, n_tensors)
        folded = self.fold_constants(raw_ops, sub, graph_inputs, graph_outputs)
        referenced = {t for t in (*graph_inputs, *graph_outputs) if t >= 0}
        for _, ins, outs, _ in raw_ops:
            referenced.update(t for t in (*ins, *outs) if 0 <= t < n_tensors)
        activation_ids = {*graph_inputs, *(t for _, _, outs, _ in raw_ops for t in outs)}
        raw_tensors = {tid: sub.Tensors(tid) for tid in sorted(referenced)}

        self.check_operators(raw_ops, raw_tensors)
        tensors = {
            tid: self.tensor(tid, raw, tid not in activation_ids and tid not in self.state)
            for tid, raw in raw_tensors.items()
        }
        for tid, (name, like) in variables.items():  # each resource variable's bytes
            tensors[tid] = replace(tensors[like], id=tid, name=name or "resource variable")
        for tid, data in folded.items():
            if tid in tensors:
                tensors[tid] = replace(tensors[tid], is_constant=True, data=data)
        self.check_activations(raw_ops, tensors, graph_inputs, graph_outputs)

        operators: list[Operator] = []
        for i, (name, ins, outs, op) in enumerate(raw_ops):
            if i in self.folded_ops or i in self.dropped_ops:
                continue
            kind = TFLITE_OPS[name]
            params = self.params(_Raw(i, kind, op, ins, outs, tensors))
            if isinstance(params, SvdfParams):  # the state is the params' own (Graph.state)
                ins = ins[:-1]
            if isinstance(params, LstmParams):  # hidden and cell: the params' (Graph.state)
                ins = (*ins[:18], -1, -1, *ins[20:])
            operators.append(Operator(_grouped(kind, ins, tensors), ins, outs, params, i))
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
            operators=tuple(operators),
            inputs=graph_inputs,
            outputs=graph_outputs,
            has_weights=has_weights,
            notes=tuple(self.notes),
            state=(*self.state, *variables),
            state_init=self.state_init,
        )

    def resource_variables(
        self, model: Any, raw_ops: list, n_tensors: int
    ) -> dict[int, tuple[str, int]]:
        """Subgraph 0's resource variables (rip.frontend.stateful.resource_plan, which the
        validator has checked): each becomes a state tensor of its own id past the file's
        tensors (id -> its name and the tensor whose type it holds), READ_VARIABLE reads
        it and ASSIGN_VARIABLE writes it (``raw_ops`` rewritten so), VAR_HANDLE and CALL_ONCE
        are dropped, CALL_ONCE's constants become the state's reset values."""
        self.state_init: dict[int, bytes] = {}
        self.dropped_ops: set[int] = set()
        self.variable_of: dict[int, int] = {}
        if resource_variables(model) is None:
            return {}
        plan = resource_plan(model)
        if isinstance(plan, str):  # pragma: no cover - the validator refused it first
            raise self.fail(f"resource variables: {plan}")
        found = {}
        for v, var in enumerate(plan.variables):
            tid = n_tensors + v
            found[tid] = (var.name, var.like)
            if var.init is not None:
                self.state_init[tid] = var.init
        for i in plan.dropped:
            name, _, _, op = raw_ops[i]
            raw_ops[i] = (name, (), (), op)
            self.dropped_ops.add(i)
        for i, v in plan.of_op.items():
            name, _, _, op = raw_ops[i]
            value, state = plan.value[i], n_tensors + v
            read = name == Op.READ_VARIABLE
            raw_ops[i] = (name, () if read else (value,), (value,) if read else (state,), op)
            self.variable_of[i] = state
        inits = f"; CALL_ONCE's subgraph {plan.init_subgraph} gives their reset values" * (
            plan.init_subgraph is not None
        )
        self.notes.append(
            f"resource variables: {len(found)} kept in the persistent region, read and "
            f"assigned by copies where the model reads and assigns them{inits}; VAR_HANDLE "
            "and CALL_ONCE removed"
        )
        return found

    def variable(self, r: _Raw) -> VariableParams:
        """READ_VARIABLE, ASSIGN_VARIABLE: the variable's state tensor."""
        return VariableParams(self.variable_of[r.index])

    @staticmethod
    def op_name(code: Any) -> str:
        if builtin_code(code) == tflite.BuiltinOperator.CUSTOM:
            custom = code.CustomCode()
            return f"CUSTOM {custom.decode(errors='replace')!r}" if custom else "CUSTOM"
        return builtin_name(code)

    def fold_constants(
        self,
        raw_ops: list,
        sub: Any,
        graph_inputs: tuple[int, ...],
        graph_outputs: tuple[int, ...],
    ) -> dict[int, bytes]:
        """Fold SHAPE and the shape arithmetic after it (rip.frontend.constants): each
        folded op's entry in ``raw_ops`` loses its operands (its index, which messages name,
        stays), its output becomes a constant tensor; returns those tensors' bytes."""
        self.folded_ops: set[int] = set()
        values: dict[int, bytes] = {}
        outputs = set(graph_outputs)
        activations = {*graph_inputs, *(t for _, _, outs, _ in raw_ops for t in outs)}
        for i, (name, ins, outs, op) in enumerate(raw_ops):
            kind = TFLITE_OPS.get(name)
            if kind is None or len(outs) != 1 or outs[0] < 0 or outs[0] in outputs:
                continue
            if i in self.variable_of:  # a resource variable's copy: never constant
                continue
            out = sub.Tensors(outs[0])
            dtype = _TYPE_NAMES.get(out.Type(), "")
            if dtype not in constants.INDEX_DTYPES:
                continue
            if kind == Op.SHAPE:
                if not ins or ins[0] < 0:
                    continue
                x = sub.Tensors(ins[0])
                shape = tuple(int(d) for d in x.ShapeAsNumpy()) if x.ShapeLength() else ()
                values[outs[0]] = constants.shape_of(shape, dtype)
            elif kind in constants.FOLDABLE:
                data_ins = [t for t in ins if t >= 0]
                if not any(t in values for t in data_ins) or any(
                    t in activations and t not in values for t in data_ins
                ):
                    continue
                tensors = {}
                for t in {*data_ins, outs[0]}:
                    tensor = self.tensor(t, sub.Tensors(t), t not in activations)
                    tensors[t] = replace(tensor, is_constant=True, data=values.get(t, tensor.data))
                params = self.params(_Raw(i, kind, op, ins, outs, tensors))
                arrays = []
                for t in data_ins:
                    data = tensors[t].data
                    code = constants.INDEX_DTYPES.get(tensors[t].dtype)
                    if data is None or code is None:
                        break
                    arrays.append(np.frombuffer(data, code).reshape(tensors[t].shape))
                else:
                    result = constants.evaluate(kind, params, arrays, tensors[outs[0]].shape)
                    values[outs[0]] = result.astype(constants.INDEX_DTYPES[dtype]).tobytes()
                if outs[0] not in values:
                    continue
            else:
                continue
            self.folded_ops.add(i)
            raw_ops[i] = (name, (), (), op)
        if self.folded_ops:
            names = ", ".join(f"{raw_ops[i][0]} {i}" for i in sorted(self.folded_ops))
            self.notes.append(
                f"fold_constants: {len(self.folded_ops)} ops with a constant result folded "
                f"({names}): the model's shapes are static"
            )
        return values

    def check_operators(self, raw_ops: list, raw_tensors: dict[int, Any]) -> None:
        """Refuse the first operator rip does not compile, naming it and (from the operator
        table) what TFLite Micro does with it; then variable (state) tensors."""
        for i, (kind, _, outs, _) in enumerate(raw_ops):
            if accepted(kind) is not None or i in self.folded_ops or i in self.dropped_ops:
                continue
            if outs and outs[0] >= 0:
                out_name = (raw_tensors[outs[0]].Name() or b"").decode(errors="replace")
                where = describe(kind, i, output=outs[0], output_name=out_name)
            else:
                where = describe(kind, i, output=-1)
            message = f"unsupported {where}"
            refusal = spec(kind).refusal if kind in TFLITE_OPS else None
            if refusal:
                message += f"; {refusal}"
            raise self.fail(message)
        self.state = self.state_tensors(raw_ops, raw_tensors)

    def state_tensors(self, raw_ops: list, raw_tensors: dict[int, Any]) -> tuple[int, ...]:
        """The variable (state) tensors, each a state input of one stateful op (SVDF's
        input 4, UNIDIRECTIONAL_SEQUENCE_LSTM's 18 and 19: `OpSpec.state_inputs`) and read
        or written by nothing else; any other variable tensor is refused, naming it."""
        owner: dict[int, int] = {}
        for i, (kind, ins, outs, _) in enumerate(raw_ops):
            if i in self.folded_ops:
                continue
            for pos, t in enumerate((*ins, *outs)):
                if t not in raw_tensors or not raw_tensors[t].IsVariable():
                    continue  # absent, or a resource variable's own state tensor
                name = (raw_tensors[t].Name() or b"").decode(errors="replace")
                positions = spec(TFLITE_OPS[kind]).state_inputs if kind in TFLITE_OPS else ()
                if pos not in positions or t in owner:
                    raise self.fail(
                        f"variable (state) tensor {t} {name!r} used by {describe(kind, i)} "
                        f"(operand {pos}): rip keeps state only for the state inputs of "
                        f"{STATEFUL_OPS}, each read and written by that one op"
                    )
                owner[t] = i
        loose = [t for t, raw in raw_tensors.items() if raw.IsVariable() and t not in owner]
        if loose:
            name = (raw_tensors[loose[0]].Name() or b"").decode(errors="replace")
            raise self.fail(
                f"variable (state) tensor {loose[0]} {name!r} is no state input of an op: "
                f"rip keeps state only for {STATEFUL_OPS}"
            )
        return tuple(sorted(owner, key=owner.__getitem__))

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

    def uint8_interface(
        self,
        tid: int,
        t: Tensor,
        raw_ops: list,
        producer: dict[int, int],
        consumers: dict[int, list[int]],
        graph_inputs: tuple[int, ...],
        graph_outputs: tuple[int, ...],
    ) -> bool:
        """A uint8 tensor rip runs: a graph input read only by QUANTIZE to int8, or a graph
        output written by QUANTIZE from int8 and read by nothing (TFLite Micro's uint8
        requantizations; rip runs each as a table, codegen.activation_params)."""
        users = [raw_ops[c][0] for c in consumers.get(tid, [])]
        made = raw_ops[producer[tid]][0] if tid in producer else None
        is_input = tid in graph_inputs and made is None and bool(users)
        is_input = is_input and all(u == Op.QUANTIZE for u in users)
        is_output = tid in graph_outputs and made == Op.QUANTIZE and not users
        if not (is_input or is_output):
            return False
        if t.quant is None or t.quant.per_channel:
            raise self.fail(f"uint8 {_tensor_desc(t)} needs one scale and zero point")
        return True

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
            if t.dtype == "uint8" and self.uint8_interface(
                tid, t, raw_ops, producer, consumers, graph_inputs, graph_outputs
            ):
                continue
            index_op = raw_ops[producer[tid]][0] if tid in producer else None
            if index_op is not None and spec(index_op).writes_indices:
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
                quantized_input = quantized_input and all(u == Op.QUANTIZE for u in users)
                dequantized_output = (
                    tid in graph_outputs
                    and tid in producer
                    and raw_ops[producer[tid]][0] == Op.DEQUANTIZE
                    and not users
                )
                if quantized_input or dequantized_output:
                    continue
                island = tid in producer and tid not in graph_outputs
                if island and self.wide_between(tid, t, raw_ops, tensors, producer, consumers):
                    continue
                around = [producer[tid]] if tid in producer else []
                around += consumers.get(tid, [])
                odd = [i for i in around if not self.runs_float(raw_ops[i][0])]
                what = describe(raw_ops[odd[0]][0], odd[0]) if odd else made_by
                raise self.fail(
                    f"float32 {_tensor_desc(t)} at {what}: rip runs float32 only between a "
                    f"DEQUANTIZE and a QUANTIZE, in the ops whose IEEE result is exact on "
                    f"every core ({FLOAT_OPS}); convert with full-integer quantization "
                    "(converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]"
                    ") to keep it int8"
                )
            if t.dtype in ("int16", "int32") and self.wide_between(
                tid, t, raw_ops, tensors, producer, consumers
            ):
                continue
            if t.dtype == "int16":
                raise self.fail(
                    f"int16 activations (16x8 quantization, the converter's "
                    f"EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8): "
                    f"{_tensor_desc(t)} ({made_by}); TFLite Micro runs them, rip's 16x8 "
                    f"kernels so far: {INT16_OPS}"
                )
            raise self.fail(
                f"{t.dtype} activations are not supported (int8 only): {_tensor_desc(t)} "
                f"({made_by})"
            )

    def wide_between(
        self,
        tid: int,
        t: Tensor,
        raw_ops: list,
        tensors: dict[int, Tensor],
        producer: dict[int, int],
        consumers: dict[int, list[int]],
    ) -> bool:
        """An int16, int32 or float32 activation that every op around it runs at that type
        (`OpSpec.wide_types`: the op that makes it from its input's type, each op that reads
        it into its output's type); a graph input or output counts as the interface. An
        integer one must be quantized per tensor, as those kernels read it."""

        def runs(i: int, pair: tuple[str, str]) -> bool:
            kind = TFLITE_OPS.get(raw_ops[i][0])
            return kind is not None and pair in spec(kind).wide_types

        def dtype_of(ids: tuple[int, ...]) -> str:
            return tensors[ids[0]].dtype if ids and ids[0] >= 0 else ""

        def data_type(ids: tuple[int, ...]) -> str:
            """The type of an op's data: its first input that is not a constant (SPLIT's
            axis comes first), else its first."""
            live = tuple(i for i in ids if i >= 0 and not tensors[i].is_constant)
            return dtype_of(live or ids)

        if tid in producer and not runs(
            producer[tid], (data_type(raw_ops[producer[tid]][1]), t.dtype)
        ):
            return False
        if not all(runs(c, (t.dtype, dtype_of(raw_ops[c][2]))) for c in consumers.get(tid, [])):
            return False
        if t.dtype != "float32" and (t.quant is None or len(t.quant.scale) != 1):
            raise self.fail(f"{t.dtype} {_tensor_desc(t)} needs one scale and zero point")
        return True

    @staticmethod
    def runs_float(name: str) -> bool:
        """The op (a file's builtin name) has a float32 -> float32 kernel (a float island's)."""
        kind = TFLITE_OPS.get(name)
        return kind is not None and any("float32" in pair for pair in spec(kind).wide_types)

    # ---- operator options ------------------------------------------------------------

    def options(self, r: _Raw) -> Any:
        """The op's options table, read with its `FORMATS` class; None when it has none
        (the validator refused a missing table where one is required)."""
        table = r.op.BuiltinOptions()
        fmt = FORMATS[r.kind]
        if table is None:
            if fmt.options_required:
                raise self.fail(f"{r.where} has no options")
            return None
        opts = fmt.options_class()()
        opts.Init(table.Bytes, table.Pos)
        return opts

    def activation(self, code: int, r: _Raw) -> Activation:
        act = _ACTIVATIONS.get(code)
        if act is None or not act.clamps:
            shown = act if act is not None else f"code {code}"
            raise self.fail(f"unsupported fused activation {shown} on {r.where}")
        return act

    def activation_of(self, o: Any, r: _Raw) -> Activation:
        """The fused activation of options ``o`` (NONE when the op has no options)."""
        return Activation.NONE if o is None else self.activation(o.FusedActivationFunction(), r)

    def constant_ints(self, tid: int, tensors: dict[int, Tensor]) -> list[int] | None:
        t = tensors[tid]
        if t.data is None:
            return None
        dtype = {"int32": "<i4", "int64": "<i8"}.get(t.dtype)
        if dtype is None or not t.is_constant:
            raise self.fail(f"{_tensor_desc(t)} should be a constant int32 tensor")
        return [int(v) for v in np.frombuffer(t.data, dtype=dtype)]

    def ints(self, r: _Raw, tid: int) -> list[int]:
        """A constant int tensor's values; movement.Refused when it has no data."""
        values = self.constant_ints(tid, r.tensors)
        if values is None:
            raise movement.Refused(f"tensor {tid} {r.tensors[tid].name!r} has no data")
        return values

    def pairs(self, r: _Raw, tid: int, rank: int) -> tuple[tuple[int, int], ...]:
        """A [rank, 2] paddings tensor as (before, after) pairs; movement.Refused if not."""
        v = self.ints(r, tid)
        if len(v) != 2 * rank:
            raise movement.Refused(f"{len(v)} padding values for rank {rank}")
        return tuple((v[2 * k], v[2 * k + 1]) for k in range(rank))

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

    def params(self, r: _Raw) -> Any:
        """The op's parameters, by its decoder (`DECODERS`); a data-movement refusal
        (movement.Refused) becomes one line naming the op."""
        try:
            return DECODERS[r.kind](self, r)
        except movement.Refused as exc:
            raise self.fail(f"{r.where}: {exc}") from None

    # ---- the option decoders, one per op (DECODERS) ------------------------------------

    def no_params(self, r: _Raw) -> NoParams:
        """RESHAPE, SQUEEZE (the output shape says it all) and the ops without options."""
        return NoParams()

    def conv(self, r: _Raw) -> Conv2DParams:
        """CONV_2D and DEPTHWISE_CONV_2D: stride, dilation, padding, fused activation (and
        the depth multiplier, from the channels)."""
        o = self.options(r)
        in_shape, out_shape, where = r.in_shape, r.out_shape, r.where
        filter_shape = r.tensors[r.ins[1]].shape
        if len(filter_shape) != 4:
            raise self.fail(f"{where}: filter shape {filter_shape} is not 4-D")
        stride = (o.StrideH(), o.StrideW())
        dilation = (o.DilationHFactor(), o.DilationWFactor())
        padding = self.window_padding(
            o.Padding(), in_shape, out_shape, filter_shape[1:3], stride, dilation, where
        )
        act = self.activation(o.FusedActivationFunction(), r)
        if r.kind != Op.DEPTHWISE_CONV_2D:
            return Conv2DParams(stride, dilation, padding, act)
        # The kernels use channels_out / channels_in; old converters wrote 0 here.
        if out_shape[3] % in_shape[3]:
            raise self.fail(f"{where}: {out_shape[3]} output channels for {in_shape[3]} in")
        return DepthwiseParams(stride, dilation, padding, act, out_shape[3] // in_shape[3])

    def pool(self, r: _Raw) -> PoolParams:
        """AVERAGE_POOL_2D and MAX_POOL_2D: window, stride, padding, fused activation."""
        o = self.options(r)
        size = (o.FilterHeight(), o.FilterWidth())
        stride = (o.StrideH(), o.StrideW())
        padding = self.window_padding(
            o.Padding(), r.in_shape, r.out_shape, size, stride, (1, 1), r.where
        )
        act = self.activation(o.FusedActivationFunction(), r)
        return PoolParams(size, stride, padding, act)

    def fully_connected(self, r: _Raw) -> FullyConnectedParams:
        o = self.options(r)
        if o is None:
            return FullyConnectedParams()
        if o.WeightsFormat() != 0:
            raise self.fail(f"{r.where}: shuffled weights format is not supported")
        act = self.activation(o.FusedActivationFunction(), r)
        int32_bias = o.QuantizedBiasType() == tflite.TensorType.INT32
        return FullyConnectedParams(act, bool(o.KeepNumDims()), int32_bias)

    def binary(self, r: _Raw) -> ElementwiseParams:
        """ADD, SUB, MUL (and DIV, float32 only): the fused activation."""
        if r.kind == Op.DIV:
            self.float_only(r)
        return ElementwiseParams(self.activation_of(self.options(r), r))

    def float_only(self, r: _Raw) -> NoParams:
        """NEG, DIV: run on float32 inside a float island only (rip.frontend.ir's float32
        activations between DEQUANTIZE and QUANTIZE)."""
        dtype = r.tensors[r.ins[0]].dtype
        if dtype != "float32":
            raise self.fail(
                f"{r.where}: {dtype} {r.kind}; rip runs {r.kind} on float32 only, between a "
                "DEQUANTIZE and a QUANTIZE (TFLite Micro's int8 kernels for it are not "
                "written yet)"
            )
        return NoParams()

    def int32_axis(self, r: _Raw) -> None:
        axis_tensor = r.tensors[r.ins[1]]
        if axis_tensor.dtype != "int32":
            raise self.fail(
                f"{r.where}: axis {_tensor_desc(axis_tensor)} is {axis_tensor.dtype}; "
                f"TFLite Micro's {r.kind} takes an int32 axis"
            )

    def arg_reduce(self, r: _Raw) -> ReduceParams:
        """ARG_MAX and ARG_MIN: one constant int32 axis."""
        self.int32_axis(r)
        axes = self.constant_ints(r.ins[1], r.tensors)
        if axes is None or len(axes) != 1:
            raise self.fail(f"{r.where}: the axis tensor must hold one constant axis")
        rank = len(r.in_shape)
        if not -rank <= axes[0] < rank:
            raise self.fail(f"{r.where}: axis {axes[0]} out of range for rank {rank}")
        return self.checked_axes(r, (axes[0] % rank,), False)

    def reducer(self, r: _Raw) -> ReduceParams:
        """MEAN, SUM, REDUCE_MAX, REDUCE_MIN: an int32 axis tensor and keep_dims (a
        graph-only model's MEAN axes inferred from the shapes)."""
        self.int32_axis(r)
        o = self.options(r)
        keep_dims = bool(o.KeepDims()) if o is not None else False
        rank = len(r.in_shape)
        axes = self.constant_ints(r.ins[1], r.tensors)
        if axes is None:
            axes = self.infer_mean_axes(r, r.tensors[r.ins[1]], keep_dims)
        if any(not -rank <= a < rank for a in axes):
            raise self.fail(f"{r.where}: axes {axes} out of range for rank {rank}")
        return self.checked_axes(r, tuple(sorted({a % rank for a in axes})), keep_dims)

    def leaky_relu(self, r: _Raw) -> LeakyReluParams:
        o = self.options(r)
        alpha = float(o.Alpha()) if o is not None else 0.0
        if not math.isfinite(alpha):
            raise self.fail(f"{r.where}: alpha {alpha} is not finite")
        return LeakyReluParams(alpha)

    def softmax(self, r: _Raw) -> SoftmaxParams:
        o = self.options(r)
        return SoftmaxParams(float(o.Beta()) if o is not None else 1.0)

    def concatenation(self, r: _Raw) -> ConcatParams:
        o = self.options(r)
        act = self.activation(o.FusedActivationFunction(), r)
        rank = len(r.out_shape)
        if not -rank <= o.Axis() < rank:
            raise self.fail(f"{r.where}: axis {o.Axis()} out of range for rank {rank}")
        return ConcatParams(o.Axis() % rank, act)

    def resize_size(self, r: _Raw) -> None:
        """A RESIZE's size input is the output's (H, W): TFLite Micro's kernels write
        ``size[0] x size[1]`` pixels whatever the output's shape (past its end when larger,
        leaving the rest unwritten when smaller or zero) and run no size that is not a
        constant, so any other size is refused."""
        t = r.tensors[r.ins[1]]
        if not t.is_constant:
            raise self.fail(
                f"{r.where}: the size input {_tensor_desc(t)} is not a constant (TFLite "
                "Micro runs no dynamic size)"
            )
        size = self.constant_ints(r.ins[1], r.tensors)
        want = list(r.out_shape[1:3])
        if t.shape != (2,) or (size is not None and (t.dtype != "int32" or size != want)):
            raise self.fail(
                f"{r.where}: the size input {_tensor_desc(t)} holds {t.dtype} "
                f"{list(t.shape) if size is None else size[:4]}, "
                f"the output {list(r.out_shape)} needs int32 {want}"
            )

    def resize_nearest(self, r: _Raw) -> ResizeParams:
        self.resize_size(r)
        o = self.options(r)
        if o is None:
            return ResizeParams()
        return ResizeParams(bool(o.AlignCorners()), bool(o.HalfPixelCenters()))

    def transpose(self, r: _Raw) -> TransposeParams:
        perm = self.constant_ints(r.ins[1], r.tensors)
        if perm is None:
            raise self.fail(f"{r.where}: the permutation tensor has no data")
        if sorted(perm) != list(range(len(r.in_shape))):
            raise self.fail(f"{r.where}: {perm} is not a permutation of rank {len(r.in_shape)}")
        return TransposeParams(tuple(perm))

    def checked_axes(self, r: _Raw, axes: tuple[int, ...], keep_dims: bool) -> ReduceParams:
        """The reduction's axes, checked against the output: it holds the kept extents."""
        in_shape, out_shape = r.in_shape, r.out_shape
        kept = [d for j, d in enumerate(in_shape) if j not in axes]
        if math.prod(kept) != math.prod(out_shape):
            raise self.fail(
                f"{r.where}: output {list(out_shape)} does not hold {list(in_shape)} reduced"
                f" over axes {list(axes)}"
            )
        return ReduceParams(axes, keep_dims)

    def infer_mean_axes(self, r: _Raw, axes_tensor: Tensor, keep_dims: bool) -> list[int]:
        """Axes of a graph-only model's MEAN (its axis tensor was emptied), from shapes."""
        in_shape, out_shape = r.in_shape, r.out_shape
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
            raise self.fail(f"{r.where}: the axis tensor has no data and shapes do not fix it")
        self.inferred["MEAN axes"] += 1
        return list(fits[0])

    def pad(self, r: _Raw) -> PadParams:
        """PAD of 4-D NHWC (a graph-only model's amounts split from the shapes as SAME)."""
        in_shape, out_shape, where = r.in_shape, r.out_shape, r.where
        if len(in_shape) != 4 or len(out_shape) != 4:
            raise self.fail(f"{where}: only 4-D NHWC PAD is supported, got {in_shape}")
        values = self.constant_ints(r.ins[1], r.tensors)
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

    # ---- data movement and resampling (rip.frontend.movement; these raise Refused) ----------

    def expand_dims(self, r: _Raw) -> NoParams:
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        if math.prod(x) != math.prod(y):
            raise movement.Refused(f"{list(x)} and {list(y)} differ in size")
        return NoParams()

    def slice(self, r: _Raw) -> SliceParams:
        ins = r.ins
        return movement.slice_(
            r.shape(ins[0]), self.ints(r, ins[1]), self.ints(r, ins[2]), r.shape(r.outs[0])
        )

    def strided_slice(self, r: _Raw) -> SliceParams:
        o = self.options(r)
        begin_mask, end_mask, shrink_mask = (
            (o.BeginMask(), o.EndMask(), o.ShrinkAxisMask()) if o else (0, 0, 0)
        )
        if o is not None and (o.EllipsisMask() or o.NewAxisMask() or o.Offset()):
            raise movement.Refused(
                "ellipsis or new-axis masks or offset (TFLite Micro ignores them)"
            )
        begin, end, strides = (self.ints(r, t) for t in r.ins[1:4])
        return movement.strided_slice(
            r.shape(r.ins[0]),
            begin,
            end,
            strides,
            begin_mask,
            end_mask,
            shrink_mask,
            r.shape(r.outs[0]),
        )

    def split(self, r: _Raw) -> SplitParams:
        axis, data = self.ints(r, r.ins[0]), r.shape(r.ins[1])
        rank = len(data)
        if len(axis) != 1 or not -rank <= axis[0] < rank:
            raise movement.Refused(f"axis {axis} for rank {rank}")
        n = len(r.outs)
        if data[axis[0] % rank] % n:
            raise movement.Refused(f"axis of size {data[axis[0] % rank]} into {n} pieces")
        return movement.split(data, axis[0], [data[axis[0] % rank] // n] * n, r.out_shapes)

    def split_v(self, r: _Raw) -> SplitParams:
        axis = self.ints(r, r.ins[2])
        if len(axis) != 1:
            raise movement.Refused(f"axis {axis}")
        return movement.split(r.shape(r.ins[0]), axis[0], self.ints(r, r.ins[1]), r.out_shapes)

    def unpack(self, r: _Raw) -> SplitParams:
        o = self.options(r)
        return movement.unpack(r.shape(r.ins[0]), o.Axis(), o.Num(), r.out_shapes)

    def pack(self, r: _Raw) -> PackParams:
        o = self.options(r)
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        rank = len(y)
        if not -rank <= o.Axis() < rank:
            raise movement.Refused(f"axis {o.Axis()} out of range for rank {rank}")
        axis = o.Axis() % rank
        want = (*x[:axis], len(r.ins), *x[axis:])
        if any(r.shape(t) != x for t in r.ins) or want != y:
            raise movement.Refused(f"inputs of {list(x)} do not pack into {y}")
        return PackParams(axis)

    def depth_space(self, r: _Raw) -> BlockParams:
        """DEPTH_TO_SPACE and SPACE_TO_DEPTH: the block size, checked against the shapes."""
        b = self.options(r).BlockSize()
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        (n, h, w, c), up = nhwc4(x), r.kind == Op.DEPTH_TO_SPACE
        want = (n, h * b, w * b, c // (b * b)) if up else (n, h // b, w // b, c * b * b)
        exact = c % (b * b) == 0 if up else h % b == 0 and w % b == 0
        if b < 1 or not exact or len(x) != 4 or want != y:
            raise movement.Refused(f"block {b} turns {list(x)} into {list(want)}")
        return BlockParams(b)

    def gather(self, r: _Raw) -> GatherParams:
        o = self.options(r)
        axis, batch_dims = (o.Axis(), o.BatchDims()) if o is not None else (0, 0)
        indices = r.ins[1]
        return movement.gather(
            r.shape(r.ins[0]),
            axis,
            batch_dims,
            r.shape(indices),
            self.ints(r, indices),
            r.shape(r.outs[0]),
        )

    def paddings(self, r: _Raw) -> tuple[tuple[int, int], ...]:
        """PADV2's and MIRROR_PAD's paddings, checked against the shapes."""
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        pads = self.pairs(r, r.ins[1], len(x))
        want = tuple(d + lo + hi for d, (lo, hi) in zip(x, pads, strict=True))
        if min(v for p in pads for v in p) < 0 or want != y or len(want) > 4:
            raise movement.Refused(f"paddings {pads} turn {list(x)} into {list(want)}")
        return pads

    def padv2(self, r: _Raw) -> PadValueParams:
        pads, value = self.paddings(r), None
        if len(r.ins) > 2 and r.ins[2] >= 0:
            v = r.tensors[r.ins[2]]
            code = {"int8": "<i1", "int16": "<i2"}.get(v.dtype)
            if code is None or v.data is None or len(v.data) != np.dtype(code).itemsize:
                raise movement.Refused("constant_values is not one constant int8 or int16 value")
            value = int(np.frombuffer(v.data, dtype=code)[0])
        return PadValueParams(pads, value)

    def mirror_pad(self, r: _Raw) -> MirrorPadParams:
        pads, x = self.paddings(r), r.shape(r.ins[0])
        o = self.options(r)
        symmetric = o is not None and o.Mode() == tflite.MirrorPadMode.SYMMETRIC
        limit = 0 if symmetric else 1  # REFLECT may not repeat the edge
        if any(p > d - limit for d, pair in zip(x, pads, strict=True) for p in pair):
            raise movement.Refused(f"paddings {pads} exceed the input {list(x)}")
        return MirrorPadParams(pads, symmetric)

    def space_batch(self, r: _Raw) -> SpaceBatchParams:
        """SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND: block and paddings (or crops)."""
        x = r.shape(r.ins[0])
        block, pads = self.ints(r, r.ins[1]), self.pairs(r, r.ins[2], 2)
        if len(x) != 4 or len(block) != 2 or min(block) < 1:
            raise movement.Refused(f"block {block} on {list(x)}: 4-D NHWC only")
        return movement.space_batch(r.kind, x, (block[0], block[1]), pads, r.shape(r.outs[0]))

    def resize_bilinear(self, r: _Raw) -> ResizeParams:
        o = self.options(r)
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        if len(x) != 4 or x[::3] != y[::3]:
            raise movement.Refused(f"{list(x)} -> {list(y)}: 4-D, same N, C")
        self.resize_size(r)
        if o is None:
            return ResizeParams()
        if o.AlignCorners() and o.HalfPixelCenters():
            raise movement.Refused("align_corners with half_pixel_centers")
        return ResizeParams(bool(o.AlignCorners()), bool(o.HalfPixelCenters()))

    def l2_normalization(self, r: _Raw) -> ElementwiseParams:
        act = self.activation_of(self.options(r), r)
        x, y = r.shape(r.ins[0]), r.shape(r.outs[0])
        if act != Activation.NONE or x != y or not 1 <= len(x) <= 4:
            raise movement.Refused(f"{list(x)} -> {list(y)}, fused {act}")
        return ElementwiseParams(act)

    def batch_matmul(self, r: _Raw) -> BatchMatMulParams:
        """BATCH_MATMUL (TFLite Micro's BatchMatMulPrepare): ranks 2 to 5, batch axes equal
        or 1 (broadcast), the two depths equal, the output the broadcast batch axes then
        (rows of the left operand, columns of the right one)."""
        o = self.options(r)
        adj_x, adj_y = (bool(o.AdjX()), bool(o.AdjY())) if o is not None else (False, False)
        x, y, out = r.shape(r.ins[0]), r.shape(r.ins[1]), r.out_shape
        if not (2 <= len(x) <= 5 and 2 <= len(y) <= 5):
            raise movement.Refused(f"operands of rank {len(x)} and {len(y)} (TFLite Micro: 2 to 5)")
        rank = max(len(x), len(y))
        xb = (1,) * (rank - len(x)) + x[:-2]
        yb = (1,) * (rank - len(y)) + y[:-2]
        if any(a != b and 1 not in (a, b) for a, b in zip(xb, yb, strict=True)):
            raise movement.Refused(f"batch axes of {list(x)} and {list(y)} do not broadcast")
        rows, depth = (x[-1], x[-2]) if adj_x else (x[-2], x[-1])
        depth_y, cols = (y[-1], y[-2]) if adj_y else (y[-2], y[-1])
        if depth != depth_y:
            raise movement.Refused(
                f"{list(x)} (adj_x {adj_x}) by {list(y)} (adj_y {adj_y}): depths {depth} and "
                f"{depth_y} differ"
            )
        want = (*(max(a, b) for a, b in zip(xb, yb, strict=True)), rows, cols)
        if tuple(out) != want:
            raise movement.Refused(f"output {list(out)}, the product is {list(want)}")
        return BatchMatMulParams(adj_x, adj_y)

    def svdf(self, r: _Raw) -> SvdfParams:
        """SVDF as TFLite Micro's PrepareSvdf accepts it for int8: input [batch, n_input],
        feature weights [n_filter, n_input], time weights [n_filter, n_memory] (int8, with
        an int8 state), bias [n_filter / rank] int32 with the scale s_state * s_time, state
        [batch, n_memory * n_filter], output [batch, n_filter / rank]."""
        o = self.options(r)
        rank = int(o.Rank()) if o is not None else 0
        x, wf, wt, bias, state = (r.tensors[t] if t >= 0 else None for t in r.ins)
        if x is None or wf is None or wt is None or state is None:
            raise self.fail(f"{r.where}: input, weights and state are required")
        if bias is None:
            raise self.fail(f"{r.where}: no bias; TFLite Micro's SVDF reads the bias it needs")
        if wt.dtype not in ("int8", "int16") or state.dtype != wt.dtype:
            raise self.fail(
                f"{r.where}: {wt.dtype} time weights and {state.dtype} state; TFLite Micro "
                "reads the state as the time weights' type, int8 or int16"
            )
        for t in (x, wf, wt, state):
            if t.quant is None or len(t.quant.scale) != 1:
                raise self.fail(f"{r.where}: {_tensor_desc(t)} needs one scale and zero point")
        if len(x.shape) != 2 or len(wf.shape) != 2 or len(wt.shape) != 2:
            raise self.fail(f"{r.where}: input and weights must be rank 2")
        batch, n_input = x.shape
        n_filter, n_memory = wt.shape
        if rank < 1 or n_filter % rank or wf.shape != (n_filter, n_input):
            raise self.fail(
                f"{r.where}: rank {rank}, feature weights {list(wf.shape)}, time weights "
                f"{list(wt.shape)} for input {list(x.shape)} do not fit"
            )
        n_unit = n_filter // rank
        if bias.shape != (n_unit,) or bias.dtype != "int32":
            raise self.fail(f"{r.where}: bias {_tensor_desc(bias)} must be int32 [{n_unit}]")
        if state.shape != (batch, n_memory * n_filter) or r.out_shape != (batch, n_unit):
            raise self.fail(
                f"{r.where}: state {list(state.shape)} and output {list(r.out_shape)}, "
                f"expected [{batch}, {n_memory * n_filter}] and [{batch}, {n_unit}]"
            )
        assert state.quant is not None and wt.quant is not None  # checked above
        want = np.float32(state.quant.scale[0]) * np.float32(wt.quant.scale[0])
        if bias.quant is None or abs(float(bias.quant.scale[0]) - float(want)) >= 1e-5:
            raise self.fail(
                f"{r.where}: bias scale is not state scale x time-weight scale (TFLite "
                "Micro refuses the model)"
            )
        return SvdfParams(rank, r.ins[4])

    def lstm(self, r: _Raw) -> LstmParams:
        """UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro's Prepare accepts it for integers:
        input [batch, time, features] (time major: [time, batch, ...]) int8 or int16; the
        eight gate weights int8, one scale each, [units, features] and [units, units]; the
        four gate biases int32 (int8 input) or int64 (int16); no peephole, projection or
        layer norm; the hidden state (18) of the input's type and an int16 cell state (19),
        both variable tensors of batch x units values; output [.., .., units] of the input's
        type; the cell gate's activation TANH."""
        o = self.options(r)
        t = {k: r.tensors[i] for k, i in enumerate(r.ins) if i >= 0}
        absent = [k for k in (*range(9, 12), 16, 17, *range(20, 24)) if k in t]
        if absent:
            raise self.fail(
                f"{r.where}: operand {absent[0]} is set (peephole, projection or layer norm);"
                " TFLite Micro's integer LSTM takes none"
            )
        missing = [k for k in (0, *range(1, 9), *range(12, 16), 18, 19) if k not in t]
        if missing:
            raise self.fail(f"{r.where}: operand {missing[0]} is absent")
        x, hidden, cell = t[0], t[18], t[19]
        if x.dtype not in ("int8", "int16") or len(x.shape) != 3 or len(r.out_shape) != 3:
            raise self.fail(f"{r.where}: input {_tensor_desc(x)} must be int8 or int16, rank 3")
        bias_type = "int32" if x.dtype == "int8" else "int64"
        if hidden.dtype != x.dtype or cell.dtype != "int16":
            raise self.fail(
                f"{r.where}: hidden state {hidden.dtype} and cell state {cell.dtype}; TFLite "
                f"Micro takes the input's type ({x.dtype}) and int16"
            )
        time_major = bool(o.TimeMajor()) if o is not None else False
        batch = x.shape[1] if time_major else x.shape[0]
        features = x.shape[2]
        units = t[5].shape[0] if len(t[5].shape) == 2 else 0
        for k in (*range(1, 9), *range(12, 16)):
            want = ((units, features) if k < 5 else (units, units)) if k < 9 else (units,)
            dtype = "int8" if k < 9 else bias_type
            if t[k].shape != want or t[k].dtype != dtype:
                raise self.fail(
                    f"{r.where}: operand {k} {_tensor_desc(t[k])} must be {dtype} {list(want)}"
                )
            quant = t[k].quant
            if k < 9 and (quant is None or len(quant.scale) != 1):
                raise self.fail(f"{r.where}: weights {_tensor_desc(t[k])} need one scale")
        for state in (hidden, cell, x):
            if state.quant is None or len(state.quant.scale) != 1:
                raise self.fail(f"{r.where}: {_tensor_desc(state)} needs one scale")
        if math.prod(hidden.shape) != batch * units or math.prod(cell.shape) != batch * units:
            raise self.fail(f"{r.where}: hidden and cell states need {batch * units} values")
        if r.out_shape[:2] != x.shape[:2] or r.out_shape[2] != units:
            raise self.fail(f"{r.where}: output {list(r.out_shape)} for input {list(x.shape)}")
        if o is None or o.FusedActivationFunction() != 4:  # ActivationFunctionType.TANH
            raise self.fail(f"{r.where}: the cell gate's activation must be TANH")
        return LstmParams(time_major, float(o.CellClip()), r.ins[18], r.ins[19])

    def transpose_conv(self, r: _Raw) -> Conv2DParams:
        """TRANSPOSE_CONV (inputs: output shape, weights [O, KH, KW, I], input, bias):
        padding as TFLite Micro's Prepare computes it, SAME/VALID of the convolution whose
        transpose this is (from the output's size); only the top and left amounts are used."""
        o = self.options(r)
        ins, tensors = r.ins, r.tensors
        x, w, y = tensors[ins[2]].shape, tensors[ins[1]].shape, tensors[r.outs[0]].shape
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
        act = self.activation(o.FusedActivationFunction(), r)
        return Conv2DParams(stride, (1, 1), Padding(top, 0, left, 0), act)


def _grouped(kind: Op, ins: tuple[int, ...], tensors: dict[int, Tensor]) -> Op:
    """GROUPED_CONV_2D for a CONV_2D whose filter has fewer input channels than its input
    (the validator checked that they divide it), else ``kind``."""
    if kind != Op.CONV_2D:
        return kind
    x, w = tensors[ins[0]].shape, tensors[ins[1]].shape
    return Op.GROUPED_CONV_2D if len(x) == 4 and len(w) == 4 and w[3] != x[3] else kind


@dataclass(frozen=True)
class _Raw:
    """One operator as read from the file, before it is an IR `Operator`: what a decoder
    sees (``op`` is the flatbuffer's Operator table)."""

    index: int
    kind: Op
    op: Any
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    tensors: dict[int, Tensor]

    @property
    def where(self) -> str:
        return describe(self.kind, self.index)

    def shape(self, tid: int) -> tuple[int, ...]:
        return self.tensors[tid].shape

    @property
    def in_shape(self) -> tuple[int, ...]:
        return self.tensors[self.ins[0]].shape if self.ins and self.ins[0] >= 0 else ()

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.tensors[self.outs[0]].shape if self.outs and self.outs[0] >= 0 else ()

    @property
    def out_shapes(self) -> list[tuple[int, ...]]:
        return [self.tensors[t].shape for t in self.outs]


Decoder = Callable[[_Reader, _Raw], Any]

# The reader's option decoder of every op it accepts (tests/test_operators.py checks that
# these are exactly the accepted ops).
DECODERS: dict[Op, Decoder] = {
    Op.CONV_2D: _Reader.conv,
    Op.DEPTHWISE_CONV_2D: _Reader.conv,
    Op.FULLY_CONNECTED: _Reader.fully_connected,
    Op.ADD: _Reader.binary,
    Op.SUB: _Reader.binary,
    Op.MUL: _Reader.binary,
    Op.DIV: _Reader.binary,
    Op.NEG: _Reader.float_only,
    Op.AVERAGE_POOL_2D: _Reader.pool,
    Op.MAX_POOL_2D: _Reader.pool,
    Op.MEAN: _Reader.reducer,
    Op.SUM: _Reader.reducer,
    Op.REDUCE_MAX: _Reader.reducer,
    Op.REDUCE_MIN: _Reader.reducer,
    Op.ARG_MAX: _Reader.arg_reduce,
    Op.ARG_MIN: _Reader.arg_reduce,
    Op.PAD: _Reader.pad,
    Op.SOFTMAX: _Reader.softmax,
    Op.LEAKY_RELU: _Reader.leaky_relu,
    Op.CONCATENATION: _Reader.concatenation,
    Op.RESIZE_NEAREST_NEIGHBOR: _Reader.resize_nearest,
    Op.TRANSPOSE: _Reader.transpose,
    **dict.fromkeys(
        (
            Op.RESHAPE,
            Op.SQUEEZE,
            Op.LOGISTIC,
            Op.HARD_SWISH,
            Op.RELU,
            Op.RELU6,
            Op.QUANTIZE,
            Op.DEQUANTIZE,
            Op.TANH,
            Op.ELU,
            Op.RSQRT,
            Op.LOG_SOFTMAX,
            Op.ABS,
            Op.PRELU,
            Op.MAXIMUM,
            Op.MINIMUM,
            Op.SQUARED_DIFFERENCE,
            Op.ADD_N,
        ),
        _Reader.no_params,
    ),
    # data movement and resampling
    Op.EXPAND_DIMS: _Reader.expand_dims,
    Op.SLICE: _Reader.slice,
    Op.STRIDED_SLICE: _Reader.strided_slice,
    Op.SPLIT: _Reader.split,
    Op.SPLIT_V: _Reader.split_v,
    Op.UNPACK: _Reader.unpack,
    Op.PACK: _Reader.pack,
    Op.DEPTH_TO_SPACE: _Reader.depth_space,
    Op.SPACE_TO_DEPTH: _Reader.depth_space,
    Op.GATHER: _Reader.gather,
    Op.PADV2: _Reader.padv2,
    Op.MIRROR_PAD: _Reader.mirror_pad,
    Op.SPACE_TO_BATCH_ND: _Reader.space_batch,
    Op.BATCH_TO_SPACE_ND: _Reader.space_batch,
    Op.RESIZE_BILINEAR: _Reader.resize_bilinear,
    Op.TRANSPOSE_CONV: _Reader.transpose_conv,
    Op.L2_NORMALIZATION: _Reader.l2_normalization,
    Op.BATCH_MATMUL: _Reader.batch_matmul,
    Op.SVDF: _Reader.svdf,
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: _Reader.lstm,
    Op.READ_VARIABLE: _Reader.variable,
    Op.ASSIGN_VARIABLE: _Reader.variable,
}


def nhwc4(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """``shape`` as (n, h, w, c) when 4-D, else zeros (the caller refuses it)."""
    return (shape[0], shape[1], shape[2], shape[3]) if len(shape) == 4 else (0, 0, 0, 0)
