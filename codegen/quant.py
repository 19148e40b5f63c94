"""TFLite's quantization arithmetic on the host, bit for bit: what the code generator
feeds the C kernels (tensorflow/lite/kernels/internal/quantization_util.cc), and the checks
and helpers every params module shares (``conv_params``, ``pool_params``,
``elementwise_params``, ``activation_params``, ``shape_params``: one per kernel header)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rip.core.errors import ParamsError
from rip.core.shapes import nhwc
from rip.core.terms import Activation
from rip.frontend.ir import Operator, Quant, Tensor

INT8_MIN, INT8_MAX = -128, 127
# MultiplyByQuantizedMultiplier computes x * (1 << shift) in int32: defined in practice up to
# 31 (1 << 31 is INT32_MIN on every target, which rip's wrap32 follows), beyond it the
# shift count is masked on x86 and saturates to 0 on Arm.
MAX_LEFT_SHIFT = 31
Dims = tuple[int, int, int, int]  # rip_dims: n, h, w, c


def round_half_away(x: float) -> int:
    """TfLiteRound / roundf / std::round: half away from zero (Python's round is to even)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier: ``real`` = multiplier * 2^(shift - 31), multiplier in
    [2^30, 2^31) (or 0), shift in TFLite's sign convention (positive = left)."""
    if not math.isfinite(real):
        raise ParamsError(f"the requantization multiplier {real} is not finite")
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)  # real = mantissa * 2^shift, mantissa in [0.5, 1)
    q = round_half_away(mantissa * (1 << 31))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:  # underflow: the multiplier is zero
        return 0, 0
    # (only single-rounding builds cap the shift at 30; the double rounding we match does not)
    if shift > MAX_LEFT_SHIFT:
        raise ParamsError(
            f"the requantization multiplier {real:.6g} is 2^{shift - 1} or more: TFLite "
            f"Micro's 1 << {shift} on an int32 is undefined (x86 and Arm differ)"
        )
    return int(q), int(shift)


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: as above, for 0 < real < 1 (shift <= 0)."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"multiplier {real} is not in (0, 1)")
    return quantize_multiplier(real)


def effective_scale(input_scale: float, weight_scale: float, output_scale: float) -> float:
    """Requantization scale of a convolution channel, computed in double as TFLite does
    (the float32 scales are widened first)."""
    return float(
        np.float64(np.float32(input_scale))
        * np.float64(np.float32(weight_scale))
        / np.float64(np.float32(output_scale))
    )


def activation_range(
    activation: Activation, quant: Quant | None, lo: int = -128, hi: int = 127
) -> tuple[int, int]:
    """CalculateActivationRangeQuantized for a per-tensor output of the range [lo, hi] (int8
    by default; int16 for a 16x8 kernel): the fused activation as a clamp, each bound
    ``zero_point + roundf(f / scale)`` with the division in float32."""
    if quant is None:  # every caller has checked the output's quantization (int8_quant)
        raise ParamsError("fused activation over an output without quantization")
    scale, zero_point = quant.scale[0], quant.zero_point[0]

    def quantize(f: float) -> int:
        return zero_point + round_half_away(float(np.float32(f) / np.float32(scale)))

    if activation == Activation.NONE:
        return lo, hi
    if activation == Activation.RELU:
        return max(lo, quantize(0.0)), hi
    if activation == Activation.RELU6:
        return max(lo, quantize(0.0)), min(hi, quantize(6.0))
    if activation == Activation.RELU_N1_TO_1:
        return max(lo, quantize(-1.0)), min(hi, quantize(1.0))
    raise ParamsError(f"fused activation {activation} is not supported by the kernels")


# ---- shared by the params modules ----------------------------------------------------------


def f32(x: float) -> np.float32:
    return np.float32(x)


def where(op: Operator) -> str:
    """How a params message names an op (the lowering adds its output and step)."""
    return op.describe()


def int8_quant(t: Tensor, op: Operator, what: str) -> Quant:
    if t.dtype != "int8":
        raise ParamsError(f"{where(op)}: {what} is {t.dtype}, the kernels are int8")
    if t.quant is None or not t.quant.scale:
        raise ParamsError(f"{where(op)}: {what} has no quantization")
    return t.quant


def per_tensor(q: Quant, op: Operator, what: str) -> tuple[float, int]:
    if q.per_channel:
        raise ParamsError(f"{where(op)}: {what} must be quantized per tensor")
    return q.scale[0], q.zero_point[0]


def int8_per_tensor(t: Tensor, op: Operator, what: str) -> tuple[float, int]:
    """The scale and zero point of ``t``, which must be int8 and quantized per tensor."""
    return per_tensor(int8_quant(t, op, what), op, what)


def per_channel_fits(q: Quant, shape: Sequence[int], channels: int) -> bool:
    """Per-channel weight scales as TFLite Micro accepts them (kernel_util.cc,
    PopulateConvolutionQuantizationParams): one per output channel, on an axis
    (``quantized_dimension``) of that extent; channel i takes scale i whatever the axis."""
    n = len(q.scale)
    return n == channels and 0 <= q.axis < len(shape) and shape[q.axis] == n


def scale_zp(t: Tensor) -> tuple[float, int]:
    if t.dtype != "int8" or t.quant is None or t.quant.per_channel:
        raise ParamsError(f"tensor {t.name!r} is not a per-tensor quantized int8 tensor")
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


def any_scale_zp(t: Tensor) -> tuple[float, int]:
    """The per-tensor scale and zero point of a quantized tensor of any integer type."""
    if t.quant is None or t.quant.per_channel or not t.quant.scale:
        raise ParamsError(f"tensor {t.name!r} is not quantized per tensor")
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


def tensor_size(t: Tensor) -> int:
    return math.prod(t.shape)


def dims4(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """``rip.core.shapes.nhwc``, its refusal of a fifth dimension as a ParamsError."""
    try:
        return nhwc(shape)
    except ValueError as e:
        raise ParamsError(str(e)) from None
