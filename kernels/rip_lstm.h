/*
 * rip kernels: UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite Micro's integer LSTM bit for bit
 * (lstm_eval.h EvalLstm): int8 activations with an int16 cell state and int32 biases
 * (8x8->16), or int16 activations with int64 biases (16x8); int8 weights, one scale each.
 *
 * Each step, for each gate (input, forget, cell, output), the input's and the hidden
 * state's FULLY_CONNECTED onto int16 at scale 2^-12 are added with saturation and go
 * through the int16 LOGISTIC (the cell gate: TANH, its fused activation) onto 2^-15; then c = f * c + i * g (int16 MULs, a saturating add, the cell clip) and
 * h = o * tanh(c) (the hidden state's type and zero point). Every one of those is
 * elementwise in the unit once the FULLY_CONNECTEDs are summed, so this kernel runs a unit
 * at a time: its four gates from the old hidden state, its cell updated in place, its new
 * hidden value written to the step's output row; the row is copied into the hidden state
 * when the step is done (TFLite Micro's order of results, without its four scratch
 * buffers). Hidden and cell state persist across invokes (the model's persistent region).
 *
 * The FULLY_CONNECTEDs run on the raw activations: the generator folds each one's input
 * offset (and bias) into a starting sum per unit and gate (sum_k (x_k + offset) w_k =
 * offset sum_k w_k + sum_k x_k w_k; int8: int32 sums that wrap as the reference's, 16x8:
 * int64), and packs a unit's four gate rows side by side, so one pass over the input row
 * (then the hidden row) feeds the four gates' sums at once (rip_gemv.h's 1 x 4 dot: SMLAD
 * on sign-extended pairs where there is DSP, LDRSB / MULS on ARMv6-M). 16x8 sums run in
 * int32 where they cannot overflow (rows below 512 taps: |x w| <= 2^22), else in int64.
 */
#ifndef RIP_LSTM_H
#define RIP_LSTM_H

#include <stdint.h>

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { RIP_LSTM_INPUT_GATE, RIP_LSTM_FORGET_GATE, RIP_LSTM_CELL_GATE, RIP_LSTM_OUTPUT_GATE };

typedef struct {
    int32_t wide;       /* 1: int16 activations, int64 biases; 0: int8, int32 biases */
    int32_t time_major; /* input [time, batch, features], else [batch, time, features] */
    int32_t batch, steps, features, units;
    int32_t hidden_zero_point;
    int32_t hidden_min, hidden_max; /* the hidden state type's range */
    int32_t cell_clip;              /* quantized; 0: none */
    /* tanh of the cell state (int16 TANH's rescaling, rip_sigmoid_s16's convention) */
    int32_t cell_tanh_multiplier;
    int32_t cell_tanh_shift;
    rip_quant input_fc[4];     /* per gate: s_in * s_w / 2^-12 */
    rip_quant recurrent_fc[4]; /* per gate: s_h * s_w / 2^-12 */
    rip_quant forget_cell;     /* 2^-15 * s_c / s_c */
    rip_quant input_cell;      /* 2^-15 * 2^-15 / s_c */
    rip_quant hidden;          /* 2^-15 * 2^-15 / s_h */
    /* per unit: its gates' input rows, then their recurrent rows, each four rows in
     * rip_rq_dot_1x4's layout (pairs (input, forget) and (cell, output), rows of k4 taps,
     * k4 = the row length rounded up to 4 with zero weights, the pair's words interleaved):
     * 4 * (k4(features) + k4(units)) bytes a unit, 4-byte aligned */
    const int8_t *weights;
    /* [units][4 gates], int32 (int8 activations) or int64 (16x8): the input FC's bias plus
     * -input zero point x its row's weight sum; the recurrent FC's -hidden zero point x its
     * row's sum */
    const void *input_sums;
    const void *recurrent_sums;
} rip_lstm_params;

/* One invoke over the whole sequence: input and output in the arena, hidden ([batch,
 * units], the activations' type) and cell ([batch, units] int16) in the persistent region. */
rip_status rip_lstm(const rip_lstm_params *params, const void *input, void *hidden, void *cell,
                    void *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_LSTM_H */
