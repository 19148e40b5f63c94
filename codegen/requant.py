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

INT8_MAGNITUDE = 128  # the largest |x| of a raw int8 input byte
INT32_LIMIT = 2**31


def max_accumulator(folded_bias: int, abs_weight_sum: int) -> int:
    """The largest |acc| a fast kernel can reach for one output channel: its folded bias
    (the int32 the kernel starts from) plus every tap's largest product."""
    return abs(folded_bias) + INT8_MAGNITUDE * abs_weight_sum


def cheap_channel(
    folded_bias: int, abs_weight_sum: int, multiplier: int, shift: int, output_offset: int
) -> tuple[int, int, int, int] | None:
    """One ``rip_fast_channel`` record (bias, multiplier, round, shift = e), or None when
    the cheap arithmetic is not proven equal for this channel.

    A channel whose requantised value is 0 for every reachable accumulator (multiplier 0,
    or |SaturatingRoundingDoublingHighMul| < 2^(e - 1), which RoundingDivideByPOT rounds
    to 0) outputs its output offset alone: its record is (0, 0, 1 + 2 output_offset, 1),
    which gives (1 + 2 output_offset - [acc < 0]) >> 1 = output_offset whatever the
    weights add to the bias 0 (|acc| <= 128 sum |w| < 2^30)."""
    if not -INT32_LIMIT < multiplier < INT32_LIMIT:
        return None
    acc = max_accumulator(folded_bias, abs_weight_sum)
    t_max = (2 * acc * abs(multiplier) + INT32_LIMIT) // 2**32 + 1
    constant = (0, 0, 1 + 2 * output_offset, 1)
    if 2 * INT8_MAGNITUDE * abs_weight_sum >= INT32_LIMIT:
        return None
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
