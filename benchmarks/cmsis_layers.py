"""The layers of a model as TFLite Micro's cmsis_nn kernels would run them: for every op, the
CMSIS-NN routine and the exact arguments TFLite Micro passes it (per-channel multipliers and
shifts from TFLite's quantization arithmetic, offsets, padding, activation range, the dims
structs), plus a plain arena (TFLite Micro never runs an op in place) for the C harness of
``bench_cmsis.py``. Pure Python: nothing here builds or runs anything.

What TFLite Micro does is read from its kernels/cmsis_nn/{conv,depthwise_conv,add,pooling,
fully_connected,pad,batch_matmul,softmax}.cc (commit 90b983c, the one the reference file pins):
- CONV_2D: arm_convolve_wrapper_s8, scratch from arm_convolve_wrapper_s8_get_buffer_size,
  filter dims n=1, h, w, c=input channels; the wrapper picks 1x1 fast / 1x1 / 1xN / im2col.
- DEPTHWISE_CONV_2D: arm_depthwise_conv_wrapper_s8 (3x3 fast path, s8_opt or the generic
  one), scratch from arm_depthwise_conv_wrapper_s8_get_buffer_size.
- ADD (same shapes): arm_elementwise_add_s8, left shift 20, input multipliers relative to
  twice the larger input scale (QuantizeMultiplierSmallerThanOneExp).
- AVERAGE_POOL_2D / MAX_POOL_2D: arm_avgpool_s8 (scratch arm_avgpool_s8_get_buffer_size) /
  arm_max_pool_s8.
- FULLY_CONNECTED int8: with an output of more than two axes and a depth that is a multiple
  of 4, arm_convolve_1x1_s8_fast (input {batches, 1, 1, depth}, the per-tensor multiplier
  repeated per channel, as EvalQuantizedInt8 fills its scratch); otherwise
  arm_fully_connected_wrapper_s8 (kernel sums precomputed with arm_vector_sum_s8 when the
  buffer size is non-zero, as under KERNELS_OPTIMIZED_FOR_SPEED). Per-tensor weights only.
- BATCH_MATMUL int8: arm_batch_matmul_s8 on the operands TFLite Micro hands it: the right one
  transposed (TransposeRowsColumns into a persistent buffer, every Invoke) unless adj_y, the
  left one when adj_x; dims from FillVariableShape, compressed to rank - 1 when the right
  operand's third-last axis is 1; scratch from arm_fully_connected_s8_get_buffer_size of the
  output dims. The transposes are timed with the call (a plain C loop here, TFLite Micro's
  reference_ops::Transpose there). Constant operands are not supported.
- SOFTMAX int8: arm_softmax_s8, rows x last axis, multiplier / left shift / diff_min from
  CalculateSoftmaxParams (rip.codegen.activation_params.softmax_params computes the same).
- 16x8 (int16 activations, int8 weights, zero points 0): CONV_2D arm_convolve_wrapper_s16
  (which is arm_convolve_s16; the bias passed as cmsis_nn_bias_data, int64 or int32);
  DEPTHWISE_CONV_2D arm_depthwise_conv_s16 itself (depthwise_conv.cc's EvalQuantizedPerChannel16x8
  calls it, not the wrapper; no scratch; int64 bias); FULLY_CONNECTED arm_fully_connected_s16
  (per-tensor weights: TFLite Micro's cmsis_nn Prepare refuses per-channel 16x8; int64
  bias; scratch arm_fully_connected_s16_get_buffer_size); AVERAGE_POOL_2D / MAX_POOL_2D
  arm_avgpool_s16 / arm_max_pool_s16. Activation ranges are int16's.
- UNIDIRECTIONAL_SEQUENCE_LSTM (cmsis_nn/unidirectional_sequence_lstm.cc): int8 activations
  with an int16 cell state, arm_lstm_unidirectional_s8; 16x8 (int16 activations, int64
  biases), arm_lstm_unidirectional_s16; any other cell type runs the reference EvalLstm (not
  in the harness). cmsis_nn_lstm_params from TFLite Micro's OpDataLSTM (the gates' FC
  multipliers, the inter-gate products, the quantized cell clip, the cell scale's power, the
  hidden state's zero point: rip.codegen.lstm_params computes the same Prepare), time_major
  as the op says (both layouts run through CMSIS-NN). Each gate's effective biases are
  computed in Prepare (arm_vector_sum_s8 / _s8_s64 of its input weights with the input
  offset and the bias, of its recurrent weights with minus the hidden zero point), outside
  the timed call. The context holds the three scratch buffers (temp1, temp2, cell_state) and
  no hidden_state: TFLite Micro leaves it NULL, so the routine zeroes the cell state itself
  and the first step skips the recurrent products, which is what the reference's reset state
  gives (hidden at its zero point: every recurrent sum 0; cell 0). The variable tensors are
  never read or written: TFLite Micro's cmsis_nn LSTM starts every Invoke from that state.
- PAD: arm_pad_s8 with the output zero point; RESHAPE shares its input's bytes;
  RESIZE_NEAREST_NEIGHBOR (no CMSIS-NN routine) is a gather through TFLite's index rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rip.allocator.planning.cost_model import op_class as cost_class
from rip.codegen import lstm_params
from rip.codegen.activation_params import checked_log2, softmax_params
from rip.codegen.quant import (
    ParamsError,
    activation_range,
    any_scale_zp,
    effective_scale,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
)
from rip.core.operators import Op
from rip.frontend.ir import Graph, Operator

CLASSES = ("1x1 conv", "other conv", "dw 3x3", "dw 5x5", "dw 7x7", "dw other", "elementwise",
           "pooling", "fully connected", "batch matmul", "softmax", "lstm", "pad",
           "other")  # fmt: skip
ALIGN = 16
CTYPES = {"int8": "int8_t", "int16": "int16_t"}  # the harness's element type per activation
LIMITS = {"int8": (-128, 127), "int16": (-32768, 32767)}
# the ops the harness runs in 16x8 (int16 activations)
WIDE = frozenset({Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED, Op.AVERAGE_POOL_2D,
                  Op.MAX_POOL_2D, Op.UNIDIRECTIONAL_SEQUENCE_LSTM})  # fmt: skip


class LayerError(ValueError):
    """An op the harness cannot run as TFLite Micro would (named in one line)."""


@dataclass
class Layer:
    """One timed call of the harness: ``kind`` selects the C block of the template, ``args``
    holds its arguments, ``data`` its constant arrays (name -> (C type, values))."""

    index: int  # position in the harness (schedule order)
    op: int  # TFLite operator index
    kind: str
    op_class: str
    macs: int
    output: int  # output tensor id
    output_bytes: int
    input_offsets: tuple[int, ...] = ()  # arena offsets of its activation inputs
    output_offset: int = 0
    routine: str = ""  # the CMSIS-NN routine that does the work (the wrappers' choice)
    args: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    ctype: str = "int8_t"  # element type of its activations (int16_t: a 16x8 layer)
    buffers: dict = field(default_factory=dict)  # name -> bytes of a zeroed static buffer

    @property
    def dtype(self) -> str:
        return "int16" if self.ctype == "int16_t" else "int8"


# The breakdown's name of each cost class (allocator.planning.cost_model.op_class).
LABELS = {
    "conv1x1": "1x1 conv",
    "conv": "other conv",
    "fc": "fully connected",
    "elementwise": "elementwise",
    "pool": "pooling",
}


OWN_CLASSES = {Op.BATCH_MATMUL: "batch matmul", Op.SOFTMAX: "softmax",
               Op.UNIDIRECTIONAL_SEQUENCE_LSTM: "lstm"}  # fmt: skip


def op_class(graph: Graph, op: Operator) -> str:
    """The benchmark's class of an op (the issue's breakdown): its cost class
    (`cost_model.op_class`), depthwise by kernel size, PAD on its own."""
    if op.kind == Op.PAD:
        return "pad"
    if op.kind in OWN_CLASSES:
        return OWN_CLASSES[op.kind]
    cls = cost_class(graph, op, by_window=True)
    if cls.startswith("dw"):
        return cls if cls in CLASSES else "dw other"
    return LABELS.get(cls, "other")


def op_macs(graph: Graph, op: Operator) -> int:
    """Multiply-accumulates of one op, counted as the reference file counts them (and a
    BATCH_MATMUL's: output elements x depth; an LSTM's: per step and batch row, four gates
    of units x (features + units))."""
    if op.kind == Op.UNIDIRECTIONAL_SEQUENCE_LSTM:
        *rows, features = graph.tensors[op.inputs[0]].shape
        units = graph.tensors[op.inputs[5]].shape[0]
        return math.prod(rows) * 4 * units * (features + units)
    if op.kind == Op.BATCH_MATMUL:
        a = graph.tensors[op.inputs[0]].shape
        depth = a[-2] if op.params.adj_x else a[-1]
        return math.prod(graph.tensors[op.outputs[0]].shape) * depth
    if op.kind not in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED):
        return 0
    n = math.prod(graph.tensors[op.outputs[0]].shape)
    f = graph.tensors[op.inputs[1]].shape
    if op.kind == Op.CONV_2D:
        return n * f[1] * f[2] * f[3]
    if op.kind == Op.DEPTHWISE_CONV_2D:
        return n * f[1] * f[2]
    return n * f[-1]


def _nhwc(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    if len(shape) != 4:
        raise LayerError(f"shape {shape} is not NHWC")
    return shape[0], shape[1], shape[2], shape[3]


def _per_tensor(graph: Graph, tid: int, dtype: str = "int8") -> tuple[float, int]:
    q = graph.tensors[tid].quant
    if graph.tensors[tid].dtype != dtype or q is None or len(q.scale) != 1:
        raise LayerError(f"tensor {tid} is not {dtype} with one scale")
    if dtype == "int16" and q.zero_point[0] != 0:  # TFLite Micro's 16x8 Prepare checks
        raise LayerError(f"int16 tensor {tid} has zero point {q.zero_point[0]}")
    return q.scale[0], q.zero_point[0]


def _bias(graph: Graph, op: Operator, layer: Layer, wide_types: tuple[str, ...]) -> bool:
    """The op's bias (input 2) as ``layer.data["b"]``, if it has one: int32 for an int8
    layer, one of ``wide_types`` for a 16x8 one; ``args["bias_int32"]`` says which."""
    if len(op.inputs) <= 2 or op.inputs[2] < 0:
        return False
    dtype = graph.tensors[op.inputs[2]].dtype
    if dtype not in (("int32",) if layer.dtype == "int8" else wide_types):
        raise LayerError(f"{dtype} bias in a {layer.dtype} layer")
    layer.data["b"] = (f"{dtype}_t", _array(graph, op.inputs[2], dtype))
    layer.args["bias_int32"] = dtype == "int32"
    return True


def _product_multiplier(s_in: float, s_w: float, s_out: float) -> tuple[int, int]:
    """GetQuantizedConvolutionMultipler (FULLY_CONNECTED, BATCH_MATMUL): the float32
    product of the two scales, then a double division by the output's, QuantizeMultiplier'd."""
    product = np.float32(s_in) * np.float32(s_w)
    return quantize_multiplier(float(np.float64(product) / np.float64(np.float32(s_out))))


def _array(graph: Graph, tid: int, dtype: str) -> list[int]:
    t = graph.tensors[tid]
    if t.data is None:
        raise LayerError(f"tensor {tid} has no constant data")
    return np.frombuffer(t.data, dtype=dtype).astype(np.int64).tolist()


def _conv_common(graph: Graph, op: Operator, layer: Layer, channels: int) -> None:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    in_scale, in_zp = _per_tensor(graph, x, layer.dtype)
    out_scale, out_zp = _per_tensor(graph, y, layer.dtype)
    wq = graph.tensors[w].quant
    if graph.tensors[w].dtype != "int8" or wq is None or any(wq.zero_point):
        raise LayerError("weights are not symmetric int8")
    scales = wq.scale if len(wq.scale) > 1 else wq.scale * channels
    pairs = [quantize_multiplier(effective_scale(in_scale, s, out_scale)) for s in scales]
    p = op.params
    lo, hi = activation_range(p.activation, graph.tensors[y].quant, *LIMITS[layer.dtype])
    # 16x8: CONV_2D takes an int64 or int32 bias (cmsis_nn_bias_data), DEPTHWISE_CONV_2D
    # reads int64 only
    wide = ("int64", "int32") if op.kind == Op.CONV_2D else ("int64",)
    has_bias = _bias(graph, op, layer, wide)
    layer.args.update(
        input_dims=_nhwc(graph.tensors[x].shape),
        output_dims=_nhwc(graph.tensors[y].shape),
        input_offset=-in_zp,
        output_offset=out_zp,
        stride=p.stride,
        dilation=p.dilation,
        padding=(p.padding.top, p.padding.left),
        activation=(lo, hi),
        has_bias=has_bias,
    )
    layer.data["w"] = ("int8_t", _array(graph, w, "int8"))
    layer.data["mult"] = ("int32_t", [m for m, _ in pairs])
    layer.data["shift"] = ("int32_t", [s for _, s in pairs])


def _conv(graph: Graph, op: Operator, layer: Layer) -> None:
    f = graph.tensors[op.inputs[1]].shape
    if f[3] != graph.tensors[op.inputs[0]].shape[3]:
        raise LayerError("grouped convolution")
    _conv_common(graph, op, layer, f[0])
    layer.args["filter_dims"] = (1, f[1], f[2], f[3])
    a = layer.args
    if layer.dtype == "int16":  # arm_convolve_wrapper_s16 always calls arm_convolve_s16
        layer.routine = "arm_convolve_s16"
        return
    # arm_convolve_wrapper_s8's dispatch (arm_nn_is_convolve_1x1 / _1x1_fast / _1_x_n)
    if a["padding"] == (0, 0) and f[1:3] == (1, 1) and a["dilation"] == (1, 1):
        layer.routine = "arm_convolve_1x1_s8" + ("_fast" if a["stride"] == (1, 1) else "")
    elif (
        a["input_dims"][1] == 1
        and f[1] == 1
        and a["dilation"][1] == 1
        and (a["stride"][1] * f[3] % 4 == 0)
    ):
        layer.routine = "arm_convolve_1_x_n_s8"
    else:
        layer.routine = "arm_convolve_s8"


def _depthwise(graph: Graph, op: Operator, layer: Layer) -> None:
    f = graph.tensors[op.inputs[1]].shape
    _conv_common(graph, op, layer, f[3])
    layer.args["filter_dims"] = (1, f[1], f[2], f[3])
    layer.args["ch_mult"] = op.params.depth_multiplier
    a = layer.args
    if layer.dtype == "int16":  # TFLite Micro calls it directly, not through the wrapper
        layer.routine = "arm_depthwise_conv_s16"
        return
    # arm_depthwise_conv_wrapper_s8's dispatch on a core without MVE
    if a["ch_mult"] == 1 and a["input_dims"][0] == 1 and a["dilation"] == (1, 1):
        fast = f[1:3] == (3, 3) and max(a["padding"]) <= 1
        layer.routine = "arm_depthwise_conv_3x3_s8" if fast else "arm_depthwise_conv_s8_opt"
    else:
        layer.routine = "arm_depthwise_conv_s8"


def _add(graph: Graph, op: Operator, layer: Layer) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if graph.tensors[a].shape != graph.tensors[b].shape:
        raise LayerError("ADD with broadcast (TFLite Micro runs its reference kernel)")
    (sa, za), (sb, zb), (sy, zy) = (_per_tensor(graph, t) for t in (a, b, y))
    left_shift = 20
    twice_max = 2.0 * float(max(np.float32(sa), np.float32(sb)))
    m1, s1 = quantize_multiplier_smaller_than_one_exp(float(np.float32(sa)) / twice_max)
    m2, s2 = quantize_multiplier_smaller_than_one_exp(float(np.float32(sb)) / twice_max)
    mo, so = quantize_multiplier_smaller_than_one_exp(
        twice_max / ((1 << left_shift) * float(np.float32(sy)))
    )
    lo, hi = activation_range(op.params.activation, graph.tensors[y].quant)
    layer.args.update(
        in1=(-za, m1, s1), in2=(-zb, m2, s2), left_shift=left_shift, out=(zy, mo, so),
        activation=(lo, hi), size=math.prod(graph.tensors[y].shape),
    )  # fmt: skip


def _pool(graph: Graph, op: Operator, layer: Layer) -> None:
    x, y = op.inputs[0], op.outputs[0]
    p = op.params
    lo, hi = activation_range(p.activation, graph.tensors[y].quant, *LIMITS[layer.dtype])
    if layer.dtype == "int16":
        layer.routine = layer.routine.replace("_s8", "_s16")
    layer.args.update(
        input_dims=_nhwc(graph.tensors[x].shape),
        output_dims=_nhwc(graph.tensors[y].shape),
        filter=p.filter,
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        activation=(lo, hi),
    )


def _fc(graph: Graph, op: Operator, layer: Layer) -> None:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    in_scale, in_zp = _per_tensor(graph, x, layer.dtype)
    out_scale, out_zp = _per_tensor(graph, y, layer.dtype)
    units, depth = graph.tensors[w].shape
    wq = graph.tensors[w].quant
    if len(wq.scale) != 1:
        raise LayerError("per-channel FULLY_CONNECTED")
    m, s = _product_multiplier(in_scale, wq.scale[0], out_scale)
    lo, hi = activation_range(op.params.activation, graph.tensors[y].quant, *LIMITS[layer.dtype])
    has_bias = _bias(graph, op, layer, ("int64",))
    out_shape = graph.tensors[y].shape
    batches = math.prod(out_shape) // units  # FlatSizeSkipDim of the output
    if layer.dtype == "int16":
        variant, layer.routine = "s16", "arm_fully_connected_s16"
    elif len(out_shape) > 2 and depth % 4 == 0:
        variant, layer.routine = "1x1", "arm_convolve_1x1_s8_fast"
        layer.data["mult"] = ("int32_t", [m] * units)
        layer.data["shift"] = ("int32_t", [s] * units)
    else:
        variant = "wrapper"
    if variant != "wrapper" and wq.zero_point[0]:
        raise LayerError(f"weights zero point {wq.zero_point[0]} ({layer.routine} has none)")
    layer.args.update(
        batches=batches, depth=depth, units=units, input_offset=-in_zp,
        filter_offset=-wq.zero_point[0], output_offset=out_zp, mult=m, shift=s,
        activation=(lo, hi), has_bias=has_bias, variant=variant,
    )  # fmt: skip
    layer.data["w"] = ("int8_t", _array(graph, w, "int8"))


def _fill_variable_shape(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """batch_matmul.cc's FillVariableShape: a rank 2-4 shape as cmsis_nn_dims."""
    return tuple((1,) * (4 - len(shape)) + tuple(shape)) if 2 <= len(shape) <= 4 else (1, 1, 1, 1)


