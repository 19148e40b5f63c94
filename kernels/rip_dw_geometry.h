/*
 * rip kernels: what every fast depthwise kernel shares (not part of the generated code's
 * API): the layer's geometry as the engines read it (rip_dw_plane, checked once by
 * rip_dw_plane_init) and how an accumulator becomes int8 (rip_dw_rq: TFLite's general
 * requantisation with the folded bias, or the cheap one from rip_fast_channel records).
 */
#ifndef RIP_DW_GEOMETRY_H
#define RIP_DW_GEOMETRY_H

#include <stddef.h>
#include "rip_conv_support.h"

/* A helper every fast depthwise source compiles alike, however many of its callers that
 * source holds. GCC inlines, specialises and splits a static function by its callers in
 * the translation unit; `used` makes it keep one body that callers cannot reshape
 * (nothing is emitted that a linker with --gc-sections keeps unreferenced). Without it, a
 * kernel family's own source would compile these helpers unlike the single source the
 * families shared before, and change the instruction counts make bench-cost measures. */
#define RIP_DW_SHARED __attribute__((used))

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

static inline RIP_DW_SHARED int32_t rip_dw_rq_s(const rip_dw_rq *q, int32_t c) {
    return q->mode == RIP_DW_RQ_EXACT ? q->s[c] : -q->records[c].shift;
}

/* Whether a channel of an exact-requantisation layer may take the cheap arithmetic
 * (rip_cheap_requantize's preconditions, rip_support.h) in an engine of at most 49 taps,
 * and then its record's round and e: with raw int8 inputs and weights, |acc| <= |bias| +
 * 49 * 128 * 128 < 2^29 + 2^20 for |bias| < 2^29 (the bias the accumulator starts from),
 * so twice it fits in int32, |t| <= |acc| + 1, and a right shift e of 1 to 22 keeps
 * |round| <= 2^21 + 128 * 2^22 and |t| + |round| + 1 below 2^31. The generator proves the
 * same per layer (rip.codegen.requant.cheap_channels), but a layer with one channel
 * outside it (a left shift) keeps TFLite's arithmetic for every channel; an engine that
 * asks here keeps it for that channel (or its group) alone. */
static inline int rip_dw_cheap_of_exact(int32_t bias, int32_t multiplier, int32_t shift,
                                        int32_t output_offset, int32_t *round, int32_t *e) {
    if (shift > -1 || shift < -22 || multiplier < 0 || bias <= -(1 << 29) ||
        bias >= (1 << 29)) {
        return 0;
    }
    *e = -shift;
    *round = (int32_t)((1u << (*e - 1)) + (uint32_t)output_offset * (1u << *e));
    return 1;
}

static inline rip_dw_rq rip_dw_rq_exact(const int32_t *bias, const rip_per_channel_quant *quant) {
    const rip_dw_rq q = {bias, quant->multiplier, quant->shift, NULL, RIP_DW_RQ_EXACT};
    return q;
}

static inline rip_dw_rq rip_dw_rq_cheap(const rip_fast_channel *records, const rip_dw_conv_params *p) {
    const int full = p->activation.min == -128 && p->activation.max == 127;
    const rip_dw_rq q = {NULL, NULL, NULL, records,
                         full ? RIP_DW_RQ_CHEAP_SAT : RIP_DW_RQ_CHEAP_CLAMP};
    return q;
}

/* The fast kernels' filter (rip.codegen.kernel_choice.pack_depthwise_filter packs it at
 * compile time, 4-byte aligned), in one of two layouts, channels in groups of four (the
 * last one padded with zero weights) in both:
 *
 * - Column pairs, for the layers the column-pair engine covers (rip_dwc_covers: an odd
 *   kernel width 3 to 7, at most seven kernel rows, no dilation across the row, a stride
 *   of 1 or 2 across it; rip.core.kernel_variants.dw_cols_tile, the same condition): per
 *   channel and kernel row m = (KW - 1) / 2 words, word k the bytes (w[2k], w[2k + 1],
 *   w[2k + 1], w[2k + 2]) of the row's weights, so that SXTB16 gives the SMLAD operand
 *   (w[2k], w[2k + 1]) and SXTB16 of it rotated by 8 the operand (w[2k + 1], w[2k + 2]).
 *   Channel ch, row ky, word k is word (ch * KH + ky) * m + k.
 * - Tap pairs, for every other layer: taps in pairs (an odd last tap paired with a zero
 *   weight), and per group and pair one word a channel, its low halfword the pair's first
 *   tap's weight and its high halfword the second's, sign-extended: the operand SMLAD
 *   multiplies a channel's two paired input bytes with. Group g, pair P, channel j of the
 *   group is word (g * rip_dw_pairs(taps) + P) * 4 + j.
 */
