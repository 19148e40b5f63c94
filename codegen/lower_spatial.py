"""Lowerings of the spatial int8 kernels (kernels/rip_conv.h, kernels/rip_pool.h).

CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D and
GLOBAL_AVERAGE_POOL (and a MEAN over H and W, the same kernel) each become:

- file-scope declarations, all ``static const`` so that on a microcontroller they stay in
  flash: the int8 filter and int32 bias copied from the model, the per-channel multipliers
  and shifts, the params struct and the dims structs;
- one guarded kernel call over the arena pointers the generator chose, returning
  ``index + 1`` when the kernel refuses its arguments so a failure names its op.

The numbers come from :mod:`rip.codegen.conv_params` (TFLite Micro's Prepare arithmetic);
the C text from ``templates/ops/spatial_decls.c.j2`` and ``templates/ops/spatial_call.c.j2``.
Importing this module registers the lowerings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from rip.codegen import conv_params as cp
from rip.codegen.kernel_choice import choose_conv_kernel, folded_bias
from rip.codegen.lowering import Lowered, LoweringError, OpBuffers, register
from rip.codegen.quant import ParamsError
from rip.codegen.templating import render
from rip.frontend.ir import Graph, Operator
from rip.terms import InPlaceKind

DECLS_TEMPLATE = "ops/spatial_decls.c.j2"
CALL_TEMPLATE = "ops/spatial_call.c.j2"
CONV_HEADERS = ("rip_conv.h",)
FAST_HEADERS = ("rip_conv.h", "rip_conv_fast.h")  # kernel_choice's _fast kernels
POOL_HEADERS = ("rip_pool.h",)
POOL_PARAMS = ("rip_pool_params", "rip_mean_params")  # the structs rip_pool.h declares

P = TypeVar("P", bound=cp.KernelParams)


@dataclass(frozen=True)
class _Emit:
    """Everything both templates need for one op (``kernel`` picks the branch)."""

    kernel: str  # the C function called
    params_type: str  # the C params struct
    p: cp.KernelParams
    filter: bytes | None = None
    bias: tuple[int, ...] | None = None
    quant: str | None = None  # "per_channel" | "per_tensor" | None (pools)
    input: str = ""  # C pointer expression of the activation input
    output: str = ""  # C pointer expression of the output (the shared base when in place)


def where(graph: Graph, op: Operator, index: int) -> str:
    """How messages name an op: its kind, .tflite index, schedule step and output."""
    out = op.outputs[0]
    return (
        f"operator {op.kind} at index {op.source_index} (step {index}, output tensor {out} "
        f"{graph.tensors[out].name!r})"
    )


def _params(compute: Callable[[Graph, Operator], P], graph: Graph, op: Operator, index: int) -> P:
    """The kernel parameters; TFLite Micro's Prepare refusals become LoweringErrors."""
    try:
        return compute(graph, op)
    except ParamsError as e:
        raise LoweringError(f"{where(graph, op, index)}: {e}") from None


def _constant(graph: Graph, op: Operator, index: int, k: int, what: str, nbytes: int) -> bytes:
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


def _bias(graph: Graph, op: Operator, index: int, channels: int) -> tuple[int, ...] | None:
    """The int32 bias (little-endian in the model, whatever the host), None when absent."""
    if len(op.inputs) < 3 or op.inputs[2] < 0:
        return None
    data = _constant(graph, op, index, 2, "bias", 4 * channels)
    return tuple(int(v) for v in np.frombuffer(data, dtype="<i4"))


def grouped(expr: str) -> str:
    """``expr`` parenthesized unless it already is as a whole, so that a cast in front of it
    applies to the whole pointer expression (``(int8_t *)rip_arena + 8`` would not)."""
    if expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for k, ch in enumerate(expr):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                if k == len(expr) - 1:
                    return expr
                break
    return f"({expr})"


def _activation_input(graph: Graph, op: Operator, index: int, buffers: OpBuffers) -> str:
    if not buffers.inputs or buffers.inputs[0] is None:
        raise LoweringError(f"{where(graph, op, index)}: its input is not an arena activation")
    return grouped(buffers.inputs[0])


def _check_inplace(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, allowed: tuple[str, ...]
) -> None:
    """Refuse an in-place mode this op's kernel does not implement: the emitted code would
    silently read bytes it had already overwritten."""
    if buffers.inplace is None:
        return
    if buffers.inplace not in allowed:
        supported = " or ".join(repr(m) for m in allowed) if allowed else "no in-place mode"
        raise LoweringError(
            f"{where(graph, op, index)}: cannot run in place as {buffers.inplace!r} "
            f"(its kernel supports {supported})"
        )
    if buffers.inplace_input not in (None, 0):
        raise LoweringError(
            f"{where(graph, op, index)}: only its activation input (0) can be overwritten, "
            f"not input {buffers.inplace_input}"
        )


