"""TFLite's quantization arithmetic on the host, bit for bit: what the code generator
feeds the C kernels (tensorflow/lite/kernels/internal/quantization_util.cc)."""

from __future__ import annotations

import math

import numpy as np


def quantize_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier: ``real`` = multiplier * 2^(shift - 31), multiplier in
    [2^30, 2^31) (or 0), shift in TFLite's sign convention (positive = left)."""
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)  # real = mantissa * 2^shift, mantissa in [0.5, 1)
    scaled = mantissa * (1 << 31)
    # TfLiteRound is std::round, half away from zero (Python's round is half to even)
    q = int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:  # underflow: the multiplier is zero
        return 0, 0
    if shift > 30:
        shift, q = 30, (1 << 31) - 1
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
