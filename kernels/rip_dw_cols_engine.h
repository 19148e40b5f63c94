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
 *
 * Group order (rip_dw_plane_cols, a whole layer whose output row is one tile): a group of
 * four channels over every output row, rows in order, before the next group. The window's
 * widened kernel rows that the next output row's window keeps move up in the tile instead
 * of being widened again, so each input row of a group is read from memory once, and each
 * channel's operands and requantisation are set once per group, not per row: on narrow
 * layers (MLPerf Tiny's keyword spotter, 25 x 5) that was most of a row's work. A group's
 * stores reach only its own channels' input bytes (depth multiplier 1), so in place the
 * order is safe when every row widened from memory for output row r is one that no earlier
 * output row has reached (rip_dw_plane_cols_ok; rip.allocator.theory.simulate
 * .simulate_depthwise_plane executes the order, depthwise_plane_order is the same test).
 * Where a group's whole widened plane fits the run's tile (a square kernel, a layer a few
 * columns wide: rip_dwc_whole_pairs), every row is widened before the group's first store,
 * so in place it is safe whatever the window would do.
 */
#ifndef RIP_DW_COLS_ENGINE_H
#define RIP_DW_COLS_ENGINE_H

#include "rip_dw_geometry.h"

/* The widened tile (rip.core.kernel_variants.DW_COLS_TILE_WORDS): 1,280 bytes of stack,
 * as many column pairs as fit for the kernel's rows (26 for 3 rows, 16 for 5, 11 for 7:
 * tiles of 50, 28 and 16 stride-1 pixels; 1,536 bytes measured no faster on MCUNet-in3). */
#define RIP_DWC_TILE_WORDS 320
/* The 3x3 and 5x5 runs' tile is larger (rip.core.kernel_variants.DW_COLS_PLANE_WORDS), and
 * their group order (rip_dw_plane_cols) takes a row of as many columns as it holds: a
 * group's whole widened plane of a narrow layer fits (MLPerf Tiny's keyword spotter: 27
 * rows of four pairs; 22 rows of five for 5x5), and the 3x3 window's three rows of 45
 * pairs hold a row of 88 output columns (MCUNet-in3's and ProxylessNAS's first depthwise
 * layer, whose every input row is then widened once a group instead of three times, and
 * the in-place ring goes unused: in3's op 3 2.80 to 2.3 instructions a MAC). The frames
 * about 2,250 and 2,112 bytes beside the 7x7 runs' 1,952 (their operands the larger
 * part). */
#define RIP_DWC_PLANE3_WORDS 540
#define RIP_DWC_PLANE_WORDS 448
/* The 7x7 runs' window holds a row of 22 output columns (14 pairs a kernel row: MCUNet-in2's,
 * in4's and vww2's 20- and 18-column 7x7 layers, which took two tiles a row and widened
 * all seven kernel rows again for each), the frame about 2,240 bytes. */
#define RIP_DWC_PLANE7_WORDS 392

/* Output pixels one tile of EC column pairs a kernel row holds, the kernel's half width M
 * (kw - 1) / 2, at column stride SW: the pairs past the half width, two pixels a pair
 * (rip.core.kernel_variants.dw_cols_tile). */
#define RIP_DWC_TILE_PIXELS(EC, M, SW) (2 * (((EC) - (M)) / (SW)))

/* The words of a run's tile (RIP_DWC_RUN's TILE) for a kernel size. */
static inline int32_t rip_dwc_plane_words(int32_t kh, int32_t kw) {
    if (kh != kw || (kh != 3 && kh != 5 && kh != 7)) {
        return RIP_DWC_TILE_WORDS;
    }
    return kh == 3 ? RIP_DWC_PLANE3_WORDS : kh == 5 ? RIP_DWC_PLANE_WORDS : RIP_DWC_PLANE7_WORDS;
}

/* A square kernel's group plane lies at a constant number of column pairs a row, which the
 * taps' offsets fold into; 0: no whole-plane order (rip.core.kernel_variants
 * .dw_cols_whole_pairs). The narrow layout (wide 0) holds the rows of a layer of at most 6
 * output columns at stride 1, 4 at stride 2, as many as the tile has room for (MLPerf
 * Tiny's keyword spotter: 27); the 3x3 runs also take rows of up to 12 output columns at
 * stride 1 and 6 at stride 2 (RIP_DWC_WIDE3_PAIRS, at most 19 rows), at stride 1 in a
 * run of their own (wide 1), at stride 2 as its only layout; the 5x5 runs rows of up to 12
 * columns at stride 1 and 6 at stride 2 in a run of their own (RIP_DWC_WIDE5_PAIRS, its
 * tile RIP_DWC_WIDE5_WORDS: at most 15 rows). Widening a group's plane once instead of a
 * window a row took a fifth to a quarter off such layers (qemu-m33: 9 x 9 x 144 347,900
 * to 266,400 instructions; 12 x 12 x 64 240,500 to 189,150; stride 2 to 6 x 6 x 288
 * 446,800 to 347,600; 5x5 over 11 x 11 x 160 1,233,250 to 977,700, stride 2 to 5 x 5 x 288
 * 685,400 to 541,200). Stride 1 keeps the narrow layout where it fits: a 6-column layer
 * cost 0.4% more at 7 pairs a row than at 4, and a tall one (the keyword spotter's 27
 * rows) fits only at 4. */
#define RIP_DWC_WIDE3_PAIRS 7
#define RIP_DWC_WIDE5_PAIRS 8
/* The 5x5 wide run's tile: 15 rows of 8 pairs (MCUNet-in3's 11 x 11 layers), its frame
 * 128 bytes above the narrow run's; the other sizes' wide tile is their plane tile. */
#define RIP_DWC_WIDE5_WORDS 480
static inline int32_t rip_dwc_whole_words(int32_t kh, int wide) {
    return wide && kh == 5 ? RIP_DWC_WIDE5_WORDS : rip_dwc_plane_words(kh, kh);
}
static inline int32_t rip_dwc_whole_pairs(int32_t kh, int32_t kw, int32_t sw, int wide) {
    if (kh != kw || (kh != 3 && kh != 5 && kh != 7)) {
        return 0;
    }
    if (kh == 3 && (sw == 2 || wide)) {
        return sw == 2 && wide ? 0 : RIP_DWC_WIDE3_PAIRS;
    }
    if (kh == 5 && wide) {
        return RIP_DWC_WIDE5_PAIRS;
    }
    return wide ? 0 : (kw - 1) / 2 + (sw == 1 ? 3 : 4);
}

/* Which whole-plane layout a group order takes (rip.core.kernel_variants
 * .dw_cols_whole_fits): 1 the narrow one, 2 the wide one, where every row the group reads
 * fits the run's tile at its pairs a row; 0: neither. */
static inline int rip_dwc_whole_of(const rip_dw_plane *g) {
    const int32_t ncp = g->sw * ((g->w_out + 1) / 2) + (g->kw - 1) / 2;
    const int64_t rows = (int64_t)(g->h_out - 1) * g->sh + g->kh;
    for (int wide = 0; wide < 2; ++wide) {
        const int32_t pairs = rip_dwc_whole_pairs(g->kh, g->kw, g->sw, wide);
        if (pairs > 0 && ncp <= pairs && rows * pairs * 4 <= rip_dwc_whole_words(g->kh, wide)) {
            return 1 + wide;
        }
    }
    return 0;
}

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

/* The cheap runs of kernels of at most six operand words a channel (3x3, 1x3, 1x5, 1x7)
 * accumulate twice the sum: their operands are the weights doubled (rip_dwc_weights) and
 * their accumulators start from twice the bias, so that rip_cheap_requantize's first step
 * (acc + acc, which the preconditions keep inside int32: |acc| < 2^30) is in the
 * multiplies instead of once an output. Larger kernels would double more operand words a
 * group than a narrow row has outputs (measured: MCUNet-vww1's 5x5 layers 1.9% more), and
 * the exact runs keep acc. */
#define RIP_DWC_DOUBLED(KH, KW, MODE) ((MODE) != RIP_DW_RQ_EXACT && (KH) * ((KW) - 1) <= 6)

static inline __attribute__((always_inline)) int32_t rip_dwc_start(const rip_dwc_channel *k,
                                                                   const int DOUBLED) {
    return DOUBLED ? (int32_t)((uint32_t)k->bias << 1) : k->bias;
}

/* MODE and DOUBLED are constants wherever this is inlined: no branch on them per output.
 * acc is the run's accumulator (twice the sum where DOUBLED: rip_dwc_start). */
static inline __attribute__((always_inline)) int8_t rip_dwc_out(const rip_dwc_channel *k,
                                                                const int MODE,
                                                                const int DOUBLED,
                                                                int32_t acc) {
    if (MODE == RIP_DW_RQ_EXACT) {
        return (int8_t)rip_fast_requantize(acc, k->multiplier, k->shift, k->output_offset,
                                           k->act_min, k->act_max);
    }
    /* rip_cheap_requantize, its a2 = acc + acc already taken where DOUBLED */
    const int32_t a2 = DOUBLED ? acc : acc + acc;
    const int32_t y = (rip_smmlar(a2, k->multiplier, k->round) + (a2 >> 31)) >> k->shift;
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

/* One tile of an output row: n pixels from output column ox, whose columns are the ncp
 * pairs from input column ix_a; pairs [p_lo, p_hi) have both columns inside the input. */
typedef struct {
    int32_t n, ncp, ix_a, p_lo, p_hi;
} rip_dwc_span;

static inline __attribute__((always_inline)) rip_dwc_span rip_dwc_span_at(
    const rip_dw_plane *g, int32_t ox, int32_t tile, const int32_t SW, const int32_t m) {
    rip_dwc_span t;
    t.n = rip_min32(tile, g->w_out - ox);
    t.ncp = SW * ((t.n + 1) / 2) + m;
    t.ix_a = ox * SW - g->pw;
    t.p_lo = rip_min32(t.ix_a >= 0 ? 0 : (1 - t.ix_a) / 2, t.ncp);
    const int32_t inside = g->w - 1 - t.ix_a > 0 ? (g->w - t.ix_a) / 2 : 0;
    t.p_hi = rip_max32(rip_min32(inside, t.ncp), t.p_lo);
    return t;
}

/* Widen the pairs of channels ch..ch+3 from x (the pair's first column at x, its second at
 * x + c) into ep until ee, a pair's four words (rip_dwc_put4) at a time, x a pair on. */
static inline __attribute__((always_inline)) void rip_dwc_widen_pairs(const int8_t *x,
                                                                      ptrdiff_t c, int32_t *ep,
                                                                      const int32_t *ee) {
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    /* rip_dwc_put4 of the same packs, a pair's four words in two STRDs: 13 instructions a
     * pair where GCC's loop takes 17. Two pairs a pass (RIP_ASM_GROUPS, 12 a pair) saved
     * 0.1-0.2% of the instructions but cost 0.8-1.0% more Pico 2 cycles in flash misses
     * (mcunet-vww1, mbv2-w0.35): the pair laid out three times at each inlined site. */
    int32_t x0, x1, t;
    __asm__ volatile(RIP_ASM_LOOP_HEAD
                     "ldr %[x0], [%[x]]\n\t"
                     "ldr %[x1], [%[x], %[c]]\n\t"
                     "add %[x], %[x], %[c], lsl #1\n\t"
                     "pkhbt %[t], %[x0], %[x1], lsl #16\n\t"
                     "pkhtb %[x1], %[x1], %[x0], asr #16\n\t"
                     "sxtb16 %[x0], %[t]\n\t"
                     "sxtb16 %[t], %[t], ror #8\n\t"
                     "strd %[x0], %[t], [%[e]], #8\n\t"
                     "sxtb16 %[x0], %[x1]\n\t"
                     "sxtb16 %[x1], %[x1], ror #8\n\t"
                     "strd %[x0], %[x1], [%[e]], #8\n\t"
                     "cmp %[e], %[ee]\n\t"
                     "bne 1b"
                     : [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(t), [x] "+r"(x), [e] "+r"(ep)
                     : [c] "r"(c), [ee] "r"(ee)
                     : "cc", "memory");
#else
    for (; ep != ee; x += 2 * c, ep += 4) {
        const int32_t x0 = rip_fast_load_s8x4(x), x1 = rip_fast_load_s8x4(x + c);
        rip_dwc_put4(ep, rip_dw_pack_bottoms(x0, x1), rip_dw_pack_tops(x0, x1));
    }
#endif
}

/* Pair p of the span t whose columns may lie outside the input (the zero point there). */
static inline __attribute__((always_inline)) void rip_dwc_widen_pad(const rip_dw_plane *g,
                                                                    const int8_t *row,
                                                                    int32_t ch,
                                                                    const rip_dwc_span *t,
                                                                    int32_t p, int32_t *er) {
    const int32_t pad4 = (int32_t)((uint8_t)g->zero_point * 0x01010101u);
    const ptrdiff_t c = g->c;
    const int32_t ix = t->ix_a + 2 * p;
    const int32_t x0 = ix >= 0 && ix < g->w ? rip_fast_load_s8x4(row + ix * c + ch) : pad4;
    const int32_t x1 =
        ix + 1 >= 0 && ix + 1 < g->w ? rip_fast_load_s8x4(row + (ix + 1) * c + ch) : pad4;
    rip_dwc_put4(er + 4 * p, rip_dw_pack_bottoms(x0, x1), rip_dw_pack_tops(x0, x1));
}

/* Widen the tile's columns (span t) of channels ch..ch+3, kernel rows k0 .. KH - 1, into e
 * (row ky, pair p, channel j at e[(ky * ec + p) * 4 + j]); a column outside the input, or
 * a row outside it (NULL), is the zero point. */
static inline __attribute__((always_inline)) void rip_dwc_widen(
    const rip_dw_plane *g, const int8_t *const *rows, int32_t ch, const rip_dwc_span *t,
    int32_t k0, const int32_t KH, const int32_t ec, int32_t *e) {
    const int32_t zp = g->zero_point;
    const int32_t pad2 = (int32_t)(((uint32_t)(uint16_t)zp << 16) | (uint16_t)zp);
    const ptrdiff_t c = g->c;
    const int32_t ncp = t->ncp, p_lo = t->p_lo, p_hi = t->p_hi;
    const ptrdiff_t first = (ptrdiff_t)(t->ix_a + 2 * p_lo) * c + ch; /* pair p_lo's column */
    for (int32_t ky = k0; ky < KH; ++ky) {
        int32_t *er = e + ky * ec * 4;
        const int8_t *row = rows[ky];
        if (row == NULL) {
            for (int32_t i = 0; i < 4 * ncp; ++i) {
                er[i] = pad2;
            }
            continue;
        }
        /* the pairs left of the input, those inside (no test a pair), those right of it */
        for (int32_t p = 0; p < p_lo; ++p) {
            rip_dwc_widen_pad(g, row, ch, t, p, er);
        }
        if (p_lo < p_hi) {
            rip_dwc_widen_pairs(row + first, c, er + 4 * p_lo, er + 4 * p_hi);
        }
        for (int32_t p = p_hi; p < ncp; ++p) {
            rip_dwc_widen_pad(g, row, ch, t, p, er);
        }
    }
}

/* The whole-plane order's widening (rip_dwc_whole_pairs): rows [0, n_rows) of the group's
 * plane from input row -ph on, ECW pairs a row, the span t's pairs of each. Column pair by
 * column pair down the rows: a pair's two columns are inside the input or the zero point
 * for every row alike, so each is a pointer stepping a row at a time (or resting on a pad
 * word), with no test a pair and row; the rows outside the input are the zero point. All
 * of the group's reads still come before its first store. */
static inline __attribute__((always_inline)) void rip_dwc_widen_whole(
    const rip_dw_plane *g, const int8_t *in, int32_t ch, const rip_dwc_span *t, int32_t n_rows,
    const int32_t ECW, int32_t *e) {
    const int32_t zp = g->zero_point;
    const int32_t pad2 = (int32_t)(((uint32_t)(uint16_t)zp << 16) | (uint16_t)zp);
    const ptrdiff_t c = g->c, row_in = (ptrdiff_t)g->w * c;
    const int32_t ncp = t->ncp;
    const int32_t i_lo = rip_min32(rip_max32(g->ph, 0), n_rows);
    const int32_t i_hi = rip_max32(rip_min32(g->h + g->ph, n_rows), i_lo);
    for (int32_t i = 0; i < n_rows; ++i) {
        if (i == i_lo) { /* the rows inside the input, below */
            i = i_hi;
            if (i == n_rows) {
                break;
            }
        }
        int32_t *er = e + i * ECW * 4;
        for (int32_t k = 0; k < 4 * ncp; ++k) {
            er[k] = pad2;
        }
    }
    if (i_lo == i_hi) {
        return;
    }
    const int32_t pad4 = (int32_t)((uint8_t)zp * 0x01010101u);
    const int8_t *const first = in + (ptrdiff_t)(i_lo - g->ph) * row_in + ch;
    for (int32_t p = 0; p < ncp; ++p) {
        const int32_t ix = t->ix_a + 2 * p;
        const int in0 = (uint32_t)ix < (uint32_t)g->w, in1 = (uint32_t)ix + 1 < (uint32_t)g->w;
        const int8_t *s0 = in0 ? first + ix * c : (const int8_t *)&pad4;
        const int8_t *s1 = in1 ? first + (ix + 1) * c : (const int8_t *)&pad4;
        const ptrdiff_t d0 = in0 ? row_in : 0, d1 = in1 ? row_in : 0;
        int32_t *ep = e + (i_lo * ECW + p) * 4;
        const int32_t *const ee = e + (i_hi * ECW + p) * 4;
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
        /* rip_dwc_put4 of the same packs, 14 instructions a row: the pair's second half
         * stored first, so that the first's STRD steps e to the next row */
        int32_t x0, x1, tt;
        __asm__ volatile(RIP_ASM_LOOP_HEAD
                         "ldr %[x0], [%[s0]]\n\t"
                         "ldr %[x1], [%[s1]]\n\t"
                         "add %[s0], %[s0], %[d0]\n\t"
                         "add %[s1], %[s1], %[d1]\n\t"
                         "pkhbt %[t], %[x0], %[x1], lsl #16\n\t"
                         "pkhtb %[x1], %[x1], %[x0], asr #16\n\t"
                         "sxtb16 %[x0], %[x1]\n\t"
                         "sxtb16 %[x1], %[x1], ror #8\n\t"
                         "strd %[x0], %[x1], [%[e], #8]\n\t"
                         "sxtb16 %[x0], %[t]\n\t"
                         "sxtb16 %[t], %[t], ror #8\n\t"
                         "strd %[x0], %[t], [%[e]], %[es]\n\t"
                         "cmp %[e], %[ee]\n\t"
                         "bne 1b"
                         : [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(tt), [s0] "+r"(s0),
                           [s1] "+r"(s1), [e] "+r"(ep)
                         : [d0] "r"(d0), [d1] "r"(d1), [ee] "r"(ee), [es] "n"(16 * ECW)
                         : "cc", "memory");
#else
        for (; ep != ee; s0 += d0, s1 += d1, ep += ECW * 4) {
            const int32_t x0 = rip_fast_load_s8x4(s0), x1 = rip_fast_load_s8x4(s1);
            rip_dwc_put4(ep, rip_dw_pack_bottoms(x0, x1), rip_dw_pack_tops(x0, x1));
        }
#endif
    }
}

/* Copy `words` (a multiple of 4) from src to dst, four at a time. */
static inline __attribute__((always_inline)) void rip_dwc_move(int32_t *dst, const int32_t *src,
                                                               int32_t words) {
    const int32_t *const end = src + words;
#if defined(__arm__) && RIP_HAND_ASM
    while (src != end) {
        /* registers named in ascending order, as LDM and STM list them (the assembler
         * warns on any other order, though the copy is the same either way); r0-r3 took
         * fewer instructions than r4-r7 on the window-order layers (1baef73) */
        register int32_t a __asm__("r0"), b __asm__("r1"), c __asm__("r2"), d __asm__("r3");
        __asm__ volatile("ldmia %0!, {%2, %3, %4, %5}\n\tstmia %1!, {%2, %3, %4, %5}"
                         : "+r"(src), "+r"(dst), "=&r"(a), "=&r"(b), "=&r"(c), "=&r"(d)
                         :
                         : "memory");
    }
#else
    for (; src != end; src += 4, dst += 4) {
        dst[0] = src[0];
        dst[1] = src[1];
        dst[2] = src[2];
        dst[3] = src[3];
    }
#endif
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

/* Both halfwords of x doubled (the widened weights of a cheap run: |w| <= 128, so each
 * stays inside its halfword). */
static inline int32_t rip_dwc_twice(int32_t x) {
#if defined(__ARM_FEATURE_DSP)
    return __sadd16(x, x);
#else
    return (int32_t)((((uint32_t)x << 1) & 0xfffeu) | (((uint32_t)x >> 16) << 17));
#endif
}

/* A channel's operands (row ky: A_0..A_{m-1}, then B_1..B_m, KH * (KW - 1) words) from its
 * packed words w (KH * m, rip_dw_geometry.h's column pairs), doubled where DOUBLED
 * (rip_dwc_start). In a run's operand array a channel takes RIP_DWC_CHANNEL_WORDS(words)
 * words: its operands, then its record (rip_dwc_record), and where the operands are at
 * most six, rip_dwc3_ctl's four words (the 3x3 frames 64 bytes more, still below 7x7's). */
#define RIP_DWC_WEIGHT_WORDS (7 * 6)
#define RIP_DWC_CHANNEL_WORDS(words) ((words) + ((words) <= 6 ? 8 : 4))
static inline __attribute__((always_inline)) void rip_dwc_weights(const int32_t *w,
                                                                  const int32_t KH,
                                                                  const int32_t KW,
                                                                  const int DOUBLED,
                                                                  int32_t *wk) {
    const int32_t m = (KW - 1) / 2;
RIP_DW_UNROLL
    for (int32_t ky = 0; ky < KH; ++ky) {
RIP_DW_UNROLL
        for (int32_t q = 0; q < m; ++q) {
            const int32_t v = w[ky * m + q];
            const int32_t a = rip_dw_sx02(v), b = rip_dw_sx13(v);
            wk[ky * (KW - 1) + q] = DOUBLED ? rip_dwc_twice(a) : a;
            wk[ky * (KW - 1) + m + q] = DOUBLED ? rip_dwc_twice(b) : b;
        }
    }
}

/* A cheap run's channel record after its operands (what the hand-scheduled loops read
 * beside the operands): the accumulator's start (rip_dwc_start), multiplier, round and
 * shift. */
static inline __attribute__((always_inline)) void rip_dwc_record(const rip_dwc_channel *k,
                                                                 const int DOUBLED,
                                                                 int32_t *r) {
    r[0] = rip_dwc_start(k, DOUBLED);
    r[1] = k->multiplier;
    r[2] = k->round;
    r[3] = k->shift;
}

/* How the hand-scheduled 3x3 rows of n pixels end after their quads: RIP_DWC3_REST (a
 * pair and a last pixel as n & 3 says: any n), or where n allows, the pair and last pixel
 * as one block (RIP_DWC3_TRIPLE, n % 4 = 3) or the last quad and pixel (RIP_DWC3_QUINT,
 * n % 4 = 1, n >= 5). Each end is a run of its own (RIP_DWC3_ENDS, chosen once a call by
 * rip_dwc_run_of), so that no row and no channel tests it. */
#define RIP_DWC3_END_REST 0
#define RIP_DWC3_END_TRIPLE 3
#define RIP_DWC3_END_QUINT 5
static inline int rip_dwc3_end(int32_t n) {
    return (n & 3) == 3 ? RIP_DWC3_END_TRIPLE
                        : (n & 3) == 1 && n >= 5 ? RIP_DWC3_END_QUINT : RIP_DWC3_END_REST;
}

#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
/* One kernel row of a 3x3 stride-1 quad (RIP_DWC_QUAD's RIP_DWC_ROW2 pair, the same
 * products): its operands A, B at the channel's words [2 ky, 2 ky + 1], its widened pairs
 * p, p + 1, p + 2 at x + ROW, + 16, + 32 (bytes), two of them live at a time. */
#define RIP_DWC3_ROW(WOFF, ROW)                                                                \
    "ldrd %[wa], %[wb], [%[cp], #" WOFF "]\n\t"                                                \
    "ldr %[p0], [%[x], %[" ROW "]]\n\t"                                                        \
    "ldr %[p1], [%[x], #%c[" ROW "]+16]\n\t"                                                   \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "smlatb %[a1], %[p0], %[wa], %[a1]\n\t"                                                    \
    "ldr %[p0], [%[x], #%c[" ROW "]+32]\n\t"                                                   \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wb], %[a1]\n\t"                                                     \
    "smlad %[a2], %[p1], %[wa], %[a2]\n\t"                                                     \
    "smlatb %[a3], %[p1], %[wa], %[a3]\n\t"                                                    \
    "smlabt %[a2], %[p0], %[wb], %[a2]\n\t"                                                    \
    "smlad %[a3], %[p0], %[wb], %[a3]\n\t"
/* The cheap requantisation of a doubled accumulator (rip_dwc_out), saturated to int8;
 * wa, wb, p0: the multiplier, round and shift. */
#define RIP_DWC3_SAT(A)                                                                        \
    "smmlar %[p1], %[" A "], %[wa], %[wb]\n\t"                                                 \
    "add %[" A "], %[p1], %[" A "], asr #31\n\t"                                               \
    "asr %[" A "], %[" A "], %[p0]\n\t"                                                        \
    "ssat %[" A "], #8, %[" A "]\n\t"
/* The record's multiplier, round and shift into wa, wb, p0. */
#define RIP_DWC3_RQ                                                                            \
    "ldrd %[wa], %[wb], [%[cp], #28]\n\t"                                                      \
    "ldr %[p0], [%[cp], #36]\n\t"

/* Output A of one pixel stored, o on past it; outputs A and B of two neighbouring pixels
 * stored, o on past them. */
#define RIP_DWC3_STORE1(A)                                                                     \
    "strb %[" A "], [%[o]]\n\t"                                                                \
    "add %[o], %[o], %[os]\n\t"
#define RIP_DWC3_STORE2(A, B)                                                                  \
    "strb %[" A "], [%[o]]\n\t"                                                                \
    "strb %[" B "], [%[o], %[os]]\n\t"                                                         \
    "add %[o], %[o], %[os], lsl #1\n\t"

/* A 3x3 quad's end (both strides): the four outputs requantised and stored in pixel order,
 * x on by XSTEP bytes (the quad's widened pairs), the loop closed at o == end. */
#define RIP_DWC3_QUAD_TAIL(XSTEP)                                                              \
    RIP_DWC3_RQ                                                                                \
    RIP_DWC3_SAT("a0")                                                                         \
    RIP_DWC3_SAT("a1")                                                                         \
    RIP_DWC3_SAT("a2")                                                                         \
    RIP_DWC3_SAT("a3")                                                                         \
    RIP_DWC3_STORE2("a0", "a1")                                                                \
    RIP_DWC3_STORE2("a2", "a3")                                                                \
    "adds %[x], %[x], #" XSTEP "\n\t"                                                          \
    "cmp %[o], %[end]\n\t"                                                                     \
    "bne 1b\n\t"

/* The quads of a 3x3 stride-1 run (GCC keeps the operands, the requantisation and the store
 * offsets on the stack and reloads them: 75 instructions a quad at -O3, measured; here 64),
 * row 0 starting the accumulators from the record's first word. */
#define RIP_DWC3_QUADS_S1                                                                      \
    RIP_ASM_LOOP_HEAD                                                                          \
    RIP_DWC3_ROW0_S1("")                                                                       \
    RIP_DWC3_ROW("8", "r1")                                                                    \
    RIP_DWC3_ROW("16", "r2")                                                                   \
    RIP_DWC3_QUAD_TAIL("32")
/* A quad's first kernel row at stride 1, the accumulators started from the record's first
 * word; START: what else takes that word (RIP_DWC3_QUINT's fifth accumulator). */
#define RIP_DWC3_ROW0_S1(START)                                                                \
    "ldr %[a0], [%[cp], #24]\n\t"                                                              \
    "ldrd %[wa], %[wb], [%[cp]]\n\t"                                                           \
    "ldr %[p0], [%[x]]\n\t"                                                                    \
    "ldr %[p1], [%[x], #16]\n\t"                                                               \
    START                                                                                      \
    "smlatb %[a1], %[p0], %[wa], %[a0]\n\t"                                                    \
    "smlad %[a2], %[p1], %[wa], %[a0]\n\t"                                                     \
    "smlatb %[a3], %[p1], %[wa], %[a0]\n\t"                                                    \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "ldr %[p0], [%[x], #32]\n\t"                                                               \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wb], %[a1]\n\t"                                                     \
    "smlabt %[a2], %[p0], %[wb], %[a2]\n\t"                                                    \
    "smlad %[a3], %[p0], %[wb], %[a3]\n\t"

/* One kernel row of a 3x3 stride-2 quad (RIP_DWC_QUAD's RIP_DWC_ROW2 pair at SW 2): pixel
 * i's window starts at pair i, A (taps 0, 1) on it and B's top (tap 2) on pair i + 1's
 * bottom; the five pairs at x + ROW, + 16 .. + 64 (bytes), two live at a time. */
#define RIP_DWC3S2_ROW(WOFF, ROW)                                                              \
    RIP_DWC3_PAIR_ROW_S2(WOFF, ROW) /* its first pair, then the second */                      \
    "smlad %[a2], %[p0], %[wa], %[a2]\n\t"                                                     \
    "ldr %[p1], [%[x], #%c[" ROW "]+48]\n\t"                                                   \
    "smlabt %[a2], %[p1], %[wb], %[a2]\n\t"                                                    \
    "smlad %[a3], %[p1], %[wa], %[a3]\n\t"                                                     \
    "ldr %[p0], [%[x], #%c[" ROW "]+64]\n\t"                                                   \
    "smlabt %[a3], %[p0], %[wb], %[a3]\n\t"

/* The quads at stride 2 (GCC's schedule kept them on the stack too: MCUNet's and
 * person-det's stride-2 3x3 layers about 3.4 instructions a MAC); here 70 a quad, row 0
 * starting every accumulator from the record's first word (a3 holds it until its own first
 * product). */
#define RIP_DWC3_QUADS_S2                                                                      \
    RIP_ASM_LOOP_HEAD                                                                          \
    RIP_DWC3_ROW0_S2("")                                                                       \
    RIP_DWC3S2_ROW("8", "r1")                                                                  \
    RIP_DWC3S2_ROW("16", "r2")                                                                 \
    RIP_DWC3_QUAD_TAIL("64")
/* A stride-2 quad's first kernel row (a3 holds the record's first word until its own first
 * product); START as RIP_DWC3_ROW0_S1's. */
#define RIP_DWC3_ROW0_S2(START)                                                                \
    "ldr %[a3], [%[cp], #24]\n\t"                                                              \
    "ldrd %[wa], %[wb], [%[cp]]\n\t"                                                           \
    "ldr %[p0], [%[x]]\n\t"                                                                    \
    "ldr %[p1], [%[x], #16]\n\t"                                                               \
    START                                                                                      \
    "smlad %[a0], %[p0], %[wa], %[a3]\n\t"                                                     \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wa], %[a3]\n\t"                                                     \
    "ldr %[p0], [%[x], #32]\n\t"                                                               \
    "smlabt %[a1], %[p0], %[wb], %[a1]\n\t"                                                    \
    "smlad %[a2], %[p0], %[wa], %[a3]\n\t"                                                     \
    "ldr %[p1], [%[x], #48]\n\t"                                                               \
    "smlabt %[a2], %[p1], %[wb], %[a2]\n\t"                                                    \
    "smlad %[a3], %[p1], %[wa], %[a3]\n\t"                                                     \
    "ldr %[p0], [%[x], #64]\n\t"                                                               \
    "smlabt %[a3], %[p0], %[wb], %[a3]\n\t"

/* One kernel row of a pixel pair (the quads' first half): stride 1 the second pixel's
 * window one column on (SMLATB on pair 0, SMLAD with B on pair 1), stride 2 one pair on. */
#define RIP_DWC3_PAIR_ROW_S1(WOFF, ROW)                                                        \
    "ldrd %[wa], %[wb], [%[cp], #" WOFF "]\n\t"                                                \
    "ldr %[p0], [%[x], %[" ROW "]]\n\t"                                                        \
    "ldr %[p1], [%[x], #%c[" ROW "]+16]\n\t"                                                   \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "smlatb %[a1], %[p0], %[wa], %[a1]\n\t"                                                    \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wb], %[a1]\n\t"
#define RIP_DWC3_PAIR_ROW_S2(WOFF, ROW)                                                        \
    "ldrd %[wa], %[wb], [%[cp], #" WOFF "]\n\t"                                                \
    "ldr %[p0], [%[x], %[" ROW "]]\n\t"                                                        \
    "ldr %[p1], [%[x], #%c[" ROW "]+16]\n\t"                                                   \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wa], %[a1]\n\t"                                                     \
    "ldr %[p0], [%[x], #%c[" ROW "]+32]\n\t"                                                   \
    "smlabt %[a1], %[p0], %[wb], %[a1]\n\t"
/* A row's pair of pixels after its quads (n & 2), x on by the pair's widened pairs. */
#define RIP_DWC3_PAIR(ROW, XSTEP)                                                              \
    "ldr %[a0], [%[cp], #24]\n\t"                                                              \
    "mov %[a1], %[a0]\n\t"                                                                     \
    ROW("0", "r0")                                                                             \
    ROW("8", "r1")                                                                             \
    ROW("16", "r2")                                                                            \
    RIP_DWC3_RQ                                                                                \
    RIP_DWC3_SAT("a0")                                                                         \
    RIP_DWC3_SAT("a1")                                                                         \
    RIP_DWC3_STORE2("a0", "a1")                                                                \
    "adds %[x], %[x], #" XSTEP "\n\t"
/* One kernel row of a row's last pixel (n odd): its window starts at a pair (pixel 2i at
 * stride 1, any pixel at stride 2), A on it and B's top on the next pair's bottom. */
#define RIP_DWC3_ONE_ROW(WOFF, ROW)                                                            \
    "ldrd %[wa], %[wb], [%[cp], #" WOFF "]\n\t"                                                \
    "ldr %[p0], [%[x], %[" ROW "]]\n\t"                                                        \
    "ldr %[p1], [%[x], #%c[" ROW "]+16]\n\t"                                                   \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"
#define RIP_DWC3_ONE                                                                           \
    "ldr %[a0], [%[cp], #24]\n\t"                                                              \
    RIP_DWC3_ONE_ROW("0", "r0")                                                                \
    RIP_DWC3_ONE_ROW("8", "r1")                                                                \
    RIP_DWC3_ONE_ROW("16", "r2")                                                               \
    RIP_DWC3_RQ                                                                                \
    RIP_DWC3_SAT("a0")                                                                         \
    RIP_DWC3_STORE1("a0")

/* A row's pair (n & 2) and last pixel (n & 1) after its quads. */
#define RIP_DWC3_REST(PAIR_ROW, PSTEP)                                                         \
    "ldr %[p0], [%[cp], #44]\n\t"                                                              \
    "lsls %[p0], %[p0], #31\n\t" /* C: a pair, N: a last pixel */                              \
    "bcc 5f\n\t"                                                                               \
    RIP_DWC3_PAIR(PAIR_ROW, PSTEP)                                                             \
    "ldr %[p0], [%[cp], #44]\n\t"                                                              \
    "lsls %[p0], %[p0], #31\n\t"                                                               \
    "5:\n\t"                                                                                   \
    "bpl 6f\n\t"                                                                               \
    RIP_DWC3_ONE

/* A row's last five pixels where n % 4 is 1 (n >= 5: its last quad and its last pixel as
 * one block, five accumulators, the fifth in `end`'s register, which the quads no longer
 * need and the row's end sets again): each kernel row's operands and the pairs the last
 * pixel shares with the fourth loaded once, the requantisation read once: 79 instructions
 * at stride 1 where a quad and a lone pixel took 94 (MLPerf Tiny's keyword spotter: rows
 * of 5). The first kernel row starts the accumulators from the record's first word. */
#define RIP_DWC3_QUINT_ROW0_S1                                                                 \
    RIP_DWC3_ROW0_S1("mov %[end], %[a0]\n\t")                                                  \
    "smlad %[end], %[p0], %[wa], %[end]\n\t"                                                   \
    "ldr %[p1], [%[x], #48]\n\t"                                                               \
    "smlabt %[end], %[p1], %[wb], %[end]\n\t"
/* Kernel row ky's taps of the five (RIP_DWC3_ROW, and the fifth pixel's window on pairs 2
 * and 3). */
#define RIP_DWC3_QUINT_ROW_S1(WOFF, ROW)                                                       \
    RIP_DWC3_ROW(WOFF, ROW)                                                                    \
    "smlad %[end], %[p0], %[wa], %[end]\n\t"                                                   \
    "ldr %[p1], [%[x], #%c[" ROW "]+48]\n\t"                                                   \
    "smlabt %[end], %[p1], %[wb], %[end]\n\t"
/* Stride 2: the fifth pixel's window on pairs 4 and 5. */
#define RIP_DWC3_QUINT_ROW0_S2                                                                 \
    RIP_DWC3_ROW0_S2("mov %[end], %[a3]\n\t")                                                  \
    "smlad %[end], %[p0], %[wa], %[end]\n\t"                                                   \
    "ldr %[p1], [%[x], #80]\n\t"                                                               \
    "smlabt %[end], %[p1], %[wb], %[end]\n\t"
#define RIP_DWC3_QUINT_ROW_S2(WOFF, ROW)                                                       \
    RIP_DWC3S2_ROW(WOFF, ROW)                                                                  \
    "smlad %[end], %[p0], %[wa], %[end]\n\t"                                                   \
    "ldr %[p1], [%[x], #%c[" ROW "]+80]\n\t"                                                   \
    "smlabt %[end], %[p1], %[wb], %[end]\n\t"
/* A row's last three pixels where n % 4 is 3 (its pair and its last pixel as one block:
 * 52 instructions at stride 1 where they took 69). The first kernel row starts the
 * accumulators from the record's first word. */
#define RIP_DWC3_TRIPLE_ROW0_S1                                                                \
    "ldr %[a0], [%[cp], #24]\n\t"                                                              \
    "ldrd %[wa], %[wb], [%[cp]]\n\t"                                                           \
    "ldr %[p0], [%[x]]\n\t"                                                                    \
    "ldr %[p1], [%[x], #16]\n\t"                                                               \
    "smlatb %[a1], %[p0], %[wa], %[a0]\n\t"                                                    \
    "smlad %[a2], %[p1], %[wa], %[a0]\n\t"                                                     \
    "smlad %[a0], %[p0], %[wa], %[a0]\n\t"                                                     \
    "ldr %[p0], [%[x], #32]\n\t"                                                               \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wb], %[a1]\n\t"                                                     \
    "smlabt %[a2], %[p0], %[wb], %[a2]\n\t"
#define RIP_DWC3_TRIPLE_ROW_S1(WOFF, ROW)                                                      \
    RIP_DWC3_PAIR_ROW_S1(WOFF, ROW)                                                            \
    "smlad %[a2], %[p1], %[wa], %[a2]\n\t"                                                     \
    "ldr %[p0], [%[x], #%c[" ROW "]+32]\n\t"                                                   \
    "smlabt %[a2], %[p0], %[wb], %[a2]\n\t"
#define RIP_DWC3_TRIPLE_ROW0_S2                                                                \
    "ldr %[a2], [%[cp], #24]\n\t"                                                              \
    "ldrd %[wa], %[wb], [%[cp]]\n\t"                                                           \
    "ldr %[p0], [%[x]]\n\t"                                                                    \
    "ldr %[p1], [%[x], #16]\n\t"                                                               \
    "smlad %[a0], %[p0], %[wa], %[a2]\n\t"                                                     \
    "smlabt %[a0], %[p1], %[wb], %[a0]\n\t"                                                    \
    "smlad %[a1], %[p1], %[wa], %[a2]\n\t"                                                     \
    "ldr %[p0], [%[x], #32]\n\t"                                                               \
    "smlabt %[a1], %[p0], %[wb], %[a1]\n\t"                                                    \
    "smlad %[a2], %[p0], %[wa], %[a2]\n\t"                                                     \
    "ldr %[p1], [%[x], #48]\n\t"                                                               \
    "smlabt %[a2], %[p1], %[wb], %[a2]\n\t"
#define RIP_DWC3_TRIPLE_ROW_S2(WOFF, ROW)                                                      \
    RIP_DWC3_PAIR_ROW_S2(WOFF, ROW)                                                            \
    "smlad %[a2], %[p0], %[wa], %[a2]\n\t"                                                     \
    "ldr %[p1], [%[x], #%c[" ROW "]+48]\n\t"                                                   \
    "smlabt %[a2], %[p1], %[wb], %[a2]\n\t"
/* An odd end's kernel rows (ROW0, then ROW for rows 1 and 2) and its first three outputs
 * requantised. */
#define RIP_DWC3_ODD_ROWS(ROW0, ROW)                                                           \
    ROW0                                                                                       \
    ROW("8", "r1")                                                                             \
    ROW("16", "r2")                                                                            \
    RIP_DWC3_RQ                                                                                \
    RIP_DWC3_SAT("a0")                                                                         \
    RIP_DWC3_SAT("a1")                                                                         \
    RIP_DWC3_SAT("a2")
/* The three outputs requantised and stored in pixel order, x on as after a pair. */
#define RIP_DWC3_TRIPLE(ROW0, ROW, XSTEP)                                                      \
    RIP_DWC3_ODD_ROWS(ROW0, ROW)                                                               \
    RIP_DWC3_STORE2("a0", "a1")                                                                \
    RIP_DWC3_STORE1("a2")                                                                      \
    "adds %[x], %[x], #" XSTEP "\n\t"

/* The five outputs requantised and stored in pixel order, x on as after a quad. */
#define RIP_DWC3_QUINT(ROW0, ROW, XSTEP)                                                       \
    RIP_DWC3_ODD_ROWS(ROW0, ROW)                                                               \
    RIP_DWC3_SAT("a3")                                                                         \
    RIP_DWC3_SAT("end")                                                                        \
    RIP_DWC3_STORE2("a0", "a1")                                                                \
    RIP_DWC3_STORE2("a2", "a3")                                                                \
    RIP_DWC3_STORE1("end")                                                                     \
    "adds %[x], %[x], #" XSTEP "\n\t"

/* A channel's rows of a 3x3 cheap run with int8 saturation, hand-scheduled whole: each
 * row's quads, then REST (RIP_DWC3_REST: its pair and last pixel; or RIP_DWC3_TRIPLE, or
 * RIP_DWC3_QUINT after one quad fewer), stores in pixel order, rows in order, x on by
 * the record's row step at each row's end, until x reaches the record's end. GCC's pair
 * and last pixel kept the operands on the stack (45 instructions a pair, measured, here
 * 36) and its row loop took 24 more a row. QUADS, REST: the stride's macros. */
#define RIP_DWC3_PLANE(QUADS, REST)                                                            \
    __asm__ volatile(                                                                          \
        "2:\n\t"                                                                               \
        "cmp %[o], %[end]\n\t"                                                                 \
        "beq 4f\n\t"                                                                           \
        QUADS                                                                                  \
        "4:\n\t"                                                                               \
        REST                                                                                   \
        "6:\n\t"                                                                               \
        "ldrd %[wa], %[wb], [%[cp], #48]\n\t"                                                  \
        "add %[x], %[x], %[wa]\n\t"                                                            \
        "cmp %[x], %[wb]\n\t"                                                                  \
        "beq 7f\n\t"                                                                           \
        "ldr %[end], [%[cp], #40]\n\t"                                                         \
        "add %[end], %[end], %[o]\n\t"                                                         \
        "b 2b\n\t"                                                                             \
        "7:"                                                                                   \
        : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [wa] "=&r"(wa),    \
          [wb] "=&r"(wb), [p0] "=&r"(p0), [p1] "=&r"(p1), [x] "+r"(x), [o] "+r"(o),           \
          [end] "+r"(end)                                                                      \
        : [os] "r"(ostep), [cp] "r"(cp), [r0] "n"(0), [r1] "n"(16 * EC), [r2] "n"(32 * EC)     \
        : "cc", "memory")

/* END: the rows' end (rip_dwc3_end), a constant wherever this is inlined. */
static inline __attribute__((always_inline)) void rip_dwc3_plane_sat(
    const int32_t *x, int8_t *o, ptrdiff_t ostep, const int32_t *cp, const int32_t SW,
    const int32_t EC, const int END) {
    int32_t a0, a1, a2, a3, wa, wb, p0, p1;
    int8_t *end = o + cp[10];
    if (SW == 1 && END == RIP_DWC3_END_TRIPLE) {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S1,
                       RIP_DWC3_TRIPLE(RIP_DWC3_TRIPLE_ROW0_S1, RIP_DWC3_TRIPLE_ROW_S1, "16"));
    } else if (SW == 1 && END == RIP_DWC3_END_QUINT) {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S1,
                       RIP_DWC3_QUINT(RIP_DWC3_QUINT_ROW0_S1, RIP_DWC3_QUINT_ROW_S1, "32"));
    } else if (SW == 1) {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S1, RIP_DWC3_REST(RIP_DWC3_PAIR_ROW_S1, "16"));
    } else if (END == RIP_DWC3_END_TRIPLE) {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S2,
                       RIP_DWC3_TRIPLE(RIP_DWC3_TRIPLE_ROW0_S2, RIP_DWC3_TRIPLE_ROW_S2, "32"));
    } else if (END == RIP_DWC3_END_QUINT) {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S2,
                       RIP_DWC3_QUINT(RIP_DWC3_QUINT_ROW0_S2, RIP_DWC3_QUINT_ROW_S2, "64"));
    } else {
        RIP_DWC3_PLANE(RIP_DWC3_QUADS_S2, RIP_DWC3_REST(RIP_DWC3_PAIR_ROW_S2, "32"));
    }
}
#endif

