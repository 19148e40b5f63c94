"""Kernel parameters of kernels/rip_shape.h (RESIZE_NEAREST_NEIGHBOR, CONCATENATION,
TRANSPOSE, PAD), computed as TFLite Micro's Prepare functions compute them
(tensorflow/lite/micro/kernels/resize_nearest_neighbor.cc, concatenation.cc, transpose.cc,
pad.cc; reference kernels reference_ops::ResizeNearestNeighbor, Concatenation, Transpose and
PadImpl), bit for bit.

Every function is pure and returns a frozen dataclass whose fields are the C struct's fields
plus the sizes the call needs, ready for a Jinja2 template. A model TFLite Micro refuses at
Prepare raises `ParamsError`, naming the reason. The resize index map stays float32 in TFLite
Micro, which numpy float32 reproduces here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from rip.codegen.activation_params import RequantizeParams, quantize_params
from rip.codegen.quant import ParamsError, any_scale_zp, dims4, scale_zp
from rip.core.operators import Op
from rip.core.shapes import nearest_index_map
from rip.core.terms import Activation
from rip.frontend.ir import (
    DTYPE_BYTES,
    GatherParams,
    Graph,
    MirrorPadParams,
    Operator,
    SliceParams,
    Tensor,
)


@dataclass(frozen=True)
class ResizeNearestParams:
    """rip_resize_nearest_params; ``scale_h``/``scale_w`` are 0 where the kernel must evaluate
    TFLite's float32 index map itself."""

    align_corners: bool
    half_pixel_centers: bool
    scale_h: int
    scale_w: int
    reverse: bool
    input_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]


@dataclass(frozen=True)
class ConcatKernelParams:
    """rip_concat_params: ``requantize[k]`` is None where input k's bytes are copied."""

    outer_size: int
    inner_size: int
    axis_sizes: tuple[int, ...]
    requantize: tuple[RequantizeParams | None, ...]


TRANSPOSE_MAX_RANK = 5  # RIP_TRANSPOSE_MAX_RANK: TFLite Micro's TRANSPOSE takes up to 5-D


@dataclass(frozen=True)
class TransposeKernelParams:
    """rip_transpose_params, rank extended to TRANSPOSE_MAX_RANK with leading 1s."""

    perm: tuple[int, ...]
    input_dims: tuple[int, ...]


@dataclass(frozen=True)
class PadKernelParams:
    """rip_pad_params: (n, h, w, c) before and after, filled with the output zero point."""

    before: tuple[int, int, int, int]
    after: tuple[int, int, int, int]
    pad_value: int
    input_dims: tuple[int, int, int, int]


