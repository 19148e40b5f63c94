"""Kernel parameters of kernels/rip_activation.h (RELU, RELU6, QUANTIZE, LOGISTIC, TANH,
HARD_SWISH, SOFTMAX), computed as TFLite Micro's Prepare functions compute them
(tensorflow/lite/micro/kernels/activations_common.cc, quantize_common.cc,
logistic_common.cc, tanh.cc, hard_swish_common.cc, softmax_common.cc; reference kernels
reference_ops::Requantize, reference_integer_ops/logistic.h, tanh.h,
reference_ops::HardSwish and reference_ops::Softmax), bit for bit.

Every function is pure and returns a frozen dataclass whose fields are the C struct's fields
plus the sizes the call needs, ready for a Jinja2 template. A model TFLite Micro refuses at
Prepare raises `ParamsError`, naming the reason.

The oracle is the installed TFLite Micro interpreter (wheel 0.dev20261023), checked against
its machine code where its source history disagrees: RELU and HARD_SWISH divide scales in
double there (the 2022 "avoid precision loss" fix, reverted in 2023 and since restored),
while RELU6's bound stays float32, which numpy float32 reproduces here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rip.codegen.fixedpoint import inv_sqrt_multiplier_exp, multiply_by_quantized_multiplier
from rip.codegen.quant import (
    INT8_MAX,
    INT8_MIN,
    ParamsError,
    any_scale_zp,
    f32,
    quantize_multiplier,
    round_half_away,
    scale_zp,
    tensor_size,
)
from rip.core.operators import Op
from rip.frontend.ir import DTYPE_BYTES, Graph, LeakyReluParams, Operator, Tensor

SOFTMAX_OUTPUT_SCALE = 1.0 / 256.0
SOFTMAX_OUTPUT_ZERO_POINT = -128
IDENTITY_QUANT = (1 << 30, 1)  # QuantizeMultiplier(1.0)


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

    kind: Op  # LOGISTIC | TANH
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


def relu_params(input: Tensor, output: Tensor, kind: Op = Op.RELU) -> RequantizeParams:
    """Standalone RELU (CalculateReluOpData: requantize by s_in / s_out in double, clamp at
    the output zero point) or RELU6 (Relu6Prepare: TFLite Micro clamps the input bytes to
    [zero_point, zero_point + round(6 / s_in)] in the input's quantization and never reads the
    output's, so neither do we)."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    if kind == Op.RELU:
        m, shift = quantize_multiplier(si / so)
        return RequantizeParams(
            input_offset=-zi,
            output_offset=zo,
            multiplier=m,
            shift=shift,
            activation_min=max(INT8_MIN, zo),
            activation_max=INT8_MAX,
            clamp_only=(m, shift) == IDENTITY_QUANT and zi == zo,
            size=tensor_size(input),
        )
    if kind == Op.RELU6:
        # FloatToQuantizedType: round(6.0f / scale) + zero point, clamped to int8.
        six = min(INT8_MAX, max(INT8_MIN, round_half_away(float(f32(6.0) / f32(si))) + zi))
        return RequantizeParams(
            input_offset=0,
            output_offset=0,
            multiplier=IDENTITY_QUANT[0],
            shift=IDENTITY_QUANT[1],
            activation_min=zi,
            activation_max=six,
            clamp_only=True,
            size=tensor_size(input),
        )
    raise ParamsError(f"relu_params computes RELU or RELU6, not {kind}")


def quantize_params(input: Tensor, output: Tensor) -> RequantizeParams:
    """QUANTIZE int8 -> int8 (PrepareQuantizeReference + Requantize): multiplier
    s_in / s_out in double, full int8 clamp."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    m, shift = quantize_multiplier(si / so)
    return RequantizeParams(
        input_offset=-zi,
        output_offset=zo,
        multiplier=m,
        shift=shift,
        activation_min=INT8_MIN,
        activation_max=INT8_MAX,
        clamp_only=(m, shift) == IDENTITY_QUANT,
        size=tensor_size(input),
    )


@dataclass(frozen=True)
class QuantizeWideParams:
    """rip_quantize_wide_params: QUANTIZE with an int16 or int32 side."""

    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    input_bytes: int
    output_bytes: int
    activation_min: int
    activation_max: int
    size: int


TYPE_RANGE = {1: (-128, 127), 2: (-32768, 32767), 4: (-(2**31), 2**31 - 1)}


def wide_quantize_params(input: Tensor, output: Tensor) -> QuantizeWideParams:
    """QUANTIZE between int8, int16 and int32 (quantize_common.cc: effective scale
    s_in / s_out in double, QuantizeMultiplier'd; reference_ops::Requantize)."""
    si, zi = any_scale_zp(input)
    so, zo = any_scale_zp(output)
    m, shift = quantize_multiplier(si / so)
    lo, hi = TYPE_RANGE[DTYPE_BYTES[output.dtype]]
    return QuantizeWideParams(
        input_zero_point=zi,
        output_zero_point=zo,
        multiplier=m,
        shift=shift,
        input_bytes=DTYPE_BYTES[input.dtype],
        output_bytes=DTYPE_BYTES[output.dtype],
        activation_min=lo,
        activation_max=hi,
        size=tensor_size(input),
    )


def relu16_params(input: Tensor, output: Tensor, kind: Op) -> QuantizeWideParams:
    """RELU and RELU6 16x8 (ReluPrepare: zero points 0, requantized by s_in / s_out as for
    int8, clamped at 0; Relu6Prepare: the input clamped to [0, round(6 / s_in)] in its own
    quantization)."""
    si, zi = any_scale_zp(input)
    so, zo = any_scale_zp(output)
    if (zi, zo) != (0, 0):
        raise ParamsError(f"{kind} {output.name!r}: int16 zero points {zi}, {zo}; TFLite takes 0")
    if kind == Op.RELU6:
        six = min(32767, round_half_away(float(f32(6.0) / f32(si))))
        m, shift, hi = *IDENTITY_QUANT, six
    else:
        (m, shift), hi = quantize_multiplier(si / so), 32767
    return QuantizeWideParams(
        input_zero_point=0,
        output_zero_point=0,
        multiplier=m,
        shift=shift,
        input_bytes=2,
        output_bytes=2,
        activation_min=0,
        activation_max=hi,
        size=tensor_size(input),
    )


UINT8_OFFSET = 128  # a uint8 byte u is the int8 byte u - 128 read as uint8 (u ^ 0x80)


def uint8_quantize_params(input: Tensor, output: Tensor) -> LutParams:
    """QUANTIZE between uint8 and int8 (quantize_common.cc: uint8 -> int8 at a model input,
    int8 -> uint8 at an output; reference_ops::Requantize): (x - zp_in) requantized by
    QuantizeMultiplier(s_in / s_out) in double, plus zp_out, clamped to the output type
    (its same-scale fast path, x ^ 0x80, is this formula where it applies). A table indexed
    by the input byte: a uint8 input's byte is its value; a uint8 output's byte is stored
    as the int8 of the same bits."""
    if input.quant is None or output.quant is None:
        raise ParamsError(f"QUANTIZE {output.name!r}: uint8 side without quantization")
    si, zi = float(input.quant.scale[0]), int(input.quant.zero_point[0])
    so, zo = float(output.quant.scale[0]), int(output.quant.zero_point[0])
    m, shift = quantize_multiplier(si / so)
    lo, hi = (0, 255) if output.dtype == "uint8" else (INT8_MIN, INT8_MAX)
    table = np.zeros(256, dtype=np.uint8)
    for byte in range(256):
        x = byte if input.dtype == "uint8" else byte - 256 * (byte > INT8_MAX)
        y = multiply_by_quantized_multiplier(x - zi, m, shift) + zo
        table[byte] = min(hi, max(lo, y)) & 0xFF
    return LutParams(table=table.view(np.int8).tobytes(), size=tensor_size(input))


def calculate_input_radius(input_integer_bits: int, input_left_shift: int) -> int:
    """CalculateInputRadius (31 total signed bits): the largest |x - zp| that stays inside
    Q(input_integer_bits) after the rescale."""
    if input_left_shift < 0:
        raise ParamsError(f"input left shift {input_left_shift} < 0 (input scale too small)")
    return math.floor(
        1.0 * ((1 << input_integer_bits) - 1) * (1 << (31 - input_integer_bits))
        / (1 << input_left_shift)
    )  # fmt: skip


def sigmoid_params(input: Tensor, output: Tensor, kind: Op = Op.LOGISTIC) -> SigmoidParams:
    """LOGISTIC (CalculateArithmeticOpDataLogistic) or TANH (tanh.cc): the input scale times
    2^27 split by frexp into a Q31 multiplier and a left shift. LOGISTIC requires an output
    zero point of -128 and then assumes scale 1/256 without checking it; TANH checks nothing
    and assumes 1/128 and 0."""
    si, zi = scale_zp(input)
    _, zo = scale_zp(output)
    if kind == Op.LOGISTIC and zo != SOFTMAX_OUTPUT_ZERO_POINT:
        raise ParamsError(f"LOGISTIC output {output.name!r} needs zero point -128, has {zo}")
    if kind not in (Op.LOGISTIC, Op.TANH):
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
        size=tensor_size(input),
    )


@dataclass(frozen=True)
class Sigmoid16Params:
    """rip_sigmoid_s16_params (LOGISTIC, TANH 16x8) and the element count."""

    tanh: int
    input_multiplier: int  # 0: a power-of-two input scale
    input_left_shift: int
    size: int


def checked_log2(x: float) -> tuple[int, bool]:
    """TFLite's CheckedLog2 of a float32: log2 rounded half away from zero, and whether ``x``
    is that power of two within 1e-3 of an octave (the arithmetic in float32, as its
    std::log(float) is)."""
    log2 = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2))))
    rounded = round_half_away(float(log2))
    return rounded, abs(float(np.float32(log2 - np.float32(rounded)))) < 1e-3