/* What rip_dwc3_plane_sat reads after a channel's record (RIP_DWC_CHANNEL_WORDS' four more
 * words where the operands are at most six): the output bytes a row's quads store (for
 * the rows' end END), the row's n & 3, x's step in bytes from the row's last pixel pair
 * to the next row's first, and x past the rows (x0 + rows * xrow words: x0 itself for one
 * row, xrow 0). The group order's are the same for every group (n, rows and each channel's
 * x0 are the layer's), so it writes them once a run. */
static inline __attribute__((always_inline)) void rip_dwc3_ctl(int32_t *r, const int32_t *x0,
                                                               ptrdiff_t ostep, int32_t n,
                                                               int32_t rows, ptrdiff_t xrow,
                                                               const int32_t SW, const int END) {
    const int quint = END == RIP_DWC3_END_QUINT; /* its quads one fewer */
    r[0] = (int32_t)(((n >> 2) - quint) * 4 * ostep);
    r[1] = n & 3;
    r[2] = (int32_t)(xrow * 4 - (ptrdiff_t)(n >> 1) * 16 * SW);
    r[3] = (int32_t)(intptr_t)(x0 + rows * xrow);
}

/* Whether a run's channels take rip_dwc3_plane_sat (constants wherever this is used). */
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
#define RIP_DWC3_ASM(KH, KW, MODE) ((KH) == 3 && (KW) == 3 && (MODE) == RIP_DW_RQ_CHEAP_SAT)
#else
#define RIP_DWC3_ASM(KH, KW, MODE) 0
#endif

