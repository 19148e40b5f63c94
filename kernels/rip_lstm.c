/* rip kernels: UNIDIRECTIONAL_SEQUENCE_LSTM (see rip_lstm.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_lstm.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rip_activation.h"
#include "rip_gemv.h"
#include "rip_support.h"

/* ---- the requantisations, set up once per call ------------------------------------------- */

/* TFLite's MultiplyByQuantizedMultiplier (x << left wrapping as the reference's int32
 * product, SaturatingRoundingDoublingHighMul by a multiplier of 0 or in [2^30, 2^31), then
 * RoundingDivideByPOT by e = -shift), as one rounding of a long product where there is a
 * long multiply: with t = floor((y m + 2^30) / 2^31) (the high product), RoundingDivideByPOT
 * is floor((t + 2^(e-1) - [t < 0]) / 2^e) for e >= 1, and the nested floors fold into
 * floor((y m + 2^30 + 2^(30+e) - [t < 0] 2^31) / 2^(31+e)); [y < 0] may stand for [t < 0]
 * (t < 0 implies y < 0, and where y < 0 <= t, t = 0 and both give 0). No sum overflows: |y m|
 * < 2^62. ARMv6-M (no long multiply) keeps the two steps: rip_mul_round31, then the
 * rounding shift with its mask and threshold precomputed. */
typedef struct {
    int32_t multiplier, left, e;
    int32_t high_shift; /* e - 1: v >> (31 + e) from v's high word */
#if defined(__ARM_ARCH_6M__)
    int32_t mask, half; /* 2^e - 1, its half */
#else
    int64_t round_pos, round_neg; /* 2^30 + 2^(30+e) (- 2^31 where y < 0); e = 0: 2^30 */
#endif
} lstm_rq;

static lstm_rq rq_setup(rip_quant q) {
    lstm_rq r;
    r.multiplier = q.multiplier;
    r.left = q.shift > 0 ? q.shift : 0;
    r.e = q.shift > 0 ? 0 : -q.shift;
    r.high_shift = r.e > 0 ? r.e - 1 : 0;
#if defined(__ARM_ARCH_6M__)
    r.mask = (int32_t)(((uint32_t)1 << r.e) - 1u);
    r.half = r.mask >> 1;
#else
    r.round_pos = ((int64_t)1 << 30) + (r.e > 0 ? (int64_t)1 << (30 + r.e) : 0);
    r.round_neg = r.round_pos - (r.e > 0 ? (int64_t)1 << 31 : 0);
#endif
    return r;
}

#if defined(__ARM_ARCH_6M__)
/* out of line on ARMv6-M: inside the unit loop GCC spills its partial products to the
 * high registers (about twice the instructions) */