def _lowered(
    graph: Graph, op: Operator, index: int, prefix: str, emit: _Emit, inplace: str | None = None
) -> Lowered:
    """Render both templates. ``inplace`` only changes the call's comment: for "rip" the
    call is the out-of-place one, and the comment tells a reader the overlap is planned."""
    context = {
        "e": emit,
        "p": emit.p,
        "prefix": prefix,
        "index": index,
        "status": index + 1,
        "kind": op.kind,
        "source_index": op.source_index,
        "output_name": graph.tensors[op.outputs[0]].name,
        "inplace": inplace,
    }
    return Lowered(
        decls=render(DECLS_TEMPLATE, **context),
        call=render(CALL_TEMPLATE, **context),
        scratch_bytes=emit.p.scratch_bytes,
        headers=POOL_HEADERS
        if emit.params_type in POOL_PARAMS
        else (FAST_HEADERS if emit.kernel.endswith("_fast") else CONV_HEADERS),
    )


@register("CONV_2D", "DEPTHWISE_CONV_2D")
def lower_conv(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """CONV_2D (out of place, or "rip": the gather-first kernel tolerates an output starting
    the planner's gap below its input) and DEPTHWISE_CONV_2D (out of place, or "channel":
    the channel in-place kernel over the shared base)."""
    p = _params(cp.conv_params, graph, op, index)
    depthwise = op.kind == "DEPTHWISE_CONV_2D"
    _check_inplace(
        graph, op, index, buffers, (InPlaceKind.CHANNEL,) if depthwise else (InPlaceKind.RIP,)
    )
    x = _activation_input(graph, op, index, buffers)
    kernel = "rip_conv2d_s8"
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
        kernel = "rip_depthwise_conv2d_s8_inplace"
    elif depthwise:
        kernel = "rip_depthwise_conv2d_s8"
    n, kh, kw, c = p.filter_dims
    weights = _constant(graph, op, index, 1, "filter", n * kh * kw * c)
    bias = _bias(graph, op, index, p.output_dims[3])
    choice = choose_conv_kernel(p, buffers.inplace)
    if choice.folded_bias:
        kernel, bias = choice.function, folded_bias(p, weights, bias)
    emit = _Emit(
        kernel=kernel,
        params_type="rip_dw_conv_params" if depthwise else "rip_conv_params",
        p=p,
        filter=weights,
        bias=bias,
        quant="per_channel",
        input=x,
        output=grouped(buffers.output),
    )
    return _lowered(graph, op, index, prefix, emit, buffers.inplace)


@register("FULLY_CONNECTED")
def lower_fully_connected(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """FULLY_CONNECTED, per-tensor or per-channel weights. Never in place: every output unit
    reads the whole input, and the kernel requires disjoint buffers."""
    p = _params(cp.fully_connected_params, graph, op, index)
    _check_inplace(graph, op, index, buffers, ())
    units, _, _, depth = p.filter_dims
    emit = _Emit(
        kernel="rip_fully_connected_per_channel_s8" if p.per_channel else "rip_fully_connected_s8",
        params_type="rip_fc_params",
        p=p,
        filter=_constant(graph, op, index, 1, "weights", units * depth),
        bias=_bias(graph, op, index, units),
        quant="per_channel" if p.per_channel else "per_tensor",
        input=_activation_input(graph, op, index, buffers),
        output=grouped(buffers.output),
    )
    return _lowered(graph, op, index, prefix, emit)


@register("AVERAGE_POOL_2D", "MAX_POOL_2D")
def lower_pool(graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str) -> Lowered:
    """Average and max pooling, out of place or "rip" (each output pixel's channels are
    accumulated in scratch before any is stored)."""
    p = _params(cp.pool_params, graph, op, index)
    _check_inplace(graph, op, index, buffers, (InPlaceKind.RIP,))
    emit = _Emit(
        kernel="rip_avg_pool_s8" if op.kind == "AVERAGE_POOL_2D" else "rip_max_pool_s8",
        params_type="rip_pool_params",
        p=p,
        input=_activation_input(graph, op, index, buffers),
        output=grouped(buffers.output),
    )
    return _lowered(graph, op, index, prefix, emit, buffers.inplace)


@register("GLOBAL_AVERAGE_POOL", "MEAN")
def lower_global_pool(
    graph: Graph, op: Operator, index: int, buffers: OpBuffers, prefix: str
) -> Lowered:
    """GLOBAL_AVERAGE_POOL, and a MEAN over H and W left unrewritten (the same arithmetic);
    any other MEAN is refused. Never in place: the kernel requires disjoint buffers, and a
    reduction is not among the planner's in-place operators (Appendix I)."""
    p = _params(cp.mean_params, graph, op, index)
    _check_inplace(graph, op, index, buffers, ())
    emit = _Emit(
        kernel="rip_global_avg_pool_s8",
        params_type="rip_mean_params",
        p=p,
        input=_activation_input(graph, op, index, buffers),
        output=grouped(buffers.output),
    )
    return _lowered(graph, op, index, prefix, emit)
