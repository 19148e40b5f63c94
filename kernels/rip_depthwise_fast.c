/*
 * rip kernels: the fast DEPTHWISE_CONV_2D variants of rip_conv.h (the API, the folded bias
 * and the in-place contracts are documented there).
 */
#include <stddef.h>
#include "rip_conv.h"
#include "rip_conv_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* DEPTHWISE_CONV_2D: one channel plane at a time, interior and border split                */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int32_t h, w, c; /* input; c is the distance between a channel's neighbouring pixels */
    int32_t h_out, w_out;
    int32_t kh, kw, sh, sw, dh, dw, ph, pw;
    int32_t zero_point; /* what a padded tap reads: its product cancels its folded bias */
    int32_t oy_lo, oy_hi, ox_lo, ox_hi; /* interior outputs: every tap inside the input */
    int32_t w_ratio; /* W / W_out where W_out divides W (else 0): the row schedule's clobber */
    int32_t output_offset, act_min, act_max;
} rip_dw_plane;

/* How a channel's accumulator becomes int8: TFLite's general path (the folded bias, per
 * channel multiplier and shift, rip_fast_requantize) or the cheap one the generator proved
 * exact for the layer (rip_fast_channel records, rip_cheap_requantize), saturated to int8
 * or clamped to the activation range. */
enum { RIP_DW_RQ_EXACT, RIP_DW_RQ_CHEAP_SAT, RIP_DW_RQ_CHEAP_CLAMP };

typedef struct {
    const int32_t *bias, *m, *s;     /* RIP_DW_RQ_EXACT */
    const rip_fast_channel *records; /* RIP_DW_RQ_CHEAP_* */
    int mode;
} rip_dw_rq;

static inline int32_t rip_dw_rq_bias(const rip_dw_rq *q, int32_t c) {
    return q->mode == RIP_DW_RQ_EXACT ? q->bias[c] : q->records[c].bias;
}

/* The channel's multiplier and shift for rip_fast_requantize (a record's e is -shift). */
static inline int32_t rip_dw_rq_m(const rip_dw_rq *q, int32_t c) {
    return q->mode == RIP_DW_RQ_EXACT ? q->m[c] : q->records[c].multiplier;
}

static inline int32_t rip_dw_rq_s(const rip_dw_rq *q, int32_t c) {
    return q->mode == RIP_DW_RQ_EXACT ? q->s[c] : -q->records[c].shift;
}

static rip_dw_rq rip_dw_rq_exact(const int32_t *bias, const rip_per_channel_quant *quant) {
    const rip_dw_rq q = {bias, quant->multiplier, quant->shift, NULL, RIP_DW_RQ_EXACT};
    return q;
}

static rip_dw_rq rip_dw_rq_cheap(const rip_fast_channel *records, const rip_dw_conv_params *p) {
    const int full = p->activation.min == -128 && p->activation.max == 127;
    const rip_dw_rq q = {NULL, NULL, NULL, records,
                         full ? RIP_DW_RQ_CHEAP_SAT : RIP_DW_RQ_CHEAP_CLAMP};
    return q;
}

/* Outputs o in [lo, hi) with 0 <= o * s - pad and o * s - pad + (k - 1) * d < extent: two
 * divisions per axis and call, none per output. */
static void rip_fast_interior(int32_t extent, int32_t k, int32_t s, int32_t d, int32_t pad,
                              int32_t n_out, int32_t *lo, int32_t *hi) {
    int32_t a = (pad + s - 1) / s;
    const int32_t last = extent - 1 - (k - 1) * d + pad;
    int32_t b = last < 0 ? 0 : last / s + 1;
    b = rip_min32(b, n_out);
    a = rip_min32(a, b);
    *lo = a;
    *hi = b;
}

/* One border output: only the taps inside the input, found by comparison, each adding
 * w * (x + input_offset) to the model's own bias (`bias` here is the folded bias minus
 * input_offset * sum of the channel's weights), as TFLite's reference does. */
static int32_t rip_dw_border_acc(const rip_dw_plane *g, const int8_t *in, const int8_t *wt,
                                 int32_t oy, int32_t ox, int32_t acc) {
    const int32_t iy0 = oy * g->sh - g->ph, ix0 = ox * g->sw - g->pw;
    const int32_t offset = -g->zero_point;
    int32_t ky_lo, ky_hi, kx_lo, kx_hi;
    rip_conv_tap_range(iy0, g->dh, g->kh, g->h, &ky_lo, &ky_hi);
    rip_conv_tap_range(ix0, g->dw, g->kw, g->w, &kx_lo, &kx_hi);
    for (int32_t ky = ky_lo; ky < ky_hi; ++ky) {
        const int8_t *x = in + ((size_t)(iy0 + ky * g->dh) * g->w + (size_t)ix0) * g->c;
        const int8_t *w = wt + (size_t)(ky * g->kw) * g->c;
        for (int32_t kx = kx_lo; kx < kx_hi; ++kx) {
            acc += ((int32_t)x[kx * g->dw * g->c] + offset) * w[kx * g->c];
        }
    }
    return acc;
}

/* Interior outputs ox in [ox_lo, ox_hi) of one row: `src` is the top-left tap of the first.
 * KH and KW are compile-time constants at every call but the generic one, so the taps
 * unroll and the weights stay in registers. */
static inline __attribute__((always_inline)) void rip_dw_interior_row(
    const rip_dw_plane *g, const int8_t *src, const int32_t *wk, const int32_t KH,
    const int32_t KW, int32_t bias, int32_t multiplier, int32_t shift, int8_t *dst,
    int32_t dst_stride, int32_t count) {
    const int32_t step = g->sw * g->c;
    const int32_t row = g->dh * g->w * g->c;
    const int32_t col = g->dw * g->c;
    for (int32_t n = 0; n < count; ++n) {
        int32_t acc = bias;
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *r = src + ky * row;
            for (int32_t kx = 0; kx < KW; ++kx) {
                acc += (int32_t)r[kx * col] * wk[ky * KW + kx];
            }
        }
        *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset, g->act_min,
                                           g->act_max);
        dst += dst_stride;
        src += step;
    }
}

/* The 3x3 interior written out: nine weights in registers, three row pointers. At unit
 * stride the window slides: each output loads one new column of three taps and reuses the
 * two columns its left neighbour loaded. */
