"""Kernel parameters of kernels/rip_fused.h (a fused chain, ``FUSED_CHAIN``): one
``rip_fused_stage`` per member, computed by the member's own params module exactly as the
unfused op's (`rip.codegen.conv_params`, TFLite Micro's Prepare), and the residual ADD's
``rip_add_params`` (`rip.codegen.elementwise_params`). Each stage makes the choice its
unfused op makes (`rip.codegen.lower_conv`, with `rip.codegen.kernel_choice`'s functions):
the cheap requantisation's records where `rip.codegen.requant` proves them for the member
(a CONV_2D's filter then packed in channel pairs, rows of negated channels negated), else
the general requantisation with the folded bias.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rip.allocator.planning.requirements import fused_chain
from rip.allocator.planning.scratch import fused_scratch_bytes
from rip.allocator.theory.fused import needed_rows
from rip.codegen import conv_params as cp
from rip.codegen import elementwise_params as ep
from rip.codegen.kernel_choice import (
    fast_channels,
    fast_conv_channels,
    folded_bias,
    pack_depthwise_filter,
    pack_filter_pairs,
)
from rip.core.operators import Op
from rip.frontend.fusion import FusedParams
from rip.frontend.ir import Graph, Operator


@dataclass(frozen=True)
class FusedStage:
    """One ``rip_fused_stage``: the member's conv params, its filter bytes and either the
    cheap requantisation's records (``conv.fast_channels``) or the folded bias."""

    kind: str  # RIP_FUSED_CONV | RIP_FUSED_DEPTHWISE
    conv: cp.ConvKernelParams
    filter: bytes  # a CONV_2D's packed (pack_filter_pairs) where it has records
    bias: tuple[int, ...] | None  # the folded bias; None with records
    ring_rows: int  # 0 for the last stage
    ordinal: tuple[int, ...] | None = None  # rank among the needed rows, -1; None: all


@dataclass(frozen=True)
class FusedKernelParams:
    stages: tuple[FusedStage, ...]
    residual: ep.AddParams | None
    residual_input_first: bool  # ADD(chain input, chain) rather than ADD(chain, input)
    names: str  # the members, for the generated comment
    scratch_bytes: int
    source_rows: int = 0  # a streamed input's ring rows (0: the input is resident)
    source_input: int | None = None  # that input's index among the model's inputs


def fused_params(
    graph: Graph,
    op: Operator,
    constant: Callable[[Operator, int, str, int], bytes],
    bias_of: Callable[[Operator, int], tuple[int, ...] | None],
) -> FusedKernelParams:
    """The chain's kernel parameters. ``constant(member, k, what, nbytes)`` and
    ``bias_of(member, channels)`` read a member's constant inputs (the conv lowering's
    checked readers)."""
    p: FusedParams = op.params
    needed = needed_rows(fused_chain(graph, p.members, p.residual is not None))
    stages = []
    for k, m in enumerate(p.members):
        c = cp.conv_params(graph, m)
        n, kh, kw, ch = c.filter_dims
        weights = constant(m, 1, "filter", n * kh * kw * ch)
        c, weights, bias = _stage_arithmetic(c, weights, bias_of(m, c.output_dims[3]))
        stages.append(
            FusedStage(
                "RIP_FUSED_CONV" if m.kind == Op.CONV_2D else "RIP_FUSED_DEPTHWISE",
                c,
                weights,
                bias,
                p.ring_rows[k] if k < len(p.ring_rows) else 0,
                _ordinal(needed[k], c.output_dims[1]),
            )
        )
    residual = None if p.residual is None else ep.op_params(graph, p.residual)
    assert residual is None or isinstance(residual, ep.AddParams)  # fusion takes an ADD only
    residual = None if residual is None else ep.with_add_terms(residual)
    first = p.residual is not None and graph.storage(p.residual.inputs[0]) == graph.storage(
        p.members[0].inputs[0]
    )
    scratch = fused_scratch_bytes(
        [(s.conv.kind, s.conv.input_dims, s.conv.filter_dims) for s in stages],
        stages[-1].conv.output_dims,
        residual is not None,
        p.source is not None,
    )
    source_input = None if p.source is None else graph.inputs.index(p.source)
    return FusedKernelParams(tuple(stages), residual, first, p.names(), scratch,
                             p.source_rows, source_input)  # fmt: skip


def _stage_arithmetic(
    c: cp.ConvKernelParams, weights: bytes, bias: tuple[int, ...] | None
) -> tuple[cp.ConvKernelParams, bytes, tuple[int, ...] | None]:
    """The member's params with its records (None where not proven), the filter its kernel
    reads and the folded bias (None with records): the unfused lowering's choice."""
    if c.kind == Op.CONV_2D:
        found = fast_conv_channels(c, weights, bias)
        if found is not None:
            records, signed = found
            packed = pack_filter_pairs(signed, c.output_dims[3])
            return dataclasses.replace(c, fast_channels=records), packed, None
        return c, weights, folded_bias(c, weights, bias)
    # the depthwise stage's row engine reads the filter packed (rip_depthwise_row_fast.h)
    _, kh, kw, ch = c.filter_dims
    packed = pack_depthwise_filter(weights, kh, kw, ch, c.stride[1], c.dilation[1])
    channels = fast_channels(c, weights, bias)
    if channels is not None:
        return dataclasses.replace(c, fast_channels=channels), packed, None
    return c, packed, folded_bias(c, weights, bias)


def _ordinal(needed: list[int], rows: int) -> tuple[int, ...] | None:
    """Each output row's rank among a stage's needed rows (the schedule's ring slot order),
    -1 for a row never computed; None when every row is needed (rank = row)."""
    if needed == list(range(rows)):
        return None
    rank = dict(zip(needed, range(len(needed)), strict=True))
    return tuple(rank.get(r, -1) for r in range(rows))
