"""The cheap requantisation's proof (rip.codegen.requant) against TFLite's arithmetic,
transcribed here from gemmlowp / tensorflow/lite/kernels/internal/common.h (not from the
code under test): wherever cheap_channel returns a record, the kernels' formula on it gives
MultiplyByQuantizedMultiplier + output offset for every accumulator within the bound."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rip.codegen.requant import cheap_channel, cheap_channels_negating, max_accumulator


def tflite_requantize(acc: int, m: int, shift: int, output_offset: int) -> int:
    """SaturatingRoundingDoublingHighMul then RoundingDivideByPOT, int32 as in C."""
    left, right = max(shift, 0), max(-shift, 0)
    a = ((acc << left) + 2**31) % 2**32 - 2**31
    if a == m == -(2**31):
        x = 2**31 - 1
    else:
        ab = a * m
        nudge = 2**30 if ab >= 0 else 1 - 2**30
        num = ab + nudge
        x = abs(num) // 2**31 * (1 if num >= 0 else -1)  # C's division truncates
    mask = (1 << right) - 1
    remainder, threshold = x & mask, (mask >> 1) + (1 if x < 0 else 0)
    return (x >> right) + (1 if remainder > threshold else 0) + output_offset


def sat8(x: int) -> int:
    return max(-128, min(127, x))


def kernel_formula(acc: int, record: tuple[int, int, int, int]) -> int:
    """rip_cheap_requantize: SMMLAR(2 acc, m, round) + (acc >> 31), then >> e, checking
    that every intermediate is an int32 as the C code needs."""
    _, m, round_, e = record
    a2 = 2 * acc
    assert -(2**31) <= a2 < 2**31
    t = (a2 * m + 2**31) >> 32
    s = t + round_ + (-1 if acc < 0 else 0)  # the kernels read acc's sign
    assert -(2**31) <= s < 2**31
    return s >> e


@settings(max_examples=3000, deadline=None)
@given(
    bias=st.integers(-(2**31), 2**31 - 1),
    weight_sum=st.integers(0, 2**24),
    m=st.one_of(st.integers(2**30, 2**31 - 1), st.integers(-(2**31) + 1, 2**31 - 1)),
    shift=st.integers(-31, 4),
    output_offset=st.integers(-128, 127),
    where=st.floats(-1.0, 1.0),
    exact=st.integers(-(2**20), 2**20),
)
def test_the_cheap_formula_equals_tflite_where_proven(
    bias: int, weight_sum: int, m: int, shift: int, output_offset: int, where: float, exact: int
) -> None:
    found = cheap_channels_negating((bias,), (weight_sum,), (m,), (shift,), output_offset, (True,))
    if found is None:
        return
    (record,), (negate,) = found
    reach = max_accumulator(bias, weight_sum) - abs(bias)  # what the weights can add
    # anywhere in reach, at its ends, and on rounding ties (multiples of 2^(e-1))
    tie = (exact << max(0, -shift - 1)) - bias
    for share in (int(where * reach), reach, -reach, 0, tie if abs(tie) <= reach else 0):
        acc = bias + share  # TFLite's accumulator
        if not -(2**31) <= acc < 2**31:
            continue  # int32 overflow in TFLite itself
        # the kernel's: the record's bias plus the (negated) weights' share
        got = kernel_formula(record[0] + (-share if negate else share), record)
        want = tflite_requantize(acc, m, shift, output_offset)
        if record[:2] == (0, 0):  # a constant, maybe saturated: the kernels clamp it
            assert sat8(got) == sat8(want)
        else:
            assert got == want


def test_not_proven_where_the_cheap_path_is_wrong() -> None:
    """No right shift (shift >= 0: the sign correction would be off by one), an accumulator
    whose double overflows int32, an output offset that overflows the rounding sum."""
    assert cheap_channel(0, 100, -(2**30), -3, 0) is None  # m < 0: only by negating
    assert cheap_channel(0, 100, 2**30, 0, 0) is None
    assert cheap_channel(0, 100, 2**30, 1, 0) is None
    assert cheap_channel(2**30, 2**20, 2**30, -24, 0) is None  # and not a constant
    assert cheap_channel(0, 2**23, 2**30, -1, 0) is None  # 128 * 2^23 = 2^30
    assert cheap_channel(2**25, 2**19, 2**30, -24, 127) is None  # round ~ 2^31 does not fit
    assert cheap_channel(0, 100, 2**30, -8, 5) == (0, 2**30, 2**7 + 5 * 2**8, 8)


def test_constant_channels() -> None:
    """A zero multiplier, or one whose products round to 0, outputs the offset alone."""
    assert cheap_channel(-(2**31) + 5, 10, 0, 0, -7) == (0, 0, -13, 1)
    assert cheap_channel(1000, 10, 2**30, -20, 3) == (0, 0, 7, 1)
    assert tflite_requantize(1000 + 128 * 10, 2**30, -20, 3) == 3


def test_dead_channels_saturate_to_a_constant() -> None:
    """A bias that outweighs every tap saturates the output whatever the inputs: the cheap
    arithmetic cannot take it (2 acc overflows), the constant record can; where the two
    ends of the reach saturate differently, or a left shift could wrap, it is not claimed."""
    assert cheap_channel(2**30, 100, 2**30, -1, 0) == (0, 0, 255, 1)  # always 127
    assert cheap_channel(-(2**30), 100, 2**30, -1, 5) == (0, 0, -255, 1)  # always -128
    assert cheap_channel(-(2**30), 100, -(2**30), -1, 0) == (0, 0, 255, 1)  # m < 0 flips it
    for acc in (-(2**30) - 12_800, -(2**30), -(2**30) + 12_800):
        assert sat8(tflite_requantize(acc, -(2**30), -1, 0)) == 127
    # 2^30 +- 2^27 requantises to 28 .. 36: not a constant, and 2 acc overflows
    assert cheap_channel(2**30, 2**20, 2**30, -24, 0) is None
    assert cheap_channel(2**28, 10, 2**30, 4, 0) is None  # 2^28 << 4 wraps in TFLite


@settings(max_examples=2000, deadline=None)
@given(
    bias=st.integers(-(2**31) + 2**20, 2**31 - 1 - 2**20),
    weight_sum=st.integers(0, 2**12),
    m=st.integers(-(2**31) + 1, 2**31 - 1),
    shift=st.integers(-31, 3),
    output_offset=st.integers(-128, 127),
    shares=st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=8),
)
def test_a_saturated_constant_holds_over_the_whole_reach(
    bias: int, weight_sum: int, m: int, shift: int, output_offset: int, shares: list[float]
) -> None:
    record = cheap_channel(bias, weight_sum, m, shift, output_offset)
    if record is None or record[:2] != (0, 0):
        return
    v = sat8(kernel_formula(0, record))
    reach = 128 * weight_sum
    for share in shares:
        acc = bias + int(share * reach)
        assert sat8(tflite_requantize(acc, m, shift, output_offset)) == v
