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
    int32_t input_offset;  /* -input zero point (0 for int16) */
    int32_t hidden_offset; /* -hidden state zero point */
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
    const int8_t *input_weights[4];     /* per gate: [units, features] */
    const int8_t *recurrent_weights[4]; /* per gate: [units, units] */
    const void *bias[4];                /* per gate: [units] int32 (int8) or int64 (16x8) */
} rip_lstm_params;

/* One invoke over the whole sequence: input and output in the arena, hidden ([batch,
 * units], the activations' type) and cell ([batch, units] int16) in the persistent region. */
rip_status rip_lstm(const rip_lstm_params *params, const void *input, void *hidden, void *cell,
                    void *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_LSTM_H */