def sigmoid16_params(input: Tensor, output: Tensor, kind: Op) -> Sigmoid16Params:
    """LOGISTIC (CalculateArithmeticOpDataLogistic) and TANH (tanh.cc) for int16: zero
    points 0, the output scale 2^-15; a power-of-two input scale whose left shift is 0
    (TANH: 0 or 1) takes multiplier 0, any other the truncated s_in * 3 * 4096 doubled until
    above 32767 / 2, counting the doublings as its shift."""
    si, zi = any_scale_zp(input)
    so, zo = any_scale_zp(output)
    if (zi, zo) != (0, 0):
        raise ParamsError(
            f"{kind} {output.name!r}: int16 zero points {zi}, {zo}; TFLite Micro takes 0"
        )
    out_log2, out_pot = checked_log2(so)
    if not out_pot or out_log2 != -15:
        raise ParamsError(
            f"{kind} {output.name!r}: int16 output scale {so}; TFLite Micro takes 2^-15"
        )
    log2, pot = checked_log2(si)
    left_shift = 12 + log2  # (15 - 3 integer bits) + log2(s_in)
    pot = pot and left_shift in ((0, 1) if kind == Op.TANH else (0,))
    multiplier = 0
    if not pot:
        real, left_shift = float(np.float32(si)) * 4096.0 * 3.0, 0
        while real <= 32767.0 / 2.0 and left_shift <= 30:
            left_shift, real = left_shift + 1, real * 2.0
        multiplier = int(real)
    return Sigmoid16Params(
        tanh=int(kind == Op.TANH),
        input_multiplier=multiplier,
        input_left_shift=left_shift,
        size=tensor_size(input),
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
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    hires_input_scale = float(f32(1.0 / 128.0) * f32(si))
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
        size=tensor_size(input),
    )


