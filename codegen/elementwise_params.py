"""Kernel parameters of the elementwise, activation and data-movement kernels, computed as
TFLite Micro's Prepare functions compute them (micro/kernels/*_common.cc), bit for bit.

Every function is pure and returns a frozen dataclass whose fields are the C struct's fields
(``kernels/rip_elementwise.h``, ``rip_activation.h``, ``rip_shape.h``) plus the sizes the
call needs, ready for a Jinja2 template. A model TFLite Micro refuses at Prepare raises
`ParamsError`, naming the reason.

The oracle is the installed TFLite Micro interpreter (wheel 0.dev20261023), checked against
its machine code where its source history disagrees: SUB, RELU and HARD_SWISH divide scales
in double there (the 2022 "avoid precision loss" fix, reverted in 2023 and since restored),
while activation ranges, RELU6's bound and the resize index map stay float32, which numpy
float32 reproduces here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rip.codegen.quant import (
    INT8_MAX,
    INT8_MIN,
    ParamsError,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
    round_half_away,
)
from rip.codegen.quant import activation_range as quant_activation_range
from rip.frontend.ir import Graph, Operator, Tensor
from rip.shapes import nhwc

ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD/SUB headroom: |x - zp| << 20 stays below 2^31
SOFTMAX_OUTPUT_SCALE = 1.0 / 256.0
SOFTMAX_OUTPUT_ZERO_POINT = -128
IDENTITY_QUANT = (1 << 30, 1)  # QuantizeMultiplier(1.0)


# ---- dataclasses: one per C params struct ------------------------------------------------


@dataclass(frozen=True)
class AddParams:
    """rip_add_params (ADD and SUB) and the operand sizes of the call."""

    kind: str  # "ADD" | "SUB"
    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int
    input1_size: int
    input2_size: int
    output_size: int


@dataclass(frozen=True)
class MulParams:
    """rip_mul_params and the operand sizes of the call."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int
    input1_size: int
    input2_size: int
    output_size: int


@dataclass(frozen=True)
class RequantizeParams:
    """rip_requantize_params (RELU, RELU6, QUANTIZE, a requantized concatenation input)."""

    input_offset: int
    output_offset: int
    multiplier: int
    shift: int
    activation_min: int
    activation_max: int
    clamp_only: bool
    size: int


@dataclass(frozen=True)
class SigmoidParams:
    """rip_sigmoid_params (LOGISTIC, TANH)."""

    kind: str  # "LOGISTIC" | "TANH"
    input_zero_point: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int
    size: int


@dataclass(frozen=True)
class HardSwishParams:
    """rip_hard_swish_params."""

    input_zero_point: int
    output_zero_point: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int
    size: int