static void rip_dw_interior_3x3(const rip_dw_plane *g, const int8_t *src, const int32_t *wk,
                                int32_t bias, int32_t multiplier, int32_t shift, int8_t *dst,
                                int32_t dst_stride, int32_t count) {
    const int32_t w00 = wk[0], w01 = wk[1], w02 = wk[2], w10 = wk[3], w11 = wk[4];
    const int32_t w12 = wk[5], w20 = wk[6], w21 = wk[7], w22 = wk[8];
    const int32_t row = g->dh * g->w * g->c;
    const int32_t col = g->dw * g->c;
    const int8_t *r0 = src, *r1 = src + row, *r2 = src + 2 * row;
    if (g->sw == 1 && g->dw == 1) {
        int32_t a0 = r0[0], b0 = r1[0], c0 = r2[0];
        int32_t a1 = r0[col], b1 = r1[col], c1 = r2[col];
        r0 += 2 * col;
        r1 += 2 * col;
        r2 += 2 * col;
        for (int32_t n = 0; n < count; ++n) {
            const int32_t a2 = *r0, b2 = *r1, c2 = *r2;
            r0 += col;
            r1 += col;
            r2 += col;
            int32_t acc = bias + a0 * w00 + a1 * w01 + a2 * w02;
            acc += b0 * w10 + b1 * w11 + b2 * w12;
            acc += c0 * w20 + c1 * w21 + c2 * w22;
            a0 = a1;
            a1 = a2;
            b0 = b1;
            b1 = b2;
            c0 = c1;
            c1 = c2;
            *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset,
                                               g->act_min, g->act_max);
            dst += dst_stride;
        }
        return;
    }
    const int32_t step = g->sw * g->c;
    for (int32_t n = 0; n < count; ++n) {
        int32_t acc = bias + r0[0] * w00 + r0[col] * w01 + r0[2 * col] * w02;
        acc += r1[0] * w10 + r1[col] * w11 + r1[2 * col] * w12;
        acc += r2[0] * w20 + r2[col] * w21 + r2[2 * col] * w22;
        r0 += step;
        r1 += step;
        r2 += step;
        *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset, g->act_min,
                                           g->act_max);
        dst += dst_stride;
    }
}

/* Channel `ch`'s whole output plane into dst (pixel p at dst[p * dst_stride]). */
static __attribute__((noinline)) void rip_dw_channel(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                           int32_t ch, int32_t bias, int32_t multiplier, int32_t shift,
                           int8_t *dst, int32_t dst_stride) {
    const int8_t *in_ch = in + ch;
    const int8_t *wt = filter + ch;
    int32_t wk[49];
    const int32_t taps = g->kh * g->kw;
    const int small = taps <= 49;
    int32_t sum = 0;
    for (int32_t t = 0; t < taps; ++t) {
        const int32_t v = wt[(size_t)t * g->c];
        sum += v;
        if (small) {
            wk[t] = v;
        }
    }
    const int32_t model_bias = (int32_t)((uint32_t)bias + (uint32_t)g->zero_point * (uint32_t)sum);
    for (int32_t oy = 0; oy < g->h_out; ++oy) {
        int8_t *out_row = dst + (size_t)oy * g->w_out * dst_stride;
        const int interior_row = oy >= g->oy_lo && oy < g->oy_hi && small;
        const int32_t lo = interior_row ? g->ox_lo : g->w_out;
        const int32_t hi = interior_row ? g->ox_hi : g->w_out;
        for (int32_t ox = 0; ox < lo; ++ox) {
            out_row[(size_t)ox * dst_stride] = (int8_t)rip_fast_requantize(
                rip_dw_border_acc(g, in_ch, wt, oy, ox, model_bias), multiplier, shift,
                g->output_offset, g->act_min, g->act_max);
        }
        if (lo < hi) {
            const int8_t *src = in_ch + ((size_t)(oy * g->sh - g->ph) * g->w +
                                         (size_t)(lo * g->sw - g->pw)) * g->c;
            int8_t *d = out_row + (size_t)lo * dst_stride;
            const int32_t count = hi - lo;
            if (g->kh == 3 && g->kw == 3) {
                rip_dw_interior_3x3(g, src, wk, bias, multiplier, shift, d, dst_stride, count);
            } else if (g->kh == 5 && g->kw == 5) {
                rip_dw_interior_row(g, src, wk, 5, 5, bias, multiplier, shift, d, dst_stride,
                                    count);
            } else if (g->kh == 7 && g->kw == 7) {
                rip_dw_interior_row(g, src, wk, 7, 7, bias, multiplier, shift, d, dst_stride,
                                    count);
            } else {
                rip_dw_interior_row(g, src, wk, g->kh, g->kw, bias, multiplier, shift, d,
                                    dst_stride, count);
            }
        }
        for (int32_t ox = rip_max32(hi, lo); ox < g->w_out; ++ox) {
            out_row[(size_t)ox * dst_stride] = (int8_t)rip_fast_requantize(
                rip_dw_border_acc(g, in_ch, wt, oy, ox, model_bias), multiplier, shift,
                g->output_offset, g->act_min, g->act_max);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* DEPTHWISE_CONV_2D, channel-vectorised: four channels per word, one output row at a time  */
/* ---------------------------------------------------------------------------------------- */

/* The channel groups (rip_dw_group) run on every core: the row engine below is the faster
 * scheme on DSP cores (four channels a word) and on ARMv6-M (one channel at a time, but no
 * per-pixel border arithmetic and no scatter of a plane). The four-channel row engine is
 * compiled on every core: the row-streamed in-place kernel
 * (rip_depthwise_conv2d_inplace_rows_fast_s8) and the channel groups use it. Its halfword
 * helpers are DSP instructions on cores that have
 * them and the same arithmetic in portable C elsewhere (what the host tests run). */
#if defined(__ARM_FEATURE_DSP)
static inline int32_t rip_dw_sx02(int32_t x) { return __sxtb16(x); }
static inline int32_t rip_dw_sx13(int32_t x) { return rip_fast_sxtb16_ror8(x); }
#define RIP_DW_SMLABB(x, w, a) __smlabb((x), (w), (a))
#define RIP_DW_SMLATT(x, w, a) __smlatt((x), (w), (a))
#else
/* Bytes 0 and 2 (sx02) or 1 and 3 (sx13) of x, each sign-extended into a halfword. */
static inline int32_t rip_dw_sx02(int32_t x) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)(int8_t)x |
                     ((uint32_t)(uint16_t)(int16_t)(int8_t)(x >> 16) << 16));
}
static inline int32_t rip_dw_sx13(int32_t x) {
    return (int32_t)((uint32_t)(uint16_t)(int16_t)(int8_t)(x >> 8) |
                     ((uint32_t)(uint16_t)(int16_t)(int8_t)(x >> 24) << 16));
}
/* a + bottom(x) * bottom(w) and a + top(x) * top(w), wrapping as the instructions do. */
#define RIP_DW_SMLABB(x, w, a)                                                                 \
    ((int32_t)((uint32_t)(a) + (uint32_t)((int32_t)(int16_t)(x) * (int16_t)(w))))
#define RIP_DW_SMLATT(x, w, a)                                                                 \
    ((int32_t)((uint32_t)(a) +                                                                 \
               (uint32_t)((int32_t)(int16_t)((x) >> 16) * (int16_t)((w) >> 16))))
#endif

/* One tap of four channels: xv holds channels c..c+3 of the input (one byte each), w02 / w13
 * the tap's weights of channels (c, c+2) / (c+1, c+3), already sign-extended halfwords. */
#define RIP_DW4_TAP(xv, w02, w13)                                                              \
    do {                                                                                       \
        const int32_t xv_ = (xv);                                                              \
        const int32_t x02_ = rip_dw_sx02(xv_), x13_ = rip_dw_sx13(xv_);                        \
        a0 = RIP_DW_SMLABB(x02_, (w02), a0);                                                   \
        a2 = RIP_DW_SMLATT(x02_, (w02), a2);                                                   \
        a1 = RIP_DW_SMLABB(x13_, (w13), a1);                                                   \
        a3 = RIP_DW_SMLATT(x13_, (w13), a3);                                                   \
    } while (0)