def softmax_params(input: Tensor, output: Tensor, beta: float = 1.0) -> SoftmaxKernelParams:
    """SOFTMAX int8 -> int8 (CalculateSoftmaxParams + PreprocessSoftmaxScaling): beta times
    the input scale in Q5.26, capped at 2^31 - 1, as a multiplier greater than one; inputs
    further than diff_min below the row maximum contribute exp = 0. TFLite Micro's int8 path
    is gemmlowp fixed point (the LUTs are for int16 only) and needs an output of exactly
    scale 1/256, zero point -128."""
    si, _ = scale_zp(input)
    if output.dtype == "int16":  # Softmax<int8_t, int16_t>: scale 1/65536 within 0.1%
        so, zo = any_scale_zp(output)
        if zo != -32768 or abs(f32(so) - f32(1 / 65536)) > f32(0.001 / 65536):
            raise ParamsError(
                f"SOFTMAX int16 output {output.name!r} needs scale 1/65536 and zero point "
                f"-32768, has {so} and {zo}"
            )
    else:
        so, zo = scale_zp(output)
        if zo != SOFTMAX_OUTPUT_ZERO_POINT or f32(so) != f32(SOFTMAX_OUTPUT_SCALE):
            raise ParamsError(
                f"SOFTMAX output {output.name!r} needs scale 1/256 and zero point -128,"
                f" has {so} and {zo}"
            )
    scaled_diff_integer_bits = 5
    real = min(float(f32(beta)) * si * (1 << (31 - scaled_diff_integer_bits)), (1 << 31) - 1.0)
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
        num_rows=tensor_size(input) // row_size if row_size else 0,
        row_size=row_size,
    )


