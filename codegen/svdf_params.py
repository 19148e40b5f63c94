"""Kernel parameters of kernels/rip_svdf.h (SVDF, int8 with int8 or int16 state), as TFLite Micro's
PrepareSvdf computes them.

Two requantizations: the feature product into the state's scale, ``s_in * s_feature /
s_state``, and the time product into the output's, ``s_state * s_time / s_out``; each in
double from the float32 scales (`quant.effective_scale`), then QuantizeMultiplier'd. The
TFLite Micro source of August 2026 writes these products in float32; the interpreter the
tests run (the tflite-micro wheel of October 2026) computes them in double: where the ratio
sits at a power of two the two differ (0.25 exactly against 0.2500000045, multiplier 2^30
against 2^30 + 20), and a Hypothesis stream found the tie it changes; the wheel is the
oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.codegen.quant import (
    ParamsError,
    any_scale_zp,
    effective_scale,
    int8_per_tensor,
    quantize_multiplier,
)
from rip.frontend.ir import Graph, Operator, SvdfParams


@dataclass(frozen=True)
class SvdfKernelParams:
    """rip_svdf_params, and the op's constants and state."""

    batch: int
    input_size: int
    filters: int
    rank: int
    memory: int
    input_zero_point: int
    state_zero_point: int
    output_zero_point: int
    feature_multiplier: int
    feature_shift: int
    output_multiplier: int
    output_shift: int
    feature: bytes
    time: tuple[int, ...]  # int8 or int16 values
    bias: tuple[int, ...]
    state: int  # the state tensor's id (its bytes in the persistent region)
    state_type: str  # "int8_t" or "int16_t": the time weights' and the state's C type


def op_params(graph: Graph, op: Operator) -> SvdfKernelParams:
    p = op.params
    if not isinstance(p, SvdfParams):
        raise ParamsError(f"{op.describe()}: not an SVDF")
    x, wf, wt, b = (graph.tensors[t] for t in op.inputs[:4])
    state, out = graph.tensors[p.state], graph.tensors[op.outputs[0]]
    s_in, z_in = int8_per_tensor(x, op, "the input")
    s_wf, _ = int8_per_tensor(wf, op, "the feature weights")
    s_wt, _ = any_scale_zp(wt)  # int8, or int16 with an int16 state
    s_st, z_st = any_scale_zp(state)
    s_out, z_out = int8_per_tensor(out, op, "the output")
    if wf.data is None or wt.data is None or b.data is None:
        raise ParamsError(f"{op.describe()}: the weights have no data (compile with weights)")
    wide = wt.dtype == "int16"
    m1, e1 = quantize_multiplier(effective_scale(s_in, s_wf, s_st))
    m2, e2 = quantize_multiplier(effective_scale(s_st, s_wt, s_out))
    filters, memory = wt.shape
    return SvdfKernelParams(
        batch=x.shape[0],
        input_size=x.shape[1],
        filters=filters,
        rank=p.rank,
        memory=memory,
        input_zero_point=z_in,
        state_zero_point=z_st,
        output_zero_point=z_out,
        feature_multiplier=m1,
        feature_shift=e1,
        output_multiplier=m2,
        output_shift=e2,
        feature=wf.data,
        time=tuple(int(v) for v in np.frombuffer(wt.data, "<i2" if wide else "<i1")),
        bias=tuple(int(v) for v in np.frombuffer(b.data, "<i4")),
        state=p.state,
        state_type="int16_t" if wide else "int8_t",
    )
