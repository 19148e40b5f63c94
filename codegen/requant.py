"""The cheap requantisation of the fast kernels (``rip_cheap_requantize`` in
kernels/rip_support.h, records ``rip_fast_channel`` in kernels/rip_conv_types.h), and the
per-layer proof that it equals TFLite's.

TFLite's MultiplyByQuantizedMultiplier(acc, m, shift) with shift = -e < 0 is
RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(acc, m), e). The kernels compute

    t = SMMULR(2 * acc, m) = (2 * acc * m + 2^31) >> 32
    y = (t + round + (t >> 31)) >> e,   round = 2^(e - 1) + output_offset * 2^e

which is the same integer when 2 * acc fits in int32 (then t = (acc * m + 2^30) >> 31, the
doubling high multiply for every m but INT32_MIN, which QuantizeMultiplier never gives) and
the sum in the second line does not overflow (then adding 2^(e - 1) - [t < 0] carries into
t >> e exactly when the remainder exceeds RoundingDivideByPOT's threshold, and the output
offset, a multiple of 2^e, passes through the shift). Both are proven here from the layer's
weights and folded bias: the kernels multiply raw int8 inputs (|x| <= 128, padded taps
included), so |acc| <= |folded_bias| + 128 * sum |w| over the channel's taps.
"""

from __future__ import annotations

from rip.codegen.fixedpoint import multiply_by_quantized_multiplier

INT8_MAGNITUDE = 128  # the largest |x| of a raw int8 input byte
INT32_LIMIT = 2**31


def max_accumulator(folded_bias: int, abs_weight_sum: int) -> int:
    """The largest |acc| a fast kernel can reach for one output channel: its folded bias
    (the int32 the kernel starts from) plus every tap's largest product."""
    return abs(folded_bias) + INT8_MAGNITUDE * abs_weight_sum


def saturated_output(
    folded_bias: int, abs_weight_sum: int, multiplier: int, shift: int, output_offset: int
) -> int | None:
    """The one int8 output of a channel whose every reachable accumulator gives it after
    int8 saturation (a dead channel whose bias outweighs all its taps), else None.

    MultiplyByQuantizedMultiplier is monotone in the accumulator (non-decreasing for m > 0,
    non-increasing for m < 0) wherever its left shift does not wrap, and so is saturation:
    equal outputs at both ends of the reachable range mean the same output everywhere in
    it. Not claimed where TFLite's int32 accumulator itself could wrap."""
    reach = INT8_MAGNITUDE * abs_weight_sum
    lo, hi = folded_bias - reach, folded_bias + reach
    if lo < -INT32_LIMIT or hi >= INT32_LIMIT or not -INT32_LIMIT < multiplier < INT32_LIMIT:
        return None
    if shift > 0 and max(-lo, hi) << shift >= INT32_LIMIT:
        return None
    ends = {
        max(-128, min(127, multiply_by_quantized_multiplier(a, multiplier, shift) + output_offset))
        for a in (lo, hi)
    }
    return ends.pop() if len(ends) == 1 else None


def cheap_channel(
    folded_bias: int, abs_weight_sum: int, multiplier: int, shift: int, output_offset: int
) -> tuple[int, int, int, int] | None:
    """One ``rip_fast_channel`` record (bias, multiplier, round, shift = e), or None when
    the cheap arithmetic is not proven equal for this channel.

    A channel whose requantised value is 0 for every reachable accumulator (multiplier 0,
    or |SaturatingRoundingDoublingHighMul| < 2^(e - 1), which RoundingDivideByPOT rounds
    to 0) outputs its output offset alone: its record is (0, 0, 1 + 2 output_offset, 1),
    which gives (1 + 2 output_offset - [acc < 0]) >> 1 = output_offset whatever the
    weights add to the bias 0 (|acc| <= 128 sum |w| < 2^30). One the cheap arithmetic
    cannot take whose output saturates to the same v for every reachable accumulator
    (`saturated_output`) takes (0, 0, 1 + 2 v, 1): the kernels' clamp of v is TFLite's
    clamp of its saturated output, as the activation range lies within int8's."""
    if not -INT32_LIMIT < multiplier < INT32_LIMIT:
        return None
    if 2 * INT8_MAGNITUDE * abs_weight_sum >= INT32_LIMIT:
        return None
    exact = _cheap_record(folded_bias, abs_weight_sum, multiplier, shift, output_offset)
    if exact is not None:
        return exact
    v = saturated_output(folded_bias, abs_weight_sum, multiplier, shift, output_offset)
    return None if v is None else (0, 0, 1 + 2 * v, 1)


def _cheap_record(
    folded_bias: int, abs_weight_sum: int, multiplier: int, shift: int, output_offset: int
) -> tuple[int, int, int, int] | None:
    """`cheap_channel`'s record by the arithmetic alone (|weights| bounded by the caller)."""
    acc = max_accumulator(folded_bias, abs_weight_sum)
    t_max = (2 * acc * abs(multiplier) + INT32_LIMIT) // 2**32 + 1
    constant = (0, 0, 1 + 2 * output_offset, 1)
    if multiplier == 0 or (shift < 0 and 2 * acc < INT32_LIMIT and t_max < 2 ** (-shift - 1)):
        return constant
    if shift >= 0 or multiplier < 0:
        return None  # a left shift, no right shift for the sign correction, or m < 0
    e = -shift
    if 2 * acc >= INT32_LIMIT:
        return None
    round_ = 2 ** (e - 1) + output_offset * 2**e
    if t_max + abs(round_) + 1 >= INT32_LIMIT:
        return None
    return (folded_bias, multiplier, round_, e)


def cheap_channels(
    folded_bias: tuple[int, ...],
    abs_weight_sums: tuple[int, ...],
    multipliers: tuple[int, ...],
    shifts: tuple[int, ...],
    output_offset: int,
) -> tuple[tuple[int, int, int, int], ...] | None:
    """The records of every output channel, or None when one channel is not proven: a
    layer takes the cheap kernel only as a whole."""
    records = []
    for b, s, m, sh in zip(folded_bias, abs_weight_sums, multipliers, shifts, strict=True):
        r = cheap_channel(b, s, m, sh, output_offset)
        if r is None:
            return None
        records.append(r)
    return tuple(records)


def cheap_channels_negating(
    folded_bias: tuple[int, ...],
    abs_weight_sums: tuple[int, ...],
    multipliers: tuple[int, ...],
    shifts: tuple[int, ...],
    output_offset: int,
    weights_negatable: tuple[bool, ...],
) -> tuple[tuple[tuple[int, int, int, int], ...], tuple[bool, ...]] | None:
    """`cheap_channels` for a kernel whose weights the generator may negate per channel: a
    channel with a negative multiplier m (a negative weight scale) computes -acc with the
    weights and folded bias negated, and takes -m: SMMULR(-2 acc, -m) = SMMULR(2 acc, m),
    so the records see m > 0. ``weights_negatable``: the channel's weights hold no -128.
    Returns the records and which channels the caller must negate."""
    records, negate = [], []
    for b, s, m, sh, ok in zip(
        folded_bias, abs_weight_sums, multipliers, shifts, weights_negatable, strict=True
    ):
        r = cheap_channel(b, s, m, sh, output_offset)
        flip = r is None and m < 0 and ok and b > -INT32_LIMIT
        if flip:
            r = cheap_channel(-b, s, -m, sh, output_offset)
        if r is None:
            return None
        records.append(r)
        negate.append(flip)
    return tuple(records), tuple(negate)