def _integer_scale(in_size: int, out_size: int, align: bool, half_pixel: bool) -> int:
    """S when the float map is o // S at every index (the kernel then divides), else 0."""
    if out_size % in_size:
        return 0
    s = out_size // in_size
    exact = tuple(o // s for o in range(out_size))
    return s if nearest_index_map(in_size, out_size, align, half_pixel) == exact else 0


def resize_in_place_safe(
    input_dims: Sequence[int],
    output_dims: Sequence[int],
    align_corners: bool,
    half_pixel_centers: bool,
) -> bool:
    """True if the reverse traversal may write the output over the input from the same base:
    every output pixel's source pixel is at or below its own linear index (Theorem 14)."""
    n, h_in, w_in, _ = input_dims
    _, h_out, w_out, _ = output_dims
    ys = np.asarray(nearest_index_map(h_in, h_out, align_corners, half_pixel_centers))
    xs = np.asarray(nearest_index_map(w_in, w_out, align_corners, half_pixel_centers))
    y, x = np.arange(h_out)[:, None], np.arange(w_out)[None, :]
    return all(
        bool(np.all((b * h_in + ys[:, None]) * w_in + xs[None, :] <= (b * h_out + y) * w_out + x))
        for b in range(n)
    )


def resize_nearest_params(
    input: Tensor,
    output: Tensor,
    align_corners: bool = False,
    half_pixel_centers: bool = False,
    in_place: bool = False,
) -> ResizeNearestParams:
    """RESIZE_NEAREST_NEIGHBOR (4-D, as TFLite Micro requires). ``in_place``: the output
    starts where the input does, so the kernel runs in reverse (Theorem 14); refused where a
    source pixel lies above its output pixel (downsampling on some axis)."""
    if len(input.shape) != 4 or len(output.shape) != 4:
        raise ParamsError(f"RESIZE_NEAREST_NEIGHBOR needs 4-D tensors, got {input.shape}")
    if input.quant != output.quant:
        # TFLite Micro copies bytes and would silently misread them.
        raise ParamsError(f"RESIZE_NEAREST_NEIGHBOR {output.name!r}: quantization differs")
    in_dims, out_dims = dims4(input.shape), dims4(output.shape)
    if in_place and not resize_in_place_safe(in_dims, out_dims, align_corners, half_pixel_centers):
        raise ParamsError(
            f"RESIZE_NEAREST_NEIGHBOR {output.name!r}: {in_dims} -> {out_dims} cannot run in"
            " place (an output pixel reads an input pixel above it)"
        )
    width = element_bytes(output)  # a pixel's channels move as bytes, two a 16x8 value
    return ResizeNearestParams(
        align_corners=align_corners,
        half_pixel_centers=half_pixel_centers,
        scale_h=_integer_scale(in_dims[1], out_dims[1], align_corners, half_pixel_centers),
        scale_w=_integer_scale(in_dims[2], out_dims[2], align_corners, half_pixel_centers),
        reverse=in_place,
        input_dims=(*in_dims[:3], in_dims[3] * width),
        output_dims=(*out_dims[:3], out_dims[3] * width),
    )


def element_bytes(t: Tensor) -> int:
    """Bytes of one element: the movement kernels copy bytes, a 16x8 tensor's two at a
    time."""
    return DTYPE_BYTES[t.dtype]


def _wide_zero_points(kind: str, tensors: Sequence[Tensor]) -> None:
    """TFLite Micro's int16 CONCATENATION: every zero point 0 (its scales may differ: it
    copies values, never requantizes)."""
    for t in tensors:
        if any_scale_zp(t)[1] != 0:
            raise ParamsError(f"{kind} {t.name!r}: int16 zero point {any_scale_zp(t)[1]}, not 0")


def concatenation_params(
    inputs: Sequence[Tensor], output: Tensor, axis: int, activation: Activation = Activation.NONE
) -> ConcatKernelParams:
    """CONCATENATION along ``axis``. TFLite Micro (and TFLite) require every int8 input to
    share the output's scale and zero point and the activation to be NONE; rip also accepts a
    differing input and requantizes it exactly as a QUANTIZE op in front of it would."""
    if activation != Activation.NONE:
        raise ParamsError(f"CONCATENATION {output.name!r}: fused {activation} (TFLite refuses)")
    rank = len(output.shape)
    if not -rank <= axis < rank:
        raise ParamsError(f"CONCATENATION axis {axis} out of range for rank {rank}")
    axis %= rank
    wide = output.dtype == "int16"
    if wide:
        _wide_zero_points(Op.CONCATENATION, (*inputs, output))
    else:
        scale_zp(output)
    requant: list[RequantizeParams | None] = []
    for t in inputs:
        if len(t.shape) != rank or t.dtype != output.dtype:
            raise ParamsError(f"CONCATENATION input {t.name!r}: {t.dtype} of rank {len(t.shape)}")
        if not wide:
            scale_zp(t)
        copy = wide or t.quant == output.quant
        requant.append(None if copy else quantize_params(t, output))
    axis_sizes = tuple(int(t.shape[axis]) for t in inputs)
    if sum(axis_sizes) != output.shape[axis]:
        raise ParamsError(f"CONCATENATION {output.name!r}: axis sizes {axis_sizes} do not add up")
    return ConcatKernelParams(
        outer_size=math.prod(output.shape[:axis]),
        inner_size=math.prod(output.shape[axis + 1 :]) * element_bytes(output),
        axis_sizes=axis_sizes,
        requantize=tuple(requant),
    )


def merged_transpose(
    shape: Sequence[int], perm: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The same byte permutation on fewer axes: unit axes dropped, and input axes that stay
    next to each other in the output merged into one (any rank whose permutation
    needs at most four axes)."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    renumber = {a: k for k, a in enumerate(keep)}
    kept = [renumber[p] for p in perm if shape[p] != 1]
    groups: list[list[int]] = []
    for p in kept:
        if groups and p == groups[-1][-1] + 1:
            groups[-1].append(p)
        else:
            groups.append([p])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged = tuple(math.prod(shape[keep[a]] for a in groups[g]) for g in order)
    return merged, tuple(order.index(g) for g in range(len(groups)))


def transpose_params(input: Tensor, perm: Sequence[int]) -> TransposeKernelParams:
    """TRANSPOSE: output axis k is input axis perm[k]. Reduced by ``merged_transpose`` to at
    most TRANSPOSE_MAX_RANK axes (TFLite Micro's limit is on the input's rank, so beyond it
    only a model TFLite Micro refuses), then extended with leading unit axes, which stay in
    front."""
    rank = len(input.shape)
    if sorted(perm) != list(range(rank)):
        raise ParamsError(f"TRANSPOSE perm {tuple(perm)} for rank {rank} is not a permutation")
    # a wider element is one more axis of its bytes, which stays last (and merges)
    size = element_bytes(input)
    shape, merged = merged_transpose((*input.shape, size), (*perm, rank))
    if len(merged) > TRANSPOSE_MAX_RANK:
        raise ParamsError(
            f"TRANSPOSE perm {tuple(perm)} of {input.shape} needs {len(merged)} axes, "
            f"TFLite Micro takes at most {TRANSPOSE_MAX_RANK}"
        )
    lead = TRANSPOSE_MAX_RANK - len(merged)
    order = tuple(range(lead)) + tuple(int(p) + lead for p in merged)
    return TransposeKernelParams(perm=order, input_dims=(1,) * lead + tuple(shape))


def pad_params(
    input: Tensor, output: Tensor, paddings: Sequence[tuple[int, int]]
) -> PadKernelParams:
    """PAD (PadPrepare): any axis of up to 4-D, filled with the output zero point. TFLite
    Micro copies input bytes unchanged, so input and output quantization must agree."""
    rank = len(input.shape)
    if len(paddings) != rank or rank > 4:
        raise ParamsError(f"PAD: {len(paddings)} padding pairs for rank {rank}")
    if input.quant != output.quant:
        raise ParamsError(f"PAD {output.name!r}: input and output quantization differ")
    width = element_bytes(output)
    _, zo = scale_zp(output) if width == 1 else any_scale_zp(output)
    pairs = [(0, 0)] * (4 - rank) + [(int(lo), int(hi)) for lo, hi in paddings]
    if min(v for pair in pairs for v in pair) < 0:
        raise ParamsError(f"PAD: negative paddings {tuple(paddings)}")
    (n0, n1), (h0, h1), (w0, w1), (c0, c1) = pairs
    shape = (1,) * (4 - rank) + tuple(input.shape)
    # a 16x8 tensor's values are byte pairs: the channel axis counts bytes
    return PadKernelParams(
        before=(n0, h0, w0, c0 * width),
        after=(n1, h1, w1, c1 * width),
        pad_value=zo,
        input_dims=(*shape[:3], shape[3] * width),  # type: ignore[arg-type]
    )


def byte_pad_value(output: Tensor, value: int) -> int:
    """The byte the pad kernel fills with for ``value``: itself for int8; for int16 a value
    whose two bytes are equal (0, -1: the zero point 0 of the 16x8 mode), else refused."""
    if element_bytes(output) == 1:
        return value
    low, high = value & 0xFF, (value >> 8) & 0xFF
    if low != high:
        raise ParamsError(
            f"PAD {output.name!r}: int16 pad value {value} (rip pads int16 with 0 or -1)"
        )
    return low - 256 if low > 127 else low


# ---- slicing, packing, block moves, gather, PADV2, MIRROR_PAD -----------------------------------


@dataclass(frozen=True)
class SliceKernelParams:
    """rip_slice_params: output element (i0..i3) is input byte offset + sum i_k * step[k]."""

    offset: int
    step: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]


@dataclass(frozen=True)
class DepthSpaceKernelParams:
    """rip_depth_space_params (DEPTH_TO_SPACE: up, SPACE_TO_DEPTH: not)."""

    block: int
    up: bool
    input_dims: tuple[int, int, int, int]


@dataclass(frozen=True)
class GatherKernelParams:
    """rip_gather_params; ``coords`` become a constant int32 array."""

    batch_size: int
    outer_size: int
    axis_size: int
    inner_size: int
    coords: tuple[int, ...]

    @property
    def coord_size(self) -> int:
        return len(self.coords) // max(1, self.batch_size)


@dataclass(frozen=True)
class MirrorPadKernelParams:
    before: tuple[int, int, int, int]
    after: tuple[int, int, int, int]
    symmetric: bool
    input_dims: tuple[int, int, int, int]


def _same_quant(kind: str, input: Tensor, output: Tensor) -> None:
    """TFLite Micro's data-movement kernels copy bytes: a different output quantization would
    silently change what they mean."""
    if input.quant != output.quant:
        raise ParamsError(f"{kind} {output.name!r}: input and output quantization differ")


def _merge_full_axes(shape, begin, stride, size):
    """The same slice on fewer axes: an axis taken whole (begin 0, stride 1, all of it)
    joins the axis before it where that one steps by 1, its run of elements contiguous."""
    axes = [list(a) for a in zip(shape, begin, stride, size, strict=True)]
    k = len(axes) - 1
    while k > 0:
        extent, b, st_, n = axes[k]
        whole = b == 0 and st_ == 1 and n == extent
        if whole and axes[k - 1][2] == 1:
            pe, pb, _, pn = axes[k - 1]
            axes[k - 1] = [pe * extent, pb * extent, 1, pn * extent]
            del axes[k]
        k -= 1
    shape, begin, stride, size = (tuple(a[j] for a in axes) for j in range(4))
    return shape, begin, stride, size


def slice_params(kind: str, input: Tensor, output: Tensor, p: SliceParams) -> SliceKernelParams:
    """STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK (one output): the input's row-major
    element strides times the slice's, up to 4-D (TFLite Micro's STRIDED_SLICE limit)."""
    _same_quant(kind, input, output)
    # a unit axis moves nothing (its begin 0, its count 1): dropped, keeping one axis
    keep = [k for k, d in enumerate(input.shape) if d != 1] or [len(input.shape) - 1]
    shape = tuple(input.shape[k] for k in keep)
    begin, stride, size = (tuple(v[k] for k in keep) for v in (p.begin, p.stride, p.size))
    width = element_bytes(input)
    if width > 1 and stride[-1] == 1:  # whole elements side by side: a wider last axis
        shape = (*shape[:-1], shape[-1] * width)
        begin, size = (*begin[:-1], begin[-1] * width), (*size[:-1], size[-1] * width)
    elif width > 1:  # each element's bytes one more axis
        shape, begin, stride, size = (*shape, width), (*begin, 0), (*stride, 1), (*size, width)
    shape, begin, stride, size = _merge_full_axes(shape, begin, stride, size)
    rank = len(shape)
    if rank > 4:
        raise ParamsError(f"{kind} of a rank-{len(input.shape)} {input.dtype} tensor (rip"
                          " slices up to 4-D)")  # fmt: skip
    lead = 4 - rank
    shape = (1,) * lead + shape
    begin = (0,) * lead + tuple(begin)
    stride = (1,) * lead + tuple(stride)
    size = (1,) * lead + tuple(size)
    elements = [math.prod(shape[k + 1 :]) for k in range(4)]
    return SliceKernelParams(
        offset=sum(b * e for b, e in zip(begin, elements, strict=True)),
        step=tuple(s * e for s, e in zip(stride, elements, strict=True)),
        output_dims=size,  # type: ignore[arg-type]
    )


def pack_params(inputs: Sequence[Tensor], output: Tensor, axis: int) -> ConcatKernelParams:
    """PACK along ``axis`` is a concatenation of the inputs with a unit axis inserted there.
    TFLite Micro's int8 PACK copies every input's bytes whatever their quantization, so no
    input is requantized."""
    shape = inputs[0].shape
    return ConcatKernelParams(
        outer_size=math.prod(shape[:axis]),
        inner_size=math.prod(shape[axis:]) * element_bytes(output),
        axis_sizes=(1,) * len(inputs),
        requantize=(None,) * len(inputs),
    )


def depth_space_params(
    kind: str, input: Tensor, output: Tensor, block: int
) -> DepthSpaceKernelParams:
    _same_quant(kind, input, output)
    return DepthSpaceKernelParams(block, kind == Op.DEPTH_TO_SPACE, dims4(input.shape))


def gather_params(input: Tensor, coords: Tensor, p: GatherParams) -> GatherKernelParams:
    """GATHER (TFLite Micro's Gather sizes); the reader checked every coordinate."""
    if coords.data is None:
        raise ParamsError(f"GATHER coordinates {coords.name!r} have no data")
    dtype = {"int32": "<i4", "int64": "<i8"}.get(coords.dtype)
    if dtype is None:
        raise ParamsError(f"GATHER coordinates of type {coords.dtype}")
    shape = input.shape
    return GatherKernelParams(
        batch_size=math.prod(shape[: p.batch_dims]),
        outer_size=math.prod(shape[p.batch_dims : p.axis]),
        axis_size=shape[p.axis],
        inner_size=math.prod(shape[p.axis + 1 :]),
        coords=tuple(int(v) for v in np.frombuffer(coords.data, dtype=dtype)),
    )


def mirror_pad_params(input: Tensor, output: Tensor, p: MirrorPadParams) -> MirrorPadKernelParams:
    _same_quant(Op.MIRROR_PAD, input, output)
    pairs = [(0, 0)] * (4 - len(p.pairs)) + list(p.pairs)
    return MirrorPadKernelParams(
        before=tuple(lo for lo, _ in pairs),  # type: ignore[arg-type]
        after=tuple(hi for _, hi in pairs),  # type: ignore[arg-type]
        symmetric=p.symmetric,
        input_dims=dims4(input.shape),
    )


def _movement_params(graph: Graph, op: Operator) -> MovementKernelParams:
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if isinstance(p, SliceParams):
        return slice_params(op.kind, ins[0], out, p)
    if op.kind == Op.PACK:
        return pack_params(ins, out, p.axis)
    if op.kind in (Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH):
        return depth_space_params(op.kind, ins[0], out, p.block)
    if op.kind == Op.GATHER:
        _same_quant(Op.GATHER, ins[0], out)
        return gather_params(ins[0], ins[1], p)
    if op.kind == Op.PADV2:
        params = pad_params(ins[0], out, p.pairs)
        value = params.pad_value if p.value is None else p.value
        return replace(params, pad_value=byte_pad_value(out, value))
    if op.kind == Op.MIRROR_PAD:
        return mirror_pad_params(ins[0], out, p)
    raise ParamsError(f"{op.describe()} is not a shape kernel")


MovementKernelParams = (
    SliceKernelParams
    | ConcatKernelParams
    | DepthSpaceKernelParams
    | GatherKernelParams
    | PadKernelParams
    | MirrorPadKernelParams
)
KernelParams = ResizeNearestParams | TransposeKernelParams | MovementKernelParams


def op_params(graph: Graph, op: Operator, in_place: bool = False) -> KernelParams:
    """Kernel parameters of one rip_shape.h operator of the graph. ``in_place`` matters for
    RESIZE_NEAREST_NEIGHBOR (reverse traversal)."""
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if op.kind == Op.RESIZE_NEAREST_NEIGHBOR:
        return resize_nearest_params(
            ins[0], out, p.align_corners, p.half_pixel_centers, in_place=in_place
        )
    if op.kind == Op.CONCATENATION:
        return concatenation_params(ins, out, p.axis, p.activation)
    if op.kind == Op.TRANSPOSE:
        return transpose_params(ins[0], p.perm)
    if op.kind == Op.PAD:
        pad = p.padding
        pairs = [(0, 0), (pad.top, pad.bottom), (pad.left, pad.right), p.channels]
        params = pad_params(ins[0], out, pairs[4 - len(ins[0].shape) :])
        return replace(params, pad_value=byte_pad_value(out, params.pad_value))
    return _movement_params(graph, op)
