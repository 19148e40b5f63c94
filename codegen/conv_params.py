"""Kernel parameters of the spatial int8 kernels (kernels/rip_conv.h, kernels/rip_pool.h),
computed from the graph IR exactly as TensorFlow Lite Micro computes them in its Prepare
functions, so that the C kernels reproduce its bytes:

- CONV_2D, DEPTHWISE_CONV_2D: per-channel (multiplier, shift) from
  ``double(input_scale) * double(filter_scale[c]) / double(output_scale)``
  (PopulateConvolutionQuantizationParams; a per-tensor filter scale is broadcast);
- FULLY_CONNECTED: per-channel as above, or per-tensor from
  ``double(float(input_scale * filter_scale)) / double(output_scale)`` — the product is
  taken in float32 first (GetQuantizedConvolutionMultipler);
- activation ranges: CalculateActivationRangeQuantized, in float32;
- pooling: no requantization, the activation range of the output;
- MEAN over H and W (GLOBAL_AVERAGE_POOL): QuantizeMultiplier(input_scale / output_scale),
  then 1 / (H W) folded into the multiplier as reference_ops::QuantizedMeanOrSum does.

Each function is pure and returns a frozen dataclass whose fields map one to one onto the C
params structs, dims and quantization arrays; the code generator renders them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rip.codegen.quant import ParamsError, effective_scale, quantize_multiplier
from rip.codegen.quant import activation_range as quant_activation_range
from rip.frontend.ir import (
    Conv2DParams,
    DepthwiseParams,
    FullyConnectedParams,
    Graph,
    Operator,
    PoolParams,
    Quant,
    ReduceParams,
    Tensor,
)
from rip.scratch import scratch_bytes
from rip.shapes import nhwc

Dims = tuple[int, int, int, int]  # rip_dims: n, h, w, c


KernelParamsError = ParamsError  # an operator the int8 kernels (and TFLite Micro) cannot run


@dataclass(frozen=True)
class ConvKernelParams:
    """``rip_conv2d_s8`` / ``rip_depthwise_conv2d[_inplace]_s8``: rip_conv_params (or
    rip_dw_conv_params), rip_per_channel_quant and the dims structs."""

    kind: str  # CONV_2D | DEPTHWISE_CONV_2D
    input_dims: Dims
    filter_dims: Dims  # conv [C_out, KH, KW, C_in]; depthwise [1, KH, KW, C * M]
    output_dims: Dims
    stride: tuple[int, int]  # (h, w)
    padding: tuple[int, int]  # (top, left); bottom and right follow from the output dims
    dilation: tuple[int, int]
    depth_multiplier: int  # 1 for CONV_2D
    input_offset: int  # -input zero point
    output_offset: int  # output zero point
    activation: tuple[int, int]  # (min, max)
    multipliers: tuple[int, ...]  # one per output channel
    shifts: tuple[int, ...]
    has_bias: bool
    scratch_bytes: int  # rip.scratch.scratch_bytes: the kernel's ..._get_buffer_size()


@dataclass(frozen=True)
class FullyConnectedKernelParams:
    """``rip_fully_connected_s8`` (``per_channel`` False: one multiplier and shift) or
    ``rip_fully_connected_per_channel_s8``."""

    input_dims: Dims  # [batches, 1, 1, depth]
    filter_dims: Dims  # [units, 1, 1, depth]
    output_dims: Dims  # [batches, 1, 1, units]
    input_offset: int
    output_offset: int
    activation: tuple[int, int]
    per_channel: bool
    multipliers: tuple[int, ...]  # one entry when per-tensor
    shifts: tuple[int, ...]
    has_bias: bool
    scratch_bytes: int = 0


@dataclass(frozen=True)
class PoolKernelParams:
    """``rip_avg_pool_s8`` / ``rip_max_pool_s8``: rip_pool_params and dims."""

    kind: str  # AVERAGE_POOL_2D | MAX_POOL_2D
    input_dims: Dims
    filter_dims: Dims  # [1, FH, FW, 1]
    output_dims: Dims
    stride: tuple[int, int]
    padding: tuple[int, int]  # (top, left)
    activation: tuple[int, int]
    pad_counts: bool  # an explicit PAD was folded in: padded cells count
    pad_value: int  # the input zero point, the value of a padded cell
    scratch_bytes: int


@dataclass(frozen=True)
class MeanKernelParams:
    """``rip_global_avg_pool_s8``: rip_mean_params and dims. ``multiplier`` and ``shift``
    already carry the 1 / (H W) of the mean; ``requant_multiplier`` and ``requant_shift`` are
    QuantizeMultiplier(input_scale / output_scale) before that fold, for reference."""

    input_dims: Dims
    output_dims: Dims  # [N, 1, 1, C] whether or not the model keeps dims
    input_offset: int
    output_offset: int
    multiplier: int
    shift: int
    requant_multiplier: int
    requant_shift: int
    scratch_bytes: int


KernelParams = ConvKernelParams | FullyConnectedKernelParams | PoolKernelParams | MeanKernelParams


# --------------------------------------------------------------------------------------
# Quantization helpers
# --------------------------------------------------------------------------------------
def activation_range(activation: str, quant: Quant) -> tuple[int, int]:
    """CalculateActivationRangeQuantized for a per-tensor int8 output."""
    return quant_activation_range(activation, quant.scale[0], quant.zero_point[0])


def fc_per_tensor_scale(input_scale: float, weight_scale: float, output_scale: float) -> float:
    """GetQuantizedConvolutionMultipler: the float32 product widened, then divided in double
    (unlike the per-channel path, which widens each factor first)."""
    product = np.float32(input_scale) * np.float32(weight_scale)
    return float(np.float64(product) / np.float64(np.float32(output_scale)))


def fold_mean_count(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """reference_ops::QuantizedMeanOrSum: fold 1 / count into (multiplier, shift) with
    shift' = min(floor(log2 count), 32, 31 + shift) bits of headroom, truncating division."""
    if count < 1:
        raise KernelParamsError(f"mean over {count} elements")
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