def _swap(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


def _batch_matmul(graph: Graph, op: Operator, layer: Layer) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if layer.dtype != "int8":
        raise LayerError("16x8 BATCH_MATMUL (arm_batch_matmul_s16) is not in the harness")
    if any(graph.tensors[t].is_constant for t in (a, b)):
        raise LayerError("a constant operand (TFLite Micro transposes it once)")
    (sa, za), (sb, zb), (sy, zy) = (_per_tensor(graph, t) for t in (a, b, y))
    lhs, rhs = tuple(graph.tensors[a].shape), tuple(graph.tensors[b].shape)
    out = tuple(graph.tensors[y].shape)
    if not (2 <= len(lhs) <= 4 and 2 <= len(rhs) <= 4):
        raise LayerError("operands of rank outside 2-4 (TFLite Micro refuses them)")
    adj_x, adj_y = op.params.adj_x, op.params.adj_y
    # PopulateEvalData: the right operand transposed unless adj_y, the left one when adj_x;
    # each transpose is (input position, batches, rows, cols) of the stored operand
    transposes = []
    if not adj_y:
        transposes.append((1, math.prod(rhs[:-2]), rhs[-2], rhs[-1]))
        rhs = _swap(rhs)
    if adj_x:
        transposes.append((0, math.prod(lhs[:-2]), lhs[-2], lhs[-1]))
        lhs = _swap(lhs)
    out_dims = _fill_variable_shape(out)
    if len(rhs) > 2 and len(lhs) > 2 and rhs[-3] == 1:  # "Compress BatchMatMul"
        lhs = (*lhs[:-3], lhs[-3] * lhs[-2], lhs[-1])
        rhs = (*rhs[:-3], rhs[-2], rhs[-1])
        out_dims = _fill_variable_shape((*out[:-3], lhs[-2], out[-1]))
    m, s = _product_multiplier(sa, sb, sy)
    layer.routine = "arm_batch_matmul_s8" + (" + transpose" if transposes else "")
    layer.args.update(
        lhs_dims=_fill_variable_shape(lhs), rhs_dims=_fill_variable_shape(rhs),
        output_dims=out_dims, adj=(int(adj_x), int(adj_y)), input_offset=-za,
        filter_offset=-zb, output_offset=zy, mult=m, shift=s, transposes=transposes,
        transposed=tuple(k for k, *_ in transposes),
    )  # fmt: skip
    for k, n, r, c in transposes:
        layer.buffers[f"t{k}"] = n * r * c


def _softmax(graph: Graph, op: Operator, layer: Layer) -> None:
    x, y = op.inputs[0], op.outputs[0]
    if graph.tensors[x].dtype != "int8":
        raise LayerError(f"{graph.tensors[x].dtype} input")
    try:
        sp = softmax_params(graph.tensors[x], graph.tensors[y], op.params.beta)
    except ParamsError as e:
        raise LayerError(str(e)) from None
    layer.args.update(rows=sp.num_rows, row_size=sp.row_size, mult=sp.input_multiplier,
                      shift=sp.input_left_shift, diff_min=sp.diff_min)  # fmt: skip


def _lstm(graph: Graph, op: Operator, layer: Layer) -> None:
    try:
        p = lstm_params.op_params(graph, op)
    except ParamsError as e:
        raise LayerError(str(e)) from None
    cell = graph.tensors[p.cell_state]
    if cell.dtype != "int16":  # TFLite Micro's Prepare refuses any other integer cell
        raise LayerError(f"cell state {cell.dtype}")
    if layer.dtype == "int16":
        layer.routine = "arm_lstm_unidirectional_s16"
    power, _ = checked_log2(any_scale_zp(cell)[0])
    layer.args.update(
        time_major=p.time_major, batch=p.batch, steps=p.steps, features=p.features,
        units=p.units, input_offset=p.input_offset, hidden_zero_point=p.hidden_zero_point,
        forget_cell=p.forget_cell, input_cell=p.input_cell, cell_clip=p.cell_clip,
        cell_scale_power=power, hidden=p.hidden, input_fc=p.input_fc,
        recurrent_fc=p.recurrent_fc,
    )  # fmt: skip
    bias = "int64" if layer.dtype == "int16" else "int32"
    # the operands as stored, in TFLite's gate order: input, forget, cell, output
    for g, (w_x, w_h, b) in enumerate(lstm_params.GATE_OPERANDS):
        layer.data[f"wx{g}"] = ("int8_t", _array(graph, op.inputs[w_x], "int8"))
        layer.data[f"wh{g}"] = ("int8_t", _array(graph, op.inputs[w_h], "int8"))
        layer.data[f"b{g}"] = (f"{bias}_t", _array(graph, op.inputs[b], bias))
    sums = 8 if layer.dtype == "int16" else 4  # int64 or int32 effective biases
    for g in range(4):
        layer.buffers[f"sx{g}"] = sums * p.units
        layer.buffers[f"sh{g}"] = sums * p.units
    for name in ("temp1", "temp2", "cell"):  # TFLite Micro's scratch buffers
        layer.buffers[name] = 2 * p.batch * p.units


def _pad(graph: Graph, op: Operator, layer: Layer) -> None:
    x, y = op.inputs[0], op.outputs[0]
    p = op.params
    _, zp = _per_tensor(graph, y)
    layer.args.update(
        input_dims=_nhwc(graph.tensors[x].shape),
        pre=(0, p.padding.top, p.padding.left, p.channels[0]),
        post=(0, p.padding.bottom, p.padding.right, p.channels[1]),
        value=zp,
    )


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half: bool) -> list[int]:
    """TFLite's GetNearestNeighbor for every output coordinate, in float32 as it computes."""
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    offset = np.float32(0.5 if half else 0.0)
    out = []
    for v in range(out_size):
        f = (np.float32(v) + offset) * scale
        k = int(math.copysign(math.floor(abs(f) + 0.5), f)) if align_corners else math.floor(f)
        k = min(k, in_size - 1)
        out.append(max(0, k) if half else k)
    return out


