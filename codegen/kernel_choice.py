"""Which C kernel runs a CONV_2D or DEPTHWISE_CONV_2D, and the folded bias it takes.

The variants themselves (their names, the ops and in-place kinds they run, their scratch
twins and preconditions) are rows of `rip.core.kernel_variants`; this module picks one per
layer.

The fast kernels (the _fast variants in kernels/rip_conv.h) multiply raw int8 inputs: the
input offset's share of every accumulator, ``input_offset * sum(filter[oc])``, is added to
the bias here, once, instead of to every input byte at run time. A padded tap reads the
input zero point, whose product cancels its share exactly, so the fold is bit-exact at the
borders too.

The choice and the memory plan agree by construction:

- ``rip_conv2d_fast_s8`` gathers two output pixels' receptive fields before writing either
  (``CONV_TILE_PIXELS``), the simulator's ``tile=2`` traversal: its minimum gap is never
  above the per-pixel gather gap of Theorem 13 the planner uses, so it runs at any planned
  gap. Its scratch is two receptive fields (`planning.scratch.kernel_scratch_bytes`, C twin
  ``rip_conv2d_fast_s8_get_buffer_size``).
- Where `rip.codegen.requant.cheap_channels` proves the cheap requantisation exact for
  every output channel (no left shift, |acc| < 2^30, no overflow: almost every layer),
  ``rip_conv2d_fast_rq_s8``: the same traversal, tile and scratch, the requantisation
  constants precomputed per channel (``ConvKernelParams.fast_channels``).
- Depthwise likewise: where the cheap requantisation is proven, the ``_rq`` twin of the
  kernel chosen below (the same traversal, ring, scratch and gap).
- A depthwise layer in place (the channel scheme: output base == input base, gap 0, the
  planner's placement) runs ``rip_depthwise_conv2d_inplace_rows_fast_s8`` when its scratch
  (a ring of saved input rows, `planning.scratch.depthwise_rows_scratch_bytes`) fits the scratch
  buffer the model reserves (the maximum of the planner's formula over its ops): the
  out-of-place kernel's channel-vectorised loop row by row, plus the copies of the rows the
  ring saves. Its schedule (each input row's ring slot, `planning.scratch.depthwise_ring_slots`,
  and the ring's row count) is baked into the call here, so that the kernel spends nothing
  on schedule arithmetic: in place costs the row copies only (on DSP cores and hosts none
  where the kernel takes the layer in its group order, `theory.simulate
  .depthwise_plane_order`, and the ring goes unused). The
  planner's formula for a depthwise op includes that ring wherever the row kernel applies
  (`planning.scratch.depthwise_rows_apply`), so it always fits there. Otherwise (a kernel taller
  than 16 rows, or a reserved scratch given by a caller) ``rip_depthwise_conv2d_inplace_fast_s8``:
  channel groups as the reserved scratch holds planes of, one plane at a time at the
  planner's minimum. Out of place, ``rip_depthwise_conv2d_fast_s8``. A depth multiplier
  other than 1 keeps the reference kernels, except over one input channel, where the layer
  is the CONV_2D [M, KH, KW, 1] and runs on the conv kernels (`depthwise_as_conv`; always
  out of place): ``rip_conv2d_fast_rq_s8`` where the model's reserved scratch holds its
  widened pixel pair, else ``rip_conv2d_gemv_rq_s8`` (one receptive field at a time against
  the packed filter, four channels a step).
- FULLY_CONNECTED is the 1x1 CONV_2D over its batch rows (`fc_as_conv`, a per-tensor
  multiplier repeated per unit): where the cheap requantisation is proven,
  ``rip_fully_connected_fast_rq_s8`` (the packed filter, a GEMV per row, no scratch); else,
  or with a weights zero point, the exact kernels of lower_conv.lower_fully_connected.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from rip.allocator.planning.scratch import (
    depthwise_ring_schedule,
    depthwise_rows_apply,
    depthwise_rows_scratch_bytes,
    kernel_scratch_bytes,
    lean_scratch_bytes,
)
from rip.codegen.conv_params import ConvKernelParams, FullyConnectedKernelParams
from rip.codegen.requant import cheap_channels, cheap_channels_negating
from rip.core import kernel_variants as kv
from rip.core.operators import Op
from rip.core.terms import InPlaceKind

CONV_TILE_PIXELS = 2  # output pixels gathered together by rip_conv2d_fast_s8


@dataclass(frozen=True)
class KernelChoice:
    function: str  # the C function called
    folded_bias: bool  # it takes bias + input_offset * sum(filter), not the model's bias
    reason: str  # one line for a report and the generated code's comment
    scratch_bytes: int | None = None  # what it uses of the scratch buffer (None: the formula)
    # the row-streamed in-place kernel's baked schedule: each input row's ring slot (-1: not
    # saved) and the ring's row count; None for every other kernel
    ring_slots: tuple[int, ...] | None = None
    ring_rows: int = 0


def _rows_choice(p: ConvKernelParams, reserved: int | None) -> KernelChoice | None:
    """The row-streamed in-place depthwise kernel, if it applies and its scratch fits."""
    _, h, w, _ = p.input_dims
    _, h_out, w_out, _ = p.output_dims
    if reserved is None or not depthwise_rows_apply(p.input_dims, p.filter_dims, p.output_dims):
        return None
    need = depthwise_rows_scratch_bytes(
        p.input_dims, p.output_dims, p.filter_dims[1:3], p.stride, p.padding, p.dilation
    )
    if need > reserved:
        return None
    cols = (p.filter_dims[2], p.stride[1], p.padding[1], p.dilation[1])
    schedule = (h, w, h_out, w_out, p.filter_dims[1], p.stride[0], p.padding[0], p.dilation[0],
                cols)  # fmt: skip
    rows, slots = depthwise_ring_schedule(*schedule)
    saved = sum(1 for k in slots if k >= 0)
    return KernelChoice(
        kv.DEPTHWISE_INPLACE_ROWS_FAST.name,
        kv.DEPTHWISE_INPLACE_ROWS_FAST.folded_bias,
        f"in place row by row, channel-vectorised; {saved} input row(s) saved in a ring of "
        f"{rows} ({need} B of the {reserved} B scratch), schedule baked in",
        need,
        slots,
        rows,
    )


def choose_conv_kernel(
    p: ConvKernelParams, inplace: str | None, reserved_scratch: int | None = None
) -> KernelChoice:
    """The kernel for one CONV_2D / DEPTHWISE_CONV_2D, given how the plan runs it and the
    scratch buffer the model reserves (``reserved_scratch``, the maximum of
    `planning.scratch.kernel_scratch_bytes` over its ops; None: only this op's own formula)."""
    if p.kind == Op.CONV_2D:
        rq_need = kernel_scratch_bytes(Op.CONV_2D, p.input_dims, p.filter_dims, p.output_dims)
        fits = reserved_scratch is None or rq_need <= reserved_scratch
        taps = p.filter_dims[1] * p.filter_dims[2] * p.filter_dims[3]
        if p.fast_channels is not None and p.output_dims[1] * p.output_dims[2] == 1:
            # one output pixel (a classifier's 1x1 over a pooled map): the 2x2 tiles would
            # pair it with itself and drop half their MACs. It needs one field of scratch;
            # the plan's (this formula's) also holds the field widened, which lets DSP
            # cores sweep a filter streaming from flash in address order (rip_gemv.h)
            v = kv.CONV2D_GEMV_RQ
            return KernelChoice(v.name, v.folded_bias, "one output pixel: the filter read "
                                "once (in address order where it streams from flash); "
                                "cheap requantisation proven", taps)  # fmt: skip
        if p.fast_channels is not None and fits:
            return KernelChoice(
                kv.CONV2D_FAST_RQ.name,
                kv.CONV2D_FAST_RQ.folded_bias,
                "2x2 pixel x channel tiles, gap <= per-pixel gap; cheap requantisation proven",
            )
        why = "" if fits else f"; the plan gives it {reserved_scratch} B of scratch, not {rq_need}"
        if (
            p.fast_channels is not None
            and reserved_scratch is not None
            and taps <= reserved_scratch
        ):
            v = kv.CONV2D_GEMV_RQ  # one receptive field at a time: the simulated order itself
            return KernelChoice(v.name, v.folded_bias, "a pixel at a time, 1x4 channel tiles; "
                                f"cheap requantisation proven{why}", taps)  # fmt: skip
        return KernelChoice(
            kv.CONV2D_FAST.name,
            kv.CONV2D_FAST.folded_bias,
            f"2x2 pixel x channel tiles, gap <= per-pixel gap{why}",
            None if fits else lean_scratch_bytes(Op.CONV_2D, p.filter_dims),
        )
    channel = inplace == InPlaceKind.CHANNEL
    if p.depth_multiplier != 1:
        v = kv.DEPTHWISE_INPLACE if channel else kv.DEPTHWISE
        return KernelChoice(v.name, v.folded_bias, "depth multiplier != 1: reference kernel")
    choice = _depthwise_choice(p, channel, reserved_scratch)
    if p.fast_channels is None:
        return choice
    return dataclasses.replace(
        choice,
        function=kv.cheap_twin(choice.function),
        reason=choice.reason + "; cheap requantisation proven",
    )


def _depthwise_choice(p: ConvKernelParams, channel: bool, reserved_scratch: int | None):
    """The fast depthwise kernel (depth multiplier 1) with TFLite's general requantisation."""
    if not channel:
        v = kv.DEPTHWISE_FAST
        return KernelChoice(v.name, v.folded_bias, "out of place, channel-vectorised")
    rows = _rows_choice(p, reserved_scratch)
    if rows is not None:
        return rows
    plane = p.scratch_bytes
    group = min(p.output_dims[3], (reserved_scratch or plane) // plane // 4 * 4)
    how = f"groups of {group} channels" if group >= 4 else "one channel plane at a time"
    v = kv.DEPTHWISE_INPLACE_FAST
    return KernelChoice(v.name, v.folded_bias, f"in place by channel planes: {how}")


def folded_bias(p: ConvKernelParams, filter_bytes: bytes, bias: tuple[int, ...] | None):
    """bias[oc] + input_offset * sum of output channel oc's weights, wrapped to int32 as the
    kernels' int32 accumulators wrap."""
    w = np.frombuffer(filter_bytes, dtype=np.int8).astype(np.int64)
    c_out = p.output_dims[3]
    if p.kind == Op.CONV_2D:
        sums = w.reshape(c_out, -1).sum(axis=1)  # [C_out, KH, KW, C_in]
    else:
        sums = w.reshape(-1, c_out).sum(axis=0)  # [1, KH, KW, C * M]
    b = np.zeros(c_out, dtype=np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    folded = (b + p.input_offset * sums + 2**31) % 2**32 - 2**31
    return tuple(int(v) for v in folded)


def abs_weight_sums(p: ConvKernelParams, filter_bytes: bytes) -> tuple[int, ...]:
    """sum |w| over each output channel's taps (the accumulator bound's weight term)."""
    w = np.abs(np.frombuffer(filter_bytes, dtype=np.int8).astype(np.int64))
    c_out = p.output_dims[3]
    if p.kind == Op.CONV_2D:
        sums = w.reshape(c_out, -1).sum(axis=1)
    else:
        sums = w.reshape(-1, c_out).sum(axis=0)
    return tuple(int(v) for v in sums)


def fast_channels(
    p: ConvKernelParams, filter_bytes: bytes, bias: tuple[int, ...] | None
) -> tuple[tuple[int, int, int, int], ...] | None:
    """The ``rip_fast_channel`` records (folded bias, multiplier, round, shift) of a layer
    whose every channel the cheap requantisation is proven exact for, else None."""
    return cheap_channels(
        folded_bias(p, filter_bytes, bias),
        abs_weight_sums(p, filter_bytes),
        p.multipliers,
        p.shifts,
        p.output_offset,
    )


def pack_filter_pairs(filter_bytes: bytes, c_out: int) -> bytes:
    """The filter as rip_conv2d_fast_rq_s8 reads it (kernels/rip_conv.h): channels in pairs,
    taps padded with zeros to a multiple of 4, each pair's rows interleaved a word at a time
    (one LDRD per 4 taps of both channels)."""
    w = np.frombuffer(filter_bytes, dtype=np.int8).reshape(c_out, -1)
    taps = w.shape[1]
    k4 = -(-taps // 4) * 4
    padded = np.zeros((c_out + c_out % 2, k4), dtype=np.int8)
    padded[:c_out, :taps] = w
    # [pair, channel in pair, word, byte] -> [pair, word, channel in pair, byte]
    blocks = padded.reshape(-1, 2, k4 // 4, 4).transpose(0, 2, 1, 3)
    return blocks.tobytes()


def pack_depthwise_filter(
    filter_bytes: bytes, kh: int, kw: int, channels: int, sw: int, dw: int
) -> bytes:
    """The filter [1, KH, KW, C] as every fast depthwise kernel reads it (the two layouts
    of kernels/rip_dw_geometry.h), so that no kernel reorders a weight at run time: column
    pairs where the column-pair engine runs the layer (`kernel_variants.dw_cols_tile`, for
    the stride ``sw`` and dilation ``dw`` across the row), else tap pairs."""
    w = np.frombuffer(filter_bytes, dtype=np.int8).reshape(kh * kw, channels)
    groups = -(-channels // 4)
    if kv.dw_cols_tile(kh, kw, sw, dw) is not None:
        return _column_pair_weights(w, kh, kw, 4 * groups)
    taps = kh * kw
    pairs = -(-taps // 2)
    padded = np.zeros((2 * pairs, 4 * groups), dtype=np.int16)
    padded[:taps, :channels] = w
    # [pair, tap in pair, group, channel in group] -> [group, pair, channel in group, tap in pair]
    blocks = padded.reshape(pairs, 2, groups, 4).transpose(2, 0, 3, 1)
    return np.ascontiguousarray(blocks).astype("<i2").tobytes()


def _column_pair_weights(w: np.ndarray, kh: int, kw: int, padded_channels: int) -> bytes:
    """The column-pair layout: per channel (the last group padded with zero weights) and
    kernel row, m = (KW - 1) / 2 words, word k the bytes (w[2k], w[2k + 1], w[2k + 1],
    w[2k + 2]): SXTB16 of it is the SMLAD operand A_k = (w[2k], w[2k + 1]) of the pixel
    whose window starts at column pair k, SXTB16 of it rotated by 8 the operand B_{k+1} =
    (w[2k + 1], w[2k + 2]) of the pixel one column later (kernels/rip_dw_cols_engine.h)."""
    m = (kw - 1) // 2
    rows = np.zeros((padded_channels, kh, kw), dtype=np.int8)
    rows[: w.shape[1]] = w.reshape(kh, kw, -1).transpose(2, 0, 1)
    k = 2 * np.arange(m)
    words = np.stack([rows[..., k], rows[..., k + 1], rows[..., k + 1], rows[..., k + 2]], axis=-1)
    return np.ascontiguousarray(words).tobytes()  # [channel, row, word, byte]


def fast_conv_channels(
    p: ConvKernelParams, filter_bytes: bytes, bias: tuple[int, ...] | None
) -> tuple[tuple[tuple[int, int, int, int], ...], bytes] | None:
    """CONV_2D's records and the filter they go with (rows of channels with a negative
    multiplier negated, `rip.codegen.requant.cheap_channels_negating`), else None."""
    c_out = p.output_dims[3]
    w = np.frombuffer(filter_bytes, dtype=np.int8).reshape(c_out, -1)
    found = cheap_channels_negating(
        folded_bias(p, filter_bytes, bias),
        abs_weight_sums(p, filter_bytes),
        p.multipliers,
        p.shifts,
        p.output_offset,
        tuple(bool(v) for v in (w != -128).all(axis=1)),
    )
    if found is None:
        return None
    records, negate = found
    signs = np.where(np.asarray(negate), -1, 1).astype(np.int16)[:, None]
    return records, (w.astype(np.int16) * signs).astype(np.int8).tobytes()


# ---- FULLY_CONNECTED and single-channel depthwise on the packed GEMM ----------------------


def fc_as_conv(p: FullyConnectedKernelParams) -> ConvKernelParams:
    """A FULLY_CONNECTED as the 1x1 CONV_2D it is: its batches the pixels of one row, its
    depth the input channels, its units the output channels, a per-tensor multiplier and
    shift repeated for every unit (TFLite's FC and conv requantise alike per channel)."""
    batches, _, _, depth = p.input_dims
    units = p.output_dims[3]
    repeat = 1 if p.per_channel else units
    return ConvKernelParams(
        kind=Op.CONV_2D,
        input_dims=(1, 1, batches, depth),
        filter_dims=(units, 1, 1, depth),
        output_dims=(1, 1, batches, units),
        stride=(1, 1),
        padding=(0, 0),
        dilation=(1, 1),
        depth_multiplier=1,
        input_offset=p.input_offset,
        output_offset=p.output_offset,
        activation=p.activation,
        multipliers=p.multipliers * repeat,
        shifts=p.shifts * repeat,
        has_bias=p.has_bias,
        scratch_bytes=0,
    )


def fast_fc_channels(
    p: FullyConnectedKernelParams, weight_bytes: bytes, bias: tuple[int, ...] | None
) -> tuple[tuple[tuple[int, int, int, int], ...], bytes] | None:
    """rip_fully_connected_fast_rq_s8's records and the weights they go with (rows of units
    with a negative multiplier negated), or None where the cheap requantisation is not
    proven for every unit (`rip.codegen.requant.cheap_channels_negating`; the exact kernels
    run the layer then, as they do weights with a zero point, whose share of each sum
    depends on the input). The weights [units, depth] are the 1x1 conv's filter rows."""
    if p.filter_offset != 0:
        return None
    return fast_conv_channels(fc_as_conv(p), weight_bytes, bias)


def depthwise_as_conv(
    p: ConvKernelParams,
    filter_bytes: bytes,
    bias: tuple[int, ...] | None,
    reserved_scratch: int,
) -> tuple[ConvKernelParams, bytes, KernelChoice] | None:
    """A DEPTHWISE_CONV_2D over one input channel (depth multiplier M = its output channels)
    as the CONV_2D it equals, filter [M, KH, KW, 1] (the [1, KH, KW, M] one transposed), so
    that it runs on the conv GEMMs instead of the per-tap reference kernel a depth
    multiplier other than 1 otherwise takes. Out of place only (the planner never runs such
    a layer in place). Returns the conv's parameters (``fast_channels`` set where proven),
    its filter (signed as the records want) and the kernel, which must fit the model's
    reserved scratch (the planner reserves a depthwise layer's own formula):
    rip_conv2d_fast_rq_s8 where its widened pixel pair fits, else rip_conv2d_gemv_rq_s8
    (one receptive field); unproven, rip_conv2d_fast_s8 (two). None: keep the depthwise
    kernel."""
    _, kh, kw, c_out = p.filter_dims
    if p.kind != Op.DEPTHWISE_CONV_2D or p.input_dims[3] != 1 or p.depth_multiplier != c_out:
        return None
    taps = kh * kw
    w = np.frombuffer(filter_bytes, dtype=np.int8).reshape(taps, c_out)
    weights = np.ascontiguousarray(w.T).tobytes()
    conv = dataclasses.replace(p, kind=Op.CONV_2D, filter_dims=(c_out, kh, kw, 1),
                               depth_multiplier=1)  # fmt: skip
    packed = kernel_scratch_bytes(Op.CONV_2D, conv.input_dims, conv.filter_dims, conv.output_dims)
    found = fast_conv_channels(conv, weights, bias)
    why = "one input channel: the CONV_2D it equals"
    if found is not None and packed <= reserved_scratch:
        choice = choose_conv_kernel(dataclasses.replace(conv, fast_channels=found[0]), None)
    elif found is not None and taps <= reserved_scratch:
        v = kv.CONV2D_GEMV_RQ
        choice = KernelChoice(v.name, v.folded_bias, "a pixel at a time, 1x4 channel "
                              "tiles; cheap requantisation proven", taps)  # fmt: skip
    elif found is None and CONV_TILE_PIXELS * taps <= reserved_scratch:
        choice = choose_conv_kernel(conv, None)
    else:
        return None
    need = choice.scratch_bytes or (packed if found is not None else CONV_TILE_PIXELS * taps)
    choice = dataclasses.replace(choice, reason=f"{why}; {choice.reason}", scratch_bytes=need)
    if found is None:
        return dataclasses.replace(conv, scratch_bytes=need), weights, choice
    return dataclasses.replace(conv, fast_channels=found[0], scratch_bytes=need), found[1], choice