# --------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------
def _where(op: Operator) -> str:
    return op.describe()


def _int8_quant(t: Tensor, op: Operator, what: str) -> Quant:
    if t.dtype != "int8":
        raise KernelParamsError(f"{_where(op)}: {what} is {t.dtype}, the kernels are int8")
    if t.quant is None or not t.quant.scale:
        raise KernelParamsError(f"{_where(op)}: {what} has no quantization")
    return t.quant


def _per_tensor(q: Quant, op: Operator, what: str) -> tuple[float, int]:
    if q.per_channel:
        raise KernelParamsError(f"{_where(op)}: {what} must be quantized per tensor")
    return q.scale[0], q.zero_point[0]


def _weights(graph: Graph, op: Operator, channels: int, axis: int) -> tuple[Tensor, Quant]:
    """The int8 weights: symmetric, one scale, or one per output channel along ``axis`` (the
    weights' output-channel dimension, which TFLite checks per-channel scales against)."""
    w = graph.tensors[op.inputs[1]]
    q = _int8_quant(w, op, "the weights")
    if any(z != 0 for z in q.zero_point):
        raise KernelParamsError(f"{_where(op)}: weights must be symmetric (zero point 0)")
    if q.per_channel and (len(q.scale) != channels or q.axis != axis):
        raise KernelParamsError(
            f"{_where(op)}: {len(q.scale)} weight scales on axis {q.axis} for {channels} "
            f"output channels on axis {axis}"
        )
    return w, q


def _has_bias(graph: Graph, op: Operator) -> bool:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return False
    if graph.tensors[op.inputs[2]].dtype != "int32":
        raise KernelParamsError(f"{_where(op)}: the bias must be int32")
    return True