def _resize(graph: Graph, op: Operator, layer: Layer) -> None:
    x, y = op.inputs[0], op.outputs[0]
    n, h, w, c = _nhwc(graph.tensors[x].shape)
    _, oh, ow, _ = _nhwc(graph.tensors[y].shape)
    p = op.params
    layer.args.update(dims=(n, h, w, c), out_hw=(oh, ow))
    layer.data["ys"] = ("int32_t", nearest_indices(h, oh, p.align_corners, p.half_pixel_centers))
    layer.data["xs"] = ("int32_t", nearest_indices(w, ow, p.align_corners, p.half_pixel_centers))


ROUTINES = {
    Op.ADD: "arm_elementwise_add_s8",
    Op.AVERAGE_POOL_2D: "arm_avgpool_s8",
    Op.MAX_POOL_2D: "arm_max_pool_s8",
    Op.FULLY_CONNECTED: "arm_fully_connected_wrapper_s8",
    Op.PAD: "arm_pad_s8",
    Op.RESIZE_NEAREST_NEIGHBOR: "(gather)",
    Op.SOFTMAX: "arm_softmax_s8",
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: "arm_lstm_unidirectional_s8",
}

BUILDERS = {
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _depthwise,
    Op.ADD: _add,
    Op.AVERAGE_POOL_2D: _pool,
    Op.MAX_POOL_2D: _pool,
    Op.FULLY_CONNECTED: _fc,
    Op.PAD: _pad,
    Op.RESIZE_NEAREST_NEIGHBOR: _resize,
    Op.BATCH_MATMUL: _batch_matmul,
    Op.SOFTMAX: _softmax,
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: _lstm,
}


