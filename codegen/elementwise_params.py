"""Kernel parameters of kernels/rip_elementwise.h (ADD, SUB, MUL), computed as TFLite
Micro's Prepare functions compute them (tensorflow/lite/micro/kernels/add_common.cc,
sub_common.cc, mul_common.cc; reference kernels reference_integer_ops/add.h and mul.h), bit
for bit.

Every function is pure and returns a frozen dataclass whose fields are the C struct's fields
plus the operand sizes the call needs, ready for a Jinja2 template. A model TFLite Micro
refuses at Prepare raises `ParamsError`, naming the reason.

The oracle is the installed TFLite Micro interpreter (wheel 0.dev20261023), checked against
its machine code where its source history disagrees: SUB divides scales in double there (the
2022 "avoid precision loss" fix, reverted in 2023 and since restored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rip.codegen.quant import (
    ParamsError,
    activation_range,
    f32,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
    scale_zp,
    tensor_size,
)
from rip.frontend.ir import Graph, Operator, Tensor

ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD/SUB headroom: |x - zp| << 20 stays below 2^31


@dataclass(frozen=True)
class AddParams:
    """rip_add_params (ADD and SUB) and the operand sizes of the call."""

    kind: str  # "ADD" | "SUB"
    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int
    input1_size: int
    input2_size: int
    output_size: int


@dataclass(frozen=True)
class MulParams:
    """rip_mul_params and the operand sizes of the call."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int
    input1_size: int
    input2_size: int
    output_size: int


def _broadcast_size(operand: Tensor, output: Tensor) -> int:
    """Element count of an operand the kernels read at i % n: its shape, without leading 1s,
    must be a suffix of the output's (full tensor, 1x1x1xC, scalar)."""
    shape = list(operand.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    out = list(output.shape)
    if shape and out[len(out) - len(shape) :] != shape:
        raise ParamsError(
            f"operand {operand.name!r} of shape {operand.shape} does not broadcast as a suffix"
            f" of output shape {output.shape}"
        )
    return math.prod(shape)


def _operand_sizes(input1: Tensor, input2: Tensor, output: Tensor) -> dict[str, int]:
    """The sizes the binary kernels' call passes: each input as a broadcast suffix."""
    return {
        "input1_size": _broadcast_size(input1, output),
        "input2_size": _broadcast_size(input2, output),
        "output_size": tensor_size(output),
    }


def add_params(
    input1: Tensor, input2: Tensor, output: Tensor, activation: str = "NONE", kind: str = "ADD"
) -> AddParams:
    """ADD (CalculateOpDataAdd) or SUB (CalculateOpDataSub): both inputs rescaled to twice
    the larger input scale with 20 bits of headroom, all three multipliers through
    QuantizeMultiplierSmallerThanOneExp, the ratios in double.

    TFLite Micro's SUB source of 2023-2026 wrote these ratios in float32; the installed
    interpreter computes them in double like ADD (its machine code, and 14 of 14 quantizations
    where the two differ; a test pins one)."""
    if kind not in ("ADD", "SUB"):
        raise ParamsError(f"add_params computes ADD or SUB, not {kind}")
    s1, z1 = scale_zp(input1)
    s2, z2 = scale_zp(input2)
    so, zo = scale_zp(output)
    twice = 2.0 * float(max(f32(s1), f32(s2)))
    real1, real2 = s1 / twice, s2 / twice
    real_out = twice / ((1 << ADD_LEFT_SHIFT) * so)
    try:
        m1, sh1 = quantize_multiplier_smaller_than_one_exp(real1)
        m2, sh2 = quantize_multiplier_smaller_than_one_exp(real2)
        mo, sho = quantize_multiplier_smaller_than_one_exp(real_out)
    except ValueError as e:  # TFLite aborts in TFLITE_CHECK
        raise ParamsError(f"{kind} {output.name!r}: {e}") from None
    lo, hi = activation_range(activation, output.quant)
    return AddParams(
        kind=kind,
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        left_shift=ADD_LEFT_SHIFT,
        input1_multiplier=m1,
        input1_shift=sh1,
        input2_multiplier=m2,
        input2_shift=sh2,
        output_multiplier=mo,
        output_shift=sho,
        activation_min=lo,
        activation_max=hi,
        **_operand_sizes(input1, input2, output),
    )


def mul_params(
    input1: Tensor, input2: Tensor, output: Tensor, activation: str = "NONE"
) -> MulParams:
    """MUL (CalculateOpDataMul): one multiplier s1 * s2 / s_out in double, any shift."""
    s1, z1 = scale_zp(input1)
    s2, z2 = scale_zp(input2)
    so, zo = scale_zp(output)
    m, shift = quantize_multiplier(s1 * s2 / so)
    lo, hi = activation_range(activation, output.quant)
    return MulParams(
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        output_multiplier=m,
        output_shift=shift,
        activation_min=lo,
        activation_max=hi,
        **_operand_sizes(input1, input2, output),
    )


KernelParams = AddParams | MulParams


def op_params(graph: Graph, op: Operator) -> KernelParams:
    """Kernel parameters of one rip_elementwise.h operator of the graph."""
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if op.kind in ("ADD", "SUB"):
        return add_params(ins[0], ins[1], out, p.activation, op.kind)
    if op.kind == "MUL":
        return mul_params(ins[0], ins[1], out, p.activation)
    raise ParamsError(f"{op.describe()} is not an elementwise kernel")