@dataclass(frozen=True)
class SoftmaxKernelParams:
    """rip_softmax_params and the row geometry (softmax runs over the last axis)."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int
    num_rows: int
    row_size: int


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


@dataclass(frozen=True)
class TransposeKernelParams:
    """rip_transpose_params, rank extended to 4 with leading 1s."""

    perm: tuple[int, int, int, int]
    input_dims: tuple[int, int, int, int]


@dataclass(frozen=True)
class PadKernelParams:
    """rip_pad_params: (n, h, w, c) before and after, filled with the output zero point."""

    before: tuple[int, int, int, int]
    after: tuple[int, int, int, int]
    pad_value: int
    input_dims: tuple[int, int, int, int]


# ---- TFLite's float arithmetic ------------------------------------------------------------


def _f32(x: float) -> np.float32:
    return np.float32(x)


def _scale_zp(t: Tensor) -> tuple[float, int]:
    if t.dtype != "int8" or t.quant is None or t.quant.per_channel:
        raise ParamsError(f"tensor {t.name!r} is not a per-tensor quantized int8 tensor")
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


def _size(t: Tensor) -> int:
    return math.prod(t.shape)


def _dims4(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """``rip.shapes.nhwc``, its refusal of a fifth dimension as a ParamsError."""
    try:
        return nhwc(shape)
    except ValueError as e:
        raise ParamsError(str(e)) from None


def activation_range(activation: str, output: Tensor) -> tuple[int, int]:
    """CalculateActivationRangeQuantized for the int8 ``output`` tensor."""
    scale, zero_point = _scale_zp(output)
    return quant_activation_range(activation, scale, zero_point)


def _broadcast_size(operand: Tensor, output: Tensor) -> int:
    """Element count of an operand the kernels read at i % n: its shape, without leading 1s,
    must be a suffix of the output's (full tensor, 1x1x1xC, scalar)."""
    shape = list(operand.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    out = list(output.shape)
    if shape and out[len(out) - len(shape) :] != shape:
        raise ParamsError(
            f"operand {operand.name!r} of shape {operand.shape} does not broadcast as a suffix"
            f" of output shape {output.shape}"
        )
    return math.prod(shape)


# ---- binary arithmetic --------------------------------------------------------------------


def add_params(
    input1: Tensor, input2: Tensor, output: Tensor, activation: str = "NONE", kind: str = "ADD"
) -> AddParams:
    """ADD (CalculateOpDataAdd) or SUB (CalculateOpDataSub): both inputs rescaled to twice
    the larger input scale with 20 bits of headroom, all three multipliers through
    QuantizeMultiplierSmallerThanOneExp, the ratios in double.

    TFLite Micro's SUB source of 2023-2026 wrote these ratios in float32; the installed
    interpreter computes them in double like ADD (its machine code, and 14 of 14 quantizations
    where the two differ; a test pins one)."""
    if kind not in ("ADD", "SUB"):
        raise ParamsError(f"add_params computes ADD or SUB, not {kind}")
    s1, z1 = _scale_zp(input1)
    s2, z2 = _scale_zp(input2)
    so, zo = _scale_zp(output)
    twice = 2.0 * float(max(_f32(s1), _f32(s2)))
    real1, real2 = s1 / twice, s2 / twice
    real_out = twice / ((1 << ADD_LEFT_SHIFT) * so)
    try:
        m1, sh1 = quantize_multiplier_smaller_than_one_exp(real1)
        m2, sh2 = quantize_multiplier_smaller_than_one_exp(real2)
        mo, sho = quantize_multiplier_smaller_than_one_exp(real_out)
    except ValueError as e:  # TFLite aborts in TFLITE_CHECK
        raise ParamsError(f"{kind} {output.name!r}: {e}") from None
    lo, hi = activation_range(activation, output)
    return AddParams(
        kind=kind,
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        left_shift=ADD_LEFT_SHIFT,
        input1_multiplier=m1,
        input1_shift=sh1,
        input2_multiplier=m2,
        input2_shift=sh2,
        output_multiplier=mo,
        output_shift=sho,
        activation_min=lo,
        activation_max=hi,
        input1_size=_broadcast_size(input1, output),
        input2_size=_broadcast_size(input2, output),
        output_size=_size(output),
    )


def mul_params(
    input1: Tensor, input2: Tensor, output: Tensor, activation: str = "NONE"
) -> MulParams:
    """MUL (CalculateOpDataMul): one multiplier s1 * s2 / s_out in double, any shift."""
    s1, z1 = _scale_zp(input1)
    s2, z2 = _scale_zp(input2)
    so, zo = _scale_zp(output)
    m, shift = quantize_multiplier(s1 * s2 / so)
    lo, hi = activation_range(activation, output)
    return MulParams(
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        output_multiplier=m,
        output_shift=shift,
        activation_min=lo,
        activation_max=hi,
        input1_size=_broadcast_size(input1, output),
        input2_size=_broadcast_size(input2, output),
        output_size=_size(output),
    )


# ---- activations ---------------------------------------------------------------------------


def relu_params(input: Tensor, output: Tensor, kind: str = "RELU") -> RequantizeParams:
    """Standalone RELU (CalculateReluOpData: requantize by s_in / s_out in double, clamp at
    the output zero point) or RELU6 (Relu6Prepare: TFLite Micro clamps the input bytes to
    [zero_point, zero_point + round(6 / s_in)] in the input's quantization and never reads the
    output's, so neither do we)."""
    si, zi = _scale_zp(input)
    so, zo = _scale_zp(output)
    if kind == "RELU":
        m, shift = quantize_multiplier(si / so)
        return RequantizeParams(
            input_offset=-zi,
            output_offset=zo,
            multiplier=m,
            shift=shift,
            activation_min=max(INT8_MIN, zo),
            activation_max=INT8_MAX,
            clamp_only=(m, shift) == IDENTITY_QUANT and zi == zo,
            size=_size(input),
        )
    if kind == "RELU6":
        # FloatToQuantizedType: round(6.0f / scale) + zero point, clamped to int8.
        six = min(INT8_MAX, max(INT8_MIN, round_half_away(float(_f32(6.0) / _f32(si))) + zi))
        return RequantizeParams(
            input_offset=0,
            output_offset=0,
            multiplier=IDENTITY_QUANT[0],
            shift=IDENTITY_QUANT[1],
            activation_min=zi,
            activation_max=six,
            clamp_only=True,
            size=_size(input),
        )
    raise ParamsError(f"relu_params computes RELU or RELU6, not {kind}")


def quantize_params(input: Tensor, output: Tensor) -> RequantizeParams:
    """QUANTIZE int8 -> int8 (PrepareQuantizeReference + Requantize): multiplier
    s_in / s_out in double, full int8 clamp."""
    si, zi = _scale_zp(input)
    so, zo = _scale_zp(output)
    m, shift = quantize_multiplier(si / so)
    return RequantizeParams(
        input_offset=-zi,
        output_offset=zo,
        multiplier=m,
        shift=shift,
        activation_min=INT8_MIN,
        activation_max=INT8_MAX,
        clamp_only=(m, shift) == IDENTITY_QUANT,
        size=_size(input),
    )


def calculate_input_radius(input_integer_bits: int, input_left_shift: int) -> int:
    """CalculateInputRadius (31 total signed bits): the largest |x - zp| that stays inside
    Q(input_integer_bits) after the rescale."""
    if input_left_shift < 0:
        raise ParamsError(f"input left shift {input_left_shift} < 0 (input scale too small)")
    return math.floor(
        1.0 * ((1 << input_integer_bits) - 1) * (1 << (31 - input_integer_bits))
        / (1 << input_left_shift)
    )  # fmt: skip


def sigmoid_params(input: Tensor, output: Tensor, kind: str = "LOGISTIC") -> SigmoidParams:
    """LOGISTIC (CalculateArithmeticOpDataLogistic) or TANH (tanh.cc): the input scale times
    2^27 split by frexp into a Q31 multiplier and a left shift. LOGISTIC requires an output
    zero point of -128 and then assumes scale 1/256 without checking it; TANH checks nothing
    and assumes 1/128 and 0."""
    si, zi = _scale_zp(input)
    _, zo = _scale_zp(output)
    if kind == "LOGISTIC" and zo != SOFTMAX_OUTPUT_ZERO_POINT:
        raise ParamsError(f"LOGISTIC output {output.name!r} needs zero point -128, has {zo}")
    if kind not in ("LOGISTIC", "TANH"):
        raise ParamsError(f"sigmoid_params computes LOGISTIC or TANH, not {kind}")
    input_integer_bits = 4
    mantissa, left_shift = math.frexp(si * (1 << (31 - input_integer_bits)))
    # The mantissa of a float32 scale has 24 bits: mantissa * 2^31 is an exact integer.
    multiplier = round_half_away(mantissa * (1 << 31))
    return SigmoidParams(
        kind=kind,
        input_zero_point=zi,
        input_range_radius=calculate_input_radius(input_integer_bits, left_shift),
        input_multiplier=multiplier,
        input_left_shift=left_shift,
        size=_size(input),
    )


def _downscale_int32_to_int16_multiplier(multiplier: int) -> int:
    """DownScaleInt32ToInt16Multiplier: round a Q31 multiplier to Q15."""
    rounding = 1 << 15
    if multiplier >= (1 << 31) - 1 - rounding:
        return (1 << 15) - 1
    return (multiplier + rounding) >> 16


def hard_swish_params(input: Tensor, output: Tensor) -> HardSwishParams:
    """HARD_SWISH (HardSwishPrepare): the input on a 'hires' scale s_in / 128 (float32), an
    output multiplier and a 'reluish' multiplier (3.0 at 32768), each QuantizeMultiplier'd
    from a ratio in double and rounded to int16."""
    si, zi = _scale_zp(input)
    so, zo = _scale_zp(output)
    hires_input_scale = float(_f32(1.0 / 128.0) * _f32(si))
    out_m, out_exp = quantize_multiplier(hires_input_scale / so)
    if out_exp > 0:
        raise ParamsError(
            f"HARD_SWISH {output.name!r}: output multiplier exponent {out_exp} > 0 (input scale"
            " at least 128 times the output scale); TFLite Micro refuses it"
        )
    rel_m, rel_exp = quantize_multiplier(hires_input_scale / (3.0 / 32768.0))
    return HardSwishParams(
        input_zero_point=zi,
        output_zero_point=zo,
        output_multiplier_fixedpoint_int16=_downscale_int32_to_int16_multiplier(out_m),
        output_multiplier_exponent=out_exp,
        reluish_multiplier_fixedpoint_int16=_downscale_int32_to_int16_multiplier(rel_m),
        reluish_multiplier_exponent=rel_exp,
        size=_size(input),
    )


def softmax_params(input: Tensor, output: Tensor, beta: float = 1.0) -> SoftmaxKernelParams:
    """SOFTMAX int8 -> int8 (CalculateSoftmaxParams + PreprocessSoftmaxScaling): beta times
    the input scale in Q5.26, capped at 2^31 - 1, as a multiplier greater than one; inputs
    further than diff_min below the row maximum contribute exp = 0. TFLite Micro's int8 path
    is gemmlowp fixed point (the LUTs are for int16 only) and needs an output of exactly
    scale 1/256, zero point -128."""
    si, _ = _scale_zp(input)
    so, zo = _scale_zp(output)
    if zo != SOFTMAX_OUTPUT_ZERO_POINT or _f32(so) != _f32(SOFTMAX_OUTPUT_SCALE):
        raise ParamsError(
            f"SOFTMAX output {output.name!r} needs scale 1/256 and zero point -128,"
            f" has {so} and {zo}"
        )
    scaled_diff_integer_bits = 5
    real = min(float(_f32(beta)) * si * (1 << (31 - scaled_diff_integer_bits)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise ParamsError(f"SOFTMAX {output.name!r}: beta * input scale too small ({real})")
    multiplier, left_shift = quantize_multiplier(real)
    if left_shift < 0:
        raise ParamsError(f"SOFTMAX {output.name!r}: negative input left shift")
    if not input.shape:
        raise ParamsError(f"SOFTMAX input {input.name!r} has rank 0")
    row_size = int(input.shape[-1])
    return SoftmaxKernelParams(
        input_multiplier=multiplier,
        input_left_shift=left_shift,
        diff_min=-calculate_input_radius(scaled_diff_integer_bits, left_shift),
        num_rows=_size(input) // row_size if row_size else 0,
        row_size=row_size,
    )


# ---- data movement -------------------------------------------------------------------------


def nearest_index_map(
    in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool
) -> tuple[int, ...]:
    """TFLite's GetNearestNeighbor for every output index, in float32 as the reference
    evaluates it (so its rounding, not exact arithmetic, decides ties)."""
    if align_corners and out_size > 1:
        ratio = _f32(in_size - 1) / _f32(out_size - 1)
    else:
        ratio = _f32(in_size) / _f32(out_size)
    offset = _f32(0.5 if half_pixel_centers else 0.0)
    result = []
    for o in range(out_size):
        v = float((_f32(o) + offset) * ratio)
        index = round_half_away(v) if align_corners else math.floor(v)
        index = min(index, in_size - 1)
        result.append(max(0, index) if half_pixel_centers else index)
    return tuple(result)


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
    in_dims, out_dims = _dims4(input.shape), _dims4(output.shape)
    if in_place and not resize_in_place_safe(in_dims, out_dims, align_corners, half_pixel_centers):
        raise ParamsError(
            f"RESIZE_NEAREST_NEIGHBOR {output.name!r}: {in_dims} -> {out_dims} cannot run in"
            " place (an output pixel reads an input pixel above it)"
        )
    return ResizeNearestParams(
        align_corners=align_corners,
        half_pixel_centers=half_pixel_centers,
        scale_h=_integer_scale(in_dims[1], out_dims[1], align_corners, half_pixel_centers),
        scale_w=_integer_scale(in_dims[2], out_dims[2], align_corners, half_pixel_centers),
        reverse=in_place,
        input_dims=in_dims,
        output_dims=out_dims,
    )


def concatenation_params(
    inputs: Sequence[Tensor], output: Tensor, axis: int, activation: str = "NONE"
) -> ConcatKernelParams:
    """CONCATENATION along ``axis``. TFLite Micro (and TFLite) require every int8 input to
    share the output's scale and zero point and the activation to be NONE; rip also accepts a
    differing input and requantizes it exactly as a QUANTIZE op in front of it would."""
    if activation != "NONE":
        raise ParamsError(f"CONCATENATION {output.name!r}: fused {activation} (TFLite refuses)")
    rank = len(output.shape)
    if not -rank <= axis < rank:
        raise ParamsError(f"CONCATENATION axis {axis} out of range for rank {rank}")
    axis %= rank
    _scale_zp(output)
    requant: list[RequantizeParams | None] = []
    for t in inputs:
        if len(t.shape) != rank:
            raise ParamsError(f"CONCATENATION input {t.name!r} has rank {len(t.shape)}")
        _scale_zp(t)
        requant.append(None if t.quant == output.quant else quantize_params(t, output))
    axis_sizes = tuple(int(t.shape[axis]) for t in inputs)
    if sum(axis_sizes) != output.shape[axis]:
        raise ParamsError(f"CONCATENATION {output.name!r}: axis sizes {axis_sizes} do not add up")
    return ConcatKernelParams(
        outer_size=math.prod(output.shape[:axis]),
        inner_size=math.prod(output.shape[axis + 1 :]),
        axis_sizes=axis_sizes,
        requantize=tuple(requant),
    )


def transpose_params(input: Tensor, perm: Sequence[int]) -> TransposeKernelParams:
    """TRANSPOSE of up to 4-D (TFLite Micro allows 5-D): output axis k is input axis
    perm[k]; lower ranks gain leading unit axes, which stay in front."""
    rank = len(input.shape)
    if sorted(perm) != list(range(rank)) or rank > 4:
        raise ParamsError(f"TRANSPOSE perm {tuple(perm)} for rank {rank} is not supported")
    lead = 4 - rank
    a, b, c, d = tuple(range(lead)) + tuple(int(p) + lead for p in perm)
    return TransposeKernelParams(perm=(a, b, c, d), input_dims=_dims4(input.shape))


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
    _, zo = _scale_zp(output)
    pairs = [(0, 0)] * (4 - rank) + [(int(lo), int(hi)) for lo, hi in paddings]
    if min(v for pair in pairs for v in pair) < 0:
        raise ParamsError(f"PAD: negative paddings {tuple(paddings)}")
    (n0, n1), (h0, h1), (w0, w1), (c0, c1) = pairs
    return PadKernelParams(
        before=(n0, h0, w0, c0),
        after=(n1, h1, w1, c1),
        pad_value=zo,
        input_dims=_dims4(input.shape),
    )


# ---- from the IR ---------------------------------------------------------------------------

KernelParams = (
    AddParams
    | MulParams
    | RequantizeParams
    | SigmoidParams
    | HardSwishParams
    | SoftmaxKernelParams
    | ResizeNearestParams
    | ConcatKernelParams
    | TransposeKernelParams
    | PadKernelParams
)


def op_params(graph: Graph, op: Operator, in_place: bool = False) -> KernelParams:
    """Kernel parameters of one operator of the graph (ops handled by this module only).
    ``in_place`` matters for RESIZE_NEAREST_NEIGHBOR (reverse traversal)."""
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if op.kind in ("ADD", "SUB"):
        return add_params(ins[0], ins[1], out, p.activation, op.kind)
    if op.kind == "MUL":
        return mul_params(ins[0], ins[1], out, p.activation)
    if op.kind in ("RELU", "RELU6"):
        return relu_params(ins[0], out, op.kind)
    if op.kind == "QUANTIZE":
        return quantize_params(ins[0], out)
    if op.kind in ("LOGISTIC", "TANH"):
        return sigmoid_params(ins[0], out, op.kind)
    if op.kind == "HARD_SWISH":
        return hard_swish_params(ins[0], out)
    if op.kind == "SOFTMAX":
        return softmax_params(ins[0], out, p.beta)
    if op.kind == "RESIZE_NEAREST_NEIGHBOR":
        return resize_nearest_params(
            ins[0], out, p.align_corners, p.half_pixel_centers, in_place=in_place
        )
    if op.kind == "CONCATENATION":
        return concatenation_params(ins, out, p.axis, p.activation)
    if op.kind == "TRANSPOSE":
        return transpose_params(ins[0], p.perm)
    if op.kind == "PAD":
        pad = p.padding
        pairs = [(0, 0), (pad.top, pad.bottom), (pad.left, pad.right), p.channels]
        return pad_params(ins[0], out, pairs[4 - len(ins[0].shape) :])
    raise ParamsError(f"{op.describe()} is not an elementwise kernel")
