"""Kernel parameters of kernels/rip_reduce.h (MEAN, SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX,
ARG_MIN), computed as TFLite Micro's Prepare functions compute them
(tensorflow/lite/micro/kernels/reduce_common.cc: PrepareMeanOrSumHelper,
PrepareMinMaxHelper; arg_min_max.cc; reference_ops::QuantizedMeanOrSum, ReduceGeneric and
ArgMinMax), bit for bit.

The input shape is given to the kernel with neighbouring axes of the same kind (reduced or
kept) merged, which changes neither the order of the elements nor which ones meet in an
output; a MEAN folds 1 / count into its multiplier exactly as QuantizedMeanOrSum does
(`rip.codegen.pool_params.fold_mean_count`, shared with the global pool). Each function is
pure and returns a frozen dataclass whose fields are the C struct's fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rip.codegen.pool_params import fold_mean_count
from rip.codegen.quant import (
    ParamsError,
    any_scale_zp,
    int8_per_tensor,
    quantize_multiplier,
    where,
)
from rip.core.operators import Op, of_family
from rip.frontend.ir import Graph, Operator, ReduceParams

MAX_RANK = 8  # RIP_REDUCE_MAX_RANK in kernels/rip_reduce.h


@dataclass(frozen=True)
class ReduceKernelParams:
    """rip_reduce_params: merged input extents, the reduced-axis mask, and (MEAN, SUM) the
    requantization."""

    kind: str
    dims: tuple[int, ...]
    reduced: int  # bit k: merged axis k is reduced
    count: int  # input elements per output element
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int


def merge_axes(shape: tuple[int, ...], axes: frozenset[int]) -> tuple[tuple[int, ...], int]:
    """``shape`` with extent-1 axes dropped and runs of neighbouring reduced (or kept) axes
    merged into one, and the mask of the merged reduced axes. The row-major order of the
    elements, and which of them each output gathers, are unchanged."""
    dims: list[int] = []
    kinds: list[bool] = []
    for k, d in enumerate(shape):
        if d == 1:
            continue
        r = k in axes
        if kinds and kinds[-1] == r:
            dims[-1] *= d
        else:
            dims.append(d)
            kinds.append(r)
    if not dims:
        dims, kinds = [1], [False]
    return tuple(dims), sum(1 << k for k, r in enumerate(kinds) if r)


def reduce_params(graph: Graph, op: Operator) -> ReduceKernelParams:
    """The rip_reduce_params of one reduction (see the module docstring)."""
    if op.kind not in of_family("reduce") or not isinstance(op.params, ReduceParams):
        raise ParamsError(f"{where(op)}: not a reduction")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    wide = x.dtype == "int16"  # 16x8 MEAN, SUM: QuantizedMeanOrSum<int16_t>
    if wide and (op.kind not in (Op.MEAN, Op.SUM) or y.dtype != "int16"):
        raise ParamsError(f"{where(op)}: an int16 {op.kind} (rip's 16x8 reductions: MEAN, SUM)")
    quant = any_scale_zp if wide else None
    in_scale, in_zp = quant(x) if quant else int8_per_tensor(x, op, "the input")
    axes = frozenset(op.params.axes)
    count = math.prod(x.shape[k] for k in axes)
    kept = math.prod(d for k, d in enumerate(x.shape) if k not in axes)
    out_elements = math.prod(y.shape)
    if kept != out_elements:
        raise ParamsError(
            f"{where(op)}: output {list(y.shape)} does not hold the {kept} elements left by"
            f" reducing axes {sorted(axes)} of {list(x.shape)}"
        )
    dims, reduced = merge_axes(x.shape, axes)
    if len(dims) > MAX_RANK:
        raise ParamsError(f"{where(op)}: rank {len(dims)} after merging axes, at most {MAX_RANK}")
    multiplier = shift = out_zp = 0
    if op.kind in (Op.ARG_MAX, Op.ARG_MIN):
        if y.dtype != "int32":
            raise ParamsError(
                f"{where(op)}: output tensor {y.id} {y.name!r} is {y.dtype}; TFLite Micro's"
                f" {op.kind} writes int32 only"
            )
        if len(axes) != 1:
            raise ParamsError(f"{where(op)}: reduces {len(axes)} axes, {op.kind} takes one")
    else:
        out_scale, out_zp = quant(y) if quant else int8_per_tensor(y, op, "the output")
        if op.kind in (Op.REDUCE_MAX, Op.REDUCE_MIN):
            # EvalMinMaxHelper: the float32 scales compared as doubles, and the zero points.
            if np.float32(in_scale) != np.float32(out_scale) or in_zp != out_zp:
                raise ParamsError(f"{where(op)}: input and output quantization differ")
        else:
            real = float(np.float64(np.float32(in_scale)) / np.float64(np.float32(out_scale)))
            multiplier, shift = quantize_multiplier(real)
            if op.kind == Op.MEAN:
                multiplier, shift = fold_mean_count(multiplier, shift, count)
    return ReduceKernelParams(
        kind=op.kind,
        dims=dims,
        reduced=reduced,
        count=count,
        input_zero_point=in_zp,
        output_zero_point=out_zp,
        multiplier=multiplier,
        shift=shift,
    )
