/*
 * rip kernels: the depthwise column-pair engine (not part of the generated code's API), the
 * row engine's scheme on cores with SIMD halfword multiplies and on hosts for the layers
 * it covers: an odd kernel width of 3, 5 or 7, at most seven kernel rows, no dilation
 * across the row and a stride of 1 or 2 across it (rip_dwc_covers).
 *
 * A tile of an output row's pixels, for one group of four channels, is computed in two
 * steps. First the tile's input columns (every kernel row, the padded ones as the zero
 * point) are widened once into halfword pairs of neighbouring columns, one word per
 * channel: (column 2p, column 2p + 1) of channel j in row ky. Then each channel runs over
 * the tile's pixels two at a time with its weights held as the operands those pairs meet:
 * the pixel whose window starts at a pair takes A_k = (w[2k], w[2k + 1]) on pair k, the
 * next pixel (stride 1: its window starts one column later) B_k = (w[2k - 1], w[2k]) on
 * pair k and w[0] from the first pair's top half (SMLATB); the last tap of the first
 * pixel is B_m's top half times pair m's bottom (SMLABT). Each word of widened input
 * thus feeds two pixels; a kernel row of width KW costs (KW + 1) / 2 loads and KW + 1
 * multiply-accumulates for 2 KW MACs, with no per-pixel border test (the tile's padding is
 * in its columns). The generator packs A_k and B_{k+1} as the four bytes of one word
 * (rip_dw_geometry.h's column pairs, rip.codegen.kernel_choice._column_pair_weights), a
 * layout no larger than the tap pairs', which SXTB16 widens once per channel and tile.
 *
 * Order. The tile's columns are all read before any of its pixels is stored; tiles go left
 * to right within a channel group, groups in turn. Every read that follows a store in this
 * order also follows it in the row engine's order (groups in turn, pixels left to right, a
 * pixel's taps read before its store), which the in-place schedules are proven for: the
 * reads move earlier, never later. A read of the tile beyond its pixels' windows (its last
 * pair's second pixel where the tile's count is odd) only feeds a pixel never stored.
 */
#ifndef RIP_DW_COLS_ENGINE_H
#define RIP_DW_COLS_ENGINE_H

#include "rip_dw_geometry.h"

/* The widened tile (rip.core.kernel_variants.DW_COLS_TILE_WORDS): 1,280 bytes of stack,
 * as many column pairs as fit for the kernel's rows (26 for 3 rows, 16 for 5, 11 for 7:
 * tiles of 50, 28 and 16 stride-1 pixels; 1,536 bytes measured no faster on MCUNet-in3). */
#define RIP_DWC_TILE_WORDS 320

#if defined(__ARM_FEATURE_DSP)
#define RIP_DWC_SMLABT(x, w, a) __smlabt((x), (w), (a))
#define RIP_DWC_SMLATB(x, w, a) __smlatb((x), (w), (a))
#else
/* a + x's bottom halfword times w's top (SMLABT) or x's top times w's bottom (SMLATB). */
#define RIP_DWC_SMLABT(x, w, a)                                                                \
    ((int32_t)((uint32_t)(a) + (uint32_t)((int32_t)(int16_t)(x) * ((int32_t)(w) >> 16))))
#define RIP_DWC_SMLATB(x, w, a)                                                                \
    ((int32_t)((uint32_t)(a) + (uint32_t)(((int32_t)(x) >> 16) * (int32_t)(int16_t)(w))))
#endif

/* One channel's bias and requantisation, as locals the pixel loop keeps in registers. */
typedef struct {
    int32_t bias, multiplier, round, shift; /* round: RIP_DW_RQ_CHEAP_* only */
    int32_t output_offset, act_min, act_max;
} rip_dwc_channel;

static inline rip_dwc_channel rip_dwc_channel_of(const rip_dw_plane *g, const rip_dw_rq *q,
                                                 int32_t ch) {
    rip_dwc_channel k;
    k.bias = rip_dw_rq_bias(q, ch);
    if (q->mode == RIP_DW_RQ_EXACT) {
        k.multiplier = q->m[ch];
        k.shift = q->s[ch];
        k.round = 0;
    } else {
        k.multiplier = q->records[ch].multiplier;
        k.round = q->records[ch].round;
        k.shift = q->records[ch].shift;
    }
    k.output_offset = g->output_offset;
    k.act_min = g->act_min;
    k.act_max = g->act_max;
    return k;
}