/* One channel of `rows` output rows of the tile: each row's n pixels, four a pass
 * (RIP_DWC_QUAD), then pairs and a last pixel (RIP_DWC_PAIR), pixel i of row r stored at
 * o[r * orow + i * ostep] from the widened pairs at x + r * xrow, with the channel's
 * operands wk (rip_dwc_weights, then its rip_dwc_record in a cheap run), which no output
 * store can reach (restrict). MODE is a constant wherever this is inlined, and END (the
 * hand-scheduled rows' end: rip_dwc3_end of n, or RIP_DWC3_END_REST) where they run. */
static inline __attribute__((always_inline)) void rip_dwc_channel_run(
    const int32_t *x_row, const int32_t ec, int32_t *restrict wk,
    const rip_dwc_channel *k, const int32_t KH, const int32_t KW, const int32_t SW,
    const int MODE, int8_t *restrict o_row, ptrdiff_t ostep, int32_t n, int32_t rows,
    ptrdiff_t xrow, ptrdiff_t orow, const int CTL, const int END) {
    (void)CTL; /* whether the caller wrote rip_dwc3_ctl's words */
    (void)END;
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    /* (the general run's KH is no constant: its rows' offsets are no immediates); rows > 1
     * only in the whole-plane order, whose output rows follow each other (orow n * ostep) */
    if (__builtin_constant_p(ec) && RIP_DWC3_ASM(KH, KW, MODE)) {
        if (!CTL) {
            rip_dwc3_ctl(wk + 10, x_row, ostep, n, rows, xrow, SW, END);
        }
        rip_dwc3_plane_sat(x_row, o_row, ostep, wk, SW, ec, END);
        return;
    }
#endif
    const rip_dwc_channel kk = *k;
    const int DOUBLED = RIP_DWC_DOUBLED(KH, KW, MODE);
    const int32_t start = rip_dwc_start(&kk, DOUBLED);
    const ptrdiff_t ostep2 = 2 * ostep, ostep4 = 4 * ostep;
    /* 7x7 at stride 2 keeps pairs: its quads spill (MCUNet-in3's op 9 took 1.7% more) */
    const int quads = !(SW == 2 && KW == 7);
    for (int32_t r = 0; r < rows; ++r, x_row += xrow, o_row += orow) {
    const int32_t *x = x_row;
    int8_t *o = o_row;
    const int8_t *const end = o + (quads ? (ptrdiff_t)(n >> 2) * ostep4 : 0);
    for (; o != end; x += 8 * SW, o += ostep4) {
        int32_t a0 = start, a1 = start, a2 = start, a3 = start;
        RIP_DWC_QUAD(x, ec, wk, KH, KW, SW, a0, a1, a2, a3);
        o[0] = rip_dwc_out(&kk, MODE, DOUBLED, a0);
        o[ostep] = rip_dwc_out(&kk, MODE, DOUBLED, a1);
        o[ostep2] = rip_dwc_out(&kk, MODE, DOUBLED, a2);
        o[ostep2 + ostep] = rip_dwc_out(&kk, MODE, DOUBLED, a3);
    }
    if (!quads) {
        for (const int8_t *const end2 = o + (ptrdiff_t)(n >> 1) * ostep2; o != end2;
             x += 4 * SW, o += ostep2) {
            int32_t a0 = start, a1 = start;
            RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
            o[0] = rip_dwc_out(&kk, MODE, DOUBLED, a0);
            o[ostep] = rip_dwc_out(&kk, MODE, DOUBLED, a1);
        }
    } else if (n & 2) {
        int32_t a0 = start, a1 = start;
        RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
        o[0] = rip_dwc_out(&kk, MODE, DOUBLED, a0);
        o[ostep] = rip_dwc_out(&kk, MODE, DOUBLED, a1);
        x += 4 * SW;
        o += ostep2;
    }
    if (n & 1) { /* the last pixel alone: its pair's second is never stored */
        int32_t a0 = start, a1 = start;
        RIP_DWC_PAIR(x, ec, wk, KH, KW, SW, a0, a1);
        (void)a1;
        o[0] = rip_dwc_out(&kk, MODE, DOUBLED, a0);
    }
    }
}

