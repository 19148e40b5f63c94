"""Kernel parameters of kernels/rip_matmul.h (BATCH_MATMUL), as TFLite Micro's
batch_matmul.cc Prepare computes them.

One requantization for the whole op: ``real = s_lhs * s_rhs / s_out`` with the float32
scales widened to double first (`quant.effective_scale`, as TFLite Micro's
GetQuantizedConvolutionMultipler does; a float32 product differs where the real multiplier
sits at a power of two: 1/32 exactly against just below it, multiplier 2^30 shift -4
against 2^31 - 1 shift -5, another rounding of ties), QuantizeMultiplier'd; the clamp is
int8's whole range (BATCH_MATMUL has no fused activation). Each operand is quantized per tensor, as
TFLite Micro reads one ``params.scale`` of each.

The shapes are TFLite Micro's reference: both operands extended to rank 5 with leading
ones; the three batch axes broadcast where one side is 1 (its batch stride then 0); the
left operand is ``rows x depth`` (``depth x rows`` stored when ``adj_x``), the right one
``depth x cols`` (``cols x depth`` when ``adj_y``). Instead of transposing into a copy, as
TFLite Micro does into persistent buffers, the kernel walks each operand with its own steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rip.codegen.quant import ParamsError, effective_scale, int8_per_tensor, quantize_multiplier
from rip.core.operators import Op
from rip.frontend.ir import BatchMatMulParams, Graph, Operator

RANK = 5  # TFLite Micro's reference extends both operands to five axes
BATCH_AXES = RANK - 2


@dataclass(frozen=True)
class MatMulParams:
    """rip_batch_matmul_params (element steps, not bytes: the operands are int8)."""

    lhs_offset: int  # -zero point of the left operand
    rhs_offset: int
    output_offset: int
    multiplier: int
    shift: int
    batch: tuple[int, int, int]  # the output's three batch extents
    lhs_batch_stride: tuple[int, int, int]  # 0 where the left operand broadcasts
    rhs_batch_stride: tuple[int, int, int]
    rows: int
    cols: int
    depth: int
    lhs_row_step: int
    lhs_depth_step: int
    rhs_depth_step: int
    rhs_col_step: int

    @property
    def macs(self) -> int:
        return math.prod(self.batch) * self.rows * self.cols * self.depth


def _extended(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (RANK - len(shape)) + tuple(shape)


def _batch_strides(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """TFLite Micro's ``extent``: an axis of size 1 does not advance (broadcast), any other
    steps over the axes after it."""
    strides = [0 if shape[k] == 1 else math.prod(shape[k + 1 :]) for k in range(BATCH_AXES)]
    return strides[0], strides[1], strides[2]


def matmul_params(graph: Graph, op: Operator) -> MatMulParams:
    """The kernel parameters of one BATCH_MATMUL; ParamsError for what TFLite Micro's Prepare
    refuses or rip cannot match."""
    if op.kind != Op.BATCH_MATMUL or not isinstance(op.params, BatchMatMulParams):
        raise ParamsError(f"{op.describe()} is not a batched matrix product")
    lhs, rhs = (graph.tensors[t] for t in op.inputs[:2])
    out = graph.tensors[op.outputs[0]]
    s_lhs, z_lhs = int8_per_tensor(lhs, op, "the left operand")
    s_rhs, z_rhs = int8_per_tensor(rhs, op, "the right operand")
    s_out, z_out = int8_per_tensor(out, op, "the output")
    with np.errstate(over="ignore"):  # infinite: quantize_multiplier refuses it
        multiplier, shift = quantize_multiplier(effective_scale(s_lhs, s_rhs, s_out))
    if len(lhs.shape) > RANK or len(rhs.shape) > RANK:
        raise ParamsError(f"{op.describe()}: operands of rank above {RANK}")
    x, y = _extended(lhs.shape), _extended(rhs.shape)
    batch = tuple(max(a, b) for a, b in zip(x[:BATCH_AXES], y[:BATCH_AXES], strict=True))
    adj_x, adj_y = op.params.adj_x, op.params.adj_y
    rows, depth = (x[4], x[3]) if adj_x else (x[3], x[4])
    cols = y[3] if adj_y else y[4]
    if (y[4] if adj_y else y[3]) != depth:
        raise ParamsError(f"{op.describe()}: the operands' depths differ")
    if math.prod(batch) * rows * cols != math.prod(out.shape):
        raise ParamsError(f"{op.describe()}: output {list(out.shape)} is not the product's size")
    return MatMulParams(
        lhs_offset=-z_lhs,
        rhs_offset=-z_rhs,
        output_offset=z_out,
        multiplier=multiplier,
        shift=shift,
        batch=(batch[0], batch[1], batch[2]),
        lhs_batch_stride=_batch_strides(x),
        rhs_batch_stride=_batch_strides(y),
        rows=rows,
        cols=cols,
        depth=depth,
        # element (i, k) of the left operand: stored [rows, depth], or [depth, rows] (adj_x)
        lhs_row_step=1 if adj_x else depth,
        lhs_depth_step=rows if adj_x else 1,
        # element (k, j) of the right operand: stored [depth, cols], or [cols, depth] (adj_y)
        rhs_depth_step=1 if adj_y else cols,
        rhs_col_step=depth if adj_y else 1,
    )


def op_params(graph: Graph, op: Operator) -> MatMulParams:
    """Kernel parameters of one rip_matmul.h operator of the graph."""
    return matmul_params(graph, op)