@dataclass(frozen=True)
class Softmax16Params:
    """rip_softmax_s16_params, its two tables and the row geometry."""

    input_multiplier: int
    input_left_shift: int
    exp_lut: tuple[int, ...]
    one_over_one_plus_x_lut: tuple[int, ...]
    num_rows: int
    row_size: int


LUT16_STEPS = 512  # an int16 table: 512 segments of 128 inputs, one more entry for the slope


def lut16(transform: Callable[[np.float32], np.float32], input_scale: np.float32,
          input_zero_point: int, output_scale: np.float32) -> tuple[int, ...]:  # fmt: skip
    """TFLite's LUTPopulateInt16<float> (output zero point 0): ``transform`` sampled at the
    start of each of 512 segments of the int16 input range, each sample lowered by half the
    error of linear interpolation at the segment's midpoint, all in float32 as there; the
    513th entry the end of the range."""
    one = np.float32
    input_min = input_scale * one(-32768 - input_zero_point)
    input_max = input_scale * one(32767 - input_zero_point)
    output_min, output_max = output_scale * one(-32768), output_scale * one(32767)
    step = (input_max - input_min) / one(LUT16_STEPS)
    half_step = step / one(2)
    inv = one(65536) / (output_max - output_min)

    def rnd(v: np.float32) -> np.float32:
        return one(round_half_away(float(v)))

    def clamp(v: np.float32) -> int:
        return int(min(max(v, one(-32768)), one(32767)))

    table = []
    for i in range(LUT16_STEPS):
        at = input_min + one(i) * step
        val = transform(at)
        mid = transform(at + half_step)
        nxt = transform(input_min + one(i + 1) * step)
        sample = rnd(val * inv)
        interp = rnd((nxt * inv + rnd(val * inv)) / one(2))
        bias = rnd((interp - rnd(mid * inv)) / one(2))
        table.append(clamp(sample - bias))
    table.append(clamp(rnd(transform(input_max) * inv)))
    return tuple(table)


def _expf(v: np.float32) -> np.float32:
    """std::exp of a float: the double exp rounded once to float32."""
    return np.float32(math.exp(float(v)))


def _one_over_one_plus(v: np.float32) -> np.float32:
    return np.float32(1.0) / (np.float32(1.0) + v)


def softmax16_params(input: Tensor, output: Tensor, beta: float) -> Softmax16Params:
    """SOFTMAX int16 -> int16 (CalculateSoftmaxParams, InitializeLutForInt16): zero points
    0, an output scale of 1/32768 within 0.1%; the row differences rescaled by s_in * beta /
    (10 / 65535) (QuantizeMultiplier, double) onto the exp table's [-10, 0], the sum's
    reciprocal from the 1 / (1 + x) table, both tables TFLite's LUTPopulate<int16_t>."""
    si, zi = any_scale_zp(input)
    so, zo = any_scale_zp(output)
    if (zi, zo) != (0, 0) or abs(f32(so) - f32(1 / 32768)) > f32(0.001 / 32768):
        raise ParamsError(
            f"SOFTMAX int16 {output.name!r}: zero points {zi}, {zo} and output scale {so};"
            " TFLite Micro takes 0, 0 and 1/32768"
        )
    multiplier, shift = quantize_multiplier(si * float(f32(beta)) / (10.0 / 65535.0))
    span = np.float32(65535)  # int16 max - min, the tables' input and output ranges
    row_size = int(input.shape[-1])
    return Softmax16Params(
        input_multiplier=multiplier,
        input_left_shift=shift,
        exp_lut=lut16(_expf, np.float32(10.0) / span, 32767, np.float32(2.0) / span),
        one_over_one_plus_x_lut=lut16(
            _one_over_one_plus, np.float32(1.0) / span, -32768, np.float32(2.0) / span
        ),
        num_rows=tensor_size(input) // row_size if row_size else 0,
        row_size=row_size,
    )