# --------------------------------------------------------------------------------------
# Per operator
# --------------------------------------------------------------------------------------
def conv_params(graph: Graph, op: Operator) -> ConvKernelParams:
    """CONV_2D or DEPTHWISE_CONV_2D: TFLite Micro's ConvParamsQuantized /
    DepthwiseConvParamsQuantized and its per-channel multipliers."""
    if op.kind not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        raise KernelParamsError(f"{_where(op)}: not a convolution")
    p = op.params
    if not isinstance(p, Conv2DParams):
        raise KernelParamsError(f"{_where(op)}: missing convolution parameters")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = _per_tensor(_int8_quant(x, op, "the input"), op, "the input")
    out_q = _int8_quant(y, op, "the output")
    out_scale, out_zp = _per_tensor(out_q, op, "the output")
    input_dims, output_dims = nhwc(x.shape), nhwc(y.shape)
    c_out = output_dims[3]
    depthwise = isinstance(p, DepthwiseParams)
    w, wq = _weights(graph, op, c_out, 3 if depthwise else 0)
    filter_dims = nhwc(w.shape)
    multiplier = p.depth_multiplier if depthwise else 1
    if depthwise and c_out != input_dims[3] * multiplier:
        raise KernelParamsError(
            f"{_where(op)}: {c_out} output channels, depth multiplier "
            f"{multiplier} and {input_dims[3]} input channels disagree"
        )
    scales = wq.scale if wq.per_channel else wq.scale * c_out
    pairs = [quantize_multiplier(effective_scale(in_scale, s, out_scale)) for s in scales]
    return ConvKernelParams(
        kind=op.kind,
        input_dims=input_dims,
        filter_dims=filter_dims,
        output_dims=output_dims,
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        dilation=p.dilation,
        depth_multiplier=multiplier,
        input_offset=-in_zp,
        output_offset=out_zp,
        activation=activation_range(p.activation, out_q),
        multipliers=tuple(m for m, _ in pairs),
        shifts=tuple(s for _, s in pairs),
        has_bias=_has_bias(graph, op),
        scratch_bytes=scratch_bytes(op.kind, input_dims, filter_dims, output_dims),
    )


def fully_connected_params(graph: Graph, op: Operator) -> FullyConnectedKernelParams:
    """FULLY_CONNECTED: TFLite Micro's CalculateOpDataFullyConnected (per-tensor or
    per-channel weights). The input is flattened to [batches, depth] as TFLite does."""
    if op.kind != "FULLY_CONNECTED":
        raise KernelParamsError(f"{_where(op)}: not a fully connected layer")
    p = op.params if isinstance(op.params, FullyConnectedParams) else FullyConnectedParams()
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = _per_tensor(_int8_quant(x, op, "the input"), op, "the input")
    out_q = _int8_quant(y, op, "the output")
    out_scale, out_zp = _per_tensor(out_q, op, "the output")
    w = graph.tensors[op.inputs[1]]
    if len(w.shape) != 2:
        raise KernelParamsError(f"{_where(op)}: weights {w.shape} are not [units, depth]")
    units, depth = w.shape
    w, wq = _weights(graph, op, units, 0)
    in_count = math.prod(x.shape)
    if in_count % depth or y.shape[-1] != units:
        raise KernelParamsError(
            f"{_where(op)}: input {x.shape} and output {y.shape} do not fit weights {w.shape}"
        )
    batches = in_count // depth
    if wq.per_channel:
        pairs = [quantize_multiplier(effective_scale(in_scale, s, out_scale)) for s in wq.scale]
    else:
        pairs = [quantize_multiplier(fc_per_tensor_scale(in_scale, wq.scale[0], out_scale))]
    return FullyConnectedKernelParams(
        input_dims=(batches, 1, 1, depth),
        filter_dims=(units, 1, 1, depth),
        output_dims=(batches, 1, 1, units),
        input_offset=-in_zp,
        output_offset=out_zp,
        activation=activation_range(p.activation, out_q),
        per_channel=wq.per_channel,
        multipliers=tuple(m for m, _ in pairs),
        shifts=tuple(s for _, s in pairs),
        has_bias=_has_bias(graph, op),
    )