/* A channel of an exact-requantisation layer as a cheap one, where rip_dw_cheap_of_exact
 * proves it (taps <= 49 here). */
static inline int rip_dwc_promote(rip_dwc_channel *k) {
    int32_t round, e;
    if (!rip_dw_cheap_of_exact(k->bias, k->multiplier, k->shift, k->output_offset, &round, &e)) {
        return 0;
    }
    k->round = round;
    k->shift = e;
    return 1;
}

/* MODE is a constant wherever this is inlined: no branch on it per output. */
static inline __attribute__((always_inline)) int8_t rip_dwc_out(const rip_dwc_channel *k,
                                                                const int MODE, int32_t acc) {
    if (MODE == RIP_DW_RQ_EXACT) {
        return (int8_t)rip_fast_requantize(acc, k->multiplier, k->shift, k->output_offset,
                                           k->act_min, k->act_max);
    }
    const int32_t y = rip_cheap_requantize(acc, k->multiplier, k->round, k->shift);
    return (int8_t)(MODE == RIP_DW_RQ_CHEAP_SAT ? rip_sat_s8(y)
                                                : rip_clamp32(y, k->act_min, k->act_max));
}

/* A column pair's four channel words at p. */
static inline __attribute__((always_inline)) void rip_dwc_put4(int32_t *p, int32_t lo,
                                                               int32_t hi) {
    p[0] = rip_dw_sx02(lo);
    p[1] = rip_dw_sx13(lo);
    p[2] = rip_dw_sx02(hi);
    p[3] = rip_dw_sx13(hi);
}

/* Widen the tile's columns ix_a .. ix_a + 2 * ncp - 1 of channels ch..ch+3, every kernel
 * row, into e (row ky, pair p, channel j at e[(ky * ec + p) * 4 + j]); a column outside the
 * input, or a row outside it (NULL), is the zero point. */
static inline __attribute__((always_inline)) void rip_dwc_widen(
    const rip_dw_plane *g, const int8_t *const *rows, int32_t ch, int32_t ix_a, int32_t ncp,
    const int32_t KH, const int32_t ec, int32_t *e) {
    const int32_t zp = g->zero_point;
    const int32_t pad4 = (int32_t)((uint8_t)zp * 0x01010101u);
    const int32_t pad2 = (int32_t)(((uint32_t)(uint16_t)zp << 16) | (uint16_t)zp);
    const ptrdiff_t c = g->c;
    /* pairs [p_lo, p_hi) have both columns inside the input */
    const int32_t p_lo = rip_min32(ix_a >= 0 ? 0 : (1 - ix_a) / 2, ncp);
    const int32_t inside = g->w - 1 - ix_a > 0 ? (g->w - ix_a) / 2 : 0;
    const int32_t p_hi = rip_max32(rip_min32(inside, ncp), p_lo);
    for (int32_t ky = 0; ky < KH; ++ky) {
        int32_t *er = e + ky * ec * 4;
        const int8_t *row = rows[ky];
        if (row == NULL) {
            for (int32_t i = 0; i < 4 * ncp; ++i) {
                er[i] = pad2;
            }
            continue;
        }
        for (int32_t p = 0; p < ncp; ++p) {
            int32_t x0, x1;
            if (p == p_lo && p < p_hi) { /* the inside pairs, straight from the row */
                const int8_t *x = row + (ix_a + 2 * p) * c + ch;
                for (; p < p_hi; ++p, x += 2 * c) {
                    x0 = rip_fast_load_s8x4(x);
                    x1 = rip_fast_load_s8x4(x + c);
                    rip_dwc_put4(er + 4 * p, rip_dw_pack_bottoms(x0, x1),
                                 rip_dw_pack_tops(x0, x1));
                }
                if (p == ncp) {
                    break;
                }
            }
            const int32_t ix = ix_a + 2 * p;
            x0 = ix >= 0 && ix < g->w ? rip_fast_load_s8x4(row + ix * c + ch) : pad4;
            x1 = ix + 1 >= 0 && ix + 1 < g->w ? rip_fast_load_s8x4(row + (ix + 1) * c + ch)
                                              : pad4;
            rip_dwc_put4(er + 4 * p, rip_dw_pack_bottoms(x0, x1), rip_dw_pack_tops(x0, x1));
        }
    }
}

/* Kernel row ky's taps of two outputs of one channel, the pixels whose windows start at
 * pair xr[0] (a0) and one column later (a1 at stride 1) or one pair later (stride 2): xr
 * the row's widened pairs (pair p at xr[4 * p]), wr the row's weights (A_0..A_{m-1}, then
 * B_1..B_m). KW and SW are constants wherever this is expanded. */