LOG_SOFTMAX_OUTPUT_SCALE = 16.0 / 256.0
LOG_SOFTMAX_OUTPUT_ZERO_POINT = 127


@dataclass(frozen=True)
class LogSoftmaxParams:
    """rip_log_softmax_params and the row geometry (the last axis)."""

    input_multiplier: int
    input_left_shift: int
    reverse_multiplier: int
    reverse_shift: int
    diff_min: int
    num_rows: int
    row_size: int


def log_softmax_params(input: Tensor, output: Tensor) -> LogSoftmaxParams:
    """LOG_SOFTMAX (log_softmax.cc CalculateOpData, PreprocessLogSoftmaxScalingExp): beta 1
    times the input scale in Q5.26 as a multiplier greater than one, its reciprocal
    2^(31 - shift) / multiplier as one smaller than one, diff_min from the input radius;
    the output must be exactly scale 16/256, zero point 127."""
    si, _ = scale_zp(input)
    so, zo = scale_zp(output)
    if zo != LOG_SOFTMAX_OUTPUT_ZERO_POINT or f32(so) != f32(LOG_SOFTMAX_OUTPUT_SCALE):
        raise ParamsError(
            f"LOG_SOFTMAX output {output.name!r} needs scale 16/256 and zero point 127,"
            f" has {so} and {zo}"
        )
    scaled_diff_integer_bits = 5
    real = min(si * (1 << (31 - scaled_diff_integer_bits)), (1 << 31) - 1.0)
    if not real > 1.0:
        raise ParamsError(f"LOG_SOFTMAX {output.name!r}: input scale too small ({real})")
    multiplier, left_shift = quantize_multiplier(real)
    if left_shift < 0:
        raise ParamsError(f"LOG_SOFTMAX {output.name!r}: negative input left shift")
    reverse = (1 << (31 - left_shift)) / float(multiplier)
    if not 0.0 < reverse < 1.0:
        raise ParamsError(f"LOG_SOFTMAX {output.name!r}: reverse scaling {reverse} not in (0, 1)")
    reverse_multiplier, reverse_shift = quantize_multiplier(reverse)
    if not input.shape:
        raise ParamsError(f"LOG_SOFTMAX input {input.name!r} has rank 0")
    row_size = int(input.shape[-1])
    return LogSoftmaxParams(
        input_multiplier=multiplier,
        input_left_shift=left_shift,
        reverse_multiplier=reverse_multiplier,
        reverse_shift=reverse_shift,
        diff_min=-calculate_input_radius(scaled_diff_integer_bits, left_shift),
        num_rows=tensor_size(input) // row_size if row_size else 0,
        row_size=row_size,
    )


@dataclass(frozen=True)
class LutParams:
    """rip_lut_params: the output byte for every input byte (indexed by the input as uint8)."""

    table: bytes
    size: int


def _clamp8(v: int) -> int:
    return min(INT8_MAX, max(INT8_MIN, v))


def _table(f: Callable[[int], int], size: int) -> LutParams:
    """The table of an int8 -> int8 function, entry (uint8)x = f(x)."""
    table = np.zeros(256, dtype=np.int8)
    for x in range(INT8_MIN, INT8_MAX + 1):
        table[x & 0xFF] = _clamp8(f(x))
    return LutParams(table=table.tobytes(), size=size)


