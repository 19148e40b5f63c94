"""Which C kernel runs a CONV_2D or DEPTHWISE_CONV_2D, and the folded bias it takes.

The fast kernels (the _fast variants in kernels/rip_conv.h) multiply raw int8 inputs: the
input offset's share of every accumulator, ``input_offset * sum(filter[oc])``, is added to
the bias here, once, instead of to every input byte at run time. A padded tap reads the
input zero point, whose product cancels its share exactly, so the fold is bit-exact at the
borders too.

The choice and the memory plan agree by construction:

- ``rip_conv2d_fast_s8`` gathers two output pixels' receptive fields before writing either
  (``CONV_TILE_PIXELS``), the simulator's ``tile=2`` traversal: its minimum gap is never
  above the per-pixel gather gap of Theorem 13 the planner uses, so it runs at any planned
  gap. Its scratch is two receptive fields (`rip.scratch.scratch_bytes`, C twin
  ``rip_conv2d_fast_s8_get_buffer_size``).
- ``rip_depthwise_conv2d[_inplace]_fast_s8`` keeps the one-channel-plane scheme: gap 0 in
  place, scratch H_out * W_out, as before. A depth multiplier other than 1 keeps the
  reference kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.codegen.conv_params import ConvKernelParams
from rip.terms import InPlaceKind

CONV_TILE_PIXELS = 2  # output pixels gathered together by rip_conv2d_fast_s8


@dataclass(frozen=True)
class KernelChoice:
    function: str  # the C function called
    folded_bias: bool  # it takes bias + input_offset * sum(filter), not the model's bias
    reason: str  # one line for a report


def choose_conv_kernel(p: ConvKernelParams, inplace: str | None) -> KernelChoice:
    """The kernel for one CONV_2D / DEPTHWISE_CONV_2D, given how the plan runs it."""
    if p.kind == "CONV_2D":
        return KernelChoice(
            "rip_conv2d_fast_s8", True, "2x2 pixel x channel tiles, gap <= per-pixel gap"
        )
    channel = inplace == InPlaceKind.CHANNEL
    if p.depth_multiplier != 1:
        name = "rip_depthwise_conv2d_inplace_s8" if channel else "rip_depthwise_conv2d_s8"
        return KernelChoice(name, False, "depth multiplier != 1: reference kernel")
    name = "rip_depthwise_conv2d_inplace_fast_s8" if channel else "rip_depthwise_conv2d_fast_s8"
    return KernelChoice(name, True, "interior/border split, one channel plane")


def folded_bias(p: ConvKernelParams, filter_bytes: bytes, bias: tuple[int, ...] | None):
    """bias[oc] + input_offset * sum of output channel oc's weights, wrapped to int32 as the
    kernels' int32 accumulators wrap."""
    w = np.frombuffer(filter_bytes, dtype=np.int8).astype(np.int64)
    c_out = p.output_dims[3]
    if p.kind == "CONV_2D":
        sums = w.reshape(c_out, -1).sum(axis=1)  # [C_out, KH, KW, C_in]
    else:
        sums = w.reshape(-1, c_out).sum(axis=0)  # [1, KH, KW, C * M]
    b = np.zeros(c_out, dtype=np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    folded = (b + p.input_offset * sums + 2**31) % 2**32 - 2**31
    return tuple(int(v) for v in folded)
