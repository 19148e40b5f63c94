"""Lowerings of kernels/rip_conv.h: CONV_2D, GROUPED_CONV_2D, DEPTHWISE_CONV_2D and
FULLY_CONNECTED.

Each becomes:

- file-scope constant data, all ``const`` so that on a microcontroller it stays in flash
  (model_data.c): the int8 filter and int32 bias copied from the model, the per-channel multipliers
  and shifts, the params struct and the dims structs;
- one guarded kernel call over the arena pointers the generator chose, returning
  ``index + 1`` when the kernel refuses its arguments so a failure names its op.

The numbers come from :mod:`rip.codegen.conv_params` (TFLite Micro's Prepare arithmetic);
the C text from the template pair ``templates/ops/conv_*.c.j2``
(`rip.codegen.lowering.render_op`). `rip.codegen.lowerings` maps each op kind to its lowering.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rip.allocator.planning.requirements import depthwise_is_conv, op_scratch_bytes
from rip.codegen import conv_params as cp
from rip.codegen import lower_wide
from rip.codegen.kernel_choice import (
    choose_conv_kernel,
    depthwise_as_conv,
    fast_channels,
    fast_conv_channels,
    fast_fc_channels,
    folded_bias,
    pack_depthwise_filter,
    pack_filter_pairs,
)
from rip.codegen.lowering import (
    Lowered,
    OpBuffers,
    OpContext,
    grouped,
    render_op,
    staged_filters,
    where,
)

# The shared helpers under this module's former private names, so that the lowerings' bodies
# read as they did when they were defined here.
from rip.codegen.lowering import activation_input as _activation_input
from rip.codegen.lowering import check_inplace as _check_inplace
from rip.codegen.lowering import kernel_params as _params
from rip.core import kernel_variants as kv
from rip.core.errors import LoweringError
from rip.core.operators import Op, kernel_of
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph, Operator

# the reference kernels (params structs, header) of the operator table; the faster variants
# are chosen per layer (rip.codegen.kernel_choice)
CONV, DEPTHWISE = kernel_of(Op.CONV_2D), kernel_of(Op.DEPTHWISE_CONV_2D)
GROUPED = kernel_of(Op.GROUPED_CONV_2D)
FULLY_CONNECTED = kernel_of(Op.FULLY_CONNECTED)


def constant_bytes(graph: Graph, op: Operator, index: int, k: int, what: str, nbytes: int) -> bytes:
    """The raw bytes of constant input ``k``, which must be present and complete."""
    t = graph.tensors[op.inputs[k]]
    if not t.is_constant:
        raise LoweringError(
            f"{where(graph, op, index)}: the {what} (tensor {t.id} {t.name!r}) is not a "
            "constant; the kernels take weights from flash"
        )
    if t.data is None:
        raise LoweringError(
            f"{where(graph, op, index)}: model has no weights (the {what}, tensor {t.id} "
            f"{t.name!r}, is empty in this graph-only model); compile the full model"
        )
    if len(t.data) != nbytes:
        raise LoweringError(
            f"{where(graph, op, index)}: the {what} (tensor {t.id} {t.name!r}) holds "
            f"{len(t.data)} bytes, its kernel needs {nbytes}"
        )
    return t.data


def bias_values(graph: Graph, op: Operator, index: int, channels: int) -> tuple[int, ...] | None:
    """The int32 bias (little-endian in the model, whatever the host), None when absent."""
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return None
    data = constant_bytes(graph, op, index, 2, "bias", 4 * channels)
    return tuple(int(v) for v in np.frombuffer(data, dtype="<i4"))


def lower_conv(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """CONV_2D (out of place, or "rip": the gather-first kernel tolerates an output starting
    the planner's gap below its input) and DEPTHWISE_CONV_2D (out of place, or "channel":
    the channel in-place kernel over the shared base)."""
    if lower_wide.is_wide(graph, op):  # 16x8 (kernels/rip_wide.h)
        return lower_wide.lower_conv(graph, op, index, buffers, prefix)
    # a one-column depthwise layer runs as the one-row layer its bytes are
    p = cp.column_as_row(_params(cp.conv_params, graph, op, index))
    depthwise = op.kind == Op.DEPTHWISE_CONV_2D
    as_conv = depthwise_is_conv(graph, op)  # one input channel: the conv it equals
    _check_inplace(
        graph,
        op,
        index,
        buffers,
        (InPlaceKind.CHANNEL,) if depthwise and not as_conv else (InPlaceKind.RIP,),
    )
    x = _activation_input(graph, op, index, buffers)
    kernel = CONV.function
    if depthwise and buffers.inplace == InPlaceKind.CHANNEL:
        # The in-place kernel has one pointer: it is only right if the plan really put
        # the output where the input is.
        if x != grouped(buffers.output):
            raise LoweringError(
                f"{where(graph, op, index)}: channel in place needs the output at its input's "
                f"base, got input {x} and output {buffers.output}"
            )
        if p.depth_multiplier != 1:
            raise LoweringError(
                f"{where(graph, op, index)}: channel in place needs depth multiplier 1, "
                f"not {p.depth_multiplier}"
            )
        kernel = "rip_depthwise_conv2d_inplace_s8"
    elif depthwise:
        kernel = DEPTHWISE.function
    n, kh, kw, c = p.filter_dims
    weights = constant_bytes(graph, op, index, 1, "filter", n * kh * kw * c)
    bias = bias_values(graph, op, index, p.output_dims[3])
    # the op's own scratch buffer bounds what a kernel variant may use of it
    reserved = (
        op_scratch_bytes(graph, op) if buffers.scratch_bytes is None else buffers.scratch_bytes
    )
    routed = depthwise_as_conv(p, weights, bias, reserved) if depthwise else None
    if as_conv and routed is None and buffers.inplace is not None:
        raise LoweringError(
            f"{where(graph, op, index)}: planned in place as the convolution it equals, but "
            f"no conv kernel fits its {reserved} B of scratch"
        )
    if routed is not None and buffers.inplace in (None, InPlaceKind.RIP):
        # One input channel: the CONV_2D it equals (its weights signed for the records).
        p, weights, choice = routed
        depthwise, signed_weights = False, weights
    else:
        signed_weights = weights
        if depthwise:
            p = dataclasses.replace(p, fast_channels=fast_channels(p, weights, bias))
        else:
            found = fast_conv_channels(p, weights, bias)
            if found is not None:
                p = dataclasses.replace(p, fast_channels=found[0])
                signed_weights = found[1]
        choice = choose_conv_kernel(p, buffers.inplace, reserved)
        if choice.function == kv.CONV2D_FAST.name:  # the general requantisation: raw weights
            p, signed_weights = dataclasses.replace(p, fast_channels=None), weights
    scratch = p.scratch_bytes
    if choice.folded_bias:
        kernel, bias = choice.function, folded_bias(p, weights, bias)
        scratch = choice.scratch_bytes if choice.scratch_bytes is not None else scratch
    aligned = quant_fast = kernel.endswith("_rq_s8")
    if kernel in ("rip_conv2d_fast_rq_s8", "rip_conv2d_gemv_rq_s8"):
        weights = pack_filter_pairs(signed_weights, p.output_dims[3])
    elif kv.variant(kernel).depthwise_packed:
        weights = pack_depthwise_filter(weights, kh, kw, c, p.stride[1], p.dilation[1])
        aligned = True
    # flash-aware execution stages a CONV_2D's filter only (the planner's candidates)
    staged = staged_filters(
        graph, op, index, buffers, {0: len(weights)} if op.kind == Op.CONV_2D else {}
    )
    return render_op(
        OpContext(
            kind=op.kind,
            header=CONV.header,
            function=kernel,
            struct=DEPTHWISE.struct if depthwise else CONV.struct,
            params=p,
            prefix=prefix,
            status=index + 1,
            inputs=(x,),
            output=grouped(buffers.output),
            filter=weights,
            bias=bias,
            quant="fast_channels" if quant_fast else "per_channel",
            scratch_bytes=scratch,
            scratch_context=buffers.context,
            comment=f"{kernel}: {choice.reason}" if choice.folded_bias else None,
            ring_slots=choice.ring_slots,
            ring_rows=choice.ring_rows,
            aligned_filter=aligned,
            staged=staged,
        )
    )


def lower_grouped_conv(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """GROUPED_CONV_2D: rip_conv2d_grouped_s8, TFLite's per-channel requantisation with the
    model's bias (no fast variant), out of place or "rip" at the conv's gap (it gathers each
    field over all input channels, as rip_conv2d_s8)."""
    p = _params(cp.conv_params, graph, op, index)
    _check_inplace(graph, op, index, buffers, (InPlaceKind.RIP,))
    n, kh, kw, c = p.filter_dims
    return render_op(
        OpContext(
            kind=op.kind,
            header=GROUPED.header,
            function=GROUPED.function,
            struct=GROUPED.struct,
            params=p,
            prefix=prefix,
            status=index + 1,
            inputs=(_activation_input(graph, op, index, buffers),),
            output=grouped(buffers.output),
            filter=constant_bytes(graph, op, index, 1, "filter", n * kh * kw * c),
            bias=bias_values(graph, op, index, p.output_dims[3]),
            quant="per_channel",
            scratch_bytes=p.scratch_bytes,
            scratch_context=buffers.context,
        )
    )


def lower_fully_connected(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """FULLY_CONNECTED, per-tensor or per-channel weights: rip_fully_connected_fast_rq_s8
    (the packed filter, a GEMV per batch row) where the cheap requantisation is proven for
    every unit, else TFLite's general requantisation in the exact kernels. Never in place:
    every output unit reads the whole input, and the kernels require disjoint buffers."""
    if lower_wide.is_wide(graph, op):  # 16x8 (kernels/rip_wide.h)
        return lower_wide.lower_fully_connected(graph, op, index, buffers, prefix)
    p = _params(cp.fully_connected_params, graph, op, index)
    _check_inplace(graph, op, index, buffers, ())
    units, _, _, depth = p.filter_dims
    weights = constant_bytes(graph, op, index, 1, "weights", units * depth)
    bias = bias_values(graph, op, index, units)
    found = fast_fc_channels(p, weights, bias)
    if found is not None:
        # The packed GEMM (a GEMV per batch row) with the cheap requantisation proven.
        p = dataclasses.replace(p, fast_channels=found[0])
        function, quant = "rip_fully_connected_fast_rq_s8", "fast_channels"
        weights, bias = pack_filter_pairs(found[1], units), None
    elif p.per_channel:
        function, quant = "rip_fully_connected_per_channel_s8", "per_channel"
    else:
        function, quant = FULLY_CONNECTED.function, "per_tensor"
    return render_op(
        OpContext(
            kind=op.kind,
            header=FULLY_CONNECTED.header,
            function=function,
            struct=FULLY_CONNECTED.struct,
            params=p,
            prefix=prefix,
            status=index + 1,
            inputs=(_activation_input(graph, op, index, buffers),),
            output=grouped(buffers.output),
            filter=weights,
            bias=bias,
            quant=quant,
            scratch_bytes=p.scratch_bytes,
            scratch_context=buffers.context,
        )
    )
