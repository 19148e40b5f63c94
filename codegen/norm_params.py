"""Kernel parameters of kernels/rip_norm.h (L2_NORMALIZATION), as TFLite Micro's
l2norm.cc Prepare computes them: the input zero point, rows and depth (the last axis).

The int8 output is in 1/128 units whatever the output tensor says (TFLite Micro does not
check its scale or zero point), so only rank and fused activation are refused, as TFLite
Micro refuses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rip.codegen.quant import ParamsError, scale_zp
from rip.core.operators import Op
from rip.core.terms import Activation
from rip.frontend.ir import Graph, Operator


@dataclass(frozen=True)
class L2NormParams:
    """rip_l2norm_params."""

    input_zero_point: int
    outer_size: int
    depth: int


def op_params(graph: Graph, op: Operator) -> L2NormParams:
    """Kernel parameters of one rip_norm.h operator of the graph."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.kind != Op.L2_NORMALIZATION:
        raise ParamsError(f"{op.describe()} is not a normalization kernel")
    if len(x.shape) > 4 or x.shape != y.shape or not x.shape:
        raise ParamsError(f"L2_NORMALIZATION of {x.shape} -> {y.shape} (TFLite Micro: <= 4-D)")
    if getattr(op.params, "activation", Activation.NONE) != Activation.NONE:
        raise ParamsError(f"L2_NORMALIZATION with fused {op.params.activation} (TFLite refuses)")
    _, zp = scale_zp(x)
    return L2NormParams(zp, math.prod(x.shape[:-1]), x.shape[-1])
