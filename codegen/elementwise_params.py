"""Kernel parameters of kernels/rip_elementwise.h (ADD, SUB, MUL, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, PRELU, ADD_N, and the general broadcast shape), computed as TFLite
Micro's Prepare functions compute them (tensorflow/lite/micro/kernels/add_common.cc,
sub_common.cc, mul_common.cc, maximum_minimum.cc, squared_difference.cc, prelu_common.cc,
add_n.cc; reference kernels reference_integer_ops/add.h and mul.h, reference/prelu.h,
add_n.h), bit for bit.

Every function is pure and returns a frozen dataclass whose fields are the C struct's fields
plus the operand sizes the call needs, ready for a Jinja2 template. A model TFLite Micro
refuses at Prepare raises `ParamsError`, naming the reason.

The oracle is the installed TFLite Micro interpreter (wheel 0.dev20261023), checked against
its machine code where its source history disagrees: SUB divides scales in double there (the
2022 "avoid precision loss" fix, reverted in 2023 and since restored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypedDict

from rip.codegen.fixedpoint import multiply_by_quantized_multiplier
from rip.codegen.quant import (
    ParamsError,
    activation_range,
    any_scale_zp,
    f32,
    quantize_multiplier,
    quantize_multiplier_smaller_than_one_exp,
    scale_zp,
    tensor_size,
)
from rip.core.kernel_variants import ADD_TERMS_MIN_ELEMENTS
from rip.core.operators import Op
from rip.core.terms import Activation
from rip.frontend.ir import Graph, Operator, Tensor

ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD/SUB headroom: |x - zp| << 20 stays below 2^31
# the 16x8 kernels' (TFLite Micro's int16 ADD / SUB, add_common.cc): |x - zp| << 15
ADD_LEFT_SHIFT_16 = 15
INT16_RANGE = (-32768, 32767)


def _operand_quant(t: Tensor, output: Tensor) -> tuple[float, int]:
    """Scale and zero point of an operand of an int8 op, or of a 16x8 one (an int16
    output: every operand int16, as TFLite Micro's int16 ADD, SUB and MUL read them)."""
    if output.dtype != "int16":
        return scale_zp(t)
    if t.dtype != "int16":
        raise ParamsError(f"tensor {t.name!r} is {t.dtype} in a 16x8 op (int16 operands)")
    return any_scale_zp(t)


def _output_range(output: Tensor) -> tuple[int, int]:
    return INT16_RANGE if output.dtype == "int16" else (-128, 127)


@dataclass(frozen=True)
class AddParams:
    """rip_add_params (ADD and SUB) and the operand sizes of the call."""

    kind: Op  # ADD | SUB | SQUARED_DIFFERENCE
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
    # ADD / SUB: rip_add_params.terms (`add_terms`), or None: the kernel computes them
    terms: tuple[int, ...] | None = None


def add_terms(p: AddParams) -> tuple[int, ...]:
    """rip_add_params.terms: for every int8 byte x (index x + 128), input 1's
    MultiplyByQuantizedMultiplierSmallerThanOneExp((x + input1_offset) << left_shift, m1,
    shift1), TFLite Micro's arithmetic evaluated here, then input 2's (negated for SUB, whose
    raw sum is term1 - term2)."""
    if p.kind not in (Op.ADD, Op.SUB):
        raise ParamsError(f"add_terms is ADD's and SUB's, not {p.kind}")
    sign = 1 if p.kind == Op.ADD else -1

    def term(x: int, offset: int, multiplier: int, shift: int) -> int:
        return multiply_by_quantized_multiplier((x + offset) << p.left_shift, multiplier, shift)

    one = [term(x, p.input1_offset, p.input1_multiplier, p.input1_shift) for x in range(-128, 128)]
    two = [
        sign * term(x, p.input2_offset, p.input2_multiplier, p.input2_shift)
        for x in range(-128, 128)
    ]
    return (*one, *two)


def with_add_terms(p: AddParams) -> AddParams:
    """``p`` with its term table where the kernel gains by it (ADD or SUB of at least
    `ADD_TERMS_MIN_ELEMENTS` output elements), else ``p``."""
    if p.kind not in (Op.ADD, Op.SUB) or p.output_size < ADD_TERMS_MIN_ELEMENTS:
        return p
    return replace(p, terms=add_terms(p))


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


class OperandSizes(TypedDict):
    input1_size: int
    input2_size: int
    output_size: int


def _operand_sizes(input1: Tensor, input2: Tensor, output: Tensor) -> OperandSizes:
    """The sizes the flat binary kernels' call passes (each input's element count; the
    flat call is only emitted where both broadcast as suffixes, see `broadcast_params`)."""
    return {
        "input1_size": tensor_size(input1),
        "input2_size": tensor_size(input2),
        "output_size": tensor_size(output),
    }


def is_suffix(operand: Tensor, output: Tensor) -> bool:
    """Whether the flat kernels' i % n reading broadcasts ``operand`` to ``output``."""
    try:
        _broadcast_size(operand, output)
    except ParamsError:
        return False
    return True


@dataclass(frozen=True)
class BroadcastShape:
    """rip_broadcast: rows of ``row`` output elements over the outer axes ``dims``, each
    operand's start of a row advancing by its ``stride`` (0: broadcast along that axis),
    ``row1`` / ``row2`` elements of it per row (``row``, or 1 repeated)."""

    dims: tuple[int, ...]
    stride1: tuple[int, ...]
    stride2: tuple[int, ...]
    row: int
    row1: int
    row2: int


@dataclass(frozen=True)
class BroadcastCall:
    """The parameters of a general broadcast call: the flat kernel's and the shape."""

    kernel: object
    shape: BroadcastShape


MAX_BROADCAST_RANK = 6  # RIP_BROADCAST_MAX_RANK in kernels/rip_elementwise.h


def broadcast_shape(
    input1: Tensor, input2: Tensor, output: Tensor, always: bool = False
) -> BroadcastShape | None:
    """The rip_broadcast of a binary op whose operands do not both broadcast as suffixes
    (None when they do, unless ``always``: the flat call is enough). Unit output axes are
    dropped and neighbouring axes merged where each operand is full on both or broadcast on
    both, which keeps every element where it was."""
    if not always and is_suffix(input1, output) and is_suffix(input2, output):
        return None
    rank = len(output.shape)
    a = (1,) * (rank - len(input1.shape)) + tuple(input1.shape)
    b = (1,) * (rank - len(input2.shape)) + tuple(input2.shape)
    axes: list[list[int]] = []  # [extent, operand 1 full, operand 2 full]
    for x, y, o in zip(a, b, output.shape, strict=True):
        if (x not in (1, o)) or (y not in (1, o)):
            raise ParamsError(
                f"operands {input1.shape} and {input2.shape} do not broadcast to {output.shape}"
            )
        if o == 1:
            continue
        full = [int(x == o), int(y == o)]
        if axes and axes[-1][1:] == full:
            axes[-1][0] *= o
        else:
            axes.append([o, *full])
    if not axes:
        return BroadcastShape((), (), (), 1, 1, 1)
    strides: list[list[int]] = [[], []]
    for k in (0, 1):
        acc = 1
        for extent, *full in reversed(axes):
            strides[k].append(acc if full[k] else 0)
            acc *= extent if full[k] else 1
        strides[k].reverse()
    row, full1, full2 = axes[-1]
    outer = axes[:-1]
    if len(outer) > MAX_BROADCAST_RANK:
        raise ParamsError(f"broadcast over {len(outer) + 1} merged axes, at most 7")
    return BroadcastShape(
        dims=tuple(e for e, *_ in outer),
        stride1=tuple(strides[0][:-1]),
        stride2=tuple(strides[1][:-1]),
        row=row,
        row1=row if full1 else 1,
        row2=row if full2 else 1,
    )


def add_params(
    input1: Tensor,
    input2: Tensor,
    output: Tensor,
    activation: Activation = Activation.NONE,
    kind: Op = Op.ADD,
) -> AddParams:
    """ADD (CalculateOpDataAdd) or SUB (CalculateOpDataSub): both inputs rescaled to twice
    the larger input scale with 20 bits of headroom, all three multipliers through
    QuantizeMultiplierSmallerThanOneExp, the ratios in double.

    TFLite Micro's SUB source of 2023-2026 wrote these ratios in float32; the installed
    interpreter computes them in double like ADD (its machine code, and 14 of 14 quantizations
    where the two differ; a test pins one)."""
    if kind not in (Op.ADD, Op.SUB):
        raise ParamsError(f"add_params computes ADD or SUB, not {kind}")
    s1, z1 = _operand_quant(input1, output)
    s2, z2 = _operand_quant(input2, output)
    so, zo = _operand_quant(output, output)
    left_shift = ADD_LEFT_SHIFT_16 if output.dtype == "int16" else ADD_LEFT_SHIFT
    twice = 2.0 * float(max(f32(s1), f32(s2)))
    real1, real2 = s1 / twice, s2 / twice
    real_out = twice / ((1 << left_shift) * so)
    try:
        m1, sh1 = quantize_multiplier_smaller_than_one_exp(real1)
        m2, sh2 = quantize_multiplier_smaller_than_one_exp(real2)
        mo, sho = quantize_multiplier_smaller_than_one_exp(real_out)
    except ValueError as e:  # TFLite aborts in TFLITE_CHECK
        raise ParamsError(f"{kind} {output.name!r}: {e}") from None
    lo, hi = activation_range(activation, output.quant, *_output_range(output))
    return AddParams(
        kind=kind,
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        left_shift=left_shift,
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
    input1: Tensor, input2: Tensor, output: Tensor, activation: Activation = Activation.NONE
) -> MulParams:
    """MUL (CalculateOpDataMul): one multiplier s1 * s2 / s_out in double, any shift; a
    16x8 one's zero points must all be 0, as TFLite Micro's Prepare ensures."""
    s1, z1 = _operand_quant(input1, output)
    s2, z2 = _operand_quant(input2, output)
    so, zo = _operand_quant(output, output)
    if output.dtype == "int16" and (z1, z2, zo) != (0, 0, 0):
        raise ParamsError(
            f"MUL {output.name!r}: int16 zero points {z1}, {z2}, {zo}; TFLite Micro's 16x8"
            " MUL takes 0"
        )
    m, shift = quantize_multiplier(s1 * s2 / so)
    lo, hi = activation_range(activation, output.quant, *_output_range(output))
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


@dataclass(frozen=True)
class MaxMinParams:
    """rip_max_min_params (MAXIMUM, MINIMUM: raw comparison, no requantization)."""

    maximum: int
    input1_size: int
    input2_size: int
    output_size: int


@dataclass(frozen=True)
class PreluParams:
    """rip_prelu_params and the operand sizes of the call."""

    input_offset: int
    alpha_offset: int
    output_offset: int
    output1_multiplier: int
    output1_shift: int
    output2_multiplier: int
    output2_shift: int
    input1_size: int
    input2_size: int
    output_size: int


@dataclass(frozen=True)
class AddNParams:
    """rip_add_n_params and the call's element count."""

    num_inputs: int
    input_offset: int
    output_offset: int
    left_shift: int
    input_multiplier: int
    input_shift: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int
    size: int


SQUARED_DIFFERENCE_LEFT_SHIFT = 7  # squared_difference.cc: 255^2 << 14 fits int32


def squared_difference_params(input1: Tensor, input2: Tensor, output: Tensor) -> AddParams:
    """SQUARED_DIFFERENCE (PrepareQuantized): ADD's rescaling of both inputs to twice the
    larger scale, left shift 7; the output multiplier (2 max s)^2 / (2^14 s_out), whose
    denominator is a float32 product, through QuantizeMultiplier."""
    s1, z1 = scale_zp(input1)
    s2, z2 = scale_zp(input2)
    so, zo = scale_zp(output)
    twice = 2.0 * float(max(f32(s1), f32(s2)))
    shift2 = 1 << (2 * SQUARED_DIFFERENCE_LEFT_SHIFT)
    real_out = twice * twice / float(f32(shift2) * f32(so))
    try:
        m1, sh1 = quantize_multiplier_smaller_than_one_exp(s1 / twice)
        m2, sh2 = quantize_multiplier_smaller_than_one_exp(s2 / twice)
    except ValueError as e:
        raise ParamsError(f"SQUARED_DIFFERENCE {output.name!r}: {e}") from None
    mo, sho = quantize_multiplier(real_out)
    return AddParams(
        kind=Op.SQUARED_DIFFERENCE,
        input1_offset=-z1,
        input2_offset=-z2,
        output_offset=zo,
        left_shift=SQUARED_DIFFERENCE_LEFT_SHIFT,
        input1_multiplier=m1,
        input1_shift=sh1,
        input2_multiplier=m2,
        input2_shift=sh2,
        output_multiplier=mo,
        output_shift=sho,
        activation_min=-128,
        activation_max=127,
        **_operand_sizes(input1, input2, output),
    )


def prelu_params(input: Tensor, alpha: Tensor, output: Tensor) -> PreluParams:
    """PRELU (CalculatePreluParams): s_in / s_out and s_in s_alpha / s_out in double, both
    through QuantizeMultiplier."""
    si, zi = scale_zp(input)
    sa, za = scale_zp(alpha)
    so, zo = scale_zp(output)
    m1, sh1 = quantize_multiplier(si / so)
    m2, sh2 = quantize_multiplier(si * sa / so)
    return PreluParams(
        input_offset=-zi,
        alpha_offset=-za,
        output_offset=zo,
        output1_multiplier=m1,
        output1_shift=sh1,
        output2_multiplier=m2,
        output2_shift=sh2,
        **_operand_sizes(input, alpha, output),
    )


ADD_N_LEFT_SHIFT = 20  # add_n.cc kAddNIntegerShift


def add_n_params(inputs: list[Tensor], output: Tensor) -> AddNParams:
    """ADD_N (add_n.cc CalculateOpData): every input shares the first's quantization; each
    rescaled by s / (2 s) with 20 bits of headroom, the sum by 2 s / (2^20 s_out)."""
    s, z = scale_zp(inputs[0])
    for t in inputs[1:]:
        st, zt = scale_zp(t)
        if f32(st) != f32(s) or zt != z:
            raise ParamsError(
                f"ADD_N input {t.name!r} is quantized ({st}, {zt}), the first input ({s}, {z});"
                " TFLite Micro needs them equal"
            )
    so, zo = scale_zp(output)
    twice = 2.0 * s
    try:
        mi, shi = quantize_multiplier_smaller_than_one_exp(s / twice)
        mo, sho = quantize_multiplier_smaller_than_one_exp(twice / ((1 << ADD_N_LEFT_SHIFT) * so))
    except ValueError as e:
        raise ParamsError(f"ADD_N {output.name!r}: {e}") from None
    return AddNParams(
        num_inputs=len(inputs),
        input_offset=-z,
        output_offset=zo,
        left_shift=ADD_N_LEFT_SHIFT,
        input_multiplier=mi,
        input_shift=shi,
        output_multiplier=mo,
        output_shift=sho,
        activation_min=-128,
        activation_max=127,
        size=tensor_size(output),
    )


KernelParams = AddParams | MulParams | MaxMinParams | PreluParams | AddNParams


def op_params(graph: Graph, op: Operator) -> KernelParams:
    """Kernel parameters of one rip_elementwise.h operator of the graph."""
    ins = [graph.tensors[t] for t in op.inputs if t >= 0]
    out = graph.tensors[op.outputs[0]]
    p = op.params
    if op.kind in (Op.ADD, Op.SUB):
        return add_params(ins[0], ins[1], out, p.activation, op.kind)
    if op.kind == Op.MUL:
        return mul_params(ins[0], ins[1], out, p.activation)
    if op.kind in (Op.MAXIMUM, Op.MINIMUM):
        return MaxMinParams(int(op.kind == Op.MAXIMUM), **_operand_sizes(ins[0], ins[1], out))
    if op.kind == Op.SQUARED_DIFFERENCE:
        return squared_difference_params(ins[0], ins[1], out)
    if op.kind == Op.PRELU:
        return prelu_params(ins[0], ins[1], out)
    if op.kind == Op.ADD_N:
        return add_n_params(ins, out)
    raise ParamsError(f"{op.describe()} is not an elementwise kernel")
