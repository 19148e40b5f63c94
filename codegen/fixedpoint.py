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


def saturating_left_shift(x: int, exponent: int) -> int:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent: x * 2^exponent,
    saturated to int32."""
    return max(INT32_MIN, min(INT32_MAX, x << exponent))


def inv_sqrt_multiplier_exp(value: int, reverse_shift: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp (common.h): 1 / sqrt(value) as a multiplier and a
    shift, by gemmlowp's five Newton-Raphson steps in 3-integer-bit fixed point from x = 1
    (kernels/rip_norm.c has the same steps in C)."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1  # CountLeadingZeros(value) - 1, halved
    shift -= pairs
    value <<= 2 * pairs
    q3_input = value >> 1
    q3_half_input = rounding_divide_by_pot(q3_input, 1)
    q3_three_halves = (1 << 28) + (1 << 27)
    q3_x = 1 << 28  # 1.0
    for _ in range(5):
        q6_x2 = sat_rounding_doubling_high_mul(q3_x, q3_x)
        q9_x3 = sat_rounding_doubling_high_mul(q6_x2, q3_x)
        q3_x3 = saturating_left_shift(q9_x3, 6)
        q6_a = sat_rounding_doubling_high_mul(q3_three_halves, q3_x)
        q6_b = sat_rounding_doubling_high_mul(q3_half_input, q3_x3)
        q3_x = saturating_left_shift(wrap32(q6_a - q6_b), 3)
    raw = sat_rounding_doubling_high_mul(q3_x, 1518500250)  # times sqrt(2) / 2
    if shift < 0:
        raw = wrap32(raw << -shift)
        shift = 0
    return raw, shift * reverse_shift
