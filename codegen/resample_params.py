"""Kernel parameters of kernels/rip_resample.h (RESIZE_BILINEAR), computed as TFLite Micro's
reference ResizeBilinearInteger computes them (tensorflow/lite/kernels/internal/reference/
resize_bilinear.h): the input size per output step in 1/1024 units, rounded to nearest.

Pure functions returning frozen dataclasses for the Jinja2 templates
``templates/ops/resample_{data,call}.c.j2``; a model TFLite Micro refuses at Prepare raises
`ParamsError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rip.codegen.quant import ParamsError, dims4
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


def op_params(graph: Graph, op: Operator) -> ResizeBilinearParams:
    """Kernel parameters of one rip_resample.h operator of the graph."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.kind == "RESIZE_BILINEAR":
        p = op.params
        return resize_bilinear_params(x, y, p.align_corners, p.half_pixel_centers)
    raise ParamsError(f"{op.describe()} is not a resampling kernel")
