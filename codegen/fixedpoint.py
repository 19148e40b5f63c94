"""TFLite's integer fixed-point primitives on the host (tensorflow/lite/kernels/internal/
common.h, gemmlowp's fixedpoint.h; double rounding, as the C kernels in kernels/rip_common.h),
for parameters precomputed at compile time: a 256-entry table of an int8 -> int8 function is
that function evaluated here on every input byte, so it equals what TFLite Micro's kernel
computes byte for byte."""

from __future__ import annotations

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(x: int) -> int:
    """Two's complement int32 wrap (an int32 multiply or shift in C)."""
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def sat_rounding_doubling_high_mul(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul: (2ab + 2^31 rounding, half away) >> 32."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    total = ab + nudge
    # C's int64 division truncates toward zero.
    q = abs(total) >> 31
    return q if total >= 0 else -q


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """RoundingDivideByPOT: x / 2^exponent rounded half away from zero."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier: the left part of ``shift`` wraps in int32 as the
    reference's int32 multiply does, then the rounding high multiply and right shift."""
    left = shift if shift > 0 else 0
    right = -shift if shift < 0 else 0
    return rounding_divide_by_pot(
        sat_rounding_doubling_high_mul(wrap32(x << left), multiplier), right
    )
