"""Kernel parameters of kernels/rip_conv.h (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED),
computed from the graph IR exactly as TensorFlow Lite Micro computes them in its Prepare
functions (tensorflow/lite/micro/kernels/conv_common.cc, depthwise_conv_common.cc,
fully_connected_common.cc; reference kernels reference_integer_ops/conv.h,
depthwise_conv.h, fully_connected.h), so that the C kernels reproduce its bytes:

- CONV_2D, DEPTHWISE_CONV_2D: per-channel (multiplier, shift) from
  ``double(input_scale) * double(filter_scale[c]) / double(output_scale)``
  (PopulateConvolutionQuantizationParams; a per-tensor filter scale is broadcast);
- FULLY_CONNECTED: per-channel as above, or per-tensor from
  ``double(float(input_scale * filter_scale)) / double(output_scale)`` — the product is
  taken in float32 first (GetQuantizedConvolutionMultipler);
- activation ranges: CalculateActivationRangeQuantized, in float32 (`rip.codegen.quant`).

Each function is pure and returns a frozen dataclass whose fields map one to one onto the C
params structs, dims and quantization arrays; the code generator renders them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from rip.allocator.planning.scratch import kernel_scratch_bytes
from rip.codegen.quant import (
    Dims,
    ParamsError,
    activation_range,
    effective_scale,
    int8_per_tensor,
    int8_quant,
    per_channel_fits,
    quantize_multiplier,
    where,
)
from rip.core.operators import CONVOLUTIONS, Op
from rip.core.shapes import nhwc
from rip.frontend.ir import (
    Conv2DParams,
    DepthwiseParams,
    FullyConnectedParams,
    Graph,
    Operator,
    Quant,
    Tensor,
)


@dataclass(frozen=True)
class ConvKernelParams:
    """``rip_conv2d_s8`` / ``rip_depthwise_conv2d[_inplace]_s8``: rip_conv_params (or
    rip_dw_conv_params), rip_per_channel_quant and the dims structs."""

    kind: Op  # CONV_2D | GROUPED_CONV_2D | DEPTHWISE_CONV_2D
    input_dims: Dims
    filter_dims: Dims  # conv [C_out, KH, KW, C_in / G]; depthwise [1, KH, KW, C * M]
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
    scratch_bytes: (
        int  # rip.allocator.planning.scratch.scratch_bytes: the kernel's ..._get_buffer_size()
    )
    # rip_fast_channel records (folded bias, multiplier, round, shift) when the cheap
    # requantisation is proven for the layer (rip.codegen.kernel_choice.fast_channels)
    fast_channels: tuple[tuple[int, int, int, int], ...] | None = None


@dataclass(frozen=True)
class FullyConnectedKernelParams:
    """``rip_fully_connected_s8`` (``per_channel`` False: one multiplier and shift) or
    ``rip_fully_connected_per_channel_s8``; ``rip_fully_connected_fast_rq_s8`` where the
    cheap requantisation is proven for every output unit (``fast_channels``)."""

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
    filter_offset: int = 0  # -weights zero point (per-tensor weights only; the exact kernels)
    # rip_fast_channel records, one per output unit (a per-tensor multiplier repeated), when
    # rip.codegen.kernel_choice.fast_fc_channels proves the cheap requantisation exact
    fast_channels: tuple[tuple[int, int, int, int], ...] | None = None


KernelParams = ConvKernelParams | FullyConnectedKernelParams


# --------------------------------------------------------------------------------------
# Quantization helpers
# --------------------------------------------------------------------------------------
def fc_per_tensor_scale(input_scale: float, weight_scale: float, output_scale: float) -> float:
    """GetQuantizedConvolutionMultipler: the float32 product widened, then divided in double
    (unlike the per-channel path, which widens each factor first)."""
    product = np.float32(input_scale) * np.float32(weight_scale)
    return float(np.float64(product) / np.float64(np.float32(output_scale)))


# --------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------
def _weights(
    graph: Graph, op: Operator, channels: int, axis: int, symmetric: bool = True
) -> tuple[Tensor, Quant]:
    """The int8 weights: symmetric (unless ``symmetric`` is False: FULLY_CONNECTED's
    per-tensor weights, whose zero point TFLite subtracts), one scale, or one per output
    channel along ``axis`` (the weights' output-channel dimension, which TFLite checks
    per-channel scales against)."""
    w = graph.tensors[op.inputs[1]]
    q = int8_quant(w, op, "the weights")
    if any(z != 0 for z in q.zero_point) and (symmetric or q.per_channel):
        raise ParamsError(f"{where(op)}: weights must be symmetric (zero point 0)")
    if q.per_channel and not per_channel_fits(q, w.shape, channels):
        raise ParamsError(
            f"{where(op)}: {len(q.scale)} weight scales on axis {q.axis} for {channels} "
            f"output channels on axis {axis}"
        )
    return w, q


def _has_bias(graph: Graph, op: Operator) -> bool:
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return False
    if graph.tensors[op.inputs[2]].dtype != "int32":
        raise ParamsError(f"{where(op)}: the bias must be int32")
    return True


# --------------------------------------------------------------------------------------
# Per operator
# --------------------------------------------------------------------------------------
def conv_params(graph: Graph, op: Operator) -> ConvKernelParams:
    """CONV_2D or DEPTHWISE_CONV_2D: TFLite Micro's ConvParamsQuantized /
    DepthwiseConvParamsQuantized and its per-channel multipliers."""
    if op.kind not in (*CONVOLUTIONS, Op.GROUPED_CONV_2D):
        raise ParamsError(f"{where(op)}: not a convolution")
    p = op.params
    if not isinstance(p, Conv2DParams):
        raise ParamsError(f"{where(op)}: missing convolution parameters")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = int8_per_tensor(x, op, "the input")
    out_scale, out_zp = int8_per_tensor(y, op, "the output")
    input_dims, output_dims = nhwc(x.shape), nhwc(y.shape)
    c_out = output_dims[3]
    depthwise = isinstance(p, DepthwiseParams)
    w, wq = _weights(graph, op, c_out, 3 if depthwise else 0)
    filter_dims = nhwc(w.shape)
    multiplier = p.depth_multiplier if isinstance(p, DepthwiseParams) else 1
    if depthwise and c_out != input_dims[3] * multiplier:
        raise ParamsError(
            f"{where(op)}: {c_out} output channels, depth multiplier "
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
        activation=activation_range(p.activation, y.quant),
        multipliers=tuple(m for m, _ in pairs),
        shifts=tuple(s for _, s in pairs),
        has_bias=_has_bias(graph, op),
        scratch_bytes=kernel_scratch_bytes(
            op.kind,
            input_dims,
            filter_dims,
            output_dims,
            stride=p.stride,
            padding=(p.padding.top, p.padding.left),
            dilation=p.dilation,
        ),
    )


def fully_connected_params(graph: Graph, op: Operator) -> FullyConnectedKernelParams:
    """FULLY_CONNECTED: TFLite Micro's CalculateOpDataFullyConnected (per-tensor or
    per-channel weights). The input is flattened to [batches, depth] as TFLite does."""
    if op.kind != Op.FULLY_CONNECTED:
        raise ParamsError(f"{where(op)}: not a fully connected layer")
    p = op.params if isinstance(op.params, FullyConnectedParams) else FullyConnectedParams()
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = int8_per_tensor(x, op, "the input")
    out_scale, out_zp = int8_per_tensor(y, op, "the output")
    w = graph.tensors[op.inputs[1]]
    if len(w.shape) != 2:
        raise ParamsError(f"{where(op)}: weights {w.shape} are not [units, depth]")
    units, depth = w.shape
    w, wq = _weights(graph, op, units, 0, symmetric=False)
    in_count = math.prod(x.shape)
    if in_count % depth or y.shape[-1] != units:
        raise ParamsError(
            f"{where(op)}: input {x.shape} and output {y.shape} do not fit weights {w.shape}"
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
        activation=activation_range(p.activation, y.quant),
        per_channel=wq.per_channel,
        multipliers=tuple(m for m, _ in pairs),
        shifts=tuple(s for _, s in pairs),
        has_bias=_has_bias(graph, op),
        filter_offset=-wq.zero_point[0],
    )


def op_params(graph: Graph, op: Operator) -> KernelParams:
    """The parameters of whichever rip_conv.h kernel runs ``op``."""
    if op.kind in (*CONVOLUTIONS, Op.GROUPED_CONV_2D):
        return conv_params(graph, op)
    if op.kind == Op.FULLY_CONNECTED:
        return fully_connected_params(graph, op)
    raise ParamsError(f"{where(op)}: no rip_conv.h kernel for this operator")


def column_as_row(p: ConvKernelParams) -> ConvKernelParams:
    """A depthwise layer over a one-column map with a one-column kernel (a 1-D convolution
    along H: streaming keyword spotters' temporal layers) as the one-row layer its bytes
    already are. In NHWC with W = 1, row h of channel c is at h * C + c, as column h of a
    one-row map is: the same input, filter ([1, KH, 1, C] is [1, 1, KH, C]) and output
    bytes. The row engines then run the whole column as one row, each channel group's
    weights set up once instead of once per output row (the column-pair engine where KH is
    3, 5 or 7). ``p`` itself where the layer is not such a column (or pads across it)."""
    n, h, w, c = p.input_dims
    fn, kh, kw, fc = p.filter_dims
    on, h_out, w_out, oc = p.output_dims
    column = (
        p.kind == Op.DEPTHWISE_CONV_2D
        and w == 1
        and w_out == 1
        and kw == 1
        and h > 1
        and p.padding[1] == 0
    )
    if not column:
        return p
    return replace(
        p,
        input_dims=(n, 1, h, c),
        filter_dims=(fn, 1, kh, fc),
        output_dims=(on, 1, h_out, oc),
        stride=(1, p.stride[0]),
        padding=(0, p.padding[0]),
        dilation=(1, p.dilation[0]),
    )
