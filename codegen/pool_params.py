"""Kernel parameters of kernels/rip_pool.h (AVERAGE_POOL_2D, MAX_POOL_2D,
GLOBAL_AVERAGE_POOL and a MEAN over H and W), computed from the graph IR exactly as
TensorFlow Lite Micro computes them (tensorflow/lite/micro/kernels/pooling_common.cc and
reduce_common.cc; reference kernels reference_integer_ops/pooling.h and
reference_ops::QuantizedMeanOrSum in reference/reduce.h):

- pooling: no requantization, the activation range of the output (PoolingPrepare);
- MEAN over H and W (GLOBAL_AVERAGE_POOL): QuantizeMultiplier(input_scale / output_scale),
  then 1 / (H W) folded into the multiplier as reference_ops::QuantizedMeanOrSum does.

Each function is pure and returns a frozen dataclass whose fields map one to one onto the C
params structs and dims; the code generator renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.allocator.planning.scratch import kernel_scratch_bytes
from rip.codegen.quant import (
    Dims,
    ParamsError,
    activation_range,
    int8_per_tensor,
    quantize_multiplier,
    where,
)
from rip.core.operators import WINDOW_POOLS, Op
from rip.core.shapes import nhwc
from rip.frontend.ir import Graph, Operator, PoolParams, ReduceParams


@dataclass(frozen=True)
class PoolKernelParams:
    """``rip_avg_pool_s8`` / ``rip_max_pool_s8``: rip_pool_params and dims."""

    kind: str  # AVERAGE_POOL_2D | MAX_POOL_2D
    input_dims: Dims
    filter_dims: Dims  # [1, FH, FW, 1]
    output_dims: Dims
    stride: tuple[int, int]
    padding: tuple[int, int]  # (top, left)
    activation: tuple[int, int]
    pad_counts: bool  # an explicit PAD was folded in: padded cells count
    pad_value: int  # the input zero point, the value of a padded cell
    scratch_bytes: int


@dataclass(frozen=True)
class MeanKernelParams:
    """``rip_global_avg_pool_s8``: rip_mean_params and dims. ``multiplier`` and ``shift``
    already carry the 1 / (H W) of the mean; ``requant_multiplier`` and ``requant_shift`` are
    QuantizeMultiplier(input_scale / output_scale) before that fold, for reference."""

    input_dims: Dims
    output_dims: Dims  # [N, 1, 1, C] whether or not the model keeps dims
    input_offset: int
    output_offset: int
    multiplier: int
    shift: int
    requant_multiplier: int
    requant_shift: int
    scratch_bytes: int


KernelParams = PoolKernelParams | MeanKernelParams


def fold_mean_count(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """reference_ops::QuantizedMeanOrSum: fold 1 / count into (multiplier, shift) with
    shift' = min(floor(log2 count), 32, 31 + shift) bits of headroom, truncating division."""
    if count < 1:
        raise ParamsError(f"mean over {count} elements")
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


def pool_params(graph: Graph, op: Operator) -> PoolKernelParams:
    """AVERAGE_POOL_2D / MAX_POOL_2D: TFLite Micro's PoolingPrepare (input and output must
    share their quantization; the activation range is the output's)."""
    if op.kind not in WINDOW_POOLS or not isinstance(op.params, PoolParams):
        raise ParamsError(f"{where(op)}: not a pooling layer")
    p = op.params
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    in_scale, in_zp = int8_per_tensor(x, op, "the input")
    out_scale, out_zp = int8_per_tensor(y, op, "the output")
    # PoolingPrepare's own test: float32 scales within 1e-6 and equal zero points.
    if abs(float(np.float32(in_scale) - np.float32(out_scale))) > 1e-6 or in_zp != out_zp:
        raise ParamsError(f"{where(op)}: input and output quantization differ")
    input_dims, output_dims = nhwc(x.shape), nhwc(y.shape)
    filter_dims = (1, p.filter[0], p.filter[1], 1)
    return PoolKernelParams(
        kind=op.kind,
        input_dims=input_dims,
        filter_dims=filter_dims,
        output_dims=output_dims,
        stride=p.stride,
        padding=(p.padding.top, p.padding.left),
        activation=activation_range(p.activation, y.quant),
        pad_counts=p.pad_counts,
        pad_value=in_zp,
        scratch_bytes=kernel_scratch_bytes(op.kind, input_dims, filter_dims, output_dims),
    )


def mean_params(graph: Graph, op: Operator) -> MeanKernelParams:
    """GLOBAL_AVERAGE_POOL (a MEAN over H and W, see rewrite.mean_to_global_pool), or such a
    MEAN itself: TFLite Micro's PrepareMeanOrSumHelper and QuantizedMeanOrSum."""
    axes_ok = isinstance(op.params, ReduceParams) and set(op.params.axes) == {1, 2}
    if op.kind not in (Op.GLOBAL_AVERAGE_POOL, Op.MEAN) or not axes_ok:
        raise ParamsError(f"{where(op)}: not a mean over H and W")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4:
        raise ParamsError(f"{where(op)}: input {x.shape} is not NHWC")
    in_scale, in_zp = int8_per_tensor(x, op, "the input")
    out_scale, out_zp = int8_per_tensor(y, op, "the output")
    n, h, w, c = x.shape
    real = float(np.float64(np.float32(in_scale)) / np.float64(np.float32(out_scale)))
    requant_multiplier, requant_shift = quantize_multiplier(real)
    multiplier, shift = fold_mean_count(requant_multiplier, requant_shift, h * w)
    input_dims, output_dims = (n, h, w, c), (n, 1, 1, c)
    return MeanKernelParams(
        input_dims=input_dims,
        output_dims=output_dims,
        input_offset=-in_zp,
        output_offset=out_zp,
        multiplier=multiplier,
        shift=shift,
        requant_multiplier=requant_multiplier,
        requant_shift=requant_shift,
        scratch_bytes=kernel_scratch_bytes(op.kind, input_dims, (1, 1, 1, 1), output_dims),
    )


def op_params(graph: Graph, op: Operator) -> KernelParams:
    """The parameters of whichever rip_pool.h kernel runs ``op``."""
    if op.kind in WINDOW_POOLS:
        return pool_params(graph, op)
    if op.kind in (Op.GLOBAL_AVERAGE_POOL, Op.MEAN):
        return mean_params(graph, op)
    raise ParamsError(f"{where(op)}: no rip_pool.h kernel for this operator")