#define RIP_DWC_ROW2(xr, wr, KW, SW, a0, a1)                                                   \
    do {                                                                                       \
        const int32_t m_ = ((KW) - 1) / 2;                                                     \
        RIP_DW_UNROLL for (int32_t q = 0; q < m_; ++q) {                                       \
            a0 = RIP_DW_SMLAD((xr)[4 * q], (wr)[q], a0);                                       \
        }                                                                                      \
        a0 = RIP_DWC_SMLABT((xr)[4 * m_], (wr)[2 * m_ - 1], a0);                               \
        if ((SW) == 1) {                                                                       \
            a1 = RIP_DWC_SMLATB((xr)[0], (wr)[0], a1);                                         \
            RIP_DW_UNROLL for (int32_t q = 1; q <= m_; ++q) {                                  \
                a1 = RIP_DW_SMLAD((xr)[4 * q], (wr)[m_ + q - 1], a1);                          \
            }                                                                                  \
        } else {                                                                               \
            RIP_DW_UNROLL for (int32_t q = 0; q < m_; ++q) {                                   \
                a1 = RIP_DW_SMLAD((xr)[4 * (q + 1)], (wr)[q], a1);                             \
            }                                                                                  \
            a1 = RIP_DWC_SMLABT((xr)[4 * (m_ + 1)], (wr)[2 * m_ - 1], a1);                     \
        }                                                                                      \
    } while (0)

/* Two outputs of one channel, pixel 2i and 2i + 1 of the tile, from the widened columns
 * x (pair p of row ky at x[(ky * ec + p) * 4]) and the weights w (row ky's A and B at
 * w + ky * (KW - 1)). KH, KW and SW are constants wherever this is inlined. */
#define RIP_DWC_PAIR(x, ec, w, KH, KW, SW, a0, a1)                                             \
    do {                                                                                       \
        RIP_DW_UNROLL for (int32_t ky = 0; ky < (KH); ++ky) {                                  \
            RIP_DWC_ROW2((x) + ky * (ec) * 4, (w) + ky * ((KW) - 1), KW, SW, a0, a1);          \
        }                                                                                      \
    } while (0)

/* Four outputs, pixels 4i .. 4i + 3: two pairs a row at a time, so that each widened
 * pair and weight word loaded serves both (the second pair's windows start SW pairs
 * later). */
#define RIP_DWC_QUAD(x, ec, w, KH, KW, SW, a0, a1, a2, a3)                                     \
    do {                                                                                       \
        RIP_DW_UNROLL for (int32_t ky = 0; ky < (KH); ++ky) {                                  \
            const int32_t *xr_ = (x) + ky * (ec) * 4;                                          \
            const int32_t *wr_ = (w) + ky * ((KW) - 1);                                        \
            RIP_DWC_ROW2(xr_, wr_, KW, SW, a0, a1);                                            \
            RIP_DWC_ROW2(xr_ + 4 * (SW), wr_, KW, SW, a2, a3);                                 \
        }                                                                                      \
    } while (0)

/* One channel of the tile: its n pixels, four a pass (RIP_DWC_QUAD), then pairs and a
 * last pixel (RIP_DWC_PAIR), pixel i stored at o[i * ostep]. The channel's packed words w
 * (KH * m, rip_dw_geometry.h's column pairs) are widened once into its A and B operands,
 * locals no output store can reach (restrict). MODE is a constant wherever this is
 * inlined. */