/* What one call of a run computes. Row mode (rows set): channels ch..ch+3 of one output
 * row (pixel ox, channel ch + j at o[ox * ostep + j]) from its input rows, ks their
 * requantisation (promoted by the caller), tile by tile. Plane mode (rows NULL): every
 * output row of n_groups groups of four channels from ch, from the input `in` into `out`
 * (pixel p, channel c at p * C + c), a group at a time, rows in order, the row in one tile:
 * the tile's widened rows that the next output row's window keeps move up instead of being
 * widened again, and each channel's operands and requantisation are set once a group. */
typedef struct {
    const rip_dw_plane *g;
    const int8_t *const *rows;     /* row mode */
    const int32_t *w;              /* channel ch's packed words */
    const rip_dwc_channel *ks;     /* row mode */
    const rip_dw_rq *q;            /* plane mode */
    const int8_t *in;              /* plane mode */
    int8_t *o;                     /* row mode: the row at channel ch; plane mode: the output */
    ptrdiff_t ostep;               /* row mode */
    int32_t ch, n_groups;          /* plane mode: n_groups */
    int whole; /* plane mode: the group's rows all widened first (rip_dwc_whole_of) */
} rip_dwc_job;

static inline __attribute__((always_inline)) void rip_dwc_groups(const rip_dwc_job *job,
                                                                 int32_t *wk, int32_t *e,
                                                                 const int WHOLE,
                                                                 const int PLANE,
                                                                 const int32_t EC,
                                                                 const int32_t KH,
                                                                 const int32_t KW,
                                                                 const int32_t SW,
                                                                 const int MODE,
                                                                 const int32_t ECW,
                                                                 const int END) {
    const rip_dw_plane *g = job->g;
    rip_dwc_channel own[4];
    const int8_t *win[7] = {NULL}; /* rows above k0 are never read: GCC cannot tell */
    const int32_t m = (KW - 1) / 2;
    const int32_t ec = EC;                    /* column pairs a kernel row */
    const int32_t tile = RIP_DWC_TILE_PIXELS(ec, m, SW);
    const int plane = PLANE;
    const ptrdiff_t c = g->c, row_in = (ptrdiff_t)g->w * c, row_out = (ptrdiff_t)g->w_out * c;
    const int32_t keep = KH > g->sh ? KH - g->sh : 0; /* rows one output row's window keeps */
    const rip_dwc_channel *ks = plane ? own : job->ks;
    const int32_t n_groups = plane ? job->n_groups : 1;
    const ptrdiff_t ostep = plane ? c : job->ostep;
    const int32_t *w = job->w;
    const int32_t words = KH * (KW - 1); /* a channel's operands */
    const int32_t cw = RIP_DWC_CHANNEL_WORDS(words); /* and its record */
    const int DOUBLED = RIP_DWC_DOUBLED(KH, KW, MODE);
    int32_t ch = job->ch;
    const rip_dwc_span span0 = rip_dwc_span_at(g, 0, tile, SW, m); /* plane mode's one tile */
    const int whole = WHOLE == 2 || (WHOLE && job->whole);
    /* the hand-scheduled runs' row control, the same for every group */
    const int ctl = plane && RIP_DWC3_ASM(KH, KW, MODE);
    if (ctl) {
        for (int32_t j = 0; j < 4; ++j) {
            rip_dwc3_ctl(wk + j * cw + 10, e + j, c, g->w_out, whole ? g->h_out : 1,
                         whole ? (ptrdiff_t)g->sh * ECW * 4 : 0, SW, END);
        }
    }
    for (int32_t k = 0; k < n_groups; ++k, ch += 4, w += 4 * KH * m) {
        for (int32_t j = 0; j < 4; ++j) {
            rip_dwc_weights(w + j * KH * m, KH, KW, DOUBLED, wk + j * cw);
            if (ctl && job->q->mode != RIP_DW_RQ_EXACT) {
                /* the layer's own record, its bias doubled (rip_dwc_record): the quads
                 * read nothing else */
                const rip_fast_channel *r = &job->q->records[ch + j];
                int32_t *rec = wk + j * cw + words;
                rec[0] = (int32_t)((uint32_t)r->bias << 1);
                rec[1] = r->multiplier;
                rec[2] = r->round;
                rec[3] = r->shift;
                continue;
            }
            if (plane) {
                own[j] = rip_dwc_channel_of(g, job->q, ch + j);
                if (MODE != RIP_DW_RQ_EXACT && job->q->mode == RIP_DW_RQ_EXACT) {
                    (void)rip_dwc_promote(&own[j]); /* proven by the caller */
                }
            }
            rip_dwc_record(ks + j, DOUBLED, wk + j * cw + words);
        }
        int8_t *o = plane ? job->o + ch : job->o;
        int32_t iy0 = -g->ph;
        if (whole) {
            /* every row the group reads, widened (rip_dwc_whole_pairs pairs a row), then
             * channel by channel over every row */
            rip_dwc_widen_whole(g, job->in, ch, &span0, (g->h_out - 1) * g->sh + KH, ECW, e);
            for (int32_t j = 0; j < 4; ++j) {
                rip_dwc_channel_run(e + j, ECW, wk + j * cw, ks + j, KH, KW, SW, MODE, o + j,
                                    c, g->w_out, g->h_out, (ptrdiff_t)g->sh * ECW * 4, row_out,
                                    PLANE, END);
            }
            continue;
        }
        if (!plane) { /* one output row, tile by tile */
            for (int32_t ox = 0; ox < g->w_out; ox += tile) {
                const rip_dwc_span t = rip_dwc_span_at(g, ox, tile, SW, m);
                rip_dwc_widen(g, job->rows, ch, &t, 0, KH, ec, e);
                for (int32_t j = 0; j < 4; ++j) {
                    rip_dwc_channel_run(e + j, ec, wk + j * cw, ks + j, KH, KW, SW, MODE,
                                        o + (ptrdiff_t)ox * ostep + j, ostep, t.n, 1, 0, 0,
                                        PLANE, END);
                }
            }
            continue;
        }
        /* the window order: the plane's row is one tile (span0) */
        for (int32_t oy = 0; oy < g->h_out; ++oy, iy0 += g->sh, o += row_out) {
            int32_t k0 = 0;
            if (oy > 0 && keep > 0) { /* the rows the window keeps, moved up */
                for (int32_t ky = 0; ky < keep; ++ky) {
                    rip_dwc_move(e + ky * ec * 4, e + (ky + g->sh) * ec * 4, 4 * span0.ncp);
                }
                k0 = keep;
            }
            for (int32_t ky = k0; ky < KH; ++ky) {
                const int32_t iy = iy0 + ky;
                win[ky] = (uint32_t)iy < (uint32_t)g->h ? job->in + iy * row_in : NULL;
            }
            rip_dwc_widen(g, win, ch, &span0, k0, KH, ec, e);
            for (int32_t j = 0; j < 4; ++j) {
                rip_dwc_channel_run(e + j, ec, wk + j * cw, ks + j, KH, KW, SW, MODE, o + j,
                                    ostep, span0.n, 1, 0, 0, PLANE, END);
            }
        }
    }
}