#define RIP_DW4_MAX_TAPS 49 /* staged kernels up to 7x7; larger ones take the generic path */
#define RIP_DW_ROWS_MAX_KH 16 /* the row engine's kernel rows (its callers' row arrays) */

/* ARMv6-M (no SIMD, eight low registers, no unaligned words) runs the same rows one channel
 * at a time (rip_dw_row below); every other core four channels a word. */
#if defined(__arm__) && !defined(__ARM_FEATURE_DSP)
#define RIP_DW_V6M 1
#else
#define RIP_DW_V6M 0
#endif

#if !RIP_DW_V6M
/* One channel group's view of one output row: the taps' weights as halfword pairs (taps of
 * a row outside the input zeroed, their share moved into the bias), bias, requantization. */
typedef struct {
    int32_t w[2 * RIP_DW4_MAX_TAPS]; /* tap t: w[2t] channels (0, 2), w[2t + 1] channels (1, 3) */
    int32_t bias[4];
    const int32_t *m, *s;             /* RIP_DW_RQ_EXACT: the group's first channel's */
    const rip_fast_channel *records;  /* RIP_DW_RQ_CHEAP_*: likewise */
    int mode;
    int32_t output_offset, act_min, act_max;
} rip_dw4_stage;

/* Requantize four accumulators into o[0..3]. */
static inline __attribute__((always_inline)) void rip_dw4_put(int8_t *o, const rip_dw4_stage *st,
                                                              int32_t a0, int32_t a1, int32_t a2,
                                                              int32_t a3) {
    const int32_t oo = st->output_offset, lo = st->act_min, hi = st->act_max;
    if (st->mode != RIP_DW_RQ_EXACT) {
        const rip_fast_channel *r = st->records;
        int32_t y0 = rip_cheap_requantize(a0, r[0].multiplier, r[0].round, r[0].shift);
        int32_t y1 = rip_cheap_requantize(a1, r[1].multiplier, r[1].round, r[1].shift);
        int32_t y2 = rip_cheap_requantize(a2, r[2].multiplier, r[2].round, r[2].shift);
        int32_t y3 = rip_cheap_requantize(a3, r[3].multiplier, r[3].round, r[3].shift);
        if (st->mode == RIP_DW_RQ_CHEAP_SAT) {
            o[0] = (int8_t)rip_sat_s8(y0);
            o[1] = (int8_t)rip_sat_s8(y1);
            o[2] = (int8_t)rip_sat_s8(y2);
            o[3] = (int8_t)rip_sat_s8(y3);
        } else {
            o[0] = (int8_t)rip_clamp32(y0, lo, hi);
            o[1] = (int8_t)rip_clamp32(y1, lo, hi);
            o[2] = (int8_t)rip_clamp32(y2, lo, hi);
            o[3] = (int8_t)rip_clamp32(y3, lo, hi);
        }
        return;
    }
    o[0] = (int8_t)rip_fast_requantize(a0, st->m[0], st->s[0], oo, lo, hi);
    o[1] = (int8_t)rip_fast_requantize(a1, st->m[1], st->s[1], oo, lo, hi);
    o[2] = (int8_t)rip_fast_requantize(a2, st->m[2], st->s[2], oo, lo, hi);
    o[3] = (int8_t)rip_fast_requantize(a3, st->m[3], st->s[3], oo, lo, hi);
}

/* n output pixels of one channel group: pixel k's tap (ky, kx) reads the word at
 * rows[ky] + off + k * step + kx * col; its four outputs go to o + k * ostep. KH and KW are
 * constants wherever this is inlined, so the taps unroll and the weights are immediate
 * offsets into the stage. */
static inline __attribute__((always_inline)) void rip_dw4_run(
    const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, const int32_t KH,
    const int32_t KW, const rip_dw4_stage *st, int8_t *o, ptrdiff_t ostep, int32_t n) {
    for (; n > 0; --n, off += step, o += ostep) {
        int32_t a0 = st->bias[0], a1 = st->bias[1], a2 = st->bias[2], a3 = st->bias[3];
        const int32_t *w = st->w;
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *p = rows[ky] + off;
            for (int32_t kx = 0; kx < KW; ++kx, p += col, w += 2) {
                RIP_DW4_TAP(rip_fast_load_s8x4(p), w[0], w[1]);
            }
        }
        rip_dw4_put(o, st, a0, a1, a2, a3);
    }
}

static __attribute__((noinline)) void rip_dw4_run_3x3(const int8_t *const *rows, ptrdiff_t off,
                                                      ptrdiff_t col, ptrdiff_t step,
                                                      const rip_dw4_stage *st, int8_t *o,
                                                      ptrdiff_t ostep, int32_t n) {
    rip_dw4_run(rows, off, col, step, 3, 3, st, o, ostep, n);
}

static __attribute__((noinline)) void rip_dw4_run_5x5(const int8_t *const *rows, ptrdiff_t off,
                                                      ptrdiff_t col, ptrdiff_t step,
                                                      const rip_dw4_stage *st, int8_t *o,
                                                      ptrdiff_t ostep, int32_t n) {
    rip_dw4_run(rows, off, col, step, 5, 5, st, o, ostep, n);
}

static __attribute__((noinline)) void rip_dw4_run_7x7(const int8_t *const *rows, ptrdiff_t off,
                                                      ptrdiff_t col, ptrdiff_t step,
                                                      const rip_dw4_stage *st, int8_t *o,
                                                      ptrdiff_t ostep, int32_t n) {
    rip_dw4_run(rows, off, col, step, 7, 7, st, o, ostep, n);
}

static __attribute__((noinline)) void rip_dw4_run_any(const int8_t *const *rows, ptrdiff_t off,
                                                      ptrdiff_t col, ptrdiff_t step, int32_t kh,
                                                      int32_t kw, const rip_dw4_stage *st,
                                                      int8_t *o, ptrdiff_t ostep, int32_t n) {
    rip_dw4_run(rows, off, col, step, kh, kw, st, o, ostep, n);
}

static void rip_dw4_dispatch(const rip_dw_plane *g, const int8_t *const *rows, ptrdiff_t off,
                             ptrdiff_t col, ptrdiff_t step, const rip_dw4_stage *st, int8_t *o,
                             ptrdiff_t ostep, int32_t n) {
    if (g->kh == 3 && g->kw == 3) {
        rip_dw4_run_3x3(rows, off, col, step, st, o, ostep, n);
    } else if (g->kh == 5 && g->kw == 5) {
        rip_dw4_run_5x5(rows, off, col, step, st, o, ostep, n);
    } else if (g->kh == 7 && g->kw == 7) {
        rip_dw4_run_7x7(rows, off, col, step, st, o, ostep, n);
    } else {
        rip_dw4_run_any(rows, off, col, step, g->kh, g->kw, st, o, ostep, n);
    }
}

#endif /* !RIP_DW_V6M */

/* One output pixel, channel j (any j), every tap by comparison: rows[ky] is input row
 * oy * sh - ph + ky * dh (pixel 0, channel 0) or NULL outside the input; a padded tap reads
 * the zero point, whose product cancels its share of the folded bias. */