static inline __attribute__((always_inline)) void rip_dwc_channel_run(
    const int32_t *x, const int32_t ec, const int32_t *w, const rip_dwc_channel *k,
    const int32_t KH, const int32_t KW, const int32_t SW, const int MODE, int8_t *restrict o,
    ptrdiff_t ostep, int32_t n) {
    const rip_dwc_channel kk = *k;
    const int32_t m = (KW - 1) / 2;
    int32_t wk[7 * 6]; /* row ky: A_0..A_{m-1}, then B_1..B_m */
RIP_DW_UNROLL
    for (int32_t ky = 0; ky < KH; ++ky) {
RIP_DW_UNROLL
        for (int32_t q = 0; q < m; ++q) {
            const int32_t v = w[ky * m + q];
            wk[ky * (KW - 1) + q] = rip_dw_sx02(v);
            wk[ky * (KW - 1) + m + q] = rip_dw_sx13(v);
        }
    }
    const ptrdiff_t ostep2 = 2 * ostep, ostep4 = 4 * ostep;
    /* 7x7 at stride 2 keeps pairs: its quads spill (MCUNet-in3's op 9 took 1.7% more) */
    const int quads = !(SW == 2 && KW == 7);
    const int8_t *const end = o + (quads ? (ptrdiff_t)(n >> 2) * ostep4 : 0);
    for (; o != end; x += 8 * SW, o += ostep4) {
        int32_t a0 = kk.bias, a1 = kk.bias, a2 = kk.bias, a3 = kk.bias;
        RIP_DWC_QUAD(x, ec, wk, KH, KW, SW, a0, a1, a2, a3);
        o[0] = rip_dwc_out(&kk, MODE, a0);
        o[ostep] = rip_dwc_out(&kk, MODE, a1);
        o[ostep2] = rip_dwc_out(&kk, MODE, a2);
        o[ostep2 + ostep] = rip_dwc_out(&kk, MODE, a3);
    }
    if (!quads) {
        for (const int8_t *const end2 = o + (ptrdiff_t)(n >> 1) * ostep2; o != end2;
             x += 4 * SW, o += ostep2) {
            int32_t a0 = kk.bias, a1 = kk.bias;
            RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
            o[0] = rip_dwc_out(&kk, MODE, a0);
            o[ostep] = rip_dwc_out(&kk, MODE, a1);
        }
    } else if (n & 2) {
        int32_t a0 = kk.bias, a1 = kk.bias;
        RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
        o[0] = rip_dwc_out(&kk, MODE, a0);
        o[ostep] = rip_dwc_out(&kk, MODE, a1);
        x += 4 * SW;
        o += ostep2;
    }
    if (n & 1) { /* the last pixel alone: its pair's second is never stored */
        int32_t a0 = kk.bias, a1 = kk.bias;
        RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
        (void)a1;
        o[0] = rip_dwc_out(&kk, MODE, a0);
    }
}

/* Channels ch..ch+3 of one output row (pixel ox, channel ch + j at o[ox * ostep + j]),
 * tile by tile. */
static inline __attribute__((always_inline)) void rip_dwc_group(
    const rip_dw_plane *g, const int8_t *const *rows, int32_t ch, const int32_t *w,
    const rip_dwc_channel *ks, int8_t *o, ptrdiff_t ostep, const int32_t KH, const int32_t KW,
    const int32_t SW, const int MODE) {
    int32_t e[RIP_DWC_TILE_WORDS] __attribute__((aligned(8)));
    const int32_t m = (KW - 1) / 2;
    const int32_t ec = RIP_DWC_TILE_WORDS / (4 * KH); /* column pairs a kernel row */
    const int32_t tile = 2 * ((ec - m) / SW);          /* pixels a tile */
    for (int32_t ox = 0; ox < g->w_out; ox += tile) {
        const int32_t n = rip_min32(tile, g->w_out - ox);
        const int32_t ncp = SW * ((n + 1) / 2) + m;
        rip_dwc_widen(g, rows, ch, ox * SW - g->pw, ncp, KH, ec, e);
        for (int32_t j = 0; j < 4; ++j) {
            rip_dwc_channel_run(e + j, ec, w + j * KH * m, ks + j, KH, KW, SW, MODE,
                                o + (ptrdiff_t)ox * ostep + j, ostep, n);
        }
    }
}

typedef void (*rip_dwc_fn)(const rip_dw_plane *g, const int8_t *const *rows, int32_t ch,
                           const int32_t *w, const rip_dwc_channel *ks, int8_t *o,
                           ptrdiff_t ostep);

#define RIP_DWC_RUN(name, KH, KW, SW, MODE)                                                    \
    static __attribute__((noinline)) void name(const rip_dw_plane *g, const int8_t *const *rows, \
                                               int32_t ch, const int32_t *w,                   \
                                               const rip_dwc_channel *ks, int8_t *o,           \
                                               ptrdiff_t ostep) {                              \
        rip_dwc_group(g, rows, ch, w, ks, o, ostep, KH, KW, SW, MODE);                         \
    }