def build_layers(graph: Graph, offsets: dict[int, int]) -> list[Layer]:
    """Every op of ``graph`` (the model as read, its float interface stripped) as a harness
    layer, in schedule order, its tensors at ``offsets`` (``plan_arena``); RESHAPE is left
    out (it shares its input's bytes)."""
    layers: list[Layer] = []
    for k, op in enumerate(graph.operators):
        if op.kind == Op.RESHAPE:
            continue
        build = BUILDERS.get(op.kind)
        out = graph.tensors[op.outputs[0]]
        layer = Layer(len(layers), op.source_index, op.kind, op_class(graph, op),
                      op_macs(graph, op), op.outputs[0], out.nbytes)  # fmt: skip
        try:
            if build is None:
                raise LayerError("not supported by bench-cmsis")
            if out.dtype != "int8" and not (out.dtype == "int16" and op.kind in WIDE):
                raise LayerError(f"output is {out.dtype}")
            layer.ctype = CTYPES[out.dtype]
            layer.routine = ROUTINES.get(op.kind, "")
            build(graph, op, layer)
            acts = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
            layer.input_offsets = tuple(offsets[t] for t in acts)
            layer.output_offset = offsets[op.outputs[0]]
        except LayerError as e:
            raise LayerError(f"{graph.name}: {op.kind} (operator {op.source_index}, step {k}): "
                             f"{e}") from None  # fmt: skip
        layers.append(layer)
    return layers


