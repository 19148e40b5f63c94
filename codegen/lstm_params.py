"""Kernel parameters of kernels/rip_lstm.h (UNIDIRECTIONAL_SEQUENCE_LSTM), as TFLite Micro's
Prepare computes them (unidirectional_sequence_lstm.cc, lstm_eval_common.cc:
PrepareGateParametersInteger, CreateInterGateMulParams, CreateLstmCellStateInfo).

Every gate's two FULLY_CONNECTEDs go onto int16 at 2^-12 (``s_in * s_w / 2^-12``, the
product in double from the float32 scales, QuantizeMultiplier'd); the gates leave their
LOGISTIC / TANH at 2^-15; the three element products requantize ``s1 * s2 / s_out`` the same
way (forget x cell and input x cell-gate onto the cell scale, tanh(cell) x output gate onto
the hidden state's); the cell clip is ``cell_clip / s_cell`` in double, truncated to int16;
tanh of the cell rescales by the cell scale's rounded log2 (TFLite's CheckedLog2).
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
    input_weights: tuple[bytes, ...]
    recurrent_weights: tuple[bytes, ...]
    bias: tuple[tuple[int, ...], ...]
    bias_type: str  # int32_t (int8 activations) or int64_t (16x8)
    hidden_state: int  # the state tensors' ids (their bytes in the persistent region)
    cell_state: int


def _product(s1: float, s2: float, s_out: float) -> Quant:
    """CreateInterGateMulParams / GetQuantizedConvolutionMultipler: s1 s2 / s_out in double
    from float32 scales, QuantizeMultiplier'd."""
    return quantize_multiplier(effective_scale(s1, s2, s_out))


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
    weights, recurrent, biases, fc_x, fc_h = [], [], [], [], []
    code = "<i8" if wide else "<i4"
    for w_x, w_h, b in GATE_OPERANDS:
        tx, th, tb = (graph.tensors[op.inputs[k]] for k in (w_x, w_h, b))
        if tx.data is None or th.data is None or tb.data is None:
            raise ParamsError(f"{op.describe()}: the weights have no data (compile with weights)")
        weights.append(tx.data)
        recurrent.append(th.data)
        biases.append(tuple(int(v) for v in np.frombuffer(tb.data, code)))
        fc_x.append(_product(s_x, any_scale_zp(tx)[0], GATE_INPUT))
        fc_h.append(_product(s_h, any_scale_zp(th)[0], GATE_INPUT))
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
        features=x.shape[2],
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
        input_weights=tuple(weights),
        recurrent_weights=tuple(recurrent),
        bias=tuple(biases),
        bias_type="int64_t" if wide else "int32_t",
        hidden_state=p.hidden,
        cell_state=p.cell,
    )
