"""Graph rewrites: each pass does what it says on small hand-built graphs, refuses when the
rewrite would not be exact, never mutates its input, and on the real MCUNet releases folds
every explicit PAD into the convolution that reads it."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tflite

from rip.frontend.ir import (
    ConcatParams,
    Conv2DParams,
    DepthwiseParams,
    ElementwiseParams,
    FullyConnectedParams,
    Graph,
    NoParams,
    Operator,
    Padding,
    PadParams,
    PoolParams,
    Quant,
    ReduceParams,
    Tensor,
)
from rip.frontend.reader import read_model
from rip.frontend.rewrite import (
    alias_reshapes,
    fold_pad,
    fold_relu,
    mean_to_global_pool,
    rewrite,
    strip_interface,
)
from rip.frontend.tflite_mapping import builtin_name

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MCUNET = sorted((MODELS / "mcunet").glob("*.tflite")) if MODELS.is_dir() else []

Q = Quant((0.05,), (-3,))
Q2 = Quant((0.07,), (5,))
NO_PAD = Padding()


def model_path(relative: str) -> Path:
    path = MODELS / relative
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared test models live beside the checkout)")
    return path


# ---- building small graphs ----------------------------------------------------------------


def act(
    tid: int, shape: tuple[int, ...] = (1, 8, 8, 4), quant: Quant | None = Q, dtype: str = "int8"
) -> Tensor:
    return Tensor(tid, f"t{tid}", shape, dtype, quant if dtype == "int8" else None)


def const(tid: int, shape: tuple[int, ...], dtype: str = "int8") -> Tensor:
    tensor = Tensor(tid, f"c{tid}", shape, dtype, Q if dtype == "int8" else None, True)
    return Tensor(tensor.id, tensor.name, shape, dtype, tensor.quant, True, bytes(tensor.nbytes))


def op(
    kind: str,
    inputs: tuple[int, ...],
    outputs: tuple[int, ...],
    params: object = None,
    index: int = 0,
) -> Operator:
    return Operator(kind, inputs, outputs, params if params is not None else NoParams(), index)


def make(
    tensors: list[Tensor],
    operators: list[Operator],
    inputs: tuple[int, ...],
    outputs: tuple[int, ...],
    **extra: object,
) -> Graph:
    ops = tuple(o.with_(source_index=i) for i, o in enumerate(operators))
    return Graph("test", {t.id: t for t in tensors}, ops, inputs, outputs, **extra)


def conv(
    x: int, y: int, padding: Padding = NO_PAD, activation: str = "NONE", weights: int = 100
) -> Operator:
    params = Conv2DParams((1, 1), (1, 1), padding, activation)
    return op("CONV_2D", (x, weights, weights + 1), (y,), params)


def conv_weights(c_in: int = 4, c_out: int = 4, k: int = 3) -> list[Tensor]:
    return [const(100, (c_out, k, k, c_in)), const(101, (c_out,), "int32")]


def unchanged(before: Graph, after: Graph) -> None:
    assert after.operators == before.operators
    assert after.inputs == before.inputs and after.outputs == before.outputs
    assert after.aliases == before.aliases and after.interface == before.interface


# ---- strip_interface ------------------------------------------------------------------------


def interface_graph() -> Graph:
    tensors = [act(0, dtype="float32"), act(1), act(2), act(3, dtype="float32"), *conv_weights()]
    ops = [
        op("QUANTIZE", (0,), (1,)),
        conv(1, 2, Padding(1, 1, 1, 1)),
        op("DEQUANTIZE", (2,), (3,)),
    ]
    return make(tensors, ops, (0,), (3,))


def test_strip_interface_removes_the_float_boundary() -> None:
    before = interface_graph()
    snapshot = copy.deepcopy(before)
    after = strip_interface(before)
    assert [o.kind for o in after.operators] == ["CONV_2D"]
    assert after.operators[0] == before.operators[1]
    assert after.inputs == (1,) and after.outputs == (2,)
    assert after.interface == (("QUANTIZE", 0, 1), ("DEQUANTIZE", 3, 2))
    assert len(after.notes) == 1 and "strip_interface" in after.notes[0]
    assert before == snapshot  # pure


def test_strip_interface_leaves_int8_models_and_requantizes_alone() -> None:
    tensors = [act(0), act(1, quant=Q2), act(2, quant=Q2), *conv_weights()]
    ops = [op("QUANTIZE", (0,), (1,)), conv(1, 2)]
    before = make(tensors, ops, (0,), (2,))
    after = strip_interface(before)
    unchanged(before, after)
    assert after.notes == ()


def test_strip_interface_keeps_a_float_input_with_two_quantizes() -> None:
    tensors = [act(0, dtype="float32"), act(1), act(2, quant=Q2), act(3)]
    ops = [
        op("QUANTIZE", (0,), (1,)),
        op("QUANTIZE", (0,), (2,)),
        op("ADD", (1, 2), (3,), ElementwiseParams()),
    ]
    before = make(tensors, ops, (0,), (3,))
    unchanged(before, strip_interface(before))


# ---- alias_reshapes -------------------------------------------------------------------------


def test_alias_chain_resolves_to_the_first_tensor() -> None:
    tensors = [
        act(0),
        act(1),
        act(2, (1, 1, 1, 256)),
        act(3, (1, 256)),
        act(4, (1, 10)),
        *conv_weights(),
        const(102, (10, 256)),
        const(103, (10,), "int32"),
        const(104, (2,), "int32"),
    ]
    ops = [
        conv(0, 1),
        op("RESHAPE", (1, 104), (2,)),
        op("SQUEEZE", (2,), (3,)),
        op("FULLY_CONNECTED", (3, 102, 103), (4,), FullyConnectedParams()),
    ]
    before = make(tensors, ops, (0,), (4,))
    snapshot = copy.deepcopy(before)
    after = alias_reshapes(before)
    assert [o.kind for o in after.operators] == ["CONV_2D", "FULLY_CONNECTED"]
    assert after.aliases == {2: 1, 3: 2}
    assert after.storage(3) == after.storage(2) == 1 and after.storage(4) == 4
    assert after.operators[1].inputs[0] == 3  # readers keep the alias id
    assert before == snapshot


def test_alias_of_a_graph_output_stays_an_output() -> None:
    tensors = [act(0), act(1), act(2, (1, 256)), *conv_weights(), const(104, (2,), "int32")]
    ops = [conv(0, 1), op("RESHAPE", (1, 104), (2,))]
    after = alias_reshapes(make(tensors, ops, (0,), (2,)))
    assert [o.kind for o in after.operators] == ["CONV_2D"]
    assert after.outputs == (2,) and after.storage(2) == 1
    assert after.producers()[after.storage(2)] == 0


def test_reshape_of_a_constant_is_not_aliased() -> None:
    tensors = [
        act(0, (1, 4)),
        const(1, (2, 2)),
        act(2, (1, 4)),
        act(3, (1, 4)),
        const(104, (2,), "int32"),
    ]
    ops = [op("RESHAPE", (1, 104), (2,)), op("ADD", (0, 2), (3,), ElementwiseParams())]
    before = make(tensors, ops, (0,), (3,))
    unchanged(before, alias_reshapes(before))


# ---- fold_pad -------------------------------------------------------------------------------


def pad_conv_graph(
    pad: PadParams, conv_padding: Padding = NO_PAD, consumers: int = 1, pad_quant: Quant = Q
) -> Graph:
    p = pad.padding
    padded = (1, 8 + p.top + p.bottom, 8 + p.left + p.right, 4 + sum(pad.channels))
    tensors = [
        act(0),
        act(1, padded, pad_quant),
        act(2, padded),
        act(3, padded),
        act(4),
        *conv_weights(c_in=padded[3]),
    ]
    ops = [op("PAD", (0, 102), (1,), pad), conv(1, 2, conv_padding)]
    outputs: tuple[int, ...] = (2,)
    if consumers == 2:
        ops.append(op("ADD", (1, 1), (3,), ElementwiseParams()))
        outputs = (2, 3)
    ops.append(op("ADD", (0, 0), (4,), ElementwiseParams()))  # unrelated
    tensors.append(const(102, (4, 2), "int32"))
    return make(tensors, ops, (0,), (*outputs, 4))


def test_fold_pad_into_conv_adds_to_its_own_padding() -> None:
    before = pad_conv_graph(PadParams(Padding(1, 1, 1, 1)), conv_padding=Padding(0, 1, 0, 1))
    snapshot = copy.deepcopy(before)
    after = fold_pad(before)
    assert [o.kind for o in after.operators] == ["CONV_2D", "ADD"]
    folded = after.operators[0]
    assert folded.inputs == (0, 100, 101)  # reads the PAD's input now
    assert folded.params.padding == Padding(1, 2, 1, 2)
    assert folded.params.stride == (1, 1) and folded.source_index == 1
    assert after.operators[1] == before.operators[2]  # unrelated op untouched
    assert "fold_pad" in after.notes[-1]
    assert before == snapshot


def test_fold_pad_into_depthwise() -> None:
    tensors = [
        act(0),
        act(1, (1, 10, 11, 4)),
        act(2, (1, 8, 9, 4)),
        const(100, (1, 3, 3, 4)),
        const(101, (4,), "int32"),
        const(102, (4, 2), "int32"),
    ]
    params = DepthwiseParams((1, 1), (1, 1), Padding(), "RELU6", 1)
    ops = [
        op("PAD", (0, 102), (1,), PadParams(Padding(1, 1, 1, 2))),
        op("DEPTHWISE_CONV_2D", (1, 100, 101), (2,), params),
    ]
    after = fold_pad(make(tensors, ops, (0,), (2,)))
    (folded,) = after.operators
    assert folded.params == DepthwiseParams((1, 1), (1, 1), Padding(1, 1, 1, 2), "RELU6", 1)


def test_fold_pad_refuses_two_consumers() -> None:
    before = pad_conv_graph(PadParams(Padding(1, 1, 1, 1)), consumers=2)
    after = fold_pad(before)
    unchanged(before, after)
    assert "kept 1" in after.notes[-1] and "2 readers" in after.notes[-1]


def test_fold_pad_refuses_channel_padding() -> None:
    before = pad_conv_graph(PadParams(Padding(1, 1, 1, 1), channels=(0, 4)))
    after = fold_pad(before)
    unchanged(before, after)
    assert "channel" in after.notes[-1]


def test_fold_pad_refuses_a_quantization_change() -> None:
    before = pad_conv_graph(PadParams(Padding(1, 1, 1, 1)), pad_quant=Q2)
    unchanged(before, fold_pad(before))


def test_fold_pad_refuses_a_pad_that_is_a_graph_output() -> None:
    before = pad_conv_graph(PadParams(Padding(1, 1, 1, 1)))
    before = before.with_(outputs=(*before.outputs, 1))
    unchanged(before, fold_pad(before))


def test_fold_pad_refuses_a_reader_through_an_alias() -> None:
    tensors = [
        act(0),
        act(1, (1, 10, 10, 4)),
        act(5, (1, 10, 10, 4)),
        act(2),
        *conv_weights(),
        const(102, (4, 2), "int32"),
    ]
    ops = [op("PAD", (0, 102), (1,), PadParams(Padding(1, 1, 1, 1))), conv(5, 2)]
    before = make(tensors, ops, (0,), (2,), aliases={5: 1})
    unchanged(before, fold_pad(before))


def test_fold_pad_chain_folds_completely() -> None:
    tensors = [
        act(0),
        act(1, (1, 10, 10, 4)),
        act(2, (1, 12, 13, 4)),
        act(3, (1, 10, 11, 4)),
        *conv_weights(),
        const(102, (4, 2), "int32"),
    ]
    ops = [
        op("PAD", (0, 102), (1,), PadParams(Padding(1, 1, 1, 1))),
        op("PAD", (1, 102), (2,), PadParams(Padding(1, 1, 1, 2))),
        conv(2, 3),
    ]
    after = fold_pad(make(tensors, ops, (0,), (3,)))
    (folded,) = after.operators
    assert folded.inputs[0] == 0 and folded.params.padding == Padding(2, 2, 2, 3)


def pad_pool_graph(kind: str, pool_padding: Padding) -> Graph:
    tensors = [act(0), act(1, (1, 10, 10, 4)), act(2, (1, 4, 4, 4)), const(102, (4, 2), "int32")]
    pool = PoolParams((3, 3), (2, 2), pool_padding)
    ops = [op("PAD", (0, 102), (1,), PadParams(Padding(1, 1, 1, 1))), op(kind, (1,), (2,), pool)]
    return make(tensors, ops, (0,), (2,))


@pytest.mark.parametrize("kind", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
def test_fold_pad_into_a_valid_pool_makes_the_padding_count(kind: str) -> None:
    after = fold_pad(pad_pool_graph(kind, Padding()))
    (pool,) = after.operators
    assert pool.kind == kind and pool.inputs == (0,)
    assert pool.params == PoolParams((3, 3), (2, 2), Padding(1, 1, 1, 1), "NONE", True)


def test_fold_pad_refuses_a_pool_with_padding_of_its_own() -> None:
    before = pad_pool_graph("AVERAGE_POOL_2D", Padding(0, 1, 0, 1))
    unchanged(before, fold_pad(before))


def test_fold_pad_refuses_other_readers() -> None:
    tensors = [act(0), act(1, (1, 10, 10, 4)), act(2, (1, 10, 10, 4)), const(102, (4, 2), "int32")]
    ops = [
        op("PAD", (0, 102), (1,), PadParams(Padding(1, 1, 1, 1))),
        op("ADD", (1, 1), (2,), ElementwiseParams()),
    ]
    before = make(tensors, ops, (0,), (2,))
    unchanged(before, fold_pad(before))


# ---- mean_to_global_pool --------------------------------------------------------------------


def test_mean_over_h_w_becomes_a_global_pool() -> None:
    tensors = [act(0), act(1, (1, 4), Q2), act(2, (1, 8, 8, 1), Q2), act(3, (8, 8, 4))]
    ops = [
        op("MEAN", (0, 50), (1,), ReduceParams((1, 2), False)),
        op("MEAN", (0, 51), (2,), ReduceParams((3,), True)),
        op("MEAN", (3, 52), (1,), ReduceParams((1, 2), False)),
    ]
    tensors += [const(50, (2,), "int32"), const(51, (1,), "int32"), const(52, (2,), "int32")]
    before = make(tensors, ops, (0, 3), (1, 2))
    after = mean_to_global_pool(before)
    assert [o.kind for o in after.operators] == ["GLOBAL_AVERAGE_POOL", "MEAN", "MEAN"]
    assert after.operators[0].params == before.operators[0].params
    assert after.operators[0].inputs == before.operators[0].inputs
    assert after.operators[1:] == before.operators[1:]
    assert after.tensor(1).quant == Q2  # the output keeps its own quantization


# ---- fold_relu ------------------------------------------------------------------------------


def relu_graph(
    kind: str = "RELU",
    relu_out_quant: Quant = Q,
    conv_activation: str = "NONE",
    extra_reader: bool = False,
    output: bool = False,
) -> Graph:
    tensors = [act(0), act(1), act(2, quant=relu_out_quant), act(3), *conv_weights()]
    ops = [conv(0, 1, activation=conv_activation), op(kind, (1,), (2,))]
    outputs: tuple[int, ...] = (2,)
    if extra_reader:
        ops.append(op("ADD", (1, 0), (3,), ElementwiseParams()))
        outputs = (2, 3)
    if output:
        outputs = (*outputs, 1)
    return make(tensors, ops, (0,), outputs)


@pytest.mark.parametrize("kind", ["RELU", "RELU6"])
def test_fold_relu_sets_the_fused_activation(kind: str) -> None:
    before = relu_graph(kind)
    snapshot = copy.deepcopy(before)
    after = fold_relu(before)
    (folded,) = after.operators
    assert folded.kind == "CONV_2D" and folded.params.activation == kind
    assert folded.outputs == (2,) and folded.inputs == before.operators[0].inputs
    assert "fold_relu" in after.notes[-1]
    assert before == snapshot


@pytest.mark.parametrize(
    "change",
    [
        {"relu_out_quant": Q2},
        {"conv_activation": "RELU6"},
        {"extra_reader": True},
        {"output": True},
    ],
    ids=["quant-differs", "already-fused", "two-readers", "graph-output"],
)
def test_fold_relu_refuses(change: dict) -> None:
    before = relu_graph(**change)
    unchanged(before, fold_relu(before))


def test_fold_relu_refuses_a_concatenation_producer() -> None:
    tensors = [act(0), act(1, (1, 8, 8, 8)), act(2, (1, 8, 8, 8))]
    ops = [op("CONCATENATION", (0, 0), (1,), ConcatParams(3)), op("RELU", (1,), (2,))]
    before = make(tensors, ops, (0,), (2,))
    unchanged(before, fold_relu(before))


# ---- rewrite --------------------------------------------------------------------------------


def test_rewrite_applies_every_pass() -> None:
    tensors = [
        act(0, dtype="float32"),
        act(1),
        act(2, (1, 10, 10, 4)),
        act(3),
        act(4),
        act(5, (1, 1, 1, 4), Q2),
        act(6, (1, 4), Q2),
        act(7, (1, 4), dtype="float32"),
        *conv_weights(),
        const(102, (4, 2), "int32"),
        const(103, (2,), "int32"),
        const(104, (2,), "int32"),
    ]
    ops = [
        op("QUANTIZE", (0,), (1,)),
        op("PAD", (1, 102), (2,), PadParams(Padding(1, 1, 1, 1))),
        conv(2, 3),
        op("RELU6", (3,), (4,)),
        op("MEAN", (4, 103), (5,), ReduceParams((1, 2), True)),
        op("RESHAPE", (5, 104), (6,)),
        op("DEQUANTIZE", (6,), (7,)),
    ]
    after = rewrite(make(tensors, ops, (0,), (7,)))
    assert [o.kind for o in after.operators] == ["CONV_2D", "GLOBAL_AVERAGE_POOL"]
    assert after.operators[0].params == Conv2DParams((1, 1), (1, 1), Padding(1, 1, 1, 1), "RELU6")
    assert after.operators[0].inputs[0] == 1 and after.operators[0].outputs == (4,)
    assert after.inputs == (1,) and after.outputs == (6,) and after.storage(6) == 5
    assert after.interface == (("QUANTIZE", 0, 1), ("DEQUANTIZE", 7, 6))
    assert len(after.notes) == 5


# ---- real models ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", MCUNET or [None], ids=lambda p: p.name if p else "no-models")
def test_mcunet_releases_lose_every_pad(path: Path | None) -> None:
    if path is None:
        pytest.skip(f"{MODELS} is absent")
    graph = read_model(path)
    after = rewrite(graph)
    assert "PAD" not in {o.kind for o in after.operators}
    assert Counter(o.kind for o in graph.operators)["PAD"] > 0


def test_mcunet_in3_folds_its_54_pads_into_the_convolutions() -> None:
    path = model_path("mcunet/mcunet-in3.tflite")
    data = path.read_bytes()
    model = tflite.Model.GetRootAsModel(data, 0)
    sub = model.Subgraphs(0)
    names = []
    for i in range(sub.OperatorsLength()):
        code = model.OperatorCodes(sub.Operators(i).OpcodeIndex())
        names.append(builtin_name(code))
    pads = [i for i, n in enumerate(names) if n == "PAD"]
    assert len(pads) == 54

    after = rewrite(read_model(path))
    counts = Counter(o.kind for o in after.operators)
    assert set(counts) == {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "AVERAGE_POOL_2D"}
    assert sum(counts.values()) == len(names) - 54 - 1  # PADs folded, RESHAPE aliased
    by_source = {o.source_index: o for o in after.operators}

    for i in pads:
        pad = sub.Operators(i)
        src, dst = int(pad.Inputs(0)), int(pad.Outputs(0))
        buffer = model.Buffers(sub.Tensors(int(pad.Inputs(1))).Buffer())
        table = np.frombuffer(buffer.DataAsNumpy().tobytes(), "<i4").reshape(4, 2)
        readers = [
            j for j in range(sub.OperatorsLength()) if dst in sub.Operators(j).InputsAsNumpy()
        ]
        assert len(readers) == 1 and names[readers[0]] in ("CONV_2D", "DEPTHWISE_CONV_2D")
        reader = sub.Operators(readers[0])
        options_type = (
            tflite.Conv2DOptions
            if names[readers[0]] == "CONV_2D"
            else tflite.DepthwiseConv2DOptions
        )
        options = options_type()
        table_ref = reader.BuiltinOptions()
        options.Init(table_ref.Bytes, table_ref.Pos)
        assert options.Padding() == tflite.Padding.VALID  # so the fold is the PAD alone
        folded = by_source[readers[0]]
        assert folded.inputs[0] == src
        assert folded.params.padding == Padding(*table[1].tolist(), *table[2].tolist())

    # The classifier RESHAPE is the graph output: aliased, still listed as the output.
    (reshape,) = [i for i, n in enumerate(names) if n == "RESHAPE"]
    out = int(sub.Operators(reshape).Outputs(0))
    assert after.outputs == (out,)
    assert after.storage(out) == int(sub.Operators(reshape).Inputs(0))
    assert after.operators[-1].outputs == (after.storage(out),)


def test_person_det_strips_its_float_interface() -> None:
    graph = rewrite(read_model(model_path("mcunet/person-det.tflite")))
    assert Counter(kind for kind, *_ in graph.interface) == {"QUANTIZE": 1, "DEQUANTIZE": 3}
    assert {graph.tensor(t).dtype for t in (*graph.inputs, *graph.outputs)} == {"int8"}
    kinds = {o.kind for o in graph.operators}
    assert not kinds & {"QUANTIZE", "DEQUANTIZE", "PAD"}


def test_channel_pads_survive_rewrite() -> None:
    path = model_path("tinyml/armzoo-micronet_vww4_128_128_int8.tflite")
    graph = read_model(path)
    after = rewrite(graph)
    channel_pads = [o for o in graph.operators if o.kind == "PAD" and o.params.channels != (0, 0)]
    assert channel_pads
    assert [o for o in after.operators if o.kind == "PAD"] == channel_pads


def test_resnet_pool_pad_folds_with_counting_padding() -> None:
    after = rewrite(read_model(model_path("keras/ResNet50.graph.tflite")))
    (pool,) = [o for o in after.operators if o.kind == "MAX_POOL_2D"]
    assert pool.params.pad_counts and pool.params.padding == Padding(1, 1, 1, 1)
    assert after.operators[0].params.padding == Padding(3, 3, 3, 3)