static int8_t rip_dw1_pixel(const rip_dw_plane *g, const int8_t *const *rows, int32_t ox,
                            const int8_t *filter, int32_t j, int32_t bias, int32_t m, int32_t s) {
    const int32_t c = g->c, ix0 = ox * g->sw - g->pw;
    int32_t kx_lo, kx_hi;
    rip_conv_tap_range(ix0, g->dw, g->kw, g->w, &kx_lo, &kx_hi);
    int32_t acc = bias;
    for (int32_t ky = 0; ky < g->kh; ++ky) {
        const int8_t *row = rows[ky];
        for (int32_t kx = 0; kx < g->kw; ++kx) {
            const int32_t x = row != NULL && kx >= kx_lo && kx < kx_hi
                                  ? row[((ptrdiff_t)ix0 + kx * g->dw) * c + j]
                                  : g->zero_point;
            acc += x * filter[(size_t)(ky * g->kw + kx) * c + j];
        }
    }
    return (int8_t)rip_fast_requantize(acc, m, s, g->output_offset, g->act_min, g->act_max);
}

#if RIP_DW_V6M
/* ARMv6-M: one channel's requantization constants. */
typedef struct {
    int mode;
    int32_t m, s;                /* RIP_DW_RQ_EXACT */
    const rip_fast_channel *rec; /* RIP_DW_RQ_CHEAP_* */
    int32_t output_offset, act_min, act_max;
} rip_dw1_rq;

static inline __attribute__((always_inline)) int8_t rip_dw1_out(const rip_dw1_rq *q,
                                                                int32_t acc) {
    if (q->mode != RIP_DW_RQ_EXACT) {
        const int32_t y =
            rip_cheap_requantize(acc, q->rec->multiplier, q->rec->round, q->rec->shift);
        return (int8_t)(q->mode == RIP_DW_RQ_CHEAP_SAT ? rip_sat_s8(y)
                                                       : rip_clamp32(y, q->act_min, q->act_max));
    }
    return (int8_t)rip_fast_requantize(acc, q->m, q->s, q->output_offset, q->act_min,
                                       q->act_max);
}

/* ARMv6-M: n output pixels of one channel, pixel k's tap (ky, kx) at rows[ky] + off +
 * k * step + kx * col, its weight w[ky * KW + kx] (staged on the stack: an immediate
 * offset), its output at o + k * ostep. */
static inline __attribute__((always_inline)) void rip_dw1_run(
    const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, const int32_t KH,
    const int32_t KW, const int32_t *w, int32_t bias, const rip_dw1_rq *q, int8_t *o,
    ptrdiff_t ostep, int32_t n) {
    for (; n > 0; --n, off += step, o += ostep) {
        int32_t acc = bias;
        const int32_t *wk = w;
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *p = rows[ky] + off;
            for (int32_t kx = 0; kx < KW; ++kx, p += col, ++wk) {
                acc += *p * *wk;
            }
        }
        *o = rip_dw1_out(q, acc);
    }
}

#define RIP_DW1_RUN(name, KH, KW)                                                              \
    static __attribute__((noinline)) void name(                                                \
        const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, int32_t kh,   \
        int32_t kw, const int32_t *w, int32_t bias, const rip_dw1_rq *q, int8_t *o,            \
        ptrdiff_t ostep, int32_t n) {                                                          \
        (void)kh;                                                                              \
        (void)kw;                                                                              \
        rip_dw1_run(rows, off, col, step, KH, KW, w, bias, q, o, ostep, n);                    \
    }
RIP_DW1_RUN(rip_dw1_run_3x3, 3, 3)
RIP_DW1_RUN(rip_dw1_run_5x5, 5, 5)
RIP_DW1_RUN(rip_dw1_run_7x7, 7, 7)
RIP_DW1_RUN(rip_dw1_run_any, kh, kw)

static void rip_dw1_dispatch(const rip_dw_plane *g, const int8_t *const *rows, ptrdiff_t off,
                             ptrdiff_t col, ptrdiff_t step, const int32_t *w, int32_t bias,
                             const rip_dw1_rq *q, int8_t *o, ptrdiff_t ostep, int32_t n) {
    const int32_t kh = g->kh, kw = g->kw;
    if (kh == 3 && kw == 3) {
        rip_dw1_run_3x3(rows, off, col, step, kh, kw, w, bias, q, o, ostep, n);
    } else if (kh == 5 && kw == 5) {
        rip_dw1_run_5x5(rows, off, col, step, kh, kw, w, bias, q, o, ostep, n);
    } else if (kh == 7 && kw == 7) {
        rip_dw1_run_7x7(rows, off, col, step, kh, kw, w, bias, q, o, ostep, n);
    } else {
        rip_dw1_run_any(rows, off, col, step, kh, kw, w, bias, q, o, ostep, n);
    }
}

/* rip_dw_row on ARMv6-M: the same contract and the same rows, one channel at a time (its
 * weights staged, a row outside the input zeroed and its share moved into the bias), the
 * interior pixels straight from the rows, the border ones from their gathered field. */
static void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows, const int8_t *filter,
                       const rip_dw_rq *q, int32_t c0, int32_t n_ch, int8_t *o,
                       ptrdiff_t ostep) {
    const int32_t c = g->c, kh = g->kh, kw = g->kw, taps = kh * kw;
    const int32_t n1 = taps <= RIP_DW4_MAX_TAPS && kh <= RIP_DW_ROWS_MAX_KH ? n_ch : 0;
    const int32_t zp = g->zero_point;
    const int8_t *valid = NULL; /* any row inside the input: a NULL row's taps weigh 0 */
    for (int32_t ky = 0; ky < kh && valid == NULL; ++ky) {
        valid = rows[ky];
    }
    const int32_t lo = valid != NULL ? g->ox_lo : g->w_out;
    const int32_t hi = valid != NULL ? g->ox_hi : g->w_out;
    const int8_t *rp[RIP_DW_ROWS_MAX_KH]; /* rows, NULL ones replaced */
    const int8_t *gp[RIP_DW_ROWS_MAX_KH]; /* a gathered receptive field's rows */
    int8_t field[RIP_DW4_MAX_TAPS];
    int32_t w[RIP_DW4_MAX_TAPS];
    rip_dw1_rq r1;
    r1.mode = q->mode;
    r1.output_offset = g->output_offset;
    r1.act_min = g->act_min;
    r1.act_max = g->act_max;
    for (int32_t j = 0; j < n1; ++j) {
        const int32_t ch = c0 + j;
        uint32_t adj = 0;
        const int8_t *wt = filter + ch;
        for (int32_t ky = 0; ky < kh; ++ky) {
            const int in = rows[ky] != NULL;
            rp[ky] = in ? rows[ky] + ch : valid != NULL ? valid + ch : NULL;
            for (int32_t kx = 0; kx < kw; ++kx, wt += c) {
                w[ky * kw + kx] = in ? *wt : 0;
                if (!in) { /* the padded tap's zp * w, which the folded bias leaves out */
                    adj += (uint32_t)zp * (uint32_t)(int32_t)*wt;
                }
            }
        }
        const int32_t bias = (int32_t)((uint32_t)rip_dw_rq_bias(q, ch) + adj);
        if (q->mode == RIP_DW_RQ_EXACT) {
            r1.m = q->m[ch];
            r1.s = q->s[ch];
        } else {
            r1.rec = q->records + ch;
        }
        int8_t *oj = o + j;
        for (int32_t ox = 0; ox < g->w_out; ++ox) {
            if (ox == lo && lo < hi) { /* the interior run, straight from the rows */
                rip_dw1_dispatch(g, rp, (ptrdiff_t)(lo * g->sw - g->pw) * c,
                                 (ptrdiff_t)g->dw * c, (ptrdiff_t)g->sw * c, w, bias, &r1,
                                 oj + (ptrdiff_t)lo * ostep, ostep, hi - lo);
                ox = hi - 1;
                continue;
            }
            const int32_t ix0 = ox * g->sw - g->pw;
            for (int32_t ky = 0; ky < kh; ++ky) {
                for (int32_t kx = 0; kx < kw; ++kx) {
                    const int32_t ix = ix0 + kx * g->dw;
                    field[ky * kw + kx] = rows[ky] != NULL && ix >= 0 && ix < g->w
                                              ? rows[ky][(ptrdiff_t)ix * c + ch]
                                              : (int8_t)zp;
                }
                gp[ky] = field + ky * kw;
            }
            rip_dw1_dispatch(g, gp, 0, 1, 0, w, bias, &r1, oj + (ptrdiff_t)ox * ostep, ostep,
                             1);
        }
    }
    for (int32_t j = n1; j < n_ch; ++j) {
        const int32_t ch = c0 + j;
        for (int32_t ox = 0; ox < g->w_out; ++ox) {
            o[(ptrdiff_t)ox * ostep + j] =
                rip_dw1_pixel(g, rows, ox, filter, ch, rip_dw_rq_bias(q, ch),
                              rip_dw_rq_m(q, ch), rip_dw_rq_s(q, ch));
        }
    }
}
#else
/* Channels [c0, c0 + n_ch) of output row oy into o (channel c0 + j of pixel ox at
 * o[ox * ostep + j]). rows[ky] is input row oy * sh - ph + ky * dh (pixel 0, channel 0), NULL
 * outside the input; no store of this row may reach them (the callers write elsewhere, or
 * read the rows the store reaches from the ring). Groups of four channels take the staged engine: interior pixels
 * straight from the rows, border pixels from their receptive field gathered with the zero
 * point filling the padded taps; the last n_ch % 4 channels (and kernels above 7x7) are
 * computed one channel at a time. */