def abs_params(input: Tensor, output: Tensor) -> LutParams:
    """ABS (elementwise.cc, PrepareAbsRsqrt and AbsEvalQuantized): |x - zp_in|, then the
    output zero point added directly when the two float32 scales are equal, else requantized
    by QuantizeMultiplier(s_in / s_out) of the float32 scales divided in double: what the
    TFLite Micro that is the oracle computes (a float32 quotient differs on rounding ties:
    s_in 0.25, s_out 0.2, |x - zp| = 34 gives 43 instead of its 42)."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    if f32(si) == f32(so):
        return _table(lambda x: abs(x - zi) + zo, tensor_size(input))
    m, shift = quantize_multiplier(float(f32(si)) / float(f32(so)))
    return _table(
        lambda x: multiply_by_quantized_multiplier(abs(x - zi), m, shift) + zo,
        tensor_size(input),
    )


def leaky_relu_params(input: Tensor, output: Tensor, alpha: float) -> LutParams:
    """LEAKY_RELU (CalculateOpDataLeakyRelu, reference_ops::QuantizeLeakyRelu): x - zp_in
    requantized by QuantizeMultiplier(s_in / s_out) when >= 0, else by
    QuantizeMultiplier(s_in * alpha / s_out), the float32 values multiplied and divided in
    double as the TFLite Micro that is the oracle does (float32 arithmetic differs on
    rounding ties: 27 of 300 random layers, against none in double). A negative alpha has
    two readings that round ties apart: the source (since March 2026) multiplies by the
    magnitude and negates, the installed TFLite Micro (PyPI) by the signed multiplier;
    where the two tables differ no byte-exact code exists and the op is refused."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    si, so, alpha = float(f32(si)), float(f32(so)), float(f32(alpha))
    m_id, s_id = quantize_multiplier(si / so)
    m_alpha, s_alpha = quantize_multiplier(si * alpha / so)

    def leaky(negate: bool) -> Callable[[int], int]:
        def f(x: int) -> int:
            v = x - zi
            if v >= 0:
                return zo + multiply_by_quantized_multiplier(v, m_id, s_id)
            if not negate:
                return zo + multiply_by_quantized_multiplier(v, m_alpha, s_alpha)
            scaled = multiply_by_quantized_multiplier(v, abs(m_alpha), s_alpha)
            return zo + (-scaled if m_alpha < 0 else scaled)

        return f

    table = _table(leaky(False), tensor_size(input))
    if m_alpha < 0 and _table(leaky(True), tensor_size(input)) != table:
        raise ParamsError(
            f"LEAKY_RELU {output.name!r}: alpha {alpha} rounds differently in TFLite Micro's "
            "versions (a negative alpha's ties); no byte-exact code exists"
        )
    return table


