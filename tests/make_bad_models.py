"""Write the corpus of broken models under tests/data/bad/ (run from the repository root).

    python tests/make_bad_models.py            # (re)write tests/data/bad/
    python tests/make_bad_models.py --check    # exit 1 if the committed files differ

Each model is a small valid model from our own writer (``tflite_writer.ModelBuilder``) with
one fault: the base is serialised through ``RawModel``, a field-for-field copy of the
flatbuffer that can hold what ModelBuilder refuses to write (bad indices, unknown types,
non-empty buffer 0, extra subgraphs, ...). ``EXPECTED.json`` pairs each file with a
fragment of the one-line refusal rip must print for it (tests/test_bad_corpus.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers
import numpy as np
import tflite
import tflite_writer as tw  # tests/ is on sys.path (pytest's pythonpath, or the script's dir)

OUT = Path(__file__).resolve().parent / "data" / "bad"


@dataclass
class RawTensor:
    name: str
    shape: list[int]
    type: int
    buffer: int
    scales: list[float] | None = None
    zero_points: list[int] | None = None
    axis: int = 0


@dataclass
class RawOp:
    opcode: str
    inputs: list[int]
    outputs: list[int]
    options_type: str | None = None
    options: tuple = ()


@dataclass
class RawModel:
    """Every field of a one-subgraph TFLite model, as plain mutable data."""

    tensors: list[RawTensor]
    buffers: list[bytes]
    operators: list[RawOp]
    inputs: list[int]
    outputs: list[int]
    extra_subgraphs: int = 0  # empty subgraphs after the first
    buffer_offsets: dict[int, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def from_builder(cls, mb: tw.ModelBuilder) -> RawModel:
        buffers = [b""]
        tensors = []
        for t in mb.tensors:
            index = 0
            if t.data is not None:
                index = len(buffers)
                buffers.append(t.data)
            q = t.quantization
            tensors.append(
                RawTensor(
                    t.name,
                    list(t.shape),
                    tw._TENSOR_TYPE[t.dtype],
                    index,
                    list(q.scales) if q else None,
                    list(q.zero_points) if q else None,
                    q.axis if q else 0,
                )
            )
        ops = [
            RawOp(op.opcode, list(op.inputs), list(op.outputs), op.options_type, op.options)
            for op in mb.operators
        ]
        return cls(tensors, buffers, ops, list(mb._inputs), list(mb._outputs))

    def to_bytes(self) -> bytes:
        b = flatbuffers.Builder(1024)
        buffer_tables = []
        for j, data in enumerate(self.buffers):
            if data:
                buffer_tables.append(tw._data_buffer(b, data))
            else:
                tflite.BufferStart(b)
                if j in self.buffer_offsets:
                    tflite.BufferAddOffset(b, self.buffer_offsets[j][0])
                    tflite.BufferAddSize(b, self.buffer_offsets[j][1])
                buffer_tables.append(tflite.BufferEnd(b))
        tensor_tables = [self._tensor(b, t) for t in self.tensors]
        opcodes = list(dict.fromkeys(op.opcode for op in self.operators))
        op_tables = []
        for op in self.operators:
            inputs = tw._int32_vector(b, op.inputs)
            outputs = tw._int32_vector(b, op.outputs)
            options = None
            if op.options_type is not None:
                options = tw._options(
                    b, tw.OperatorDef(op.opcode, (), (), op.options_type, tuple(op.options))
                )
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(
                b, opcodes.index(op.opcode) if op.opcode in opcodes else 0
            )
            tflite.OperatorAddInputs(b, inputs)
            tflite.OperatorAddOutputs(b, outputs)
            if options is not None:
                tflite.OperatorAddBuiltinOptionsType(
                    b, getattr(tflite.BuiltinOptions, op.options_type)
                )
                tflite.OperatorAddBuiltinOptions(b, options)
            op_tables.append(tflite.OperatorEnd(b))
        subgraphs = [self._subgraph(b, tensor_tables, self.inputs, self.outputs, op_tables, "main")]
        for k in range(self.extra_subgraphs):
            subgraphs.append(self._subgraph(b, [], [], [], [], f"empty{k}"))
        code_tables = [tw._operator_code(b, name) for name in opcodes]
        codes_vec = tw._table_vector(b, code_tables)
        subgraphs_vec = tw._table_vector(b, subgraphs)
        description = b.CreateString("rip tests/make_bad_models.py")
        buffers_vec = tw._table_vector(b, buffer_tables)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subgraphs_vec)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, buffers_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @staticmethod
    def _subgraph(b, tensors, inputs, outputs, ops, name: str) -> int:
        tensors_vec = tw._table_vector(b, tensors)
        inputs_vec = tw._int32_vector(b, inputs)
        outputs_vec = tw._int32_vector(b, outputs)
        ops_vec = tw._table_vector(b, ops)
        name_str = b.CreateString(name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, inputs_vec)
        tflite.SubGraphAddOutputs(b, outputs_vec)
        tflite.SubGraphAddOperators(b, ops_vec)
        tflite.SubGraphAddName(b, name_str)
        return tflite.SubGraphEnd(b)

    @staticmethod
    def _tensor(b, t: RawTensor) -> int:
        name = b.CreateString(t.name)
        shape = tw._int32_vector(b, t.shape)
        quant = None
        if t.scales is not None:
            scales = b.CreateNumpyVector(np.asarray(t.scales, dtype="<f4"))
            zps = b.CreateNumpyVector(np.asarray(t.zero_points or [], dtype="<i8"))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scales)
            tflite.QuantizationParametersAddZeroPoint(b, zps)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, t.type)
        tflite.TensorAddBuffer(b, t.buffer)
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        return tflite.TensorEnd(b)


# ---- the base model ----------------------------------------------------------------------

# Tensor indices of the base model, for the mutations below.
X, W, B, CONV, DW_W, DW_B, DW, FLAT, SHAPE, FC_W, FC_B, FC, PROB = range(13)


def base_builder() -> tw.ModelBuilder:
    """input 1x8x8x3 -> CONV_2D 3x3 (4) -> DEPTHWISE 3x3 -> RESHAPE 1x256 -> FULLY_CONNECTED
    (10) -> SOFTMAX."""
    rng = np.random.default_rng(0)
    mb = tw.ModelBuilder()
    x = mb.activation((1, 8, 8, 3), 0.05, -3, "input")
    w = mb.constant_int8(rng.integers(-50, 50, (4, 3, 3, 3), dtype=np.int8), [0.01] * 4, 0, 0)
    b = mb.bias(rng.integers(-100, 100, 4), 0.05, [0.01] * 4)
    conv = mb.activation((1, 8, 8, 4), 0.1, 2, "conv")
    mb.conv2d(x, w, b, conv, padding="SAME", activation="RELU")
    dw_w = mb.constant_int8(rng.integers(-50, 50, (1, 3, 3, 4), dtype=np.int8), [0.01] * 4, 0, 3)
    dw_b = mb.bias(rng.integers(-100, 100, 4), 0.1, [0.01] * 4)
    dw = mb.activation((1, 8, 8, 4), 0.1, 1, "dw")
    mb.depthwise_conv2d(conv, dw_w, dw_b, dw, padding="SAME")
    flat = mb.activation((1, 256), 0.1, 1, "flat")
    mb.reshape(dw, flat)
    fc_w = mb.constant_int8(rng.integers(-50, 50, (10, 256), dtype=np.int8), 0.01, 0)
    fc_b = mb.bias(rng.integers(-100, 100, 10), 0.1, 0.01)
    fc = mb.activation((1, 10), 0.2, 0, "logits")
    mb.fully_connected(flat, fc_w, fc_b, fc)
    prob = mb.activation((1, 10), tw.SOFTMAX_OUTPUT_SCALE, tw.SOFTMAX_OUTPUT_ZERO_POINT, "prob")
    mb.softmax(fc, prob)
    mb.inputs([x])
    mb.outputs([prob])
    assert [t.name for t in mb.tensors][SHAPE] == "flat/shape", "base tensor order changed"
    return mb


def base() -> RawModel:
    return RawModel.from_builder(base_builder())


def graph_only_conv(kernel: tuple[int, int], hw: tuple[int, int], channels: int) -> RawModel:
    """One SAME CONV_2D with empty weight buffers (a graph-only model)."""
    mb = tw.ModelBuilder()
    h, w = hw
    x = mb.activation((1, h, w, channels), 0.05, 0, "input")
    y = mb.activation((1, h, w, channels), 0.05, 0, "output")
    wt = mb._add_tensor((channels, *kernel, channels), "int8", None, None, "weights")
    options = (("Padding", tflite.Padding.SAME), ("StrideW", 1), ("StrideH", 1))
    mb.operator("CONV_2D", (x, wt), (y,), "Conv2DOptions", options)
    mb.inputs([x])
    mb.outputs([y])
    return RawModel.from_builder(mb)


# ---- the faults --------------------------------------------------------------------------

Fault = Callable[[], bytes]
FAULTS: dict[str, tuple[Fault, str]] = {}


def fault(name: str, expect: str) -> Callable[[Callable[[RawModel], None]], None]:
    """Register ``mutate(base model)`` as the corpus file ``name``.tflite."""

    def register(mutate: Callable[[RawModel], None]) -> None:
        def make() -> bytes:
            m = base()
            mutate(m)
            return m.to_bytes()

        FAULTS[name] = (make, expect)

    return register


def raw_fault(name: str, expect: str) -> Callable[[Fault], Fault]:
    def register(make: Fault) -> Fault:
        FAULTS[name] = (make, expect)
        return make

    return register


@fault("buffer0_not_empty", "buffer 0 holds")
def _(m: RawModel) -> None:
    m.buffers[0] = b"\x01\x02\x03\x04"


@fault("activation_with_data", "carries 256 B of constant data")
def _(m: RawModel) -> None:
    m.buffers.append(bytes(256))
    m.tensors[FLAT].buffer = len(m.buffers) - 1


@fault("graph_input_with_data", "carries 192 B of constant data")
def _(m: RawModel) -> None:
    m.buffers.append(bytes(192))
    m.tensors[X].buffer = len(m.buffers) - 1


@fault("empty_second_subgraph", "subgraph 1 is empty")
def _(m: RawModel) -> None:
    m.extra_subgraphs = 1


@fault("int4_weights", "int4")
def _(m: RawModel) -> None:
    m.tensors[W].type = tflite.TensorType.INT4


@fault("float16_constant", "float16 tensors are not supported")
def _(m: RawModel) -> None:
    m.tensors[FC_B].type = tflite.TensorType.FLOAT16


@fault("unknown_dtype", "unknown tensor type code 99")
def _(m: RawModel) -> None:
    m.tensors[W].type = 99


@fault("required_input_minus_one", "input 1 is -1 (absent)")
def _(m: RawModel) -> None:
    m.operators[0].inputs[1] = -1


@fault("graph_output_minus_one", "graph output list refers to tensor -1")
def _(m: RawModel) -> None:
    m.outputs = [-1]


@fault("tensor_index_past_end", "refers to tensor 99")
def _(m: RawModel) -> None:
    m.operators[1].inputs[0] = 99


@fault("op_without_outputs", "has no output tensor")
def _(m: RawModel) -> None:
    m.operators[3].outputs = []


@fault("reshape_without_inputs", "has 0 inputs, RESHAPE takes 1 to 2")
def _(m: RawModel) -> None:
    m.operators[2].inputs = []


@fault("scale_zero", "must be positive and normal")
def _(m: RawModel) -> None:
    m.tensors[CONV].scales = [0.0]


@fault("scale_negative", "must be positive and normal")
def _(m: RawModel) -> None:
    m.tensors[CONV].scales = [-0.1]


@fault("scale_nan", "is not finite")
def _(m: RawModel) -> None:
    m.tensors[DW].scales = [float("nan")]


@fault("scale_inf", "is not finite")
def _(m: RawModel) -> None:
    m.tensors[X].scales = [float("inf")]


@fault("scale_denormal", "must be positive and normal")
def _(m: RawModel) -> None:
    m.tensors[FC].scales = [1e-40]


@fault("weight_scale_denormal", "denormal quantization scale")
def _(m: RawModel) -> None:
    m.tensors[FC_W].scales = [1e-42]


@fault("zero_point_out_of_range", "int8 zero point 200 outside [-128, 127]")
def _(m: RawModel) -> None:
    m.tensors[CONV].zero_points = [200]


@fault("per_channel_count_wrong", "3 per-channel scales on axis 0")
def _(m: RawModel) -> None:
    m.tensors[W].scales = [0.01] * 3
    m.tensors[W].zero_points = [0] * 3


@fault("zero_points_missing", "4 quantization scales but no zero points")
def _(m: RawModel) -> None:
    # A shorter zero point array is TFLite Micro's space saving (its first entry repeats,
    # tests/test_converter_quirks.py); an empty one makes the weights unquantized there.
    m.tensors[W].zero_points = []


@fault("constant_graph_output", "is a constant (no operator writes it)")
def _(m: RawModel) -> None:
    m.outputs = [PROB, FC_B]


@fault("zero_operators", "the graph has no operators")
def _(m: RawModel) -> None:
    m.operators = []
    m.outputs = [X]


@fault("no_graph_outputs", "the graph has no outputs")
def _(m: RawModel) -> None:
    m.outputs = []


@fault("no_graph_inputs", "the graph has no inputs")
def _(m: RawModel) -> None:
    m.inputs = []


@fault("wrong_options_type", "carries Pool2DOptions, CONV_2D takes Conv2DOptions")
def _(m: RawModel) -> None:
    m.operators[0].options_type = "Pool2DOptions"
    m.operators[0].options = (("FilterWidth", 3), ("FilterHeight", 3))


@fault("depth_multiplier_contradiction", "depth multiplier 3 contradicts 4 -> 4 channels")
def _(m: RawModel) -> None:
    m.operators[1].options = tuple(
        (k, 3 if k == "DepthMultiplier" else v) for k, v in m.operators[1].options
    )


@fault("softmax_shape_mismatch", "output [1, 12] differs from input [1, 10]")
def _(m: RawModel) -> None:
    m.tensors[PROB].shape = [1, 12]


@fault("zero_batch", "has a zero extent")
def _(m: RawModel) -> None:
    m.tensors[X].shape = [0, 8, 8, 3]


@fault("reshape_self_loop", "reads its own output (a loop)")
def _(m: RawModel) -> None:
    m.operators[2].inputs[0] = FLAT


@fault("two_reshapes_cycle", "operators out of order or a cycle")
def _(m: RawModel) -> None:
    # RESHAPE flat -> dw2 and RESHAPE dw2 -> flat: each feeds the other.
    m.tensors.append(RawTensor("dw2", [1, 8, 8, 4], tflite.TensorType.INT8, 0, [0.1], [1]))
    dw2 = len(m.tensors) - 1
    m.operators.insert(2, RawOp("RESHAPE", [FLAT], [dw2], "ReshapeOptions", ()))
    m.operators[3].inputs = [dw2, SHAPE]


@fault("ops_out_of_order", "operators out of order or a cycle")
def _(m: RawModel) -> None:
    m.operators[0], m.operators[1] = m.operators[1], m.operators[0]


@fault("op_output_is_graph_input", "writes a graph input")
def _(m: RawModel) -> None:
    m.inputs = [X, CONV]


@fault("tensor_written_twice", "writes a tensor operator 0 already wrote")
def _(m: RawModel) -> None:
    m.operators[1].outputs = [CONV]


@fault("buffer_index_past_end", "buffer 77 is past the")
def _(m: RawModel) -> None:
    m.tensors[W].buffer = 77


@fault("constant_size_mismatch", "holds 100 B, the shape and type need 108 B")
def _(m: RawModel) -> None:
    m.buffers[m.tensors[W].buffer] = bytes(100)


@fault("external_buffer_past_end", "ends past the end of the file")
def _(m: RawModel) -> None:
    index = m.tensors[W].buffer
    m.buffers[index] = b""
    m.buffer_offsets[index] = (1 << 20, 108)


@fault("conv_channel_mismatch", "filter has 4 output channels, output 5")
def _(m: RawModel) -> None:
    m.tensors[CONV].shape = [1, 8, 8, 5]


@fault("fc_weights_mismatch", "do not fit input")
def _(m: RawModel) -> None:
    m.tensors[FC_W].shape = [10, 255]
    m.buffers[m.tensors[FC_W].buffer] = bytes(2550)


@fault("bias_shape_mismatch", "does not have 4 entries")
def _(m: RawModel) -> None:
    m.tensors[B].shape = [3]
    m.tensors[B].scales = [0.0005] * 3
    m.tensors[B].zero_points = [0] * 3
    m.buffers[m.tensors[B].buffer] = bytes(12)


@fault("reshape_size_mismatch", "differ in size")
def _(m: RawModel) -> None:
    m.tensors[FLAT].shape = [1, 250]


@fault("dynamic_shape", "dynamic shape")
def _(m: RawModel) -> None:
    m.tensors[CONV].shape = [1, -1, 8, 4]


@fault("huge_activation", "more than rip's 67,108,864 B limit for one activation")
def _(m: RawModel) -> None:
    # Consistent 16384x16384x3 input and conv: 10 KB file, 768 MiB tensors.
    m.tensors[X].shape = [1, 16384, 16384, 3]
    m.tensors[CONV].shape = [1, 16384, 16384, 4]


@raw_fault("huge_kernel", "is beyond rip's limit")
def _() -> bytes:
    return graph_only_conv((1, 4_000_000), (1, 16), 1).to_bytes()


@raw_fault("huge_live_set", "of live activations, more than rip's")
def _() -> bytes:
    # Twelve 6 MiB activations all alive at once (concatenated at the end).
    mb = tw.ModelBuilder()
    x = mb.activation((1, 512, 512, 24), 0.05, 0, "input")
    outs = []
    for k in range(12):
        y = mb.activation((1, 512, 512, 24), 0.05, 0, f"relu{k}")
        mb.operator("RELU", (x,), (y,))
        outs.append(y)
    mb.inputs([x])
    mb.outputs(outs)
    return RawModel.from_builder(mb).to_bytes()


@raw_fault("truncated_last_bytes", "truncated or corrupt")
def _() -> bytes:
    return base().to_bytes()[:-16]


@raw_fault("truncated_half", "truncated or corrupt")
def _() -> bytes:
    data = base().to_bytes()
    return data[: len(data) // 2]


@raw_fault("root_offset_garbage", "truncated or corrupt")
def _() -> bytes:
    data = bytearray(base().to_bytes())
    data[0:4] = (0x7FFFFFF0).to_bytes(4, "little")
    return bytes(data)


# Four bytes changed in the base model: TFLite Micro dies on SIGSEGV loading it (found by a
# mutation run; tests/test_validate.py runs the isolated reference on it).
TFLM_SEGV_PATCH = ((552, 46), (1277, 245), (2492, 120), (3252, 52))


@raw_fault("byte_mutant_tflm_segv", "input 0 refers to tensor 46")
def _() -> bytes:
    data = bytearray(base().to_bytes())
    for at, value in TFLM_SEGV_PATCH:
        data[at] = value
    return bytes(data)


@raw_fault("not_tflite", "not a TFLite file")
def _() -> bytes:
    return b"this is not a model, just text\n"


def build() -> dict[str, bytes]:
    return {name: make() for name, (make, _) in sorted(FAULTS.items())}


def expected() -> dict[str, str]:
    return {name: expect for name, (_, expect) in sorted(FAULTS.items())}


def main(argv: list[str]) -> int:
    models = build()
    index = json.dumps(expected(), indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        stale = [
            n
            for n, data in models.items()
            if not (OUT / f"{n}.tflite").is_file() or (OUT / f"{n}.tflite").read_bytes() != data
        ]
        if (OUT / "EXPECTED.json").read_text() != index:
            stale.append("EXPECTED.json")
        if stale:
            print(f"stale corpus files (run tests/make_bad_models.py): {stale}", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.tflite"):
        if old.stem not in models:
            old.unlink()
    for name, data in models.items():
        (OUT / f"{name}.tflite").write_bytes(data)
    (OUT / "EXPECTED.json").write_text(index)
    print(f"wrote {len(models)} models to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
