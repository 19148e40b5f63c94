/* rip kernels: UNIDIRECTIONAL_SEQUENCE_LSTM (see rip_lstm.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_lstm.h"

#include <stddef.h>
#include <string.h>

#include "rip_activation.h"
#include "rip_support.h"

/* TFLite's MultiplyByQuantizedMultiplier of an int64 sum (|x| < 2^47): the multiplier
 * rounded to 16 bits, one rounding shift. */
static int32_t scale64(int64_t x, rip_quant q) {
    const int32_t reduced = q.multiplier < 0x7FFF0000 ? (q.multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total_shift = 15 - q.shift;
    const int64_t r = x * (int64_t)reduced + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(r >> total_shift);
}

/* One FULLY_CONNECTED output onto int16 (TFLite Micro's reference FullyConnected for the
 * gate: int32 sums of (x + offset) * w for int8 input, int64 ones for int16), the bias
 * optional. */
static int32_t gate_fc(const rip_lstm_params *p, const int8_t *x, int32_t n, int32_t offset,
                       const int8_t *w, const void *bias, int32_t unit, rip_quant q) {
    int32_t y;
    if (p->wide) {
        int64_t acc = 0;
        for (int32_t k = 0; k < n; ++k) {
            acc += (int64_t)w[k] * (rip_load_le(x + 2 * k, 2) + offset);
        }
        if (bias != NULL) {
            int64_t b;
            memcpy(&b, (const char *)bias + 8 * (ptrdiff_t)unit, sizeof b);
            acc += b;
        }
        y = scale64(acc, q);
    } else {
        uint32_t acc = 0; /* int32 sums, wrapping as the reference's */
        for (int32_t k = 0; k < n; ++k) {
            acc += (uint32_t)(w[k] * (x[k] + offset));
        }
        if (bias != NULL) {
            int32_t b;
            memcpy(&b, (const char *)bias + 4 * (ptrdiff_t)unit, sizeof b);
            acc += (uint32_t)b;
        }
        y = rip_multiply_by_quantized_multiplier((int32_t)acc, q.multiplier, q.shift);
    }
    return rip_clamp32(y, INT16_MIN, INT16_MAX);
}

/* MulElementwise of two int16 values onto [lo, hi] around `offset`. */
static int32_t mul16(int32_t a, int32_t b, rip_quant q, int32_t offset, int32_t lo, int32_t hi) {
    return rip_clamp32(rip_multiply_by_quantized_multiplier(a * b, q.multiplier, q.shift) + offset,
                       lo, hi);
}

/* One step over `rows` rows: input rows at x, hidden and cell rows, new hidden values
 * written to out (then copied into hidden). */
static void step(const rip_lstm_params *p, const int8_t *x, int8_t *hidden, int8_t *cell,
                 int8_t *out, int32_t rows) {
    const int32_t bytes = p->wide ? 2 : 1;
    const int32_t n = p->features, u = p->units;
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *xr = x + (ptrdiff_t)bytes * r * n;
        const int8_t *hr = hidden + (ptrdiff_t)bytes * r * u;
        int8_t *cr = cell + 2 * (ptrdiff_t)r * u;
        int8_t *yr = out + (ptrdiff_t)bytes * r * u;
        for (int32_t j = 0; j < u; ++j) {
            int32_t gate[4];
            for (int32_t g = 0; g < 4; ++g) {
                const int32_t a = gate_fc(p, xr, n, p->input_offset,
                                          p->input_weights[g] + (ptrdiff_t)j * n, p->bias[g], j,
                                          p->input_fc[g]);
                const int32_t b = gate_fc(p, hr, u, p->hidden_offset,
                                          p->recurrent_weights[g] + (ptrdiff_t)j * u, NULL, j,
                                          p->recurrent_fc[g]);
                const int32_t sum = rip_clamp32(a + b, INT16_MIN, INT16_MAX);
                /* at 2^-12 both functions take the power-of-two path: multiplier 3 */
                gate[g] = rip_sigmoid16(g == RIP_LSTM_CELL_GATE, 0, 0, sum);
            }
            int32_t c = mul16(gate[RIP_LSTM_FORGET_GATE], rip_load_le(cr + 2 * j, 2),
                              p->forget_cell, 0, INT16_MIN, INT16_MAX);
            const int32_t ig = mul16(gate[RIP_LSTM_INPUT_GATE], gate[RIP_LSTM_CELL_GATE],
                                     p->input_cell, 0, INT16_MIN, INT16_MAX);
            c = rip_clamp32(c + ig, INT16_MIN, INT16_MAX);
            if (p->cell_clip > 0) {
                c = rip_clamp32(c, -p->cell_clip, p->cell_clip);
            }
            rip_store_le(cr + 2 * j, c, 2);
            const int32_t t = rip_sigmoid16(1, p->cell_tanh_multiplier, p->cell_tanh_shift, c);
            const int32_t h = mul16(t, gate[RIP_LSTM_OUTPUT_GATE], p->hidden, p->hidden_zero_point,
                                    p->hidden_min, p->hidden_max);
            rip_store_le(yr + (ptrdiff_t)bytes * j, h, bytes);
        }
    }
    memcpy(hidden, out, (size_t)bytes * (size_t)rows * (size_t)u);
}

rip_status rip_lstm(const rip_lstm_params *p, const void *input, void *hidden, void *cell,
                    void *output) {
    if (p->batch < 1 || p->steps < 0 || p->features < 1 || p->units < 1) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t g = 0; g < 4; ++g) {
        if (p->input_weights[g] == NULL || p->recurrent_weights[g] == NULL) {
            return RIP_ERROR_ARGUMENT;
        }
    }
    const ptrdiff_t bytes = p->wide ? 2 : 1;
    const int8_t *x = (const int8_t *)input;
    int8_t *h = (int8_t *)hidden, *c = (int8_t *)cell, *y = (int8_t *)output;
    const ptrdiff_t n = p->features, u = p->units, batch = p->batch, steps = p->steps;
    if (p->time_major) { /* each step: every batch row at once */
        for (ptrdiff_t t = 0; t < steps; ++t) {
            step(p, x + bytes * t * batch * n, h, c, y + bytes * t * batch * u, p->batch);
        }
        return RIP_OK;
    }
    for (ptrdiff_t b = 0; b < batch; ++b) { /* each batch row through its whole sequence */
        for (ptrdiff_t t = 0; t < steps; ++t) {
            step(p, x + bytes * (b * steps + t) * n, h + bytes * b * u, c + 2 * b * u,
                 y + bytes * (b * steps + t) * u, 1);
        }
    }
    return RIP_OK;
}