static void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows, const int8_t *filter,
                       const rip_dw_rq *q, int32_t c0, int32_t n_ch, int8_t *o,
                       ptrdiff_t ostep) {
    const int32_t c = g->c, kh = g->kh, kw = g->kw, taps = kh * kw;
    const int32_t n4 = taps <= RIP_DW4_MAX_TAPS && kh <= RIP_DW_ROWS_MAX_KH ? n_ch & ~3 : 0;
    const int32_t zp = g->zero_point;
    const int32_t pad4 = (int32_t)((uint8_t)zp * 0x01010101u);
    const int8_t *valid = NULL; /* any row inside the input: a NULL row's taps weigh 0 */
    for (int32_t ky = 0; ky < kh && valid == NULL; ++ky) {
        valid = rows[ky];
    }
    rip_dw4_stage st;
    st.mode = q->mode;
    st.output_offset = g->output_offset;
    st.act_min = g->act_min;
    st.act_max = g->act_max;
    const int8_t *rp[RIP_DW_ROWS_MAX_KH]; /* rows, NULL ones replaced */
    const int8_t *gp[RIP_DW_ROWS_MAX_KH]; /* a gathered receptive field's rows */
    int32_t field[RIP_DW4_MAX_TAPS];
    for (int32_t j = 0; j < n4; j += 4) {
        const int32_t ch = c0 + j;
        uint32_t adj[4] = {0, 0, 0, 0};
        const int8_t *wt = filter + ch;
        for (int32_t ky = 0; ky < kh; ++ky) {
            const int in = rows[ky] != NULL;
            rp[ky] = in ? rows[ky] + ch : valid != NULL ? valid + ch : NULL;
            for (int32_t kx = 0; kx < kw; ++kx, wt += c) {
                const int32_t t = ky * kw + kx;
                const int32_t v = rip_fast_load_s8x4(wt);
                if (in) {
                    st.w[2 * t] = rip_dw_sx02(v);
                    st.w[2 * t + 1] = rip_dw_sx13(v);
                    continue;
                }
                /* the padded tap's zp * w, which the folded bias leaves out */
                st.w[2 * t] = st.w[2 * t + 1] = 0;
                for (int32_t k = 0; k < 4; ++k) {
                    adj[k] += (uint32_t)zp * (uint32_t)(int32_t)wt[k];
                }
            }
        }

        for (int32_t k = 0; k < 4; ++k) {
            st.bias[k] = (int32_t)((uint32_t)rip_dw_rq_bias(q, ch + k) + adj[k]);
        }
        if (q->mode == RIP_DW_RQ_EXACT) {
            st.m = q->m + ch;
            st.s = q->s + ch;
        } else {
            st.records = q->records + ch;
        }
        int8_t *oj = o + j;
        const int32_t lo = valid != NULL ? g->ox_lo : g->w_out;
        const int32_t hi = valid != NULL ? g->ox_hi : g->w_out;
        for (int32_t ox = 0; ox < g->w_out; ++ox) {
            if (ox == lo && lo < hi) { /* the interior run, straight from the rows */
                rip_dw4_dispatch(g, rp, (ptrdiff_t)(lo * g->sw - g->pw) * c,
                                 (ptrdiff_t)g->dw * c, (ptrdiff_t)g->sw * c, &st,
                                 oj + (ptrdiff_t)lo * ostep, ostep, hi - lo);
                ox = hi - 1;
                continue;
            }
            /* a border pixel: its receptive field, padded taps filled with the zero point */
            const int32_t ix0 = ox * g->sw - g->pw;
            for (int32_t ky = 0; ky < kh; ++ky) {
                for (int32_t kx = 0; kx < kw; ++kx) {
                    const int32_t ix = ix0 + kx * g->dw;
                    field[ky * kw + kx] = rows[ky] != NULL && ix >= 0 && ix < g->w
                                              ? rip_fast_load_s8x4(rows[ky] + (ptrdiff_t)ix * c + ch)
                                              : pad4;
                }
                gp[ky] = (const int8_t *)(const void *)(field + ky * kw);
            }
            rip_dw4_dispatch(g, gp, 0, 4, 0, &st, oj + (ptrdiff_t)ox * ostep, ostep, 1);
        }
    }
    for (int32_t j = n4; j < n_ch; ++j) {
        const int32_t ch = c0 + j;
        for (int32_t ox = 0; ox < g->w_out; ++ox) {
            o[(ptrdiff_t)ox * ostep + j] =
                rip_dw1_pixel(g, rows, ox, filter, ch, rip_dw_rq_bias(q, ch),
                              rip_dw_rq_m(q, ch), rip_dw_rq_s(q, ch));
        }
    }
}
#endif /* RIP_DW_V6M */

/* Channels [c0, c0 + n_ch) of every output pixel into dst: channel c0 + j of pixel p at
 * dst[p * dst_stride + j]. Reads input channels [c0, c0 + n_ch) only. */
