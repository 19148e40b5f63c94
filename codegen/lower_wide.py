"""Lowering of kernels/rip_wide.h: the 16x8 kernels (int16 activations, int8 weights), with
their parameters as TFLite Micro's Prepare computes them: FULLY_CONNECTED, CONV_2D and
DEPTHWISE_CONV_2D (the double ratio s_in * s_w / s_out, per tensor or per output channel,
QuantizeMultiplier'd; the int16 clamp of the fused activation; int64 or int32 sums as its
reference picks), AVERAGE_POOL_2D and MAX_POOL_2D. Out of place, no scratch. A CONV_2D's or
FULLY_CONNECTED's filter is emitted packed (`pack_filter`, the panels rip_wide.h reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    check_buffers,
    check_operand_in_place,
    kernel_params,
    render_kernel,
    where,
)
from rip.codegen.quant import (
    ParamsError,
    activation_range,
    any_scale_zp,
    effective_scale,
    quantize_multiplier,
)
from rip.core.errors import LoweringError
from rip.core.operators import Kernel, Op
from rip.core.shapes import nhwc
from rip.frontend.ir import Graph, Operator

POOL_S16 = Kernel("rip_pool_s16", "rip_pool_s16_params", "wide")
CONV_S16 = Kernel("rip_conv_s16", "rip_conv_s16_params", "wide")
FULLY_CONNECTED_S16 = Kernel("rip_fully_connected_s16", "rip_fully_connected_s16_params", "wide")
BIAS_TYPES = {"int64": ("int64_t", "<i8", 8), "int32": ("int32_t", "<i4", 4)}


@dataclass(frozen=True)
class FullyConnected16Params:
    """rip_fully_connected_s16_params, and the op's constants."""

    batches: int
    input_depth: int
    output_depth: int
    input_offset: int
    output_offset: int
    activation_min: int
    activation_max: int
    bias_bytes: int
    wide_sum: bool  # int64 sums (TFLite Micro's requires_int32_accum false)
    multiplier: tuple[int, ...]
    shift: tuple[int, ...]
    filter: bytes
    bias: tuple[int, ...]
    bias_type: str  # its C type


@dataclass(frozen=True)
class Conv16Params:
    """rip_conv_s16_params, and the op's constants."""

    input_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    kh: int
    kw: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int]  # top, left
    depth_multiplier: int  # 0: a convolution
    filter_channels: int
    activation_min: int
    activation_max: int
    bias_bytes: int
    wide_sum: bool
    multiplier: tuple[int, ...]
    shift: tuple[int, ...]
    filter: bytes
    bias: tuple[int, ...]
    bias_type: str


def is_wide(graph: Graph, op: Operator) -> bool:
    """The op runs a 16x8 kernel: its input is int16."""
    return graph.tensors[op.inputs[0]].dtype == "int16"


def _weights(graph: Graph, op: Operator, channels: int) -> tuple[list[tuple[int, int]], tuple]:
    """Per output channel (QuantizeMultiplier of the double s_in * s_w / s_out, one scale
    repeated for a per-tensor filter), and the bias: (values, C type, bytes)."""
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    b = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    if y.dtype != "int16" or w.dtype != "int8" or w.quant is None or w.data is None:
        raise ParamsError(f"{op.describe()}: 16x8 takes int8 weights with data, int16 output")
    s_x, _ = any_scale_zp(x)
    s_y, _ = any_scale_zp(y)
    scales = w.quant.scale
    if len(scales) not in (1, channels):
        raise ParamsError(f"{op.describe()}: {len(scales)} weight scales for {channels} outputs")
    pairs = [quantize_multiplier(effective_scale(s_x, s, s_y)) for s in scales]
    bias: tuple[tuple[int, ...], str, int] = ((), "int64_t", 0)
    if b is not None:
        if b.dtype not in BIAS_TYPES or b.data is None:
            raise ParamsError(f"{op.describe()}: a {b.dtype} bias (16x8 takes int64 or int32)")
        c_type, code, size = BIAS_TYPES[b.dtype]
        bias = (tuple(int(v) for v in np.frombuffer(b.data, code)), c_type, size)
    return pairs, bias


PANEL_CHANNELS = 4  # output channels a panel (rip_wide.c's PANEL)


def pack_filter(weights: np.ndarray, groups: int = 1) -> bytes:
    """An int8 filter [O, taps, K] (a tap's K input channels) in the panels rip_wide.h reads:
    per convolution group, its output channels four at a time (the last one to three in a
    panel of their own), a panel's taps one after another, a tap's K values as K // 4 blocks
    (a word per channel, its bytes v0 v2 v1 v3: SXTB16 widens v0 v1 and, rotated, v2 v3,
    the halves of two int16 input words) and then the K % 4 tail values (the panel's
    channel bytes of each). The bytes are the filter's own, reordered: the same size."""
    o, taps, k = weights.shape
    blocks = k // 4
    per_group = o // groups
    out = []
    for g in range(groups):
        for c0 in range(g * per_group, (g + 1) * per_group, PANEL_CHANNELS):
            panel = weights[c0 : min(c0 + PANEL_CHANNELS, (g + 1) * per_group)]
            # [G, taps, K] -> [taps, blocks of (G, 4 permuted)] + [taps, tail values of (G)]
            head = panel[:, :, : 4 * blocks].reshape(len(panel), taps, blocks, 4)
            head = head[:, :, :, [0, 2, 1, 3]].transpose(1, 2, 0, 3).reshape(taps, -1)
            rest = panel[:, :, 4 * blocks :].transpose(1, 2, 0).reshape(taps, -1)
            out.append(np.concatenate([head, rest], axis=1).reshape(-1))
    return np.concatenate(out).astype(np.int8).tobytes()