__attribute__((noinline)) static int32_t rq(int32_t x, const lstm_rq *q) {
#else
RIP_INLINE int32_t rq(int32_t x, const lstm_rq *q) {
#endif
    const int32_t y = (int32_t)((uint32_t)x << q->left);
#if defined(__ARM_ARCH_6M__)
    const int32_t t = rip_mul_round31(y, q->multiplier);
    const int32_t threshold = q->half + (int32_t)((uint32_t)t >> 31);
    return (t >> q->e) + ((t & q->mask) > threshold ? 1 : 0);
#else
    const int64_t v = (y < 0 ? q->round_neg : q->round_pos) + (int64_t)y * q->multiplier;
    if (q->e == 0) {
        return (int32_t)(v >> 31);
    }
    return (int32_t)(v >> 32) >> q->high_shift;
#endif
}

RIP_INLINE int32_t sat16(int32_t x) {
#if defined(__ARM_FEATURE_SAT)
    return __ssat(x, 16);
#else
    return rip_clamp32(x, INT16_MIN, INT16_MAX);
#endif
}

/* ---- LOGISTIC and TANH onto 2^-15 ------------------------------------------------------ */

/* The gates and the cell's tanh evaluate rip_activation.h's sigmoid interpolation inline
 * (rip_sigmoid16_scaled), five times a unit. */

/* ---- the dot products ------------------------------------------------------------------- */

/* One int16 activation, little-endian: a halfword load where the row is 2-byte aligned
 * (`aligned`, known per call), bytes otherwise (ARMv6-M faults on an unaligned LDRH). */
RIP_INLINE int32_t load16(const int8_t *p, const int aligned) {
    if (aligned) {
        int16_t v;
        memcpy(&v, __builtin_assume_aligned(p, 2), sizeof v);
        return v;
    }
    return rip_load_le(p, 2);
}

/* rip_rq_dot_1x4 for a row of n int16 activations (16x8): the same packed rows (pairs `wa`
 * and `wb`), int32 sums, exact for n < 512 (each product within 2^22). With DSP, each
 * group's four activations are paired (x0, x2), (x1, x3) to meet SXTB16's lanes. */
RIP_INLINE void dot16_1x4(const int8_t *x, const int8_t *wa, const int8_t *wb, int32_t n,
                          const int aligned, int32_t *acc) {
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int32_t groups = n >> 2;
#if defined(__ARM_FEATURE_DSP)
    (void)aligned;
    for (int32_t g = 0; g < groups; ++g, x += 8, wa += 8, wb += 8) {
        uint32_t x01, x23;
        memcpy(&x01, x, 4); /* unaligned word loads are legal on v8-M Mainline */
        memcpy(&x23, x + 4, 4);
        const int32_t x02 = (int32_t)((x01 & 0xFFFFu) | (x23 << 16));
        const int32_t x13 = (int32_t)((x01 >> 16) | (x23 & 0xFFFF0000u));
        int32_t w0, w1, w2, w3;
        memcpy(&w0, __builtin_assume_aligned(wa, 4), 4);
        memcpy(&w1, __builtin_assume_aligned(wa + 4, 4), 4);
        memcpy(&w2, __builtin_assume_aligned(wb, 4), 4);
        memcpy(&w3, __builtin_assume_aligned(wb + 4, 4), 4);
        a0 = __smlad(x02, __sxtb16(w0), a0);
        a0 = __smlad(x13, rip_fast_sxtb16_ror8(w0), a0);
        a1 = __smlad(x02, __sxtb16(w1), a1);
        a1 = __smlad(x13, rip_fast_sxtb16_ror8(w1), a1);
        a2 = __smlad(x02, __sxtb16(w2), a2);
        a2 = __smlad(x13, rip_fast_sxtb16_ror8(w2), a2);
        a3 = __smlad(x02, __sxtb16(w3), a3);
        a3 = __smlad(x13, rip_fast_sxtb16_ror8(w3), a3);
    }
#else
    for (int32_t g = 0; g < groups; ++g, x += 8, wa += 8, wb += 8) {
        for (int32_t j = 0; j < 4; ++j) {
            const int32_t v = load16(x + 2 * j, aligned);
            a0 += v * wa[j];
            a1 += v * wa[4 + j];
            a2 += v * wb[j];
            a3 += v * wb[4 + j];
        }
    }
#endif
    for (int32_t j = 0; j < (n & 3); ++j) {
        const int32_t v = load16(x + 2 * j, aligned);
        a0 += v * wa[j];
        a1 += v * wa[4 + j];
        a2 += v * wb[j];
        a3 += v * wb[4 + j];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* The same in int64 (16x8 rows of 512 taps or more, where int32 sums could overflow). */
static void dot64_1x4(const int8_t *x, const int8_t *wa, const int8_t *wb, int32_t n,
                      int64_t *acc) {
    for (int32_t k = 0; k < n; ++k) {
        const int64_t v = rip_load_le(x + 2 * k, 2);
        const ptrdiff_t i = 8 * (ptrdiff_t)(k >> 2) + (k & 3);
        acc[0] += v * wa[i];
        acc[1] += v * wa[i + 4];
        acc[2] += v * wb[i];
        acc[3] += v * wb[i + 4];
    }
}

/* ---- one unit --------------------------------------------------------------------------- */

/* The call's constants in the form the unit loop uses them. */
typedef struct {
    const rip_lstm_params *p;
    lstm_rq input_fc[4], recurrent_fc[4], forget_cell, input_cell, hidden;
    /* tanh of the cell: v = (c * multiplier + round) >> shift, rip_sigmoid_s16's rescaling */
    int32_t tanh_multiplier, tanh_round, tanh_shift;
} lstm_call;

/* The rest of a unit once its gates' summed FULLY_CONNECTEDs (int16 at 2^-12) are known:
 * the gates through LOGISTIC / TANH (at 2^-12 both take the power-of-two rescaling by 3),
 * c = f c + i g (clipped), h = o tanh(c) (its type's range around its zero point). Every
 * product of two of them stays below 2^30 (the gates and tanh within +-32767). */
RIP_INLINE int32_t unit(const lstm_call *k, const int32_t *sum, int8_t *cell) {
    const rip_lstm_params *p = k->p;
    const int32_t i = rip_sigmoid16_scaled(0, 3 * sum[RIP_LSTM_INPUT_GATE]);
    const int32_t f = rip_sigmoid16_scaled(0, 3 * sum[RIP_LSTM_FORGET_GATE]);
    const int32_t g = rip_sigmoid16_scaled(1, 3 * sum[RIP_LSTM_CELL_GATE]);
    const int32_t o = rip_sigmoid16_scaled(0, 3 * sum[RIP_LSTM_OUTPUT_GATE]);
    int32_t c = sat16(rq(f * rip_load_le(cell, 2), &k->forget_cell));
    c = sat16(c + sat16(rq(i * g, &k->input_cell)));
    if (p->cell_clip > 0) {
        c = rip_clamp32(c, -p->cell_clip, p->cell_clip);
    }
    rip_store_le(cell, c, 2);
    const int32_t t =
        rip_sigmoid16_scaled(1, (int32_t)((uint32_t)c * (uint32_t)k->tanh_multiplier + (uint32_t)k->tanh_round) >>
                         k->tanh_shift);
    return rip_clamp32(rq(t * o, &k->hidden) + p->hidden_zero_point, p->hidden_min, p->hidden_max);
}

/* A unit's four gate sums over one int8 row of n values (its packed rows at w, k4(n) taps
 * each): the whole words, then the last n % 4 values from `tail`, their zero-padded copy,
 * as one more word (the padding weights are 0), so no tap runs alone. */
RIP_INLINE void dot_s8(const int8_t *x, const int8_t *tail, const int8_t *w, int32_t n,
                       int32_t *acc) {
    const int32_t whole = n & ~3, pair = 2 * rip_rq_k4(n);
    rip_rq_dot_1x4(x, w, w + pair, whole, &acc[0], &acc[1], &acc[2], &acc[3]);
    if (n & 3) {
        rip_rq_dot_1x4(tail, w + 2 * whole, w + pair + 2 * whole, 4, &acc[0], &acc[1], &acc[2],
                       &acc[3]);
    }
}

/* One int8 row: each unit's eight sums from its folded starting sums (the input row, then
 * the hidden row), requantised onto int16 and added per gate, then its cell and hidden
 * value (into out). */
static void row_s8(const lstm_call *k, const int8_t *x, const int8_t *h, int8_t *cell,
                   int8_t *out) {
    const rip_lstm_params *p = k->p;
    const int32_t n = p->features, u = p->units;
    const int32_t kx = rip_rq_k4(n), kh = rip_rq_k4(u);
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(p->weights, 4);
    const int32_t *sx = (const int32_t *)p->input_sums;
    const int32_t *sh = (const int32_t *)p->recurrent_sums;
    int8_t x_tail[4] = {0, 0, 0, 0}, h_tail[4] = {0, 0, 0, 0};
    memcpy(x_tail, x + (n & ~3), (size_t)(n & 3));
    memcpy(h_tail, h + (u & ~3), (size_t)(u & 3));
    for (int32_t j = 0; j < u; ++j, sx += 4, sh += 4) {
        int32_t a[4] = {sx[0], sx[1], sx[2], sx[3]}, b[4] = {sh[0], sh[1], sh[2], sh[3]};
        dot_s8(x, x_tail, w, n, a);
        w += 4 * kx;
        dot_s8(h, h_tail, w, u, b);
        w += 4 * kh;
        int32_t sum[4];
        for (int32_t g = 0; g < 4; ++g) {
            sum[g] = sat16(sat16(rq(a[g], &k->input_fc[g])) + sat16(rq(b[g], &k->recurrent_fc[g])));
        }
        out[j] = (int8_t)unit(k, sum, cell + 2 * (ptrdiff_t)j);
    }
}

/* One 16x8 row: int32 sums where `narrow` (both rows below 512 taps), int64 otherwise,
 * each added to its int64 starting sum. */
RIP_INLINE void row_s16(const lstm_call *k, const int8_t *x, const int8_t *h, int8_t *cell,
                        int8_t *out, const int narrow, const int aligned) {
    const rip_lstm_params *p = k->p;
    const int32_t n = p->features, u = p->units;
    const int32_t kx = rip_rq_k4(n), kh = rip_rq_k4(u);
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(p->weights, 4);
    const int64_t *sx = (const int64_t *)p->input_sums;
    const int64_t *sh = (const int64_t *)p->recurrent_sums;
    for (int32_t j = 0; j < u; ++j, sx += 4, sh += 4) {
        int64_t a[4], b[4];
        if (narrow) {
            int32_t a32[4] = {0, 0, 0, 0}, b32[4] = {0, 0, 0, 0};
            dot16_1x4(x, w, w + 2 * kx, n, aligned, a32);
            dot16_1x4(h, w + 4 * kx, w + 4 * kx + 2 * kh, u, aligned, b32);
            for (int32_t g = 0; g < 4; ++g) {
                a[g] = sx[g] + a32[g];
                b[g] = sh[g] + b32[g];
            }
        } else {
            memcpy(a, sx, sizeof a);
            memcpy(b, sh, sizeof b);
            dot64_1x4(x, w, w + 2 * kx, n, a);
            dot64_1x4(h, w + 4 * kx, w + 4 * kx + 2 * kh, u, b);
        }
        w += 4 * (kx + kh);
        int32_t sum[4];
        for (int32_t g = 0; g < 4; ++g) {
            const rip_quant qx = p->input_fc[g], qh = p->recurrent_fc[g];
            const int32_t ya =
                rip_multiply_by_quantized_multiplier64(a[g], qx.multiplier, qx.shift);
            const int32_t yb =
                rip_multiply_by_quantized_multiplier64(b[g], qh.multiplier, qh.shift);
            sum[g] = sat16(sat16(ya) + sat16(yb));
        }
        rip_store_le(out + 2 * (ptrdiff_t)j, unit(k, sum, cell + 2 * (ptrdiff_t)j), 2);
    }
}

/* One step over `rows` rows: input rows at x, hidden and cell rows, new hidden values
 * written to out (then copied into hidden). */
static void step(const lstm_call *k, const int8_t *x, int8_t *hidden, int8_t *cell, int8_t *out,
                 int32_t rows, int aligned) {
    const rip_lstm_params *p = k->p;
    const int32_t bytes = p->wide ? 2 : 1;
    const int32_t n = p->features, u = p->units;
    const int narrow = n < 512 && u < 512;
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *xr = x + (ptrdiff_t)bytes * r * n;
        const int8_t *hr = hidden + (ptrdiff_t)bytes * r * u;
        int8_t *cr = cell + 2 * (ptrdiff_t)r * u;
        int8_t *yr = out + (ptrdiff_t)bytes * r * u;
        if (!p->wide) {
            row_s8(k, xr, hr, cr, yr);
        } else if (narrow && aligned) {
            row_s16(k, xr, hr, cr, yr, 1, 1);
        } else {
            row_s16(k, xr, hr, cr, yr, narrow, 0);
        }
    }
    memcpy(hidden, out, (size_t)bytes * (size_t)rows * (size_t)u);
}

rip_status rip_lstm(const rip_lstm_params *p, const void *input, void *hidden, void *cell,
                    void *output) {
    if (p->batch < 1 || p->steps < 0 || p->features < 1 || p->units < 1 ||
        p->weights == NULL || p->input_sums == NULL || p->recurrent_sums == NULL ||
        ((uintptr_t)p->weights & 3) != 0 || p->cell_tanh_shift < 0 ||
        p->cell_tanh_shift > 31) {
        return RIP_ERROR_ARGUMENT;
    }
    lstm_call k;
    k.p = p;
    for (int32_t g = 0; g < 4; ++g) {
        k.input_fc[g] = rq_setup(p->input_fc[g]);
        k.recurrent_fc[g] = rq_setup(p->recurrent_fc[g]);
    }
    k.forget_cell = rq_setup(p->forget_cell);
    k.input_cell = rq_setup(p->input_cell);
    k.hidden = rq_setup(p->hidden);
    if (p->cell_tanh_multiplier == 0) { /* a power-of-two cell scale: 3 << shift */
        k.tanh_multiplier = (int32_t)(3u << p->cell_tanh_shift);
        k.tanh_round = 0;
        k.tanh_shift = 0;
    } else {
        k.tanh_multiplier = p->cell_tanh_multiplier;
        k.tanh_round = p->cell_tanh_shift > 0 ? 1 << (p->cell_tanh_shift - 1) : 0;
        k.tanh_shift = p->cell_tanh_shift;
    }
    const ptrdiff_t bytes = p->wide ? 2 : 1;
    const int8_t *x = (const int8_t *)input;
    int8_t *h = (int8_t *)hidden, *c = (int8_t *)cell, *y = (int8_t *)output;
    /* 16x8 rows a halfword at a time where every row starts 2-byte aligned */
    const int aligned = (((uintptr_t)x | (uintptr_t)h | (uintptr_t)y) & 1) == 0;
    const ptrdiff_t n = p->features, u = p->units, batch = p->batch, steps = p->steps;
    if (p->time_major) { /* each step: every batch row at once */
        for (ptrdiff_t t = 0; t < steps; ++t) {
            step(&k, x + bytes * t * batch * n, h, c, y + bytes * t * batch * u, p->batch,
                 aligned);
        }
        return RIP_OK;
    }
    for (ptrdiff_t b = 0; b < batch; ++b) { /* each batch row through its whole sequence */
        for (ptrdiff_t t = 0; t < steps; ++t) {
            step(&k, x + bytes * (b * steps + t) * n, h + bytes * b * u, c + 2 * b * u,
                 y + bytes * (b * steps + t) * u, 1, aligned);
        }
    }
    return RIP_OK;
}