static void rip_dw_group(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                         const rip_dw_rq *q, int32_t c0, int32_t n_ch, int8_t *dst,
                         int32_t dst_stride) {
    const int8_t *rows[RIP_DW_ROWS_MAX_KH];
    const size_t row_in = (size_t)g->w * (size_t)g->c;
    for (int32_t oy = 0; oy < g->h_out; ++oy) {
        const int32_t iy0 = oy * g->sh - g->ph;
        for (int32_t ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = iy0 + ky * g->dh;
            rows[ky] = iy < 0 || iy >= g->h ? NULL : in + (size_t)iy * row_in;
        }
        rip_dw_row(g, rows, filter, q, c0, n_ch, dst + (size_t)oy * g->w_out * dst_stride,
                   dst_stride);
    }
}

static rip_status rip_dw_plane_init(rip_dw_plane *g, const rip_dw_conv_params *params,
                             const rip_dims *input_dims, const rip_dims *filter_dims,
                             const void *bias, const rip_dims *output_dims) {
    if (params->depth_multiplier != 1 || filter_dims->c != input_dims->c ||
        output_dims->c != input_dims->c || input_dims->n != output_dims->n || bias == NULL ||
        params->stride.h < 1 || params->stride.w < 1 || params->dilation.h < 1 ||
        params->dilation.w < 1 || !rip_conv_valid_act(params->activation)) {
        return RIP_ERROR_ARGUMENT;
    }
    g->h = input_dims->h;
    g->w = input_dims->w;
    g->c = input_dims->c;
    g->h_out = output_dims->h;
    g->w_out = output_dims->w;
    g->kh = filter_dims->h;
    g->kw = filter_dims->w;
    g->sh = params->stride.h;
    g->sw = params->stride.w;
    g->dh = params->dilation.h;
    g->dw = params->dilation.w;
    g->ph = params->padding.h;
    g->pw = params->padding.w;
    g->zero_point = -params->input_offset;
    g->output_offset = params->output_offset;
    g->act_min = params->activation.min;
    g->act_max = params->activation.max;
    rip_fast_interior(g->h, g->kh, g->sh, g->dh, g->ph, g->h_out, &g->oy_lo, &g->oy_hi);
    rip_fast_interior(g->w, g->kw, g->sw, g->dw, g->pw, g->w_out, &g->ox_lo, &g->ox_hi);
    g->w_ratio = g->w_out > 0 && g->w % g->w_out == 0 ? g->w / g->w_out : 0;
    return RIP_OK;
}

static rip_status rip_dw_fast(const rip_dw_conv_params *params, const rip_dw_rq *q,
                              const void *bias, const rip_dims *input_dims, const int8_t *input,
                              const rip_dims *filter_dims, const int8_t *filter,
                              const rip_dims *output_dims, int8_t *output) {
    rip_dw_plane g;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t in_batch = (size_t)g.h * g.w * g.c;
    const size_t out_batch = (size_t)g.h_out * g.w_out * g.c;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        if (g.kh <= RIP_DW_ROWS_MAX_KH) {
            rip_dw_group(&g, input + b * in_batch, filter, q, 0, g.c, output + b * out_batch,
                         g.c);
            continue;
        }
        for (int32_t ch = 0; ch < g.c; ++ch) {
            rip_dw_channel(&g, input + b * in_batch, filter, ch, rip_dw_rq_bias(q, ch),
                           rip_dw_rq_m(q, ch), rip_dw_rq_s(q, ch), output + b * out_batch + ch,
                           g.c);
        }
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_fast_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                 const rip_per_channel_quant *quant,
                                 const rip_dims *input_dims, const int8_t *input,
                                 const rip_dims *filter_dims, const int8_t *filter,
                                 const rip_dims *bias_dims, const int32_t *bias,
                                 const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_fast(params, &q, bias, input_dims, input, filter_dims, filter, output_dims,
                       output);
}

rip_status rip_depthwise_conv2d_fast_rq_s8(const rip_context *ctx,
                                           const rip_dw_conv_params *params,
                                           const rip_fast_channel *channels,
                                           const rip_dims *input_dims, const int8_t *input,
                                           const rip_dims *filter_dims, const int8_t *filter,
                                           const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_fast(params, &q, channels, input_dims, input, filter_dims, filter,
                       output_dims, output);
}

static rip_status rip_dw_planes(const rip_context *ctx, const rip_dw_conv_params *params,
                                const rip_dw_rq *q, const void *bias,
                                const rip_dims *input_dims, int8_t *data,
                                const rip_dims *filter_dims, const int8_t *filter,
                                const rip_dims *output_dims) {
    rip_dw_plane g;
    const int32_t plane = output_dims->h * output_dims->w;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK ||
        plane > input_dims->h * input_dims->w || ctx == NULL || ctx->buf == NULL ||
        ctx->size < plane) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t in_batch = (size_t)g.h * g.w * g.c;
    const size_t out_batch = (size_t)plane * g.c;
    int8_t *const buf = ctx->buf;
    /* Channel groups: as many channels per pass as the scratch holds planes of, a multiple
     * of four (all of them for a small plane). Group [c0, c0 + n) reads input channels
     * [c0, c0 + n) only, computes their planes into ctx->buf (pixel-major, n bytes a pixel)
     * and then scatters them over the same channels, which no later group reads. */
    int32_t group = rip_min32(g.c, (ctx->size / plane) & ~3);
    if (group >= 4 && g.kh <= RIP_DW_ROWS_MAX_KH) {
        for (int32_t b = 0; b < input_dims->n; ++b) {
            const int8_t *in = data + b * in_batch;
            int8_t *out = data + b * out_batch;
            for (int32_t c0 = 0; c0 < g.c; c0 += group) {
                const int32_t n = rip_min32(group, g.c - c0);
                rip_dw_group(&g, in, filter, q, c0, n, buf, n);
                if (n == g.c) {
                    memcpy(out, buf, (size_t)plane * (size_t)n);
                    continue;
                }
                const int8_t *s = buf;
                int8_t *o = out + c0;
                for (int32_t p = 0; p < plane; ++p, s += n, o += g.c) {
                    int32_t j = 0;
                    for (; j + 4 <= n; j += 4) {
                        int32_t v;
                        memcpy(&v, s + j, 4);
                        memcpy(o + j, &v, 4);
                    }
                    for (; j < n; ++j) {
                        o[j] = s[j];
                    }
                }
            }
        }
        return RIP_OK;
    }
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = data + b * in_batch;
        int8_t *out = data + b * out_batch;
        for (int32_t ch = 0; ch < g.c; ++ch) {
            /* Channel ch's plane reads channel ch only, which no scatter has touched yet. */
            rip_dw_channel(&g, in, filter, ch, rip_dw_rq_bias(q, ch), rip_dw_rq_m(q, ch),
                           rip_dw_rq_s(q, ch), buf, 1);
            int8_t *o = out + ch;
            for (int32_t p = 0; p < plane; ++p) {
                o[(size_t)p * g.c] = buf[p];
            }
        }
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_inplace_fast_s8(const rip_context *ctx,
                                         const rip_dw_conv_params *params,
                                         const rip_per_channel_quant *quant,
                                         const rip_dims *input_dims, int8_t *data,
                                         const rip_dims *filter_dims, const int8_t *filter,
                                         const rip_dims *bias_dims, const int32_t *bias,
                                         const rip_dims *output_dims) {
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_planes(ctx, params, &q, bias, input_dims, data, filter_dims, filter,
                         output_dims);
}