def storage_map(graph: Graph) -> dict[int, int]:
    """Tensor -> the tensor whose bytes it uses: a RESHAPE output shares its input's."""
    storage: dict[int, int] = {}
    for op in graph.operators:
        if op.kind == Op.RESHAPE:
            src = op.inputs[0]
            storage[op.outputs[0]] = storage.get(src, src)
    return storage


def plan_arena(graph: Graph) -> tuple[dict[int, int], int]:
    """A first-fit arena for the harness: every activation its own bytes while it is live
    (from its producer to its last reader; graph inputs from the start, outputs to the end),
    offsets aligned to 16. Returns (tensor -> offset, arena bytes); aliases share offsets."""
    storage = storage_map(graph)
    last = len(graph.operators)
    live: dict[int, list[int]] = {}
    for t in graph.inputs:
        live[storage.get(t, t)] = [-1, -1]
    for i, op in enumerate(graph.operators):
        for t in (*op.inputs, *op.outputs):
            if t < 0 or graph.tensors[t].is_constant:
                continue
            s = storage.get(t, t)
            span = live.setdefault(s, [i, i])
            span[0], span[1] = min(span[0], i), max(span[1], i)
    for t in graph.outputs:
        live[storage.get(t, t)][1] = last
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    offsets: dict[int, int] = {}
    for s, (first, end_op) in sorted(live.items(), key=lambda kv: (kv[1][0], kv[0])):
        size = -(-graph.tensors[s].nbytes // ALIGN) * ALIGN
        clashes = sorted((o, e) for o, e, f, z in placed if f <= end_op and first <= z)
        offset = 0
        for o, e in clashes:
            if offset + size <= o:
                break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, end_op))
        offsets[s] = offset
    for t, s in storage.items():
        offsets[t] = offsets[s]
    return offsets, max((e for _, e, _, _ in placed), default=0)