typedef void (*rip_dwc_fn)(const rip_dwc_job *job);

/* WORDS: a channel's operands at most (KH * (KW - 1)), a constant for the stack array;
 * TILE: the widened tile's words of the group order (rip_dwc_plane_words: its window's
 * rows, or a group's whole plane where it fits), while a row's tiles keep
 * RIP_DWC_TILE_WORDS (rip.core.kernel_variants.dw_cols_tile); WHOLE: the run has the
 * whole-plane order (the square sizes). Each order has its own frame (a row's run is
 * called from deeper stacks, the fused kernels': person-det's fused firmware went past
 * the Pico's 4 KB stack when it carried the group order's tile) and its own constant
 * column pairs a kernel row, which the hand-scheduled quads take as immediates: the
 * window's and the narrow whole plane's (_plane), the wide whole plane's (_wide, where
 * the size has one: rip_dwc_whole_pairs; WIDE its tile's words, rip_dwc_whole_words). */
#define RIP_DWC_RUN(name, KH, KW, WORDS, TILE, WIDE, WHOLE, SW, MODE, END)                     \
    static __attribute__((noinline)) void name##_plane(const rip_dwc_job *job) {               \
        int32_t wk[4 * RIP_DWC_CHANNEL_WORDS(WORDS)] __attribute__((aligned(8)));              \
        int32_t e[TILE] __attribute__((aligned(8)));                                           \
        rip_dwc_groups(job, wk, e, WHOLE, 1, (TILE) / (4 * (KH)), KH, KW, SW, MODE,            \
                       rip_dwc_whole_pairs(KH, KW, SW, 0), END);                               \
    }                                                                                          \
    static __attribute__((noinline)) void name##_wide(const rip_dwc_job *job) {                \
        int32_t wk[4 * RIP_DWC_CHANNEL_WORDS(WORDS)] __attribute__((aligned(8)));              \
        int32_t e[WIDE] __attribute__((aligned(8)));                                           \
        rip_dwc_groups(job, wk, e, 2, 1, (WIDE) / (4 * (KH)), KH, KW, SW, MODE,                \
                       rip_dwc_whole_pairs(KH, KW, SW, 1), END);                               \
    }                                                                                          \
    static __attribute__((noinline)) void name##_row(const rip_dwc_job *job) {                 \
        int32_t wk[4 * RIP_DWC_CHANNEL_WORDS(WORDS)] __attribute__((aligned(8)));              \
        int32_t e[RIP_DWC_TILE_WORDS] __attribute__((aligned(8)));                             \
        rip_dwc_groups(job, wk, e, WHOLE, 0, RIP_DWC_TILE_WORDS / (4 * (KH)), KH, KW, SW,      \
                       MODE, 0, END);                                                          \
    }                                                                                          \
    static void name(const rip_dwc_job *job) {                                                 \
        if (job->rows != NULL) {                                                               \
            name##_row(job);                                                                   \
        } else if ((WHOLE) && rip_dwc_whole_pairs(KH, KW, SW, 1) > 0 && job->whole == 2) {     \
            name##_wide(job);                                                                  \
        } else {                                                                               \
            name##_plane(job);                                                                 \
        }                                                                                      \
    }
