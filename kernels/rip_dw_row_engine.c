/*
 * rip kernels: the fast depthwise row engine's one definition (rip_dw_row_engine.h): the
 * ARMv6-M engine, or on DSP cores and hosts the tap-pair engine and the column-pair engine
 * (rip_dw_cols_engine.h). Compiled once, whichever fast depthwise kernels a model links.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_dw_row_engine.h"

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
#define RIP_DW_SMLAD(x, w, a) __smlad((x), (w), (a))
#define RIP_DW_SMLADX(x, w, a) __smladx((x), (w), (a))
/* Halfword packs: (lo's bottom, hi's bottom) and (lo's top, hi's top), one PKH each. */
static inline int32_t rip_dw_pack_bottoms(int32_t lo, int32_t hi) {
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
}
static inline int32_t rip_dw_pack_tops(int32_t lo, int32_t hi) {
    int32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(hi), "r"(lo));
    return r;
}
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
/* a + the halfwords' products (SMLAD) or crossed products (SMLADX), wrapping as they do. */
#define RIP_DW_SMLAD(x, w, a)                                                                  \
    ((int32_t)((uint32_t)(a) + (uint32_t)((int32_t)(int16_t)(x) * (int16_t)(w)) +             \
               (uint32_t)((int32_t)(int16_t)((x) >> 16) * (int16_t)((w) >> 16))))
#define RIP_DW_SMLADX(x, w, a)                                                                 \
    ((int32_t)((uint32_t)(a) + (uint32_t)((int32_t)(int16_t)(x) * (int16_t)((w) >> 16)) +     \
               (uint32_t)((int32_t)(int16_t)((x) >> 16) * (int16_t)(w))))
static inline int32_t rip_dw_pack_bottoms(int32_t lo, int32_t hi) {
    return (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)hi << 16));
}
static inline int32_t rip_dw_pack_tops(int32_t lo, int32_t hi) {
    return (int32_t)(((uint32_t)hi & 0xffff0000u) | ((uint32_t)lo >> 16));
}
#endif

/* Two taps of four channels: xt / xu hold channels c..c+3 of the pair's first / second
 * tap's input (a byte each), w the pair's four packed weight words (the tap-pair layout of
 * rip_dw_geometry.h), w advanced past them: the halfword packs put each channel's two
 * inputs side by side, one
 * SMLAD per channel. On DSP cores one asm block, two LDRDs for the weights (GCC otherwise
 * loads them a word at a time and spills them): 14 instructions for 8 MACs. */
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
#define RIP_DW4_PAIR(xt, xu, w)                                                                \
    do {                                                                                       \
        int32_t xt_ = (xt), xu_ = (xu), t_, w0_, w1_;                                          \
        __asm__ volatile("pkhbt %[t], %[in0], %[in1], lsl #16\n\t"                                        \
                "pkhtb %[in1], %[in1], %[in0], asr #16\n\t"                                       \
                "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                           \
                "sxtb16 %[in0], %[t]\n\t"                                                      \
                "smlad %[a0], %[in0], %[w0], %[a0]\n\t"                                         \
                "sxtb16 %[t], %[t], ror #8\n\t"                                               \
                "smlad %[a1], %[t], %[w1], %[a1]\n\t"                                          \
                "ldrd %[w0], %[w1], [%[wp]], #8\n\t"                                           \
                "sxtb16 %[in0], %[in1]\n\t"                                                     \
                "smlad %[a2], %[in0], %[w0], %[a2]\n\t"                                         \
                "sxtb16 %[in1], %[in1], ror #8\n\t"                                             \
                "smlad %[a3], %[in1], %[w1], %[a3]"                                             \
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [in0] "+r"(xt_), \
                  [in1] "+r"(xu_), [t] "=&r"(t_), [w0] "=&r"(w0_), [w1] "=&r"(w1_),           \
                  [wp] "+r"(w)                                                                 \
                : "m"(*(const int32_t(*)[4])(w)));                                             \
    } while (0)
#else
#define RIP_DW4_PAIR(xt, xu, w)                                                                \
    do {                                                                                       \
        const int32_t lo_ = rip_dw_pack_bottoms((xt), (xu));                                   \
        const int32_t hi_ = rip_dw_pack_tops((xt), (xu));                                      \
        a0 = RIP_DW_SMLAD(rip_dw_sx02(lo_), (w)[0], a0);                                       \
        a1 = RIP_DW_SMLAD(rip_dw_sx13(lo_), (w)[1], a1);                                       \
        a2 = RIP_DW_SMLAD(rip_dw_sx02(hi_), (w)[2], a2);                                       \
        a3 = RIP_DW_SMLAD(rip_dw_sx13(hi_), (w)[3], a3);                                       \
        (w) += 4;                                                                              \
    } while (0)
#endif

/* The word at p + k * col (k = 0, 1 or 2: four channels of one tap), one LDR with the
 * offset register shifted as k needs. On DSP cores a volatile asm, ordered with the pair
 * blocks: GCC would otherwise hoist every tap's load to the top of the pixel and spill
 * them (seven kernel rows of inputs cannot stay in registers). */
static inline __attribute__((always_inline)) int32_t rip_dw4_load_at(const int8_t *p,
                                                                     ptrdiff_t col, int k) {
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    int32_t x;
    if (k == 0) {
        __asm__ volatile("ldr %0, [%1]" : "=r"(x) : "r"(p), "m"(*(const int32_t *)p));
    } else if (k == 1) {
        __asm__ volatile("ldr %0, [%1, %2]"
                         : "=r"(x)
                         : "r"(p), "r"(col), "m"(*(const int32_t *)(p + col)));
    } else {
        __asm__ volatile("ldr %0, [%1, %2, lsl #1]"
                         : "=r"(x)
                         : "r"(p), "r"(col), "m"(*(const int32_t *)(p + 2 * col)));
    }
    return x;
#else
    return rip_fast_load_s8x4(p + k * col);
#endif
}

/* An odd last tap (its pair's second weight 0): channels 2 and 3 sit in the top halfwords
 * of the extended input, which SMLADX multiplies with the bottom weight. */
#define RIP_DW4_SINGLE(xt, w)                                                                  \
    do {                                                                                       \
        const int32_t x02_ = rip_dw_sx02(xt), x13_ = rip_dw_sx13(xt);                          \
        a0 = RIP_DW_SMLAD(x02_, (w)[0], a0);                                                   \
        a1 = RIP_DW_SMLAD(x13_, (w)[1], a1);                                                   \
        a2 = RIP_DW_SMLADX(x02_, (w)[2], a2);                                                  \
        a3 = RIP_DW_SMLADX(x13_, (w)[3], a3);                                                  \
    } while (0)

/* The tap loops unrolled completely on Arm cores at -O2 as at -O3 (their kernel sizes are
 * constants); not on hosts, whose compile time it would multiply (the host tests compile
 * every kernel, the portable arithmetic is long) and whose counts nothing measures. */
#if defined(__arm__)
#define RIP_DW_UNROLL _Pragma("GCC unroll 16")
#else
#define RIP_DW_UNROLL
#endif


/* Every kernel size (3x3, 5x5, 7x7, any other) times every requantisation mode (the
 * RIP_DW_RQ_* order): one noinline run each, RUN(name, KH, KW, MODE) defining it, and the
 * table the row engine picks its run from once a row. */
