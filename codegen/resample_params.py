"""Kernel parameters of kernels/rip_resample.h: RESIZE_BILINEAR, computed as TFLite Micro's
reference ResizeBilinearInteger computes them (tensorflow/lite/kernels/internal/reference/
resize_bilinear.h): the input size per output step in 1/1024 units, rounded to nearest; and
TRANSPOSE_CONV, as transpose_conv.cc's Prepare does (PopulateConvolutionQuantizationParams:
per-channel multipliers, the activation range; padding is the reader's).

Pure functions returning frozen dataclasses for the Jinja2 templates
``templates/ops/resample_{data,call}.c.j2``; a model TFLite Micro refuses at Prepare raises
`ParamsError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rip.codegen.quant import (
    ParamsError,
    activation_range,
    dims4,
    effective_scale,
    int8_per_tensor,
    int8_quant,
    per_channel_fits,
    quantize_multiplier,
)
from rip.core.operators import Op
from rip.frontend.ir import Graph, Operator, Tensor


@dataclass(frozen=True)
class ResizeBilinearParams:
    """rip_resize_bilinear_params plus the dims of the call."""

    half_pixel_centers: bool
    scale_h_10: int
    scale_w_10: int
    input_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]


def scale_10(in_size: int, out_size: int, align_corners: bool) -> int:
    """The reference's height_scale_10 / width_scale_10 (integer, round half up)."""
    if align_corners and out_size > 1:
        return ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    return ((1 << 10) * in_size + out_size // 2) // out_size


def resize_bilinear_params(
    input: Tensor, output: Tensor, align_corners: bool, half_pixel_centers: bool
) -> ResizeBilinearParams:
    """RESIZE_BILINEAR of 4-D int8 tensors of one quantization (the reference interpolates
    the stored bytes, so an output quantized otherwise would be misread)."""
    if len(input.shape) != 4 or len(output.shape) != 4:
        raise ParamsError(f"RESIZE_BILINEAR needs 4-D tensors, got {input.shape}")
    if align_corners and half_pixel_centers:
        raise ParamsError("RESIZE_BILINEAR: align_corners with half_pixel_centers")
    if input.quant != output.quant:
        raise ParamsError(f"RESIZE_BILINEAR {output.name!r}: quantization differs")
    i, o = dims4(input.shape), dims4(output.shape)
    return ResizeBilinearParams(
        half_pixel_centers=half_pixel_centers,
        scale_h_10=scale_10(i[1], o[1], align_corners),
        scale_w_10=scale_10(i[2], o[2], align_corners),
        input_dims=i,
        output_dims=o,
    )


@dataclass(frozen=True)
class TransposeConvKernelParams:
    """rip_transpose_conv_params, its per-channel quantization and dims."""

    input_dims: tuple[int, int, int, int]
    filter_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]  # (top, left)
    input_offset: int
    output_offset: int
    activation: tuple[int, int]
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    has_bias: bool


def transpose_conv_params(graph: Graph, op: Operator) -> TransposeConvKernelParams:
    """TRANSPOSE_CONV (inputs: output shape, weights, input, optional int32 bias)."""
    w, x, y = graph.tensors[op.inputs[1]], graph.tensors[op.inputs[2]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = int8_per_tensor(x, op, "the input")
    out_scale, out_zp = int8_per_tensor(y, op, "the output")
    wq = int8_quant(w, op, "the weights")
    c_out = y.shape[3]
    if any(z != 0 for z in wq.zero_point) or (
        wq.per_channel and not per_channel_fits(wq, w.shape, c_out)
    ):
        raise ParamsError(f"{op.describe()}: weights not symmetric per output channel")
    has_bias = len(op.inputs) > 3 and op.inputs[3] >= 0
    if has_bias and graph.tensors[op.inputs[3]].dtype != "int32":
        raise ParamsError(f"{op.describe()}: the bias must be int32")
    scales = wq.scale if wq.per_channel else wq.scale * c_out
    pairs = [quantize_multiplier(effective_scale(in_scale, s, out_scale)) for s in scales]
    p = op.params
    return TransposeConvKernelParams(
        input_dims=dims4(x.shape),
        filter_dims=dims4(w.shape),
        output_dims=dims4(y.shape),
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        input_offset=-in_zp,
        output_offset=out_zp,
        activation=activation_range(p.activation, y.quant),
        multipliers=tuple(m for m, _ in pairs),
        shifts=tuple(s for _, s in pairs),
        has_bias=has_bias,
    )


def op_params(graph: Graph, op: Operator) -> ResizeBilinearParams | TransposeConvKernelParams:
    """Kernel parameters of one rip_resample.h operator of the graph."""
    if op.kind == Op.TRANSPOSE_CONV:
        return transpose_conv_params(graph, op)
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.kind == Op.RESIZE_BILINEAR:
        p = op.params
        return resize_bilinear_params(x, y, p.align_corners, p.half_pixel_centers)
    raise ParamsError(f"{op.describe()} is not a resampling kernel")
