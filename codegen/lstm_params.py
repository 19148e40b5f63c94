"""Kernel parameters of kernels/rip_lstm.h (UNIDIRECTIONAL_SEQUENCE_LSTM), as TFLite Micro's
Prepare computes them (unidirectional_sequence_lstm.cc, lstm_eval_common.cc:
PrepareGateParametersInteger, CreateInterGateMulParams, CreateLstmCellStateInfo).

Every gate's two FULLY_CONNECTEDs go onto int16 at 2^-12 (``s_in * s_w / 2^-12``, the
product in double from the float32 scales, QuantizeMultiplier'd); the gates leave their
LOGISTIC / TANH at 2^-15; the three element products requantize ``s1 * s2 / s_out`` the same
way (forget x cell and input x cell-gate onto the cell scale, tanh(cell) x output gate onto
the hidden state's); the cell clip is ``cell_clip / s_cell`` in double, truncated to int16;
tanh of the cell rescales by the cell scale's rounded log2 (TFLite's CheckedLog2).

The constants are laid out for the kernel's dot products (`pack_gates`): per unit, its four
gates' weight rows side by side in rip_gemv.h's 1 x 4 layout, and per unit and gate each
FULLY_CONNECTED's starting sum, the input offset times the row's weight sum folded into it
(`folded_sums`): sum_k (x_k + offset) w_k = offset sum_k w_k + sum_k x_k w_k, so the loops
multiply the raw activations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rip.codegen.activation_params import checked_log2
from rip.codegen.quant import ParamsError, any_scale_zp, effective_scale, quantize_multiplier
from rip.frontend.ir import Graph, LstmParams, Operator

GATE_INPUT = 2.0**-12  # the gates' FULLY_CONNECTED output scale (Q3.12)
GATE_OUTPUT = 2.0**-15  # LOGISTIC / TANH onto Q0.15
# per gate (input, forget, cell, output: RIP_LSTM_*_GATE): its input weights, recurrent
# weights and bias among the op's inputs
GATE_OPERANDS = ((1, 5, 12), (2, 6, 13), (3, 7, 14), (4, 8, 15))

Quant = tuple[int, int]


@dataclass(frozen=True)
class LstmKernelParams:
    """rip_lstm_params and the op's constants and state."""

    wide: int
    time_major: int
    batch: int
    steps: int
    features: int
    units: int
    input_offset: int
    hidden_offset: int
    hidden_zero_point: int
    hidden_min: int
    hidden_max: int
    cell_clip: int
    cell_tanh_multiplier: int
    cell_tanh_shift: int
    input_fc: tuple[Quant, ...]
    recurrent_fc: tuple[Quant, ...]
    forget_cell: Quant
    input_cell: Quant
    hidden: Quant
    weights: bytes  # pack_gates: per unit, the input then the recurrent rows of its 4 gates
    input_sums: tuple[int, ...]  # [units][4]: bias + input offset x row sum (folded_sums)
    recurrent_sums: tuple[int, ...]  # [units][4]: hidden offset x row sum
    sum_type: str  # int32_t (int8 activations: wrapping as the reference's sums) or int64_t
    hidden_state: int  # the state tensors' ids (their bytes in the persistent region)
    cell_state: int


def _product(s1: float, s2: float, s_out: float) -> Quant:
    """CreateInterGateMulParams / GetQuantizedConvolutionMultipler: s1 s2 / s_out in double
    from float32 scales, QuantizeMultiplier'd."""
    return quantize_multiplier(effective_scale(s1, s2, s_out))