rip_status rip_depthwise_conv2d_inplace_fast_rq_s8(const rip_context *ctx,
                                                   const rip_dw_conv_params *params,
                                                   const rip_fast_channel *channels,
                                                   const rip_dims *input_dims, int8_t *data,
                                                   const rip_dims *filter_dims,
                                                   const int8_t *filter,
                                                   const rip_dims *output_dims) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_planes(ctx, params, &q, channels, input_dims, data, filter_dims, filter,
                         output_dims);
}

/* ---------------------------------------------------------------------------------------- */
/* DEPTHWISE_CONV_2D in place, row-streamed with a ring of saved input rows                 */
/* ---------------------------------------------------------------------------------------- */

/* The schedule (rip.scratch.depthwise_ring_slots is its Python twin, and
 * rip.allocator.theory.simulate.simulate_depthwise_rows executes it over a tracked
 * workspace): output rows r = 0 .. H_out - 1 in order, each written at data + r * W_out * C
 * (output base == input base, gap 0). Before row r is written, every input row i that row
 * r's bytes reach for the first time (clobber(i) == r) and that a later output row still
 * reads (last_reader(i) > r), or that row r itself reads at a byte one of its earlier pixels
 * has stored (rip_dw_rows_self_safe), is copied into the next slot of a FIFO ring; from
 * then on its taps read the ring. Saves happen in increasing i, so the live saved rows are a window of
 * the save order; the ring has as many slots as that window's widest extent. The generator
 * bakes the schedule into the call (each input row's ring slot, -1 for a row never saved,
 * and the ring's row count): the kernel itself only copies and reads, no per-call
 * schedule arithmetic. The functions below count the same schedule for the scratch
 * formula's C twin (get_buffer_size). */

/* The first output row whose bytes reach input row i: (r + 1) * W_out > i * W. */
static inline int32_t rip_dw_rows_clobber(const rip_dw_plane *g, int32_t i) {
    if (g->w_ratio > 0) { /* W_out divides W (every stride-1 and most stride-2 layers) */
        return i * g->w_ratio;
    }
    const int64_t p = (int64_t)i * g->w; /* a 32-bit division wherever it fits (always, in
                                            practice): no 64-bit division call per row */
    return p <= INT32_MAX ? (int32_t)p / g->w_out : (int32_t)(p / g->w_out);
}

/* The bytes of an n-byte row copy that rip_dw_rows_copy moves a block at a time: 64 bytes a
 * step (two LDM / STM pairs of eight registers) on Arm cores where both ends are 4-aligned,
 * as every row is when C is a multiple of 4 (ARMv6-M: 32 bytes, its LDM and STM take the
 * low registers only, four at a time); 0 elsewhere. The kernel asks once per call. */
#if RIP_DW_V6M
#define RIP_DW_COPY_STEP 32u
#else
#define RIP_DW_COPY_STEP 64u
#endif
static size_t rip_dw_rows_block_bytes(const int8_t *a, const int8_t *b, size_t row, size_t n) {
#if defined(__arm__)
    return (((uintptr_t)a | (uintptr_t)b | row) & 3u) == 0 ? n - n % RIP_DW_COPY_STEP : 0;
#else
    (void)a;
    (void)b;
    (void)row;
    (void)n;
    return 0;
#endif
}

/* Copy one input row (n bytes) into its ring slot: the first `blocks` bytes (a multiple of
 * RIP_DW_COPY_STEP, both ends 4-aligned: rip_dw_rows_block_bytes) a block at a time
 * (rip_dw_rows_copy_blocks, Arm cores), the rest a byte at a time. */
#if defined(__arm__) && RIP_HAND_ASM
static __attribute__((noinline)) void rip_dw_rows_copy_blocks(int8_t *d, const int8_t *s,
                                                              const int8_t *end) {
    do {
#if RIP_DW_V6M
        __asm__ volatile("ldmia %0!, {r4, r5, r6, r7}\n\tstmia %1!, {r4, r5, r6, r7}\n\t"
                         "ldmia %0!, {r4, r5, r6, r7}\n\tstmia %1!, {r4, r5, r6, r7}"
                         : "+l"(s), "+l"(d)
                         :
                         : "r4", "r5", "r6", "r7", "memory");
#else
        __asm__ volatile("ldmia %0!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "stmia %1!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "ldmia %0!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "stmia %1!, {r4, r5, r6, r7, r8, r9, r10, r11}"
                         : "+r"(s), "+r"(d)
                         :
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory");
#endif
    } while (s != end);
}
#endif

static inline void rip_dw_rows_copy(int8_t *dst, const int8_t *src, size_t blocks, size_t n) {
    size_t i = 0;
#if defined(__arm__) && RIP_HAND_ASM
    if (blocks > 0) {
        rip_dw_rows_copy_blocks(dst, src, src + blocks);
    }
    i = blocks;
#else
    (void)blocks;
#endif
    for (; i < n; ++i) {
        dst[i] = src[i];
    }
}

/* The last output row reading input row i, -1 if none does. */
static int32_t rip_dw_rows_last_reader(const rip_dw_plane *g, int32_t i) {
    for (int32_t ky = 0; ky < g->kh; ++ky) {
        const int32_t t = i + g->ph - ky * g->dh;
        if (t < 0) {
            break;
        }
        if (g->sh == 1) { /* no division on the common stride */
            if (t < g->h_out) {
                return t;
            }
        } else if (t % g->sh == 0 && t / g->sh < g->h_out) {
            return t / g->sh;
        }
    }
    return -1;
}

/* Whether output row r, whose bytes reach input row i first and which is its last reader,
 * reads row i in place safely (rip.scratch._self_safe): the engine walks each channel
 * group's pixels left to right, each reading all its taps before storing, so only a tap
 * wanting a byte an earlier pixel of row r stored goes wrong. */
static int rip_dw_rows_self_safe(const rip_dw_plane *g, int32_t i, int32_t r) {
    const int64_t shift = (int64_t)i * g->w - (int64_t)r * g->w_out;
    for (int32_t x2 = 0; x2 < g->w_out; ++x2) {
        for (int32_t kx = 0; kx < g->kw; ++kx) {
            const int32_t ix = x2 * g->sw - g->pw + kx * g->dw;
            if (ix >= 0 && ix < g->w && shift + ix >= 0 && shift + ix < x2) {
                return 0;
            }
        }
    }
    return 1;
}

/* Whether the schedule saves input row i: a later output row than the first its bytes
 * reach still reads it, or that first row is its last reader but cannot read it in place. */
static int rip_dw_rows_saved(const rip_dw_plane *g, int32_t i) {
    const int32_t r = rip_dw_rows_clobber(g, i);
    if (r >= g->h_out) {
        return 0;
    }
    const int32_t last = rip_dw_rows_last_reader(g, i);
    return last > r || (last == r && !rip_dw_rows_self_safe(g, i, r));
}

/* Ring slots the schedule needs: the widest window of saved rows still read. */
static int32_t rip_dw_rows_ring(const rip_dw_plane *g) {
    int32_t next = 0, saves = 0, live_row = 0, live = 0, ring = 0;
    for (int32_t r = 0; r < g->h_out; ++r) {
        for (; next < g->h && rip_dw_rows_clobber(g, next) <= r; ++next) {
            saves += rip_dw_rows_saved(g, next);
        }
        /* advance past saved rows no output >= r reads (and rows never saved) */
        for (; live_row < next; ++live_row) {
            if (!rip_dw_rows_saved(g, live_row)) {
                continue;
            }
            if (rip_dw_rows_last_reader(g, live_row) >= r) {
                break;
            }
            ++live;
        }
        ring = rip_max32(ring, saves - live);
    }
    return ring;
}


static int rip_dw_rows_geometry_ok(const rip_dw_plane *g, int32_t batches) {
    return batches == 1 && g->kh <= RIP_DW_ROWS_MAX_KH && g->h_out * g->w_out <= g->h * g->w &&
           g->h < 32768;
}

static int32_t rip_dw_rows_scratch(const rip_dw_plane *g) {
    return rip_dw_rows_ring(g) * g->w * g->c;
}

int32_t rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size(
    const rip_dw_conv_params *params, const rip_dims *input_dims, const rip_dims *filter_dims,
    const rip_dims *output_dims) {
    rip_dw_plane g;
    static const int32_t one = 1;
    /* the geometry only: a stand-in bias pointer satisfies the argument check */
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, &one, output_dims) != RIP_OK) {
        return -1;
    }
    return rip_dw_rows_scratch(&g);
}