#define RIP_DWC_RUN_MODES(prefix, KH, KW, SW)                                                  \
    RIP_DWC_RUN(prefix##_exact, KH, KW, SW, RIP_DW_RQ_EXACT)                                   \
    RIP_DWC_RUN(prefix##_sat, KH, KW, SW, RIP_DW_RQ_CHEAP_SAT)                                 \
    RIP_DWC_RUN(prefix##_clamp, KH, KW, SW, RIP_DW_RQ_CHEAP_CLAMP)
#define RIP_DWC_RUN_STRIDES(prefix, KH, KW)                                                    \
    RIP_DWC_RUN_MODES(prefix##_s1, KH, KW, 1)                                                  \
    RIP_DWC_RUN_MODES(prefix##_s2, KH, KW, 2)
RIP_DWC_RUN_STRIDES(rip_dwc_3x3, 3, 3)
RIP_DWC_RUN_STRIDES(rip_dwc_5x5, 5, 5)
RIP_DWC_RUN_STRIDES(rip_dwc_7x7, 7, 7)
RIP_DWC_RUN_STRIDES(rip_dwc_any, g->kh, g->kw)
/* One kernel row: a one-column layer run as the row it is in memory (codegen's
 * column_as_row, streaming keyword models' temporal layers). */
RIP_DWC_RUN_STRIDES(rip_dwc_1x3, 1, 3)
RIP_DWC_RUN_STRIDES(rip_dwc_1x5, 1, 5)
RIP_DWC_RUN_STRIDES(rip_dwc_1x7, 1, 7)
#define RIP_DWC_ROW(prefix)                                                                    \
    {{prefix##_s1_exact, prefix##_s1_sat, prefix##_s1_clamp},                                  \
     {prefix##_s2_exact, prefix##_s2_sat, prefix##_s2_clamp}}

/* The run table's row of a covered kernel size (rip_dwc_covers: KW is 3, 5 or 7): the
 * square sizes and the one-row ones their own, any other the general run. */
static inline int rip_dwc_size_index(int32_t kh, int32_t kw) {
    return kh == 1 ? 3 + (kw - 1) / 2 : rip_dw_size_index(kh, kw);
}

/* Channels [c0, c0 + n_ch) of one output row, as rip_dw_row (c0 a multiple of 4, the layer
 * covered): groups of four here, the last n_ch % 4 channels one at a time. */
static __attribute__((noinline)) void rip_dw_row_cols(const rip_dw_plane *g,
                                                      const int8_t *const *rows,
                                                      const int8_t *filter, const rip_dw_rq *q,
                                                      int32_t c0, int32_t n_ch, int8_t *o,
                                                      ptrdiff_t ostep) {
    static const rip_dwc_fn runs[7][2][3] = {
        RIP_DWC_ROW(rip_dwc_3x3), RIP_DWC_ROW(rip_dwc_5x5), RIP_DWC_ROW(rip_dwc_7x7),
        RIP_DWC_ROW(rip_dwc_any), RIP_DWC_ROW(rip_dwc_1x3), RIP_DWC_ROW(rip_dwc_1x5),
        RIP_DWC_ROW(rip_dwc_1x7)};
    const int32_t kh = g->kh, kw = g->kw, n4 = n_ch & ~3;
    const rip_dwc_fn *const by_mode = runs[rip_dwc_size_index(kh, kw)][g->sw - 1];
    const int cheap = g->act_min == -128 && g->act_max == 127 ? RIP_DW_RQ_CHEAP_SAT
                                                               : RIP_DW_RQ_CHEAP_CLAMP;
    const int32_t *w = rip_dw_packed(filter);
    for (int32_t j = 0; j < n4; j += 4) {
        const int32_t ch = c0 + j;
        rip_dwc_channel ks[4];
        int promoted = q->mode == RIP_DW_RQ_EXACT;
        for (int32_t k = 0; k < 4; ++k) {
            ks[k] = rip_dwc_channel_of(g, q, ch + k);
        }
        for (int32_t k = 0; k < 4 && promoted; ++k) {
            rip_dwc_channel t = ks[k];
            promoted = rip_dwc_promote(&t);
        }
        if (promoted) { /* every channel of the group: the cheap run */
            for (int32_t k = 0; k < 4; ++k) {
                (void)rip_dwc_promote(&ks[k]);
            }
        }
        const rip_dwc_fn run = by_mode[promoted ? cheap : q->mode];
        run(g, rows, ch, w + (ptrdiff_t)ch * kh * ((kw - 1) / 2), ks, o + j, ostep);
    }
    rip_dw_row_singles(g, rows, w, q, c0, n4, n_ch, o, ostep);
}

#endif /* RIP_DW_COLS_ENGINE_H */