def _wide_sum(op: Operator, bias_bytes: int) -> bool:
    """TFLite Micro's requires_int32_accum, negated: an int32 bias, or none where the options
    say the bias type is int32, sums in int32; anything else in int64."""
    int32_type = getattr(op.params, "int32_bias_type", False)
    return not (bias_bytes == 4 or (bias_bytes == 0 and int32_type))


def conv_params(graph: Graph, op: Operator) -> Conv16Params:
    """CONV_2D and DEPTHWISE_CONV_2D 16x8 (ConvPerChannel, DepthwiseConvPerChannel for
    int16: no offsets; a depthwise one always sums in int64)."""
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    (n, h, wd, c), (_, ho, wo, co) = nhwc(x.shape), nhwc(y.shape)
    p = op.params
    depthwise = op.kind == Op.DEPTHWISE_CONV_2D
    pairs, (bias, c_type, size) = _weights(graph, op, co)
    if len(pairs) == 1:
        pairs = pairs * co
    lo, hi = activation_range(p.activation, y.quant, -32768, 32767)
    data = w.data or b""
    if not depthwise and data:  # a depthwise filter [1, KH, KW, C * M] stays as it is
        taps = w.shape[1] * w.shape[2]
        weights = np.frombuffer(data, np.int8).reshape(co, taps, w.shape[3])
        data = pack_filter(weights, c // w.shape[3])
    return Conv16Params(
        input_dims=(n, h, wd, c),
        output_dims=(n, ho, wo, co),
        kh=w.shape[1],
        kw=w.shape[2],
        stride=p.stride,
        dilation=p.dilation,
        padding=(p.padding.top, p.padding.left),
        depth_multiplier=co // c if depthwise else 0,
        filter_channels=w.shape[3] if not depthwise else 1,
        activation_min=lo,
        activation_max=hi,
        bias_bytes=size,
        wide_sum=depthwise or _wide_sum(op, size),  # a depthwise one sums in int64 always
        multiplier=tuple(m for m, _ in pairs),
        shift=tuple(e for _, e in pairs),
        filter=data,
        bias=bias,
        bias_type=c_type,
    )


def _lower(
    kernel: Kernel, compute, graph: Graph, op: Operator, index: int, buffers: OpBuffers,
    prefix: str,
) -> Lowered:  # fmt: skip
    """A 16x8 op of one arena input, out of place, its constants its params'."""
    check_buffers(graph, op, buffers)
    check_operand_in_place(graph, op, buffers, kernel, None, (0,))
    if buffers.inputs[0] is None:
        raise LoweringError(f"{where(graph, op, index)}: a constant 16x8 input")
    params = kernel_params(compute, graph, op)
    return render_kernel(
        graph, op, index, buffers, prefix, kernel, params, (buffers.inputs[0],), ()
    )


def lower_conv(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """CONV_2D and DEPTHWISE_CONV_2D 16x8."""
    return _lower(CONV_S16, conv_params, graph, op, index, buffers, prefix)


@dataclass(frozen=True)
class Pool16Params:
    """rip_pool_s16_params."""

    input_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    average: bool
    activation_min: int
    activation_max: int


def pool_params(graph: Graph, op: Operator) -> Pool16Params:
    """AVERAGE_POOL_2D and MAX_POOL_2D 16x8 (TFLite Micro's int16 pooling)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    p = op.params
    if p.pad_counts or y.dtype != "int16":
        raise ParamsError(f"{op.describe()}: 16x8 pooling skips padded cells, int16 output")
    lo, hi = activation_range(p.activation, y.quant, -32768, 32767)
    return Pool16Params(
        input_dims=nhwc(x.shape),
        output_dims=nhwc(y.shape),
        kh=p.filter[0],
        kw=p.filter[1],
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        average=op.kind == Op.AVERAGE_POOL_2D,
        activation_min=lo,
        activation_max=hi,
    )


def lower_pool(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """AVERAGE_POOL_2D and MAX_POOL_2D 16x8."""
    return _lower(POOL_S16, pool_params, graph, op, index, buffers, prefix)


def fully_connected_params(graph: Graph, op: Operator) -> FullyConnected16Params:
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    _, z_x = any_scale_zp(x)
    _, z_y = any_scale_zp(y)
    depth_out, depth_in = w.shape[0], w.shape[-1]
    pairs, (bias, c_type, size) = _weights(graph, op, depth_out)
    lo, hi = activation_range(op.params.activation, y.quant, -32768, 32767)
    filter_data = w.data or b""
    if filter_data:
        weights = np.frombuffer(filter_data, np.int8).reshape(depth_out, 1, depth_in)
        filter_data = pack_filter(weights)
    return FullyConnected16Params(
        batches=x.nbytes // 2 // depth_in,
        input_depth=depth_in,
        output_depth=depth_out,
        input_offset=-z_x,
        output_offset=z_y,
        activation_min=lo,
        activation_max=hi,
        bias_bytes=size,
        wide_sum=_wide_sum(op, size),
        multiplier=tuple(m for m, _ in pairs),
        shift=tuple(e for _, e in pairs),
        filter=filter_data,
        bias=bias,
        bias_type=c_type,
    )


def lower_fully_connected(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """FULLY_CONNECTED 16x8, its weights and bias the op's own data."""
    return _lower(FULLY_CONNECTED_S16, fully_connected_params, graph, op, index, buffers, prefix)