#define RIP_DW_RUN_MODES(RUN, prefix, size, KH, KW)                                             \
    RUN(prefix##_##size##_exact, KH, KW, RIP_DW_RQ_EXACT)                                      \
    RUN(prefix##_##size##_sat, KH, KW, RIP_DW_RQ_CHEAP_SAT)                                    \
    RUN(prefix##_##size##_clamp, KH, KW, RIP_DW_RQ_CHEAP_CLAMP)
#define RIP_DW_RUN_SIZES(RUN, prefix)                                                          \
    RIP_DW_RUN_MODES(RUN, prefix, 3x3, 3, 3)                                                   \
    RIP_DW_RUN_MODES(RUN, prefix, 5x5, 5, 5)                                                   \
    RIP_DW_RUN_MODES(RUN, prefix, 7x7, 7, 7)                                                   \
    RIP_DW_RUN_MODES(RUN, prefix, any, kh, kw)
#define RIP_DW_RUN_ROW(prefix, size) {prefix##_##size##_exact, prefix##_##size##_sat, prefix##_##size##_clamp}
#define RIP_DW_RUN_TABLE(prefix)                                                               \
    {RIP_DW_RUN_ROW(prefix, 3x3), RIP_DW_RUN_ROW(prefix, 5x5), RIP_DW_RUN_ROW(prefix, 7x7),    \
     RIP_DW_RUN_ROW(prefix, any)}

/* The run table's row of a kernel size. */
static inline int rip_dw_size_index(int32_t kh, int32_t kw) {
    return kh != kw ? 3 : kh == 3 ? 0 : kh == 5 ? 1 : kh == 7 ? 2 : 3;
}

#if !RIP_DW_V6M
/* One channel group's view of one output row: the group's packed weights (the filter's own
 * where every kernel row is inside the input; else a copy with the taps of rows outside it
 * zeroed and their share moved into the bias), bias, requantization. */
typedef struct {
    const int32_t *w; /* pair P, channel j: w[4P + j] */
    int32_t bias[4];
    const int32_t *m, *s;            /* RIP_DW_RQ_EXACT: the group's first channel's */
    const rip_fast_channel *records; /* RIP_DW_RQ_CHEAP_*: likewise */
    int32_t output_offset, act_min, act_max;
} rip_dw4_stage;

/* Requantize four accumulators into o[0..3]; MODE is a constant wherever this is inlined. */
static inline __attribute__((always_inline)) void rip_dw4_put(int8_t *o, const rip_dw4_stage *st,
                                                              const int MODE, int32_t a0,
                                                              int32_t a1, int32_t a2,
                                                              int32_t a3) {
    if (MODE != RIP_DW_RQ_EXACT) {
        const rip_fast_channel *r = st->records;
        int32_t y0 = rip_cheap_requantize(a0, r[0].multiplier, r[0].round, r[0].shift);
        int32_t y1 = rip_cheap_requantize(a1, r[1].multiplier, r[1].round, r[1].shift);
        int32_t y2 = rip_cheap_requantize(a2, r[2].multiplier, r[2].round, r[2].shift);
        int32_t y3 = rip_cheap_requantize(a3, r[3].multiplier, r[3].round, r[3].shift);
        if (MODE == RIP_DW_RQ_CHEAP_SAT) {
            o[0] = (int8_t)rip_sat_s8(y0);
            o[1] = (int8_t)rip_sat_s8(y1);
            o[2] = (int8_t)rip_sat_s8(y2);
            o[3] = (int8_t)rip_sat_s8(y3);
        } else {
            const int32_t lo = st->act_min, hi = st->act_max;
            o[0] = (int8_t)rip_clamp32(y0, lo, hi);
            o[1] = (int8_t)rip_clamp32(y1, lo, hi);
            o[2] = (int8_t)rip_clamp32(y2, lo, hi);
            o[3] = (int8_t)rip_clamp32(y3, lo, hi);
        }
        return;
    }
    const int32_t oo = st->output_offset, lo = st->act_min, hi = st->act_max;
    o[0] = (int8_t)rip_fast_requantize(a0, st->m[0], st->s[0], oo, lo, hi);
    o[1] = (int8_t)rip_fast_requantize(a1, st->m[1], st->s[1], oo, lo, hi);
    o[2] = (int8_t)rip_fast_requantize(a2, st->m[2], st->s[2], oo, lo, hi);
    o[3] = (int8_t)rip_fast_requantize(a3, st->m[3], st->s[3], oo, lo, hi);
}

/* n output pixels of one channel group: pixel k's tap t = ky * KW + kx reads the word at
 * rows[ky] + off + k * step + kx * col; its four outputs go to o + k * ostep. KH, KW and
 * MODE are constants wherever this is inlined: the tap pairs unroll completely (the pragma,
 * so that -O2 unrolls as -O3 does), every weight is an immediate offset from st->w, and the
 * requantisation has no branch on its mode. */
static inline __attribute__((always_inline)) void rip_dw4_run(
    const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, const int32_t KH,
    const int32_t KW, const int MODE, const rip_dw4_stage *st, int8_t *o, ptrdiff_t ostep,
    int32_t n) {
    const ptrdiff_t col3 = 3 * col;
    for (; n > 0; --n, off += step, o += ostep) {
        int32_t a0 = st->bias[0], a1 = st->bias[1], a2 = st->bias[2], a3 = st->bias[3];
        const int32_t *w = st->w;
        int32_t xt = 0;
        int held = 0; /* xt holds a pair's first tap (a constant once the loops unroll) */
RIP_DW_UNROLL
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *p = rows[ky] + off; /* taps kx = 3m .. 3m + 2 from p + m * col3 */
RIP_DW_UNROLL
            for (int32_t kx = 0; kx < KW; ++kx) {
                if (kx > 0 && kx % 3 == 0) {
                    p += col3;
                }
                const int32_t x = rip_dw4_load_at(p, col, kx % 3);
                if (!held) {
                    xt = x;
                    held = 1;
                    continue;
                }
                RIP_DW4_PAIR(xt, x, w);
                held = 0;
            }
        }
        if (held) {
            RIP_DW4_SINGLE(xt, w);
        }
        rip_dw4_put(o, st, MODE, a0, a1, a2, a3);
    }
}

typedef void (*rip_dw4_fn)(const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col,
                           ptrdiff_t step, int32_t kh, int32_t kw, const rip_dw4_stage *st,
                           int8_t *o, ptrdiff_t ostep, int32_t n);

#define RIP_DW4_RUN(name, KH, KW, MODE)                                                        \
    static __attribute__((noinline)) void name(                                                \
        const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, int32_t kh,   \
        int32_t kw, const rip_dw4_stage *st, int8_t *o, ptrdiff_t ostep, int32_t n) {          \
        (void)kh;                                                                              \
        (void)kw;                                                                              \
        rip_dw4_run(rows, off, col, step, KH, KW, MODE, st, o, ostep, n);                      \
    }
RIP_DW_RUN_SIZES(RIP_DW4_RUN, rip_dw4_run)

/* The run of a layer's kernel size and requantisation mode (RIP_DW_RQ_* order). */
static rip_dw4_fn rip_dw4_pick(int32_t kh, int32_t kw, int mode) {
    static const rip_dw4_fn runs[4][3] = RIP_DW_RUN_TABLE(rip_dw4_run);
    const int size = rip_dw_size_index(kh, kw);
    return runs[size][mode];
}

#endif /* !RIP_DW_V6M */

/* One output pixel, channel j (any j), every tap by comparison: rows[ky] is input row
 * oy * sh - ph + ky * dh (pixel 0, channel 0) or NULL outside the input; a padded tap reads
 * the zero point, whose product cancels its share of the folded bias. wt holds the
 * channel's weights unpacked (rip_dw_unpack), or is NULL for a kernel too large for that:
 * then each is read from the packed filter pw. */
static int8_t rip_dw1_pixel(const rip_dw_plane *g, const int8_t *const *rows, int32_t ox,
                            const int32_t *pw, const int32_t *wt, int32_t j, int32_t bias,
                            int32_t m, int32_t s) {
    const int32_t c = g->c, ix0 = ox * g->sw - g->pw;
    int32_t kx_lo, kx_hi;
    rip_conv_tap_range(ix0, g->dw, g->kw, g->w, &kx_lo, &kx_hi);
    int32_t acc = bias;
    for (int32_t ky = 0, t = 0; ky < g->kh; ++ky) {
        const int8_t *row = rows[ky];
        for (int32_t kx = 0; kx < g->kw; ++kx, ++t) {
            const int32_t x = row != NULL && kx >= kx_lo && kx < kx_hi
                                  ? row[((ptrdiff_t)ix0 + kx * g->dw) * c + j]
                                  : g->zero_point;
            acc += x * (wt != NULL ? wt[t] : rip_dw_weight(g, pw, j, t));
        }
    }
    return (int8_t)rip_fast_requantize(acc, m, s, g->output_offset, g->act_min, g->act_max);
}

/* Channels [c0 + j0, c0 + n_ch) of one output row one at a time, pixel by pixel (each
 * pixel's taps read before its store), as every engine computes the channels its passes
 * leave over; a channel's weights unpacked once where the kernel is small enough. Its own
 * frame, out of the engines' hot functions (inlined, it cost ARMv6-M's rows 0.09% more
 * instructions on MCUNet-in3, which has no such channel). */
static __attribute__((noinline)) void rip_dw_row_singles(const rip_dw_plane *g,
                                                         const int8_t *const *rows,
                                                         const int32_t *pw, const rip_dw_rq *q,
                                                         int32_t c0, int32_t j0, int32_t n_ch,
                                                         int8_t *o, ptrdiff_t ostep) {
    int32_t wt[RIP_DW4_MAX_TAPS];
    const int small = g->kh * g->kw <= RIP_DW4_MAX_TAPS;
    for (int32_t j = j0; j < n_ch; ++j) {
        const int32_t ch = c0 + j;
        if (small) {
            rip_dw_unpack(g, pw, ch, wt);
        }
        for (int32_t ox = 0; ox < g->w_out; ++ox) {
            o[(ptrdiff_t)ox * ostep + j] =
                rip_dw1_pixel(g, rows, ox, pw, small ? wt : NULL, ch, rip_dw_rq_bias(q, ch),
                              rip_dw_rq_m(q, ch), rip_dw_rq_s(q, ch));
        }
    }
}

#if RIP_DW_V6M
/* The hand-written ARMv6-M pair loops (Thumb-1, r0-r12): in builds that take RIP_HAND_ASM,
 * on ARMv6-M (other cores without DSP take the C runs). */
#if RIP_HAND_ASM && defined(__ARM_ARCH_6M__)
#define RIP_DW1_ASM 1
#else
#define RIP_DW1_ASM 0
#endif

/* ARMv6-M: one channel's weights and requantization constants, and the hand-written pair
 * loops' arguments (rip_dw1_pairs3, rip_dw1_pairs5 and 7): its first words, which they read
 * at the immediate offsets RIP_DW1_AT_* (keep them in step with the struct; checked below). */
typedef struct {
    rip_rq3 rq3; /* the cheap requantisation's words where `fast` (rip_rq3_prepare) */
    int32_t act_min, act_max, bias;
    ptrdiff_t ostep;
    int8_t *o_end; /* one past the last pair's output */
    ptrdiff_t off, col; /* the first pair's offset in the rows, the column step */
    int8_t *o;          /* the first pair's output */
    /* a run of several output rows (rip_dw_plane_cols' bands): from a row's last pair to
     * the next row's first, in the rows and in the output; a row's output step; the rows */
    ptrdiff_t in_adv, out_adv, row_out;
    int32_t n_rows;
    /* what rip_dw1_out reads, within LDR's immediate offsets of q too */
    int32_t m, s;                /* RIP_DW_RQ_EXACT */
    const rip_fast_channel *rec; /* RIP_DW_RQ_CHEAP_* */
    /* a K x K kernel's row ky (K = 3, 5, 7): its weights and its row, words
     * blk[(K + 1) ky .. (K + 1) ky + K] */
    int32_t blk[7 * 8];
    int32_t w[RIP_DW4_MAX_TAPS]; /* the channel's weights, a padded row's zeroed */
    int32_t output_offset;
    int fast;          /* the channel's cheap requantisation takes rq3 */
    ptrdiff_t in_step; /* a run's next row, in the rows (n_rows > 1) */
} rip_dw1_rq;

#define RIP_DW1_AT_M0 "0"
#define RIP_DW1_AT_M1 "4"
#define RIP_DW1_AT_M2 "8"
#define RIP_DW1_AT_RND "12"
#define RIP_DW1_AT_SH "16"
#define RIP_DW1_AT_MIN "20"
#define RIP_DW1_AT_MAX "24"
#define RIP_DW1_AT_BIAS "28"
#define RIP_DW1_AT_OSTEP "32"
#define RIP_DW1_AT_OEND "36"
#define RIP_DW1_AT_OFF "40"
#define RIP_DW1_AT_COL "44"
#define RIP_DW1_AT_O "48"
#define RIP_DW1_AT_IN_ADV "52"
#define RIP_DW1_AT_OUT_ADV "56"
#define RIP_DW1_AT_ROW_OUT "60"
#define RIP_DW1_AT_ROWS "64"
/* blk's last 3x3 word (80 + 44) is the last LDR immediate offset */
#define RIP_DW1_AT_BLK 80
_Static_assert(offsetof(rip_dw1_rq, rq3.m2) == 8 && offsetof(rip_dw1_rq, rq3.sh) == 16 &&
                   offsetof(rip_dw1_rq, bias) == 28 && offsetof(rip_dw1_rq, o_end) == 36 &&
                   offsetof(rip_dw1_rq, o) == 48 && offsetof(rip_dw1_rq, in_adv) == 52 &&
                   offsetof(rip_dw1_rq, n_rows) == 64 &&
                   offsetof(rip_dw1_rq, blk) == RIP_DW1_AT_BLK,
               "the pair loops read rip_dw1_rq at these offsets");

#if RIP_DW1_ASM
/* The cheap requantisation of the accumulator in register ACC into r3, limited by LIMIT
 * (RIP_DW1_CLAMP or RIP_DW1_SAT): rip_rq3_requantize, step for step, on r3-r5 and r7 and
 * the channel's words at r0 (a channel rip_rq3_prepare refused takes the C runs). */
#define RIP_DW1_RQ_ASM(ACC, LIMIT)                                                                 \
    "mov r5, " ACC "\n\t"                                                                      \
    "ldr r3, [r0, #" RIP_DW1_AT_M0 "]\n\tmuls r3, r5\n\tasrs r3, r3, #11\n\t"                   \
    "ldr r4, [r0, #" RIP_DW1_AT_M1 "]\n\tmuls r4, r5\n\tadds r3, r3, r4\n\tasrs r3, r3, #11\n\t" \
    "ldr r4, [r0, #" RIP_DW1_AT_M2 "]\n\tmuls r4, r5\n\tadds r3, r3, r4\n\t" /* S */           \
    "ldr r4, [r0, #" RIP_DW1_AT_RND "]\n\tadds r3, r3, r4\n\t"                                 \
    "asrs r5, r5, #31\n\tlsls r5, r5, #9\n\tadds r3, r3, r5\n\t" /* + 2^9 sign */              \
    "ldr r4, [r0, #" RIP_DW1_AT_SH "]\n\tasrs r3, r4\n\t"                                      \
    LIMIT
/* The limits: [act_min, act_max], or int8's (a byte unchanged by SXTB is within it) */
#define RIP_DW1_CLAMP                                                                          \
    "ldr r7, [r0, #" RIP_DW1_AT_MIN "]\n\tcmp r3, r7\n\tbge 2f\n\tmovs r3, r7\n"                  \
    "2:\n\tldr r7, [r0, #" RIP_DW1_AT_MAX "]\n\tcmp r3, r7\n\tble 3f\n\tmovs r3, r7\n"           \
    "3:\n\t"
#define RIP_DW1_SAT                                                                            \
    "sxtb r7, r3\n\tcmp r7, r3\n\tbeq 3f\n\t"                                                 \
    "asrs r3, r3, #31\n\tmovs r7, #127\n\teors r3, r7\n"                                        \
    "3:\n\t"

/* One kernel row KY of a pixel pair one column apart: input columns 0..3 at row + r1, r2,
 * r3, r7 (the pair's offsets), each loaded once; pixel 0 (r8) takes column k times w[k],
 * pixel 1 (r9) column k times w[k - 1]. The weight is loaded into MULS's destination, so
 * the input survives for its second product. */
#define RIP_DW1_STR_(x) #x
#define RIP_DW1_STR(x) RIP_DW1_STR_(x) /* an offset expression, which the assembler evaluates */
#define RIP_DW1_W3(KY, KX) RIP_DW1_STR(RIP_DW1_AT_BLK + 4 * (4 * (KY) + (KX)))
#define RIP_DW1_ROW3_ASM(KY)                                                                   \
    "ldr r4, [r0, #" RIP_DW1_W3(KY, 3) "]\n\t"                                                  \
    "ldrsb r5, [r4, r1]\n\t"                                                                   \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 0) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"                        \
    "ldrsb r5, [r4, r2]\n\t"                                                                   \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 1) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"                        \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 0) "]\n\tmuls r6, r5\n\tadd r9, r6\n\t"                        \
    "ldrsb r5, [r4, r3]\n\t"                                                                   \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 2) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"                        \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 1) "]\n\tmuls r6, r5\n\tadd r9, r6\n\t"                        \
    "ldrsb r5, [r4, r7]\n\t"                                                                   \
    "ldr r6, [r0, #" RIP_DW1_W3(KY, 2) "]\n\tmuls r6, r5\n\tadd r9, r6\n\t"

/* The callee-saved registers around a pair loop. */
#define RIP_DW1_ENTER                                                                          \
    ".syntax unified\n\t"                                                                      \
    "push {r4, r5, r6, r7, lr}\n\t"                                                            \
    "mov r1, r8\n\tmov r2, r9\n\tmov r3, r10\n\tmov r4, r11\n\t"                               \
    "push {r1, r2, r3, r4}\n\t"
#define RIP_DW1_LEAVE                                                                          \
    "pop {r1, r2, r3, r4}\n\t"                                                                 \
    "mov r8, r1\n\tmov r9, r2\n\tmov r10, r3\n\tmov r11, r4\n\t"                               \
    "pop {r4, r5, r6, r7, pc}"

/* The end of an output row's pairs (r4 the output there, OEND the register holding the
 * row's end): the rows left counted down on the stack (to 5f at the last), the pair offsets
 * r1, r2 moved on to the next row's first pair and r4 to its first output. */
#define RIP_DW1_NEXT_ROW(OEND)                                                                 \
    "ldr r5, [sp]\n\tsubs r5, #1\n\tbeq 5f\n\tstr r5, [sp]\n\t"                              \
    "ldr r5, [r0, #" RIP_DW1_AT_IN_ADV "]\n\tadds r1, r1, r5\n\tadds r2, r2, r5\n\t"          \
    "mov r4, " OEND "\n\tldr r5, [r0, #" RIP_DW1_AT_OUT_ADV "]\n\tadds r4, r4, r5\n\t"

/* A 3x3 run of pixel pairs one column apart, cheap requantisation, everything from q
 * (blk's weights and rows, off, col, ostep, o, o_end and the channel's words; o_end - o a
 * positive multiple of 2 ostep): per pair both pixels' taps (12 loads, 18 products into
 * r8 and r9), then pixel 0's store, then pixel 1's. 8 low registers for the taps (q, four
 * column offsets, the row, the input, the product); col in r10, 2 col in r11, o in r12,
 * o_end in lr. */
#define RIP_DW1_PAIRS3(NAME, LIMIT)                                                            \
    static __attribute__((naked, noinline)) void NAME(rip_dw1_rq *q) {                         \
        (void)q;                                                                               \
        __asm__ volatile(                                                                      \
            RIP_DW1_ENTER                                                                      \
            "ldr r1, [r0, #" RIP_DW1_AT_COL "]\n\tmov r10, r1\n\t"                             \
            "adds r2, r1, r1\n\tmov r11, r2\n\t"                                               \
            "ldr r2, [r0, #" RIP_DW1_AT_OFF "]\n\tadds r2, r2, r1\n\t" /* off + col */         \
            "ldr r1, [r0, #" RIP_DW1_AT_OFF "]\n\t"                                            \
            "ldr r3, [r0, #" RIP_DW1_AT_O "]\n\tmov r12, r3\n\t"                               \
            "ldr r3, [r0, #" RIP_DW1_AT_OEND "]\n\tmov lr, r3\n\t"                             \
            "ldr r3, [r0, #" RIP_DW1_AT_ROWS "]\n\tpush {r3}\n\t" /* rows left, this one's too */ \
            RIP_ASM_LOOP_HEAD                                                                  \
            "mov r3, r2\n\tadd r3, r10\n\tmov r7, r3\n\tadd r7, r10\n\t"                       \
            "ldr r6, [r0, #" RIP_DW1_AT_BIAS "]\n\tmov r8, r6\n\tmov r9, r6\n\t"               \
            RIP_DW1_ROW3_ASM(0) RIP_DW1_ROW3_ASM(1) RIP_DW1_ROW3_ASM(2)                        \
            RIP_DW1_RQ_ASM("r8", LIMIT)                                                        \
            "mov r4, r12\n\tstrb r3, [r4]\n\t"                                                 \
            RIP_DW1_RQ_ASM("r9", LIMIT)                                                        \
            "mov r4, r12\n\tldr r5, [r0, #" RIP_DW1_AT_OSTEP "]\n\tstrb r3, [r4, r5]\n\t"      \
            "adds r4, r4, r5\n\tadds r4, r4, r5\n\tmov r12, r4\n\t"                            \
            "add r1, r11\n\tadd r2, r11\n\t"                                                   \
            "cmp r4, lr\n\tbeq 4f\n\tb 1b\n" /* the loop is beyond BNE's reach */              \
            "4:\n\t"                                                                           \
            RIP_DW1_NEXT_ROW("lr")                                                             \
            "mov r12, r4\n\tldr r5, [r0, #" RIP_DW1_AT_ROW_OUT "]\n\tadd lr, r5\n\tb 1b\n"    \
            "5:\n\tadd sp, #4\n\t"                                                             \
            RIP_DW1_LEAVE);                                                                    \
    }
RIP_DW1_PAIRS3(rip_dw1_pairs3_sat, RIP_DW1_SAT)
RIP_DW1_PAIRS3(rip_dw1_pairs3_clamp, RIP_DW1_CLAMP)

/* One kernel row KY of a single 3x3 pixel: input columns 0..2 at row + r1, r2, r3. */
#define RIP_DW1_ONE3_ASM(KY)                                                                   \
    "ldr r4, [r0, #" RIP_DW1_W3(KY, 3) "]\n\t"                                                  \
    "ldrsb r5, [r4, r1]\n\tldr r6, [r0, #" RIP_DW1_W3(KY, 0) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"  \
    "ldrsb r5, [r4, r2]\n\tldr r6, [r0, #" RIP_DW1_W3(KY, 1) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"  \
    "ldrsb r5, [r4, r3]\n\tldr r6, [r0, #" RIP_DW1_W3(KY, 2) "]\n\tmuls r6, r5\n\tadd r8, r6\n\t"

/* A 3x3 run of one pixel a row down q->n_rows rows (a row's odd last column, at either
 * stride): the pixel at off in the rows and o in the output, the next row's in_adv and
 * out_adv further on (the caller sets them to the rows' and the output's row steps). The
 * pair loops' registers and requantisation; where the C run took some 100 instructions a
 * pixel, this takes 72. */
#define RIP_DW1_ONES3(NAME, LIMIT)                                                             \
    static __attribute__((naked, noinline)) void NAME(rip_dw1_rq *q) {                         \
        (void)q;                                                                               \
        __asm__ volatile(                                                                      \
            RIP_DW1_ENTER                                                                      \
            "ldr r1, [r0, #" RIP_DW1_AT_COL "]\n\tmov r10, r1\n\t"                             \
            "ldr r2, [r0, #" RIP_DW1_AT_OFF "]\n\tadds r2, r2, r1\n\t" /* off + col */         \
            "ldr r1, [r0, #" RIP_DW1_AT_OFF "]\n\t"                                            \
            "ldr r3, [r0, #" RIP_DW1_AT_O "]\n\tmov r12, r3\n\t"                               \
            "ldr r3, [r0, #" RIP_DW1_AT_ROWS "]\n\tpush {r3}\n\t" /* rows left, this one's too */ \
            RIP_ASM_LOOP_HEAD                                                                  \
            "mov r3, r2\n\tadd r3, r10\n\t" /* off + 2 col */                                 \
            "ldr r6, [r0, #" RIP_DW1_AT_BIAS "]\n\tmov r8, r6\n\t"                             \
            RIP_DW1_ONE3_ASM(0) RIP_DW1_ONE3_ASM(1) RIP_DW1_ONE3_ASM(2)                        \
            RIP_DW1_RQ_ASM("r8", LIMIT)                                                        \
            "mov r4, r12\n\tstrb r3, [r4]\n\t"                                                 \
            "ldr r5, [sp]\n\tsubs r5, #1\n\tbeq 5f\n\tstr r5, [sp]\n\t"                        \
            "ldr r5, [r0, #" RIP_DW1_AT_IN_ADV "]\n\tadds r1, r1, r5\n\tadds r2, r2, r5\n\t"    \
            "ldr r5, [r0, #" RIP_DW1_AT_OUT_ADV "]\n\tadds r4, r4, r5\n\tmov r12, r4\n\tb 1b\n" \
            "5:\n\tadd sp, #4\n\t"                                                             \
            RIP_DW1_LEAVE);                                                                    \
    }
RIP_DW1_ONES3(rip_dw1_ones3_sat, RIP_DW1_SAT)
RIP_DW1_ONES3(rip_dw1_ones3_clamp, RIP_DW1_CLAMP)

/* The same for a K x K kernel and pixels S columns apart (S = 1: K = 5 or 7; S = 2: K = 3,
 * 5 or 7; columns COLS = "0, 1, .., K - 1 + S", pixel 1 taking column j times w[j - S]),
 * whose weights are beyond one base register's immediate offsets: r0 walks blk a kernel
 * row at a time (back to q for the requantisation), column j of a row loads from row + r1,
 * r2, r3, r7 (j % 4), the row moved on by 4 col (lr) at columns 4 and 8; the pair moves on
 * by ADV (2 S col: r11 or lr); o_end is read from q. */
#define RIP_DW1_PAIRS(NAME, K, S, ADV, COLS, LIMIT)                                                \
    static __attribute__((naked, noinline)) void NAME(rip_dw1_rq *q) {                         \
        (void)q;                                                                               \
        __asm__ volatile(                                                                      \
            RIP_DW1_ENTER                                                                      \
            ".macro RIP_DW1_COL j\n"                                                           \
            ".if \\j == 4 || \\j == 8\n\tadd r4, lr\n.endif\n"                                \
            ".if (\\j % 4) == 0\n\tldrsb r5, [r4, r1]\n.endif\n"                               \
            ".if (\\j % 4) == 1\n\tldrsb r5, [r4, r2]\n.endif\n"                               \
            ".if (\\j % 4) == 2\n\tldrsb r5, [r4, r3]\n.endif\n"                               \
            ".if (\\j % 4) == 3\n\tldrsb r5, [r4, r7]\n.endif\n"                               \
            ".if \\j < " #K "\n\tldr r6, [r0, #4 * \\j]\n\tmuls r6, r5\n\tadd r8, r6\n.endif\n" \
            ".if \\j >= " #S "\n\tldr r6, [r0, #4 * (\\j - " #S ")]\n\tmuls r6, r5\n\t"     \
            "add r9, r6\n.endif\n"                                                           \
            ".endm\n"                                                                          \
            "ldr r1, [r0, #" RIP_DW1_AT_COL "]\n\t"                                            \
            "lsls r2, r1, #1\n\tmov r11, r2\n\tlsls r2, r1, #2\n\tmov lr, r2\n\t"             \
            "ldr r2, [r0, #" RIP_DW1_AT_OFF "]\n\tadds r2, r2, r1\n\t" /* off + col */         \
            "ldr r1, [r0, #" RIP_DW1_AT_OFF "]\n\t"                                            \
            "ldr r3, [r0, #" RIP_DW1_AT_O "]\n\tmov r12, r3\n\t"                               \
            "ldr r6, [r0, #" RIP_DW1_AT_BIAS "]\n\tmov r8, r6\n\tmov r9, r6\n\t"              \
            "ldr r3, [r0, #" RIP_DW1_AT_ROWS "]\n\tpush {r3}\n\t" /* rows left, this one's too */ \
            RIP_ASM_LOOP_HEAD                                                                  \
            "mov r3, r1\n\tadd r3, r11\n\tmov r7, r2\n\tadd r7, r11\n\t"                       \
            "adds r0, #" RIP_DW1_STR(RIP_DW1_AT_BLK) "\n\t"                                    \
            ".rept " #K "\n\tldr r4, [r0, #4 * " #K "]\n"                                      \
            ".irp j, " COLS "\n\tRIP_DW1_COL \\j\n.endr\n"                                     \
            "\tadds r0, #4 * (" #K " + 1)\n.endr\n\t"                                          \
            "subs r0, #4 * " #K " * (" #K " + 1)\n\t"                                          \
            "subs r0, #" RIP_DW1_STR(RIP_DW1_AT_BLK) "\n\t"                                    \
            RIP_DW1_RQ_ASM("r8", LIMIT)                                                        \
            "mov r4, r12\n\tstrb r3, [r4]\n\t"                                                 \
            RIP_DW1_RQ_ASM("r9", LIMIT)                                                        \
            "mov r4, r12\n\tldr r5, [r0, #" RIP_DW1_AT_OSTEP "]\n\tstrb r3, [r4, r5]\n\t"      \
            "adds r4, r4, r5\n\tadds r4, r4, r5\n\tmov r12, r4\n\t"                            \
            "add r1, " ADV "\n\tadd r2, " ADV "\n\t"                                           \
            "ldr r6, [r0, #" RIP_DW1_AT_BIAS "]\n\tmov r8, r6\n\tmov r9, r6\n\t"              \
            "ldr r5, [r0, #" RIP_DW1_AT_OEND "]\n\t"                                           \
            "cmp r4, r5\n\tbeq 4f\n\tb 1b\n"                                                   \
            "4:\n\t"                                                                           \
            RIP_DW1_NEXT_ROW("r4") /* r4 is o_end here */                                     \
            "mov r12, r4\n\tldr r5, [r0, #" RIP_DW1_AT_OEND "]\n\t"                             \
            "ldr r4, [r0, #" RIP_DW1_AT_ROW_OUT "]\n\tadds r5, r5, r4\n\t"                       \
            "str r5, [r0, #" RIP_DW1_AT_OEND "]\n\tb 1b\n"                                      \
            "5:\n\tadd sp, #4\n\t"                                                             \
            ".purgem RIP_DW1_COL\n\t"                                                          \
            RIP_DW1_LEAVE);                                                                    \
    }
/* each for both limits */
#define RIP_DW1_PAIRS_LIMITS(NAME, K, S, ADV, COLS)                                            \
    RIP_DW1_PAIRS(NAME##_sat, K, S, ADV, COLS, RIP_DW1_SAT)                                    \
    RIP_DW1_PAIRS(NAME##_clamp, K, S, ADV, COLS, RIP_DW1_CLAMP)
RIP_DW1_PAIRS_LIMITS(rip_dw1_pairs5, 5, 1, "r11", "0, 1, 2, 3, 4, 5")
RIP_DW1_PAIRS_LIMITS(rip_dw1_pairs7, 7, 1, "r11", "0, 1, 2, 3, 4, 5, 6, 7")
/* stride 2 (the C runs took each pixel alone): the pair shares K - 2 columns a kernel row */
RIP_DW1_PAIRS_LIMITS(rip_dw1_pairs3s2, 3, 2, "lr", "0, 1, 2, 3, 4")
RIP_DW1_PAIRS_LIMITS(rip_dw1_pairs5s2, 5, 2, "lr", "0, 1, 2, 3, 4, 5, 6")
RIP_DW1_PAIRS_LIMITS(rip_dw1_pairs7s2, 7, 2, "lr", "0, 1, 2, 3, 4, 5, 6, 7, 8")
#endif

/* The cheap requantisation of a channel's accumulator: three products where its words
 * allow (rip_rq3_prepare), else rip_smmulr's four. */
static inline __attribute__((always_inline)) int32_t rip_dw1_cheap(const rip_dw1_rq *q,
                                                                   int32_t acc) {
    return q->fast ? rip_rq3_requantize(&q->rq3, acc)
                   : rip_cheap_requantize(acc, q->rec->multiplier, q->rec->round, q->rec->shift);
}

/* MODE is a constant wherever this is inlined: no branch on it per output. */
static inline __attribute__((always_inline)) int8_t rip_dw1_out(const rip_dw1_rq *q,
                                                                const int MODE, int32_t acc) {
    if (MODE != RIP_DW_RQ_EXACT) {
        const int32_t y = rip_dw1_cheap(q, acc);
        return (int8_t)(MODE == RIP_DW_RQ_CHEAP_SAT ? rip_sat_s8(y)
                                                    : rip_clamp32(y, q->act_min, q->act_max));
    }
    return (int8_t)rip_fast_requantize(acc, q->m, q->s, q->output_offset, q->act_min,
                                       q->act_max);
}

/* ARMv6-M: n output pixels of one channel, pixel k's tap (ky, kx) at rows[ky] + off +
 * k * step + kx * col, its weight w[ky * KW + kx] (staged on the stack: an immediate
 * offset), its output at o + k * ostep. The pragmas unroll the taps at -O2 as at -O3. */
static inline __attribute__((always_inline)) void rip_dw1_run(
    const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, const int32_t KH,
    const int32_t KW, const int MODE, const int32_t *w, int32_t bias, const rip_dw1_rq *q,
    int8_t *o, ptrdiff_t ostep, int32_t n) {
    for (; n > 0; --n, off += step, o += ostep) {
        int32_t acc = bias;
        const int32_t *wk = w;
RIP_DW_UNROLL
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *p = rows[ky] + off;
RIP_DW_UNROLL
            for (int32_t kx = 0; kx < KW; ++kx, p += col, ++wk) {
                acc += *p * *wk;
            }
        }
        *o = rip_dw1_out(q, MODE, acc);
    }
}

/* A run: n pixels of each of q->n_rows output rows, row r's at off + r q->in_step in the
 * rows and o + r q->row_out in the output (rip_dw_plane_cols' band in one call; n_rows 1
 * elsewhere). */
typedef void (*rip_dw1_fn)(const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col,
                           ptrdiff_t step, int32_t kh, int32_t kw, const int32_t *w,
                           int32_t bias, rip_dw1_rq *q, int8_t *o, ptrdiff_t ostep,
                           int32_t n);

/* A run's definition (rip_dw1_fn's parameters). */
#define RIP_DW1_FN(name)                                                                       \
    static __attribute__((noinline)) void name(                                                \
        const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, ptrdiff_t step, int32_t kh,   \
        int32_t kw, const int32_t *w, int32_t bias, rip_dw1_rq *q, int8_t *o,                  \
        ptrdiff_t ostep, int32_t n)
#define RIP_DW1_RUN(name, KH, KW, MODE)                                                        \
    RIP_DW1_FN(name) {                                                                         \
        (void)kh;                                                                              \
        (void)kw;                                                                              \
        for (int32_t r = 0; r < q->n_rows; ++r, off += q->in_step, o += q->row_out) {         \
            rip_dw1_run(rows, off, col, step, KH, KW, MODE, w, bias, q, o, ostep, n);          \
        }                                                                                      \
    }
RIP_DW_RUN_SIZES(RIP_DW1_RUN, rip_dw1_run)

#if RIP_DW1_ASM
/* rip_dw1_run where the pixels are S columns apart (step == S col: S = 1, or 2 for a
 * stride twice the dilation across the row) and the requantisation is the cheap one: 3x3,
 * 5x5 and 7x7 take the hand-written pair loops (rip_dw1_pairs3, 5, 7; rip_dw1_pairs3s2,
 * 5s2, 7s2), an odd last pixel rip_dw1_run. */
static inline __attribute__((always_inline)) void rip_dw1_run_s1(
    const int8_t *const *rows, ptrdiff_t off, ptrdiff_t col, const int32_t KH,
    const int32_t KW, const int32_t S, const int MODE, const int32_t *w, int32_t bias,
    rip_dw1_rq *q, int8_t *o, ptrdiff_t ostep, int32_t n) {
    const int32_t pairs = n >> 1;
    if (pairs > 0 || KW == 3) { /* the rows beside blk's weights, the channel's (rip_dw_row) */
RIP_DW_UNROLL
        for (int32_t ky = 0; ky < KH; ++ky) {
            q->blk[(KW + 1) * ky + KW] = (int32_t)(intptr_t)rows[ky];
        }
        q->col = col;
    }
    if (pairs > 0) {
        q->off = off;
        q->ostep = ostep;
        q->o = o;
        q->o_end = o + 2 * pairs * ostep;
        q->in_adv = q->in_step - 2 * S * pairs * col;
        q->out_adv = q->row_out - 2 * pairs * ostep;
        /* the loop of the size, the columns apart and the limit (constants where inlined) */
        void (*const loops[2][3][2])(rip_dw1_rq *) = {
            {{rip_dw1_pairs3_sat, rip_dw1_pairs3_clamp},
             {rip_dw1_pairs5_sat, rip_dw1_pairs5_clamp},
             {rip_dw1_pairs7_sat, rip_dw1_pairs7_clamp}},
            {{rip_dw1_pairs3s2_sat, rip_dw1_pairs3s2_clamp},
             {rip_dw1_pairs5s2_sat, rip_dw1_pairs5s2_clamp},
             {rip_dw1_pairs7s2_sat, rip_dw1_pairs7s2_clamp}}};
        loops[S - 1][KW / 2 - 1][MODE != RIP_DW_RQ_CHEAP_SAT](q);
        off += 2 * S * pairs * col;
        o += 2 * pairs * ostep;
        if ((n & 1) == 0) {
            return;
        }
    }
    if (KW == 3) { /* an odd last pixel, one a row: 3x3's loop of single pixels */
        q->off = off;
        q->o = o;
        q->in_adv = q->in_step;
        q->out_adv = q->row_out;
        (MODE == RIP_DW_RQ_CHEAP_SAT ? rip_dw1_ones3_sat : rip_dw1_ones3_clamp)(q);
        return;
    }
    /* an odd last pixel, one a row: the run of the size and mode (not inlined: a row's
     * loop of an unrolled pixel is larger than the call). The cheap runs named here, not
     * RIP_DW_RUN_TABLE's row: GCC then calls a copy specialised for one pixel (3x3 over a
     * 3x3 x 240 output: 328,320 instructions against 354,840 through the table). */
    static const rip_dw1_fn odd[3][2] = {{rip_dw1_run_3x3_sat, rip_dw1_run_3x3_clamp},
                                         {rip_dw1_run_5x5_sat, rip_dw1_run_5x5_clamp},
                                         {rip_dw1_run_7x7_sat, rip_dw1_run_7x7_clamp}};
    odd[KW / 2 - 1][MODE != RIP_DW_RQ_CHEAP_SAT](rows, off, col, S * col, KH, KW, w, bias, q, o,
                                                 ostep, 1);
}
#endif

#if RIP_DW1_ASM
/* The step == S col runs of the unrolled sizes and the cheap modes (step is S col: not
 * read). */
#define RIP_DW1_RUN_S1(name, KH, KW, S, MODE)                                                  \
    RIP_DW1_FN(name) {                                                                         \
        (void)step;                                                                            \
        (void)kh;                                                                              \
        (void)kw;                                                                              \
        rip_dw1_run_s1(rows, off, col, KH, KW, S, MODE, w, bias, q, o, ostep, n);              \
    }
#define RIP_DW1_RUN_S1_CHEAP(size, K, S)                                                       \
    RIP_DW1_RUN_S1(rip_dw1_s##S##_##size##_sat, K, K, S, RIP_DW_RQ_CHEAP_SAT)                  \
    RIP_DW1_RUN_S1(rip_dw1_s##S##_##size##_clamp, K, K, S, RIP_DW_RQ_CHEAP_CLAMP)
RIP_DW1_RUN_S1_CHEAP(3x3, 3, 1)
RIP_DW1_RUN_S1_CHEAP(5x5, 5, 1)
RIP_DW1_RUN_S1_CHEAP(7x7, 7, 1)
RIP_DW1_RUN_S1_CHEAP(3x3, 3, 2)
RIP_DW1_RUN_S1_CHEAP(5x5, 5, 2)
RIP_DW1_RUN_S1_CHEAP(7x7, 7, 2)
#endif

/* How many columns apart a row's pixels are for the pair loops: 1 (stride equal to the
 * dilation across the row), 2 (twice it), else 0. */
static inline int rip_dw1_apart(const rip_dw_plane *g) {
    return g->sw == g->dw ? 1 : g->sw == 2 * g->dw ? 2 : 0;
}

/* The cheap requantisation's mode of the layer's activation range (an exact layer's
 * channels promoted to it: rip_dw_cheap_of_exact). */
static inline int rip_dw1_cheap_mode(const rip_dw_plane *g) {
    return g->act_min == -128 && g->act_max == 127 ? RIP_DW_RQ_CHEAP_SAT : RIP_DW_RQ_CHEAP_CLAMP;
}

/* The run of a layer's kernel size and requantisation mode (RIP_DW_RQ_* order), its
 * pixels s1 columns apart (1 or 2: rip_dw1_apart) or neither (0). */
static rip_dw1_fn rip_dw1_pick(int32_t kh, int32_t kw, int mode, int s1) {
    static const rip_dw1_fn runs[4][3] = RIP_DW_RUN_TABLE(rip_dw1_run);
    const int size = rip_dw_size_index(kh, kw);
#if RIP_DW1_ASM
    static const rip_dw1_fn runs_s1[3][3] = {
        {rip_dw1_run_3x3_exact, rip_dw1_s1_3x3_sat, rip_dw1_s1_3x3_clamp},
        {rip_dw1_run_5x5_exact, rip_dw1_s1_5x5_sat, rip_dw1_s1_5x5_clamp},
        {rip_dw1_run_7x7_exact, rip_dw1_s1_7x7_sat, rip_dw1_s1_7x7_clamp}};
    static const rip_dw1_fn runs_s2[3][3] = {
        {rip_dw1_run_3x3_exact, rip_dw1_s2_3x3_sat, rip_dw1_s2_3x3_clamp},
        {rip_dw1_run_5x5_exact, rip_dw1_s2_5x5_sat, rip_dw1_s2_5x5_clamp},
        {rip_dw1_run_7x7_exact, rip_dw1_s2_7x7_sat, rip_dw1_s2_7x7_clamp}};
    if (s1 != 0 && size < 3) {
        return s1 == 2 ? runs_s2[size][mode] : runs_s1[size][mode];
    }
#else
    (void)s1;
#endif
    return runs[size][mode];
}

#if RIP_DW1_ASM
/* The channel's weights w into blk for a K x K pair loop (K a constant where inlined). */
static inline __attribute__((always_inline)) void rip_dw1_stage_blk(rip_dw1_rq *q,
                                                                   const int32_t K) {
RIP_DW_UNROLL
    for (int32_t ky = 0; ky < K; ++ky) {
RIP_DW_UNROLL
        for (int32_t kx = 0; kx < K; ++kx) {
            q->blk[(K + 1) * ky + kx] = q->w[K * ky + kx];
        }
    }
}
#endif

/* One channel's run and r1's words for it (its unpacked weights in r1->w, bias the
 * accumulator's start): blk staged for the pair loops, an exact layer's channel promoted
 * to the cheap arithmetic where rip_dw_cheap_of_exact allows (at most 49 taps). */
static inline __attribute__((always_inline)) rip_dw1_fn rip_dw1_channel(
    const rip_dw_plane *g, const rip_dw_rq *q, int32_t ch, int32_t bias, int32_t blk_k,
    rip_dw1_fn run_layer, rip_dw1_fn run_cheap, rip_fast_channel *promoted, rip_dw1_rq *r1) {
#if RIP_DW1_ASM
    /* the pair loops' copy: a kernel row's weights, then its row (unrolled by size) */
    if (blk_k == 3) {
        rip_dw1_stage_blk(r1, 3);
    } else if (blk_k == 5) {
        rip_dw1_stage_blk(r1, 5);
    } else if (blk_k == 7) {
        rip_dw1_stage_blk(r1, 7);
    }
#else
    (void)blk_k;
#endif
    rip_dw1_fn run = run_layer;
    if (q->mode == RIP_DW_RQ_EXACT) {
        r1->m = q->m[ch];
        r1->s = q->s[ch];
        if (rip_dw_cheap_of_exact(bias, r1->m, r1->s, g->output_offset, &promoted->round,
                                  &promoted->shift)) {
            promoted->multiplier = r1->m;
            r1->rec = promoted;
            run = run_cheap;
        }
    } else {
        r1->rec = q->records + ch;
    }
    r1->fast = 0;
    if (run != run_layer || q->mode != RIP_DW_RQ_EXACT) {
        /* |acc| <= |bias| + 128 sum |w| (below 2^31 + 2^20: no wrap): the taps' sum only
         * where 128^2 a tap (at most 49 taps) does not prove 2^20 */
        const int32_t taps = g->kh * g->kw;
        const uint32_t b = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias;
        uint32_t bound = b + ((uint32_t)taps << 14);
        if (bound >= (1u << 20)) {
            bound = b;
            for (int32_t t = 0; t < taps; ++t) {
                bound += (uint32_t)(r1->w[t] < 0 ? -r1->w[t] : r1->w[t]) << 7;
            }
        }
        r1->fast = rip_rq3_prepare(r1->rec->multiplier, r1->rec->round, r1->rec->shift, bound,
                                   &r1->rq3);
#if RIP_DW1_ASM
        if (!r1->fast) { /* the pair loops take rq3's words only: the C run of the mode */
            run = rip_dw1_pick(g->kh, g->kw, run == run_layer ? q->mode : rip_dw1_cheap_mode(g), 0);
        }
#endif
    }
#if RIP_DW1_ASM
    r1->bias = bias;
#endif
    return run;
}

/* r1's words for the layer, before any channel's (rip_dw1_channel). */
static inline __attribute__((always_inline)) void rip_dw1_start(const rip_dw_plane *g,
                                                               rip_dw1_rq *r1) {
    r1->output_offset = g->output_offset;
    r1->n_rows = 1; /* rip_dw_plane_cols runs its bands' rows in one call */
    r1->in_step = 0;
    r1->row_out = 0;
    r1->act_min = g->act_min;
    r1->act_max = g->act_max;
}

/* A 3x3 border pixel ox straight from the rows (rp: rip_dw_row's, a NULL row's weights
 * zeroed), a tap outside the input reading the zero point: the same sum as its gathered
 * field through a run, without the gather's copy and the run's call (rip_dw_row's sides of
 * one pixel, both of a 3x3 layer's at padding 1). */
static __attribute__((noinline)) void rip_dw1_edge3(const rip_dw_plane *g,
                                                    const int8_t *const *rp, int32_t ox,
                                                    const rip_dw1_rq *q, int exact,
                                                    int32_t bias, int8_t *o) {
    const ptrdiff_t c = g->c;
    const int32_t ix0 = ox * g->sw - g->pw, zp = g->zero_point;
    const int32_t *w = q->w;
    const int8_t *r0 = rp[0], *r1 = rp[1], *r2 = rp[2];
    int32_t acc = bias;
    if (r0 != NULL) { /* else no row is inside the input: every weight 0 */
RIP_DW_UNROLL
        for (int32_t kx = 0; kx < 3; ++kx) { /* a column's three taps */
            const int32_t ix = ix0 + kx * g->dw;
            if ((uint32_t)ix < (uint32_t)g->w) {
                const ptrdiff_t k = ix * c;
                acc += r0[k] * w[kx] + r1[k] * w[3 + kx] + r2[k] * w[6 + kx];
            } else {
                acc += zp * (w[kx] + w[3 + kx] + w[6 + kx]);
            }
        }
    }
    /* the run's arithmetic: a cheap layer's (or promoted channel's) clamp is its sat where
     * the range is int8's */
    *o = exact ? (int8_t)rip_fast_requantize(acc, q->m, q->s, q->output_offset, q->act_min,
                                             q->act_max)
               : (int8_t)rip_clamp32(rip_dw1_cheap(q, acc), q->act_min, q->act_max);
}

/* rip_dw_row on ARMv6-M: the same contract and the same rows, one channel at a time (its
 * weights staged, a row outside the input zeroed and its share moved into the bias), the
 * interior pixels straight from the rows, the border ones from their gathered field. */
void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows,
                                     const int8_t *filter, const rip_dw_rq *q, int32_t c0,
                                     int32_t n_ch, int8_t *o, ptrdiff_t ostep) {
    const int32_t c = g->c, kh = g->kh, kw = g->kw, taps = kh * kw;
    const int32_t *pw = rip_dw_packed(filter);
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
    int8_t segment[RIP_DW1_SEGMENT_BYTES]; /* a side's padded receptive fields (or one) */
    const int32_t sides[2][2] = {{0, lo < hi ? lo : g->w_out}, {lo < hi ? hi : g->w_out, g->w_out}};
    /* pixels one or two columns apart: the pair runs */
    const int s1 = rip_dw1_apart(g);
    const rip_dw1_fn run_layer = rip_dw1_pick(kh, kw, q->mode, s1);
    /* an exact layer's channels that take the cheap arithmetic (rip_dw_cheap_of_exact) */
    const rip_dw1_fn run_cheap = rip_dw1_pick(kh, kw, rip_dw1_cheap_mode(g), s1);
    rip_fast_channel promoted;
    rip_dw1_rq r1;
    int32_t *const w = r1.w;
    /* the kernel size of a layer the pair loops take (rip_dw1_run_s1), else 0 */
    const int32_t blk_k = s1 != 0 && kh == kw && (kw == 3 || kw == 5 || kw == 7) ? kw : 0;
    /* a 3x3 filter in column pairs (rip_dwc_covers): its unpacking unrolled, once a row */
    const int cols3 = kh == 3 && kw == 3 && rip_dwc_covers(g);
    rip_dw1_start(g, &r1);
    for (int32_t j = 0; j < n1; ++j) {
        const int32_t ch = c0 + j;
        uint32_t adj = 0;
        if (cols3) { /* the channel's weights */
            rip_dw_unpack_cols((const uint32_t *)pw + 3 * ch, w, 9, 3);
        } else {
            rip_dw_unpack(g, pw, ch, w);
        }
        for (int32_t ky = 0, t = 0; ky < kh; ++ky) {
            const int in = rows[ky] != NULL;
            rp[ky] = in ? rows[ky] + ch : valid != NULL ? valid + ch : NULL;
            for (int32_t kx = 0; kx < kw && !in; ++kx) {
                /* the padded tap's zp * w, which the folded bias leaves out */
                adj += (uint32_t)zp * (uint32_t)w[t + kx];
                w[t + kx] = 0;
            }
            t += kw;
        }
        const int32_t bias = (int32_t)((uint32_t)rip_dw_rq_bias(q, ch) + adj);
        const rip_dw1_fn run =
            rip_dw1_channel(g, q, ch, bias, blk_k, run_layer, run_cheap, &promoted, &r1);
        int8_t *oj = o + j;
        /* left to right as on the other cores: the left side's fields gathered once into a
         * padded segment (the zero point outside the input) and run as one span (a 3x3
         * side of one pixel straight from the rows, rip_dw1_edge3), the interior straight
         * from the rows, then the right side likewise */
        for (int32_t side = 0; side < 2; ++side) {
            if (side == 1 && lo < hi) {
                run(rp, (ptrdiff_t)(lo * g->sw - g->pw) * c,
                                 (ptrdiff_t)g->dw * c, (ptrdiff_t)g->sw * c, kh, kw, w, bias, &r1,
                                 oj + (ptrdiff_t)lo * ostep, ostep, hi - lo);
            }
            const int32_t a = sides[side][0], b = sides[side][1];
            if (a >= b) {
                continue;
            }
            if (b - a == 1 && kh == 3 && kw == 3) { /* a 3x3 side of one pixel */
                rip_dw1_edge3(g, rp, a, &r1, q->mode == RIP_DW_RQ_EXACT && run == run_layer,
                              bias, oj + (ptrdiff_t)a * ostep);
                continue;
            }
            const int32_t ix_a = a * g->sw - g->pw;
            const int32_t span = (b - 1 - a) * g->sw + (kw - 1) * g->dw + 1;
            if (kh * span <= RIP_DW1_SEGMENT_BYTES) {
                /* columns [i_lo, i_hi) of the segment are inside the input; a row outside
                 * it weighs 0 and reads rp's stand-in (none without one). One loop a row,
                 * which GCC does not split into memsets. */
                const int32_t i_lo = rip_min32(rip_max32(-ix_a, 0), span);
                const int32_t i_hi = rip_max32(rip_min32(g->w - ix_a, span), i_lo);
                for (int32_t ky = 0; ky < kh; ++ky) {
                    int8_t *row = segment + ky * span;
                    const int8_t *x = rp[ky];
                    const uint32_t n = x != NULL ? (uint32_t)(i_hi - i_lo) : 0u;
                    for (int32_t i = 0; i < span; ++i) {
                        row[i] = (uint32_t)(i - i_lo) < n ? x[(ptrdiff_t)(ix_a + i) * c]
                                                          : (int8_t)zp;
                    }
                    gp[ky] = row;
                }
                run(gp, 0, g->dw, g->sw, kh, kw, w, bias, &r1,
                                 oj + (ptrdiff_t)a * ostep, ostep, b - a);
                continue;
            }
            for (int32_t ox = a; ox < b; ++ox) { /* one receptive field a pixel */
                const int32_t ix0 = ox * g->sw - g->pw;
                for (int32_t ky = 0; ky < kh; ++ky) {
                    for (int32_t kx = 0; kx < kw; ++kx) {
                        const int32_t ix = ix0 + kx * g->dw;
                        segment[ky * kw + kx] = rows[ky] != NULL && ix >= 0 && ix < g->w
                                                    ? rows[ky][(ptrdiff_t)ix * c + ch]
                                                    : (int8_t)zp;
                    }
                    gp[ky] = segment + ky * kw;
                }
                run(gp, 0, 1, 0, kh, kw, w, bias, &r1, oj + (ptrdiff_t)ox * ostep,
                                 ostep, 1);
            }
        }
    }
    rip_dw_row_singles(g, rows, pw, q, c0, n1, n_ch, o, ostep);
}

/* ARMv6-M's channel order (out of place, and in place where it is safe): a channel at a
 * time, its setup once (not once a row), its output rows in bands run from a window of
 * their input rows padded with the zero point (as rip_dw_row's gathered fields), so a row's
 * every pixel is one run: no border pixels in C, the pair loops take the whole row. The
 * window (RIP_DW1_BAND_BYTES on the stack) keeps the rows the next band still reads, moved
 * up, and reads only the new ones from memory; a layer whose kernel's rows are wider than
 * the window goes row by row. rip.allocator.theory.simulate.simulate_depthwise_band
 * executes the order (depthwise_band_order: the same test). */
#define RIP_DW1_BAND_BYTES 384
/* Where the window's copy costs more than the rows' per-row setup and borders it saves, the
 * rows stay (measured on qemu-armv6m, MCUNet-in3 and person-det): a 3x3 kernel wider than
 * RIP_DW1_BAND_3X3_COLS output columns at stride 1 (88 and 80: 2% more; 44 and fewer: 3-24%
 * fewer) or RIP_DW1_BAND_3X3_S2_COLS at stride 2 (four bytes copied an output pixel for
 * nine taps; one-layer models on qemu-armv6m: 16 and 24 columns 3% and 11% more, 12 to 2
 * 5-20% fewer, the rows' per-channel setup once a row costing more). 5x5 and 7x7 gain at
 * every width. */
#define RIP_DW1_BAND_3X3_COLS 64
#define RIP_DW1_BAND_3X3_S2_COLS 12

/* Whether the channel order may run in place: a channel's stores reach only its own input
 * bytes (depth multiplier 1), and a band's rows are all read before its first store, so it
 * is safe when every input row a band reads from memory (not kept in the window) is one
 * that the earlier bands' stores have not reached: i * W >= oy0 * W_out. */
static int rip_dw1_band_in_place_ok(const rip_dw_plane *g, int32_t band, int32_t reach) {
    const int32_t keep = reach > g->sh ? reach - g->sh : 0;
    for (int32_t oy0 = band; oy0 < g->h_out; oy0 += band) {
        const int32_t first = rip_max32(oy0 * g->sh - g->ph + keep, 0);
        if (first < g->h && (int64_t)first * g->w < (int64_t)oy0 * g->w_out) {
            return 0;
        }
    }
    return 1;
}

/* Four channels' windows of a layer of one band (rows [0, hb) of wb bytes, from input row
 * -ph) at buf, buf + win, buf + 2 win and buf + 3 win: x the input's first of the four
 * channels. Columns [i_lo, i_hi) of a row inside the input are copied; the rest keep the
 * zero point. */
static void rip_dw1_gather4(const rip_dw_plane *g, const int8_t *x, int32_t hb, int32_t wb,
                            int32_t i_lo, int32_t i_hi, int8_t *buf, int32_t win) {
    const int32_t c = g->c, n = i_hi - i_lo;
    const size_t row_in = (size_t)g->w * (size_t)c;
    for (int32_t r = 0; r < hb; ++r) {
        const int32_t iy = r - g->ph;
        if (iy < 0 || iy >= g->h || n <= 0) {
            continue;
        }
        /* bytes as unsigned: LDRB takes an immediate offset, LDRSB only a register */
        const uint8_t *s = (const uint8_t *)x + (size_t)iy * row_in + (ptrdiff_t)(i_lo - g->pw) * c;
        uint8_t *d = (uint8_t *)buf + r * wb + i_lo;
        uint8_t *const end = d + n;
        for (; d < end; ++d, s += c) {
            const uint8_t v0 = s[0], v1 = s[1], v2 = s[2], v3 = s[3];
            d[0] = v0;
            d[win] = v1;
            d[2 * win] = v2;
            d[3 * win] = v3;
        }
    }
}

#if RIP_DW1_ASM
/* A 3x3 layer's words for rip_dw1_lean3, the same for every channel: its pair and single
 * loops (rip_dw1_pairs3 or 3s2, rip_dw1_ones3, of its limit), its pairs' output span a row,
 * the odd column's offset in the rows and the pairs' steps to the next row. */
typedef struct {
    void (*pairs)(rip_dw1_rq *);
    void (*ones)(rip_dw1_rq *);
    ptrdiff_t span, odd_off, in_adv, out_adv;
    int odd;
    const int8_t *rows[4][3]; /* each gathered window's kernel rows */
} rip_dw1_lean;

/* One 3x3 channel of a gathered group straight on the pair loops (the weights from their
 * packed column words cw into blk, beside the window's rows; the record's rq3 words), without
 * the general run's unpacking, call and staging: a tiny map's channel cost some 350
 * instructions before its first MAC that way. Returns 0, having run nothing, where the
 * channel's three-product requantisation is not proven (rip_rq3_prepare): the caller's
 * general path takes it. */
static __attribute__((noinline)) int rip_dw1_lean3(rip_dw1_rq *r1, const rip_dw1_lean *L,
                                                   const uint32_t *cw,
                                                   const rip_fast_channel *rec,
                                                   const int8_t *const *rows, int8_t *o) {
    int32_t *blk = r1->blk;
    for (int32_t ky = 0; ky < 3; ++ky, blk += 4) {
        const uint32_t v = cw[ky];
        blk[0] = (int8_t)v;
        blk[1] = (int8_t)(v >> 8);
        blk[2] = (int8_t)(v >> 24);
        blk[3] = (int32_t)(intptr_t)rows[ky];
    }
    /* |acc| <= |bias| + 128 sum |w|: 128^2 a tap, the taps' sum only where that does not
     * prove 2^20 (as rip_dw1_channel) */
    const int32_t bias = rec->bias;
    const uint32_t b = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias;
    uint32_t bound = b + (9u << 14);
    if (bound >= (1u << 20)) {
        bound = b;
        for (int32_t t = 0; t < 12; ++t) {
            const int32_t w = t % 4 == 3 ? 0 : r1->blk[t];
            bound += (uint32_t)(w < 0 ? -w : w) << 7;
        }
    }
    if (!rip_rq3_prepare(rec->multiplier, rec->round, rec->shift, bound, &r1->rq3)) {
        return 0;
    }
    r1->bias = bias;
    r1->o = o;
    if (L->span > 0) {
        r1->off = 0;
        r1->o_end = o + L->span;
        r1->in_adv = L->in_adv;
        r1->out_adv = L->out_adv;
        L->pairs(r1);
    }
    if (L->odd) {
        r1->off = L->odd_off;
        r1->o = o + L->span;
        r1->in_adv = r1->in_step;
        r1->out_adv = r1->row_out;
        L->ones(r1);
    }
    return 1;
}

/* A one-band 3x3 layer's grouped channels [c0, c0 + n4) (n4 a multiple of 4), each group's
 * windows gathered (rip_dw1_gather4, from in) into buf, each channel by rip_dw1_lean3, in
 * the order of rip_dw_plane_cols' own loop. Returns the channels run: n4, or the first it
 * could not (its group's windows gathered, which the caller's loop goes on with). Apart
 * from that loop, whose registers it would crowd (measured: 1% more on the layers it
 * does not take). */
static __attribute__((noinline)) int32_t rip_dw1_lean_groups(
    const rip_dw_plane *g, const rip_dw_rq *q, const rip_dw1_lean *L, rip_dw1_rq *r1,
    const int8_t *in, const int32_t *pw, int8_t *out, int32_t c0, int32_t n4, int8_t *buf,
    int32_t win, int32_t wb, int32_t i_lo, int32_t i_hi) {
    r1->col = g->dw;
    r1->ostep = g->c;
    r1->n_rows = g->h_out;
    for (int32_t j = 0; j < n4; ++j) {
        const int32_t ch = c0 + j;
        if ((j & 3) == 0) {
            rip_dw1_gather4(g, in + ch, win / wb, wb, i_lo, i_hi, buf, win);
        }
        if (!rip_dw1_lean3(r1, L, (const uint32_t *)pw + 3 * ch, q->records + ch,
                           L->rows[j & 3], out + ch)) {
            return j;
        }
    }
    return n4;
}
#endif

int rip_dw_plane_cols(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                      const rip_dw_rq *q, int8_t *out, int32_t c0, int32_t n_ch) {
    const int32_t c = g->c, kh = g->kh, kw = g->kw;
    const int32_t wb = (g->w_out - 1) * g->sw + (kw - 1) * g->dw + 1; /* a window row's bytes */
    const int32_t reach = (kh - 1) * g->dh + 1; /* an output row's input rows */
    if (kh * kw > RIP_DW4_MAX_TAPS || kh > RIP_DW_ROWS_MAX_KH || g->w_out <= 0 ||
        g->h_out <= 0 || (int64_t)wb * reach > RIP_DW1_BAND_BYTES ||
        (kh * kw <= 9 &&
         g->w_out > (g->sw == 1 ? RIP_DW1_BAND_3X3_COLS : RIP_DW1_BAND_3X3_S2_COLS))) {
        return 0;
    }
    const int32_t band = (RIP_DW1_BAND_BYTES / wb - reach) / g->sh + 1; /* output rows */
    if (in == out && !rip_dw1_band_in_place_ok(g, band, reach)) {
        return 0;
    }
    const int s1 = rip_dw1_apart(g);
    const int32_t blk_k = s1 != 0 && kh == kw && (kw == 3 || kw == 5 || kw == 7) ? kw : 0;
    const int cols3 = kh == 3 && kw == 3 && rip_dwc_covers(g);
    const int32_t *pw = rip_dw_packed(filter);
    const int32_t zp = g->zero_point;
    const size_t row_in = (size_t)g->w * (size_t)c;
    const ptrdiff_t row_out = (ptrdiff_t)g->w_out * c;
    const rip_dw1_fn run_layer = rip_dw1_pick(kh, kw, q->mode, s1);
    const rip_dw1_fn run_cheap = rip_dw1_pick(kh, kw, rip_dw1_cheap_mode(g), s1);
    /* columns [i_lo, i_hi) of a window row are inside the input */
    const int32_t i_lo = rip_min32(rip_max32(g->pw, 0), wb);
    const int32_t i_hi = rip_max32(rip_min32(g->w + g->pw, wb), i_lo);
    const int32_t keep = reach > g->sh ? reach - g->sh : 0;
    int8_t buf[RIP_DW1_BAND_BYTES];
    const int8_t *rp[RIP_DW_ROWS_MAX_KH];
    rip_fast_channel promoted;
    rip_dw1_rq r1;
    rip_dw1_start(g, &r1);
    r1.in_step = (ptrdiff_t)g->sh * wb;
    r1.row_out = row_out;
    /* The window's pads once a layer, not once a row: every write below leaves a pad
     * column the zero point (a row's copy stops at i_hi, the kept rows move onto rows of
     * the same columns, a row outside the input is all zero point), and in a layer of one
     * band a row outside the input is outside in every channel: never rewritten. */
    const int one_band = band >= g->h_out;
    const int32_t win = (((one_band ? g->h_out : band) - 1) * g->sh + reach) * wb;
    /* A layer of one band whose four windows fit the buffer gathers four channels' windows
     * in one pass (the rows' setup once, not once a channel: tiny maps, where it was a third
     * of a channel's instructions), then runs the four; the n_ch % 4 left go one at a time.
     * Each channel's stores reach only its own bytes, all read before them either way. */
    const int32_t n4 = one_band && 4 * win <= RIP_DW1_BAND_BYTES ? n_ch & ~3 : 0;
    memset(buf, zp, (size_t)((n4 > 0 ? 4 : 1) * win));
    int32_t done = 0; /* the channels run before the loop below */
#if RIP_DW1_ASM
    if (n4 > 0 && blk_k == 3 && q->mode != RIP_DW_RQ_EXACT) { /* rip_dw1_lean_groups */
        const int32_t pairs = g->w_out >> 1;
        const int sat = q->mode == RIP_DW_RQ_CHEAP_SAT;
        rip_dw1_lean lean = {s1 == 1 ? (sat ? rip_dw1_pairs3_sat : rip_dw1_pairs3_clamp)
                                     : (sat ? rip_dw1_pairs3s2_sat : rip_dw1_pairs3s2_clamp),
                             sat ? rip_dw1_ones3_sat : rip_dw1_ones3_clamp,
                             2 * pairs * c,
                             2 * s1 * pairs * g->dw,
                             r1.in_step - 2 * s1 * pairs * g->dw,
                             row_out - 2 * pairs * c,
                             g->w_out & 1,
                             {{0}}};
        for (int32_t k = 0; k < 4; ++k) {
            for (int32_t ky = 0; ky < 3; ++ky) {
                lean.rows[k][ky] = buf + k * win + ky * g->dh * wb;
            }
        }
        done = rip_dw1_lean_groups(g, q, &lean, &r1, in, pw, out, c0, n4, buf, win, wb, i_lo,
                                   i_hi);
    }
#endif
    for (int32_t ch = c0 + done; ch < c0 + n_ch; ++ch) {
        const int32_t j = ch - c0; /* a group's channel j & 3 where j < n4 */
        if (j < n4 && (j & 3) == 0) {
            rip_dw1_gather4(g, in + ch, win / wb, wb, i_lo, i_hi, buf, win);
        }
        /* every tap: a padded one reads the zero point */
        if (cols3) {
            rip_dw_unpack_cols((const uint32_t *)pw + 3 * ch, r1.w, 9, 3);
        } else {
            rip_dw_unpack(g, pw, ch, r1.w);
        }
        const int32_t bias = rip_dw_rq_bias(q, ch);
        const rip_dw1_fn run =
            rip_dw1_channel(g, q, ch, bias, blk_k, run_layer, run_cheap, &promoted, &r1);
        if (j < n4) { /* its window, gathered */
            for (int32_t ky = 0; ky < kh; ++ky) {
                rp[ky] = buf + (j & 3) * win + ky * g->dh * wb;
            }
            r1.n_rows = g->h_out;
            run(rp, 0, g->dw, g->sw, kh, kw, r1.w, bias, &r1, out + ch, c, g->w_out);
            continue;
        }
        for (int32_t oy0 = 0; oy0 < g->h_out; oy0 += band) {
            const int32_t nb = rip_min32(band, g->h_out - oy0);
            const int32_t iy0 = oy0 * g->sh - g->ph, hb = (nb - 1) * g->sh + reach;
            /* the previous band's last `keep` rows are this band's first */
            const int32_t kept = oy0 > 0 ? keep : 0;
            if (kept > 0) {
                memmove(buf, buf + band * g->sh * wb,
                        (size_t)kept * (size_t)wb);
            }
            for (int32_t r = kept; r < hb; ++r) {
                int8_t *d = buf + r * wb;
                const int32_t iy = iy0 + r;
                if (iy < 0 || iy >= g->h) { /* a row outside the input */
                    if (!one_band) {
                        memset(d, zp, (size_t)wb);
                    }
                    continue;
                }
                int32_t i = i_lo;
                const int8_t *x = in + (size_t)iy * row_in + (ptrdiff_t)(i - g->pw) * c + ch;
                for (; i + 1 < i_hi; i += 2, x += 2 * c) { /* two a pass: LDRB's register offset */
                    const int8_t x0 = x[0], x1 = x[c];
                    d[i] = x0;
                    d[i + 1] = x1;
                }
                if (i < i_hi) {
                    d[i] = *x;
                }
            }
            /* the band's rows in one run (the window's rows wb apart) */
            for (int32_t ky = 0; ky < kh; ++ky) {
                rp[ky] = buf + ky * g->dh * wb;
            }
            r1.n_rows = nb;
            run(rp, 0, g->dw, g->sw, kh, kw, r1.w, bias, &r1, out + oy0 * row_out + ch, c,
                g->w_out);
        }
    }
    return 1;
}
#else
#include "rip_dw_cols_engine.h"

/* Channels [c0, c0 + n_ch) of output row oy into o (channel c0 + j of pixel ox at
 * o[ox * ostep + j]). rows[ky] is input row oy * sh - ph + ky * dh (pixel 0, channel 0), NULL
 * outside the input; no store of this row may reach them (the callers write elsewhere, or
 * read the rows the store reaches from the ring), except over the bytes this order has
 * read: channel groups in turn, output pixels left to right, a pixel's taps read before
 * its store (a fused stage storing its row in its input's slot, rip_fused.h). Groups of four channels take the staged engine: interior pixels
 * straight from the rows, border pixels from their receptive field gathered with the zero
 * point filling the padded taps; the last n_ch % 4 channels (and kernels above 7x7) are
 * computed one channel at a time. */
static __attribute__((noinline)) void rip_dw_row_pairs(const rip_dw_plane *g,
                                                       const int8_t *const *rows,
                                                       const int8_t *filter, const rip_dw_rq *q,
                                                       int32_t c0, int32_t n_ch, int8_t *o,
                                                       ptrdiff_t ostep) {
    const int32_t c = g->c, kh = g->kh, kw = g->kw, taps = kh * kw, np = rip_dw_pairs(taps);
    const int32_t *pw = rip_dw_packed(filter);
    const int32_t n4 = taps <= RIP_DW4_MAX_TAPS && kh <= RIP_DW_ROWS_MAX_KH && (c0 & 3) == 0
                           ? n_ch & ~3
                           : 0;
    const int32_t zp = g->zero_point;
    const int32_t pad4 = (int32_t)((uint8_t)zp * 0x01010101u);
    const int8_t *valid = NULL; /* any row inside the input: a NULL row's taps weigh 0 */
    int all_in = 1;             /* every kernel row inside the input: the filter as packed */
    for (int32_t ky = 0; ky < kh; ++ky) {
        valid = valid != NULL ? valid : rows[ky];
        all_in &= rows[ky] != NULL;
    }
    const rip_dw4_fn run = rip_dw4_pick(kh, kw, q->mode);
    rip_dw4_stage st;
    st.output_offset = g->output_offset;
    st.act_min = g->act_min;
    st.act_max = g->act_max;
    const int8_t *rp[RIP_DW_ROWS_MAX_KH]; /* rows, NULL ones replaced */
    const int8_t *gp[RIP_DW_ROWS_MAX_KH]; /* a gathered receptive field's rows */
    int32_t segment[RIP_DW_SEGMENT_WORDS]; /* a side's padded receptive fields (or one) */
    int32_t staged[4 * ((RIP_DW4_MAX_TAPS + 1) / 2)];
    for (int32_t ky = 0; ky < kh; ++ky) {
        rp[ky] = rows[ky] != NULL ? rows[ky] : valid;
    }
    /* Where a kernel row is outside the input, each pair's word keeps the halfwords of the
     * taps inside it (keep[P]) and the rest is the padded taps' zp * w, which the folded
     * bias leaves out and the staged bias takes: one SMLAD by (zp, zp) a word. */
    uint32_t keep[(RIP_DW4_MAX_TAPS + 1) / 2];
    const int32_t zp2 = (int32_t)(((uint32_t)(uint16_t)zp << 16) | (uint16_t)zp);
    for (int32_t p2 = 0; p2 < np && !all_in; ++p2) {
        const int32_t t = 2 * p2;
        keep[p2] = (rows[t / kw] != NULL ? 0xffffu : 0u) |
                   (t + 1 < taps && rows[(t + 1) / kw] != NULL ? 0xffff0000u : 0u);
    }
    /* The border pixels of a row, [0, lo) and [hi, W_out) (all of them without an
     * interior), each side's receptive fields gathered once into a padded segment (the zero
     * point outside the input) and run as one span; a segment too wide for the buffer
     * falls back to one field a pixel. */
    const int32_t lo = valid != NULL ? g->ox_lo : g->w_out;
    const int32_t hi = valid != NULL ? g->ox_hi : g->w_out;
    const int32_t sides[2][2] = {{0, lo < hi ? lo : g->w_out}, {lo < hi ? hi : g->w_out, g->w_out}};
    for (int32_t j = 0; j < n4; j += 4) {
        const int32_t ch = c0 + j;
        const int32_t *gw = pw + (ch >> 2) * np * 4;
        uint32_t adj[4] = {0, 0, 0, 0};
        st.w = gw;
        if (!all_in) {
            for (int32_t p2 = 0; p2 < np; ++p2) {
                for (int32_t k = 0; k < 4; ++k) {
                    const uint32_t v = (uint32_t)gw[4 * p2 + k];
                    staged[4 * p2 + k] = (int32_t)(v & keep[p2]);
                    adj[k] = (uint32_t)RIP_DW_SMLAD((int32_t)(v & ~keep[p2]), zp2, (int32_t)adj[k]);
                }
            }
            st.w = staged;
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
        /* left to right, as the in-place schedules assume (rip_dw_rows_self_safe): the
         * left side, the interior, the right side; a side's fields are all read before
         * any of its pixels is stored, which only reads earlier */
        for (int32_t side = 0; side < 2; ++side) {
            if (side == 1 && lo < hi) { /* the interior run, straight from the rows */
                run(rp, (ptrdiff_t)(lo * g->sw - g->pw) * c + ch, (ptrdiff_t)g->dw * c,
                    (ptrdiff_t)g->sw * c, kh, kw, &st, oj + (ptrdiff_t)lo * ostep, ostep,
                    hi - lo);
            }
            const int32_t a = sides[side][0], b = sides[side][1];
            if (a >= b) {
                continue;
            }
            const int32_t ix_a = a * g->sw - g->pw;
            const int32_t span = (b - 1 - a) * g->sw + (g->kw - 1) * g->dw + 1;
            if (kh * span <= RIP_DW_SEGMENT_WORDS) {
                /* columns [i_lo, i_hi) of the segment are inside the input */
                const int32_t i_lo = rip_min32(rip_max32(-ix_a, 0), span);
                const int32_t i_hi = rip_max32(rip_min32(g->w - ix_a, span), i_lo);
                for (int32_t ky = 0; ky < kh; ++ky) {
                    int32_t *row = segment + ky * span;
                    const int32_t in_lo = rows[ky] != NULL ? i_lo : span;
                    const int32_t in_hi = rows[ky] != NULL ? i_hi : span;
                    int32_t i = 0;
                    for (; i < in_lo; ++i) {
                        row[i] = pad4;
                    }
                    const int8_t *x = in_lo < in_hi ? rows[ky] + (ptrdiff_t)(ix_a + i) * c + ch
                                                    : NULL;
                    for (; i < in_hi; ++i, x += c) {
                        row[i] = rip_fast_load_s8x4(x);
                    }
                    for (; i < span; ++i) {
                        row[i] = pad4;
                    }
                    gp[ky] = (const int8_t *)(const void *)row;
                }
                run(gp, 0, 4 * (ptrdiff_t)g->dw, 4 * (ptrdiff_t)g->sw, kh, kw, &st,
                    oj + (ptrdiff_t)a * ostep, ostep, b - a);
                continue;
            }
            for (int32_t ox = a; ox < b; ++ox) { /* one receptive field a pixel */
                const int32_t ix0 = ox * g->sw - g->pw;
                for (int32_t ky = 0; ky < kh; ++ky) {
                    for (int32_t kx = 0; kx < kw; ++kx) {
                        const int32_t ix = ix0 + kx * g->dw;
                        segment[ky * kw + kx] =
                            rows[ky] != NULL && ix >= 0 && ix < g->w
                                ? rip_fast_load_s8x4(rows[ky] + (ptrdiff_t)ix * c + ch)
                                : pad4;
                    }
                    gp[ky] = (const int8_t *)(const void *)(segment + ky * kw);
                }
                run(gp, 0, 4, 0, kh, kw, &st, oj + (ptrdiff_t)ox * ostep, ostep, 1);
            }
        }
    }
    rip_dw_row_singles(g, rows, pw, q, c0, n4, n_ch, o, ostep);
}

/* The row engine's entry: the column-pair engine for the layers it covers
 * (rip_dw_cols_engine.h), the tap-pair one above for the rest; each its own frame. */
void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows,
                                     const int8_t *filter, const rip_dw_rq *q, int32_t c0,
                                     int32_t n_ch, int8_t *o, ptrdiff_t ostep) {
    if (rip_dwc_covers(g) && (c0 & 3) == 0) {
        rip_dw_row_cols(g, rows, filter, q, c0, n_ch, o, ostep);
    } else {
        rip_dw_row_pairs(g, rows, filter, q, c0, n_ch, o, ostep);
    }
}
#endif /* RIP_DW_V6M */