def pool_params(graph: Graph, op: Operator) -> PoolKernelParams:
    """AVERAGE_POOL_2D / MAX_POOL_2D: TFLite Micro's PoolingPrepare (input and output must
    share their quantization; the activation range is the output's)."""
    if op.kind not in ("AVERAGE_POOL_2D", "MAX_POOL_2D") or not isinstance(op.params, PoolParams):
        raise KernelParamsError(f"{_where(op)}: not a pooling layer")
    p = op.params
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = _per_tensor(_int8_quant(x, op, "the input"), op, "the input")
    out_q = _int8_quant(y, op, "the output")
    out_scale, out_zp = _per_tensor(out_q, op, "the output")
    # PoolingPrepare's own test: float32 scales within 1e-6 and equal zero points.
    if abs(float(np.float32(in_scale) - np.float32(out_scale))) > 1e-6 or in_zp != out_zp:
        raise KernelParamsError(f"{_where(op)}: input and output quantization differ")
    input_dims, output_dims = nhwc(x.shape), nhwc(y.shape)
    filter_dims = (1, p.filter[0], p.filter[1], 1)
    return PoolKernelParams(
        kind=op.kind,
        input_dims=input_dims,
        filter_dims=filter_dims,
        output_dims=output_dims,
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        activation=activation_range(p.activation, out_q),
        pad_counts=p.pad_counts,
        pad_value=in_zp,
        scratch_bytes=scratch_bytes(op.kind, input_dims, filter_dims, output_dims),
    )


def mean_params(graph: Graph, op: Operator) -> MeanKernelParams:
    """GLOBAL_AVERAGE_POOL (a MEAN over H and W, see rewrite.mean_to_global_pool), or such a
    MEAN itself: TFLite Micro's PrepareMeanOrSumHelper and QuantizedMeanOrSum."""
    axes_ok = isinstance(op.params, ReduceParams) and set(op.params.axes) == {1, 2}
    if op.kind not in ("GLOBAL_AVERAGE_POOL", "MEAN") or not axes_ok:
        raise KernelParamsError(f"{_where(op)}: not a mean over H and W")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4:
        raise KernelParamsError(f"{_where(op)}: input {x.shape} is not NHWC")
    in_scale, in_zp = _per_tensor(_int8_quant(x, op, "the input"), op, "the input")
    out_scale, out_zp = _per_tensor(_int8_quant(y, op, "the output"), op, "the output")
    n, h, w, c = x.shape
    real = float(np.float64(np.float32(in_scale)) / np.float64(np.float32(out_scale)))
    requant_multiplier, requant_shift = quantize_multiplier(real)
    multiplier, shift = fold_mean_count(requant_multiplier, requant_shift, h * w)
    input_dims, output_dims = (n, h, w, c), (n, 1, 1, c)
    return MeanKernelParams(
        input_dims=input_dims,
        output_dims=output_dims,
        input_offset=-in_zp,
        output_offset=out_zp,
        multiplier=multiplier,
        shift=shift,
        requant_multiplier=requant_multiplier,
        requant_shift=requant_shift,
        scratch_bytes=scratch_bytes(op.kind, input_dims, (1, 1, 1, 1), output_dims),
    )


def kernel_params(graph: Graph, op: Operator) -> KernelParams:
    """The parameters of whichever spatial kernel runs ``op``."""
    if op.kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return conv_params(graph, op)
    if op.kind == "FULLY_CONNECTED":
        return fully_connected_params(graph, op)
    if op.kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        return pool_params(graph, op)
    if op.kind in ("GLOBAL_AVERAGE_POOL", "MEAN"):
        return mean_params(graph, op)
    raise KernelParamsError(f"{_where(op)}: no spatial kernel for this operator")