#define RIP_DWC_RUN_MODES(prefix, KH, KW, WORDS, TILE, WIDE, WHOLE, SW)                        \
    RIP_DWC_RUN(prefix##_exact, KH, KW, WORDS, TILE, WIDE, WHOLE, SW, RIP_DW_RQ_EXACT,         \
                RIP_DWC3_END_REST)                                                             \
    RIP_DWC_RUN(prefix##_sat, KH, KW, WORDS, TILE, WIDE, WHOLE, SW, RIP_DW_RQ_CHEAP_SAT,       \
                RIP_DWC3_END_REST)                                                             \
    RIP_DWC_RUN(prefix##_clamp, KH, KW, WORDS, TILE, WIDE, WHOLE, SW, RIP_DW_RQ_CHEAP_CLAMP,   \
                RIP_DWC3_END_REST)
#define RIP_DWC_RUN_STRIDES(prefix, KH, KW, WORDS, TILE, WIDE, WHOLE)                          \
    RIP_DWC_RUN_MODES(prefix##_s1, KH, KW, WORDS, TILE, WIDE, WHOLE, 1)                        \
    RIP_DWC_RUN_MODES(prefix##_s2, KH, KW, WORDS, TILE, WIDE, WHOLE, 2)
RIP_DWC_RUN_STRIDES(rip_dwc_3x3, 3, 3, 6, RIP_DWC_PLANE3_WORDS, RIP_DWC_PLANE3_WORDS, 1)
RIP_DWC_RUN_STRIDES(rip_dwc_5x5, 5, 5, 20, RIP_DWC_PLANE_WORDS, RIP_DWC_WIDE5_WORDS, 1)
RIP_DWC_RUN_STRIDES(rip_dwc_7x7, 7, 7, 42, RIP_DWC_PLANE7_WORDS, RIP_DWC_PLANE7_WORDS, 1)
RIP_DWC_RUN_STRIDES(rip_dwc_any, job->g->kh, job->g->kw, RIP_DWC_WEIGHT_WORDS,
                    RIP_DWC_TILE_WORDS, RIP_DWC_TILE_WORDS, 0)
/* One kernel row: a one-column layer run as the row it is in memory (codegen's
 * column_as_row, streaming keyword models' temporal layers). */
RIP_DWC_RUN_STRIDES(rip_dwc_1x3, 1, 3, 2, RIP_DWC_TILE_WORDS, RIP_DWC_TILE_WORDS, 0)
RIP_DWC_RUN_STRIDES(rip_dwc_1x5, 1, 5, 4, RIP_DWC_TILE_WORDS, RIP_DWC_TILE_WORDS, 0)
RIP_DWC_RUN_STRIDES(rip_dwc_1x7, 1, 7, 6, RIP_DWC_TILE_WORDS, RIP_DWC_TILE_WORDS, 0)
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
/* The hand-scheduled 3x3 runs' copies for rows whose n takes an odd end (rip_dwc3_end),
 * each a run of its own so that the choice costs nothing a row or a channel (chosen in
 * rip_dwc_run_of) and the common end's code stays as it was: a test in the shared run cost
 * 0.5-1.4% on layers of even rows, from the test itself or the register allocation of the
 * larger function (measured on 40 x 40 x 32 and, at stride 2, 20 x 20 x 48 layers). By
 * stride, then triple, quint. */
#define RIP_DWC3_ENDS(prefix, SW)                                                              \
    RIP_DWC_RUN(prefix##_triple, 3, 3, 6, RIP_DWC_PLANE3_WORDS, RIP_DWC_PLANE3_WORDS, 1, SW,   \
                RIP_DW_RQ_CHEAP_SAT, RIP_DWC3_END_TRIPLE)                                      \
    RIP_DWC_RUN(prefix##_quint, 3, 3, 6, RIP_DWC_PLANE3_WORDS, RIP_DWC_PLANE3_WORDS, 1, SW,    \
                RIP_DW_RQ_CHEAP_SAT, RIP_DWC3_END_QUINT)
RIP_DWC3_ENDS(rip_dwc_3x3_s1_sat, 1)
RIP_DWC3_ENDS(rip_dwc_3x3_s2_sat, 2)
static const rip_dwc_fn rip_dwc3_ends[2][2] = {
    {rip_dwc_3x3_s1_sat_triple, rip_dwc_3x3_s1_sat_quint},
    {rip_dwc_3x3_s2_sat_triple, rip_dwc_3x3_s2_sat_quint}};
#endif

#define RIP_DWC_ROW(prefix)                                                                    \
    {{prefix##_s1_exact, prefix##_s1_sat, prefix##_s1_clamp},                                  \
     {prefix##_s2_exact, prefix##_s2_sat, prefix##_s2_clamp}}

/* The run table's row of a covered kernel size (rip_dwc_covers: KW is 3, 5 or 7): the
 * square sizes and the one-row ones their own, any other the general run. */
static inline int rip_dwc_size_index(int32_t kh, int32_t kw) {
    return kh == 1 ? 3 + (kw - 1) / 2 : rip_dw_size_index(kh, kw);
}

/* The runs, by kernel size (rip_dwc_size_index), stride and requantisation mode. */
static const rip_dwc_fn rip_dwc_runs[7][2][3] = {
    RIP_DWC_ROW(rip_dwc_3x3), RIP_DWC_ROW(rip_dwc_5x5), RIP_DWC_ROW(rip_dwc_7x7),
    RIP_DWC_ROW(rip_dwc_any), RIP_DWC_ROW(rip_dwc_1x3), RIP_DWC_ROW(rip_dwc_1x5),
    RIP_DWC_ROW(rip_dwc_1x7)};

/* The run of a covered layer (rip_dwc_runs) in requantisation mode `mode`, or for the
 * hand-scheduled 3x3 rows of an odd width the copy that ends them together
 * (rip_dwc3_ends); row: a call for one output row (rip_dw_row_cols), whose row may take
 * several tiles of even n and a last one of any (then the common end). */
static inline rip_dwc_fn rip_dwc_run_of(const rip_dw_plane *g, int mode, int row) {
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    const int32_t tile = RIP_DWC_TILE_PIXELS(RIP_DWC_TILE_WORDS / 12, 1, g->sw); /* 3x3 */
    if (RIP_DWC3_ASM(g->kh, g->kw, mode) && !(row && g->w_out > tile)) {
        const int end = rip_dwc3_end(g->w_out);
        if (end != RIP_DWC3_END_REST) {
            return rip_dwc3_ends[g->sw - 1][end == RIP_DWC3_END_QUINT];
        }
    }
#else
    (void)row;
#endif
    return rip_dwc_runs[rip_dwc_size_index(g->kh, g->kw)][g->sw - 1][mode];
}

/* Channels [c0, c0 + n_ch) of one output row, as rip_dw_row (c0 a multiple of 4, the layer
 * covered): groups of four here, the last n_ch % 4 channels one at a time. */
static __attribute__((noinline)) void rip_dw_row_cols(const rip_dw_plane *g,
                                                      const int8_t *const *rows,
                                                      const int8_t *filter, const rip_dw_rq *q,
                                                      int32_t c0, int32_t n_ch, int8_t *o,
                                                      ptrdiff_t ostep) {
    const int32_t kh = g->kh, kw = g->kw, n4 = n_ch & ~3;
    const rip_dwc_fn *const runs = rip_dwc_runs[rip_dwc_size_index(kh, kw)][g->sw - 1];
    const rip_dwc_fn by_mode[3] = {runs[RIP_DW_RQ_EXACT], rip_dwc_run_of(g, RIP_DW_RQ_CHEAP_SAT, 1),
                                   runs[RIP_DW_RQ_CHEAP_CLAMP]};
    const int cheap = g->act_min == -128 && g->act_max == 127 ? RIP_DW_RQ_CHEAP_SAT
                                                               : RIP_DW_RQ_CHEAP_CLAMP;
    const int32_t *w = rip_dw_packed(filter);
    rip_dwc_job job = {g, rows, NULL, NULL, NULL, NULL, NULL, ostep, 0, 1, 0};
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
        job.w = w + (ptrdiff_t)ch * kh * ((kw - 1) / 2);
        job.ks = ks;
        job.o = o + j;
        job.ch = ch;
        by_mode[promoted ? cheap : q->mode](&job);
    }
    rip_dw_row_singles(g, rows, w, q, c0, n4, n_ch, o, ostep);
}

/* Whether rip_dw_plane_cols runs the layer (rip.allocator.theory.simulate
 * .depthwise_plane_order, the same test): the column-pair engine covering it in one tile
 * a row, no dilation down the columns, every channel in a group of four. In place (in ==
 * out), also every input row it widens for output row r from the input is one that no
 * earlier output row of the group has reached: i * W >= r * W_out (the window keeps the
 * rows it widened before). 0: not run; 1: the window; 2, 3: the whole plane, narrow or
 * wide (rip_dwc_whole_of), safe in place whatever the rows. */
static int rip_dw_plane_cols_ok(const rip_dw_plane *g, int in_place) {
    if (!rip_dwc_covers(g) || g->dh != 1 || g->c % 4 != 0 || g->c == 0) {
        return 0;
    }
    const int32_t m = (g->kw - 1) / 2, ec = rip_dwc_plane_words(g->kh, g->kw) / (4 * g->kh);
    if (g->w_out > RIP_DWC_TILE_PIXELS(ec, m, g->sw)) {
        return 0;
    }
    const int whole = rip_dwc_whole_of(g);
    if (whole > 0) {
        return 1 + whole; /* the whole plane: every read of a group before its first store */
    }
    const int32_t keep = g->kh > g->sh ? g->kh - g->sh : 0;
    for (int32_t r = 0; in_place && r < g->h_out; ++r) {
        const int32_t lo = r * g->sh - g->ph + (r > 0 ? keep : 0);
        const int32_t hi = rip_min32(r * g->sh - g->ph + g->kh, g->h);
        for (int32_t i = rip_max32(lo, 0); i < hi; ++i) {
            if ((int64_t)i * g->w < (int64_t)r * g->w_out) {
                return 0;
            }
        }
    }
    return 1;
}

int rip_dw_plane_cols(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                      const rip_dw_rq *q, int8_t *out, int32_t c0, int32_t n_ch) {
    const int how = rip_dw_plane_cols_ok(g, in == out);
    if (how == 0 || (c0 | n_ch) % 4 != 0) {
        return 0;
    }
    /* channel c0's packed words: (KW - 1) / 2 words a kernel row and channel */
    const int32_t per_group = 4 * g->kh * ((g->kw - 1) / 2);
    const int32_t *w = rip_dw_packed(filter) + (ptrdiff_t)c0 * g->kh * ((g->kw - 1) / 2);
    if (q->mode != RIP_DW_RQ_EXACT) {
        const rip_dwc_job job = {g, NULL, w, NULL, q, in, out, 0, c0, n_ch / 4, how - 1};
        rip_dwc_run_of(g, q->mode, 0)(&job);
        return 1;
    }
    /* Exact records: each run of groups whose every channel the cheap arithmetic takes
     * (rip_dwc_promote, as rip_dw_row_cols decides per group) in the cheap run, the rest in
     * the exact one, in group order: a group's stores reach its own channels only, so the
     * split keeps the order the test above proved (MCUNet-in3's op 15, one channel of 80
     * with a left shift: every other group cheap). */
    const int cheap = g->act_min == -128 && g->act_max == 127 ? RIP_DW_RQ_CHEAP_SAT
                                                               : RIP_DW_RQ_CHEAP_CLAMP;
    for (int32_t ch = c0, end = c0 + n_ch; ch < end;) {
        int mode = RIP_DW_RQ_EXACT, n = 0;
        for (; ch + 4 * n < end; ++n) {
            int promoted = 1;
            for (int32_t k = 0; k < 4 && promoted; ++k) {
                rip_dwc_channel t = rip_dwc_channel_of(g, q, ch + 4 * n + k);
                promoted = rip_dwc_promote(&t);
            }
            const int m = promoted ? cheap : RIP_DW_RQ_EXACT;
            if (n > 0 && m != mode) {
                break;
            }
            mode = m;
        }
        const rip_dwc_job job = {g, NULL, w, NULL, q, in, out, 0, ch, n, how - 1};
        rip_dwc_run_of(g, mode, 0)(&job);
        ch += 4 * n;
        w += (ptrdiff_t)n * per_group;
    }
    return 1;
}

#endif /* RIP_DW_COLS_ENGINE_H */