static inline int32_t rip_dw_pairs(int32_t taps) { return (taps + 1) >> 1; }

static inline int rip_dwc_covers(const rip_dw_plane *g) {
    return (g->kw == 3 || g->kw == 5 || g->kw == 7) && g->kh >= 1 && g->kh <= 7 &&
           g->dw == 1 && (g->sw == 1 || g->sw == 2);
}

/* The weight of channel ch at tap t (ky * KW + kx) of the layer's packed filter. */
static inline int32_t rip_dw_weight(const rip_dw_plane *g, const int32_t *pw, int32_t ch,
                                    int32_t t) {
    if (rip_dwc_covers(g)) {
        const int32_t ky = t / g->kw, kx = t - ky * g->kw, m = (g->kw - 1) >> 1;
        const int32_t k = kx == g->kw - 1 ? m - 1 : kx >> 1;
        const int32_t byte = kx == g->kw - 1 ? 3 : kx & 1;
        return (int8_t)((uint32_t)pw[(ch * g->kh + ky) * m + k] >> (8 * byte));
    }
    const int32_t np = rip_dw_pairs(g->kh * g->kw);
    const int32_t word = pw[((ch >> 2) * np + (t >> 1)) * 4 + (ch & 3)];
    return (t & 1) ? word >> 16 : (int32_t)(int16_t)word;
}

/* The column-pair words of taps [0, taps) of one channel into w (KW a constant wherever
 * this is inlined: each row's words unrolled). */
static inline __attribute__((always_inline)) void rip_dw_unpack_cols(const uint32_t *cw,
                                                                     int32_t *w, int32_t taps,
                                                                     const int32_t KW) {
    const int32_t m = (KW - 1) >> 1;
    for (int32_t t = 0; t < taps; t += KW, cw += m) {
        for (int32_t k = 0; k < m; ++k) {
            const uint32_t v = cw[k];
            w[t + 2 * k] = (int8_t)v;
            w[t + 2 * k + 1] = (int8_t)(v >> 8);
            if (k == m - 1) {
                w[t + KW - 1] = (int8_t)(v >> 24);
            }
        }
    }
}

/* Every tap's weight of channel ch into w[t] (t = ky * KW + kx). */
static inline void rip_dw_unpack(const rip_dw_plane *g, const int32_t *pw, int32_t ch,
                                 int32_t *w) {
    const int32_t kw = g->kw, taps = g->kh * kw;
    if (rip_dwc_covers(g)) {
        const uint32_t *cw = (const uint32_t *)pw + ch * g->kh * ((kw - 1) >> 1);
        if (kw == 3) {
            rip_dw_unpack_cols(cw, w, taps, 3);
        } else if (kw == 5) {
            rip_dw_unpack_cols(cw, w, taps, 5);
        } else {
            rip_dw_unpack_cols(cw, w, taps, 7);
        }
        return;
    }
    for (int32_t t = 0; t < taps; ++t) {
        w[t] = rip_dw_weight(g, pw, ch, t);
    }
}

/* The packed filter's words (the API passes it as int8_t, 4-byte aligned). */
static inline const int32_t *rip_dw_packed(const int8_t *filter) {
    return (const int32_t *)(const void *)filter;
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

/* The layer's geometry into *g, or RIP_ERROR_ARGUMENT for one the fast kernels refuse
 * (depth multiplier other than 1, channel counts that differ, no bias, a stride or
 * dilation below 1, an activation range outside int8). */
static RIP_DW_SHARED rip_status rip_dw_plane_init(rip_dw_plane *g,
                                                 const rip_dw_conv_params *params,
                                                 const rip_dims *input_dims,
                                                 const rip_dims *filter_dims, const void *bias,
                                                 const rip_dims *output_dims) {
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

#endif /* RIP_DW_GEOMETRY_H */