int32_t rip_depthwise_conv2d_scratch_get_buffer_size(const rip_dw_conv_params *params,
                                                      const rip_dims *input_dims,
                                                      const rip_dims *filter_dims,
                                                      const rip_dims *output_dims) {
    const int32_t plane = output_dims->h * output_dims->w;
    rip_dw_plane g;
    static const int32_t one = 1;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, &one, output_dims) != RIP_OK ||
        !rip_dw_rows_geometry_ok(&g, input_dims->n)) {
        return plane;
    }
    return rip_max32(plane, rip_dw_rows_scratch(&g));
}

/* The baked schedule over `data`: ring_slots[i] is input row i's ring slot (-1: never
 * saved), ring_rows the ring's row count (ctx->buf holds ring_rows input rows). */
static rip_status rip_dw_rows_run(const rip_context *ctx, const rip_dw_conv_params *params,
                                  const rip_dw_rq *q, const void *bias,
                                  const rip_dims *input_dims, int8_t *data,
                                  const rip_dims *filter_dims, const int8_t *filter,
                                  const rip_dims *output_dims, const int16_t *ring_slots,
                                  int32_t ring_rows) {
    rip_dw_plane g;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK ||
        !rip_dw_rows_geometry_ok(&g, input_dims->n) || ring_slots == NULL || ring_rows < 0 ||
        (ring_rows > 0 && (ctx == NULL || ctx->buf == NULL))) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t row_in = (size_t)g.w * (size_t)g.c;
    if (ring_rows > 0 && (int64_t)ctx->size < (int64_t)ring_rows * (int64_t)row_in) {
        return RIP_ERROR_ARGUMENT;
    }
    if (ring_rows == 0) { /* nothing saved: the out-of-place row loop over the shared base */
        for (int32_t i = 0; i < g.h; ++i) {
            if (ring_slots[i] >= 0) {
                return RIP_ERROR_ARGUMENT;
            }
        }
        rip_dw_group(&g, data, filter, q, 0, g.c, data, g.c);
        return RIP_OK;
    }
    int8_t *const ring = ctx->buf;
    const size_t blocks = rip_dw_rows_block_bytes(ring, data, row_in, row_in);
    const int8_t *rows[RIP_DW_ROWS_MAX_KH];
    const int32_t h = g.h, kh = g.kh, dh = g.dh;
    const ptrdiff_t out_row = (ptrdiff_t)g.w_out * g.c;
    int8_t *out = data;
    int32_t iy0 = -g.ph;
    int32_t next = 0; /* input rows [0, next) have been reached (and saved if listed) */
    for (int32_t oy = 0; oy < g.h_out; ++oy, iy0 += g.sh, out += out_row) {
        /* save the input rows this output row reaches first that the schedule lists */
        for (; next < h && rip_dw_rows_clobber(&g, next) <= oy; ++next) {
            const int32_t k = ring_slots[next];
            if (k >= 0) {
                if (k >= ring_rows) {
                    return RIP_ERROR_ARGUMENT;
                }
                rip_dw_rows_copy(ring + (size_t)k * row_in, data + (size_t)next * row_in, blocks,
                                 row_in);
            }
        }
        /* a row already reached that the schedule saved is read from its slot */
        int32_t iy = iy0;
        for (int32_t ky = 0; ky < kh; ++ky, iy += dh) {
            const int8_t *r = NULL;
            if ((uint32_t)iy < (uint32_t)h) {
                const int32_t k = iy < next ? ring_slots[iy] : -1;
                r = k >= 0 ? ring + (size_t)k * row_in : data + (size_t)iy * row_in;
            }
            rows[ky] = r;
        }
        /* every row this output row reaches and still reads is in the ring: any order */
        rip_dw_row(&g, rows, filter, q, 0, g.c, out, g.c);
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_inplace_rows_fast_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_per_channel_quant *quant,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
    const int16_t *ring_slots, int32_t ring_rows) {
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_rows_run(ctx, params, &q, bias, input_dims, data, filter_dims, filter,
                           output_dims, ring_slots, ring_rows);
}

rip_status rip_depthwise_conv2d_inplace_rows_fast_rq_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_fast_channel *channels,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *output_dims, const int16_t *ring_slots, int32_t ring_rows) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_rows_run(ctx, params, &q, channels, input_dims, data, filter_dims, filter,
                           output_dims, ring_slots, ring_rows);
}

/* ---------------------------------------------------------------------------------------- */
/* DEPTHWISE_CONV_2D, one output row from row pointers (the fused chains' stages)           */
/* ---------------------------------------------------------------------------------------- */

/* The row engine over every channel of one output row: rows[ky] as rip_dw_row takes them
 * (the row's input rows, NULL outside the input), so a caller whose rows are not stored
 * contiguously (a ring) runs the same inner loops as the whole-tensor kernels. */
static rip_status rip_dw_row_entry(const rip_dw_conv_params *params, const rip_dw_rq *q,
                                   const void *bias, const rip_dims *input_dims,
                                   const int8_t *const *rows, const rip_dims *filter_dims,
                                   const int8_t *filter, const rip_dims *output_dims,
                                   int8_t *output) {
    rip_dw_plane g;
    if (rows == NULL ||
        rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK) {
        return RIP_ERROR_ARGUMENT;
    }
    rip_dw_row(&g, rows, filter, q, 0, g.c, output, g.c);
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_row_fast_s8(const rip_dw_conv_params *params,
                                            const rip_per_channel_quant *quant,
                                            const rip_dims *input_dims,
                                            const int8_t *const *rows,
                                            const rip_dims *filter_dims, const int8_t *filter,
                                            const int32_t *bias, const rip_dims *output_dims,
                                            int8_t *output) {
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_row_entry(params, &q, bias, input_dims, rows, filter_dims, filter,
                            output_dims, output);
}

rip_status rip_depthwise_conv2d_row_fast_rq_s8(const rip_dw_conv_params *params,
                                               const rip_fast_channel *channels,
                                               const rip_dims *input_dims,
                                               const int8_t *const *rows,
                                               const rip_dims *filter_dims,
                                               const int8_t *filter,
                                               const rip_dims *output_dims, int8_t *output) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_row_entry(params, &q, channels, input_dims, rows, filter_dims, filter,
                            output_dims, output);
}
