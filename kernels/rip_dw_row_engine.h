/*
 * rip kernels: the fast depthwise row engine (not part of the generated code's API; the
 * scheme is described in rip_depthwise_fast.h): one output row of a channel group from row
 * pointers (rip_dw_row), and every row of a group from a whole tensor (rip_dw_group). Every
 * fast depthwise kernel runs on it.
 */
#ifndef RIP_DW_ROW_ENGINE_H
#define RIP_DW_ROW_ENGINE_H

#include "rip_dw_geometry.h"

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
static RIP_DW_SHARED void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows,
                                     const int8_t *filter, const rip_dw_rq *q, int32_t c0,
                                     int32_t n_ch, int8_t *o, ptrdiff_t ostep) {
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
static RIP_DW_SHARED void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows,
                                     const int8_t *filter, const rip_dw_rq *q, int32_t c0,
                                     int32_t n_ch, int8_t *o, ptrdiff_t ostep) {
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
static inline void rip_dw_group(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
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

#endif /* RIP_DW_ROW_ENGINE_H */
