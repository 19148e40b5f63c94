"""Shape arithmetic shared by the front end, the per-layer theory and the code generator (no
other rip imports)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def dilated(k: int, dilation: int) -> int:
    """Effective kernel extent d (k - 1) + 1 (Table 4: k_eff)."""
    return dilation * (k - 1) + 1


def same_padding(size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow's SAME padding on one axis: output ceil(size / stride), the odd extra
    pixel at the end (bottom or right)."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + dilated(k, dilation) - size, 0)
    return total // 2, total - total // 2


def conv_out_size(padded: int, k: int, stride: int, dilation: int = 1) -> int:
    """Output extent of a convolution over an already padded axis."""
    return (padded - dilated(k, dilation)) // stride + 1


def nhwc(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """A shape as (N, H, W, C), the one conversion every stage uses: TFLite's
    ``RuntimeShape::ExtendedShape(4, shape)``, ones prepended (``[C]`` is 1x1x1xC, ``[W, C]``
    1x1xWxC, ``[H, W, C]`` 1xHxWxC). More than four dimensions is a ValueError."""
    dims = tuple(int(d) for d in shape)
    if len(dims) > 4:
        raise ValueError(f"shape {dims} has more than 4 dimensions")
    n, h, w, c = (1,) * (4 - len(dims)) + dims
    return n, h, w, c


def nearest_index_map(
    in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool
) -> tuple[int, ...]:
    """TFLite's GetNearestNeighbor (RESIZE_NEAREST_NEIGHBOR) for every output index, in
    float32 as the reference evaluates it (so its rounding, not exact arithmetic, decides
    ties); rounding is TfLiteRound's, half away from zero."""
    f32 = np.float32
    if align_corners and out_size > 1:
        ratio = f32(in_size - 1) / f32(out_size - 1)
    else:
        ratio = f32(in_size) / f32(out_size)
    offset = f32(0.5 if half_pixel_centers else 0.0)
    result = []
    for o in range(out_size):
        v = float((f32(o) + offset) * ratio)
        index = math.floor(v + 0.5) if align_corners else math.floor(v)  # v >= 0
        index = min(index, in_size - 1)
        result.append(max(0, index) if half_pixel_centers else index)
    return tuple(result)