def pack_gates(rows: list[np.ndarray]) -> np.ndarray:
    """Four gates' weights ``[units, k]`` as [units, 2 * k4 * 2]: per unit, the gate pairs
    (input, forget) and (cell, output), each pair's two rows of k4 = k rounded up to 4 taps
    (zero padded) with their words interleaved (rip_gemv.h's rip_rq_dot_1x4 layout: one pair
    is ``wa``, the next ``wb``)."""
    w = np.stack([np.asarray(r, np.int8) for r in rows])  # [4, units, k]
    units, k = w.shape[1:]
    k4 = -(-k // 4) * 4
    w = np.pad(w, ((0, 0), (0, 0), (0, k4 - k)))
    # gate 2 p + m: pair p, member m; per pair and group of 4 taps, member 0's word then 1's
    return w.reshape(2, 2, units, k4 // 4, 4).transpose(2, 0, 3, 1, 4).reshape(units, -1)


def folded_sums(rows: np.ndarray, offset: int, bias: np.ndarray | None, wide: bool) -> list[int]:
    """Per row, ``bias + offset * sum(row)``: the reference's starting sum with the offset
    folded in; int8 activations wrap it to int32 as the reference's int32 sums wrap (the
    same value modulo 2^32), 16x8 keep it in int64 (exact)."""
    sums = rows.astype(np.int64).sum(axis=1) * offset
    if bias is not None:
        sums = sums + bias.astype(np.int64)
    if wide:
        return [int(v) for v in sums]
    return [int(v) for v in sums.astype(np.uint64).astype(np.uint32).astype(np.int32)]


def op_params(graph: Graph, op: Operator) -> LstmKernelParams:
    p = op.params
    if not isinstance(p, LstmParams):
        raise ParamsError(f"{op.describe()}: not an LSTM")
    x = graph.tensors[op.inputs[0]]
    hidden, cell = graph.tensors[p.hidden], graph.tensors[p.cell]
    wide = x.dtype == "int16"
    s_x, z_x = any_scale_zp(x)
    s_h, z_h = any_scale_zp(hidden)
    s_c, _ = any_scale_zp(cell)
    time_major = p.time_major
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    units = graph.tensors[op.inputs[5]].shape[0]
    features = x.shape[2]
    weights, recurrent, sums_x, sums_h, fc_x, fc_h = [], [], [], [], [], []
    code = "<i8" if wide else "<i4"
    for w_x, w_h, b in GATE_OPERANDS:
        tx, th, tb = (graph.tensors[op.inputs[k]] for k in (w_x, w_h, b))
        if tx.data is None or th.data is None or tb.data is None:
            raise ParamsError(f"{op.describe()}: the weights have no data (compile with weights)")
        weights.append(np.frombuffer(tx.data, np.int8).reshape(units, features))
        recurrent.append(np.frombuffer(th.data, np.int8).reshape(units, units))
        bias = np.frombuffer(tb.data, code)
        sums_x.append(folded_sums(weights[-1], -z_x, bias, wide))
        sums_h.append(folded_sums(recurrent[-1], -z_h, None, wide))
        fc_x.append(_product(s_x, any_scale_zp(tx)[0], GATE_INPUT))
        fc_h.append(_product(s_h, any_scale_zp(th)[0], GATE_INPUT))
    packed = np.concatenate([pack_gates(weights), pack_gates(recurrent)], axis=1)
    power, _ = checked_log2(s_c)
    tanh_shift = 15 + power - 3
    clip = 0
    cell_clip = float(np.float32(p.cell_clip))
    if cell_clip > 0:
        clip = int(min(max(cell_clip / float(np.float32(s_c)), -32768.0), 32767.0))
    lo, hi = (-32768, 32767) if wide else (-128, 127)
    return LstmKernelParams(
        wide=int(wide),
        time_major=int(time_major),
        batch=batch,
        steps=steps,
        features=features,
        units=units,
        input_offset=-z_x,
        hidden_offset=-z_h,
        hidden_zero_point=z_h,
        hidden_min=lo,
        hidden_max=hi,
        cell_clip=clip,
        cell_tanh_multiplier=3 if tanh_shift < 0 else 0,
        cell_tanh_shift=abs(tanh_shift),
        input_fc=tuple(fc_x),
        recurrent_fc=tuple(fc_h),
        forget_cell=_product(GATE_OUTPUT, s_c, s_c),
        input_cell=_product(GATE_OUTPUT, GATE_OUTPUT, s_c),
        hidden=_product(GATE_OUTPUT, GATE_OUTPUT, s_h),
        weights=packed.tobytes(),
        input_sums=tuple(v for unit in zip(*sums_x, strict=True) for v in unit),
        recurrent_sums=tuple(v for unit in zip(*sums_h, strict=True) for v in unit),
        sum_type="int64_t" if wide else "int32_t",
        hidden_state=p.hidden,
        cell_state=p.cell,
    )