def elu_params(input: Tensor, output: Tensor) -> LutParams:
    """ELU (elu.cc PopulateLookupTable): TFLite Micro's own table, in float32: x dequantized,
    expf(x) - 1 below zero, times 1 / s_out (float32), roundf, plus the zero point. expf is
    taken as exp in double rounded to float32 (a correctly rounded expf). An entry beyond
    int32 (scales far apart) is refused: TFLite Micro's float-to-int32 cast is undefined
    there (x86 gives INT32_MIN)."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    inverse = f32(1.0) / f32(so)

    def elu(x: int) -> int:
        value = f32(si) * f32(x - zi)
        if value < f32(0.0):
            value = f32(math.exp(float(value))) - f32(1.0)
        scaled = float(f32(value * inverse))
        if not abs(scaled) < 2.0**31 - 256:
            raise ParamsError(
                f"ELU {output.name!r}: input {x} maps to {scaled:.6g} output steps, beyond "
                "int32 (TFLite Micro's cast is undefined there)"
            )
        return int(round_half_away(scaled) + zo)

    return _table(elu, tensor_size(input))


RSQRT_SHIFT = 20  # elementwise.cc RsqrtEvalQuantized's kShift: keeps 1 / sqrt(v) an integer


def rsqrt_params(input: Tensor, output: Tensor) -> LutParams:
    """RSQRT (elementwise.cc, PrepareAbsRsqrt and RsqrtEvalQuantized): v = x - zp_in; v = 0
    gives 127; else 1 / sqrt(v) from GetInvSqrtQuantizedMultiplierExp (reverse shift -1),
    applied to 1 with 20 extra bits, then requantized by QuantizeMultiplier(1 / (sqrt(s_in)
    s_out)), the square root and product in float32 (C++'s float std::sqrt), the division in
    double; plus the output zero point. A multiplier below 2^-12 is refused: TFLite Micro's
    right shift of the second step would pass 31 bits. A negative v makes TFLite Micro fail
    the invoke ("Rsqrt is only defined for positive values"), which a table cannot do: its
    entry is 127, as for v = 0."""
    si, zi = scale_zp(input)
    so, zo = scale_zp(output)
    with np.errstate(over="ignore"):  # an infinite product: a zero multiplier, as in C
        denominator = float(np.sqrt(f32(si)) * f32(so))
    if not denominator > 0.0:  # float32 underflow: TFLite Micro's 1 / 0 is no multiplier
        raise ParamsError(f"RSQRT {output.name!r}: sqrt(s_in) * s_out is 0 in float32")
    m, shift = quantize_multiplier(1.0 / denominator)
    if m and shift - RSQRT_SHIFT < -31:
        raise ParamsError(
            f"RSQRT {output.name!r}: 1 / (sqrt(s_in) s_out) = {1.0 / denominator:.6g} makes "
            f"TFLite Micro shift an int32 right by {RSQRT_SHIFT - shift} bits, which is "
            "undefined (x86 and Arm differ)"
        )

    def rsqrt(x: int) -> int:
        v = x - zi
        if v <= 0:
            return INT8_MAX
        inv, inv_shift = inv_sqrt_multiplier_exp(v, -1)
        data = multiply_by_quantized_multiplier(1, inv, inv_shift + RSQRT_SHIFT)
        return multiply_by_quantized_multiplier(data, m, shift - RSQRT_SHIFT) + zo

    return _table(rsqrt, tensor_size(input))


KernelParams = (
    RequantizeParams
    | SigmoidParams
    | Sigmoid16Params
    | Softmax16Params
    | HardSwishParams
    | SoftmaxKernelParams
    | LogSoftmaxParams
    | LutParams
    | QuantizeWideParams
)

WIDE = {"int16", "int32"}  # activation types besides int8 (OpSpec.wide_types)


def op_params(graph: Graph, op: Operator) -> KernelParams:
    """Kernel parameters of one rip_activation.h operator of the graph."""
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if op.kind in (Op.RELU, Op.RELU6) and out.dtype == "int16":
        return relu16_params(ins[0], out, op.kind)
    if op.kind in (Op.RELU, Op.RELU6):
        return relu_params(ins[0], out, op.kind)
    if op.kind == Op.QUANTIZE and "uint8" in (ins[0].dtype, out.dtype):
        return uint8_quantize_params(ins[0], out)
    if op.kind == Op.QUANTIZE and WIDE & {ins[0].dtype, out.dtype}:
        return wide_quantize_params(ins[0], out)
    if op.kind == Op.QUANTIZE:
        return quantize_params(ins[0], out)
    if op.kind in (Op.LOGISTIC, Op.TANH) and out.dtype == "int16":
        return sigmoid16_params(ins[0], out, op.kind)
    if op.kind in (Op.LOGISTIC, Op.TANH):
        return sigmoid_params(ins[0], out, op.kind)
    if op.kind == Op.HARD_SWISH:
        return hard_swish_params(ins[0], out)
    if op.kind == Op.SOFTMAX and ins[0].dtype == "int16":
        return softmax16_params(ins[0], out, p.beta)
    if op.kind == Op.SOFTMAX:
        return softmax_params(ins[0], out, p.beta)
    if op.kind == Op.LOG_SOFTMAX:
        return log_softmax_params(ins[0], out)
    if op.kind == Op.ABS:
        return abs_params(ins[0], out)
    if op.kind == Op.LEAKY_RELU and isinstance(p, LeakyReluParams):
        return leaky_relu_params(ins[0], out, p.alpha)
    if op.kind == Op.ELU:
        return elu_params(ins[0], out)
    if op.kind == Op.RSQRT:
        return rsqrt_params(ins[0], out)
    raise ParamsError(f"{op.describe()} is not an activation kernel")
