/*
 * rip kernels: CONV_2D on the fast GEMM (rip_conv2d_fast.h has the API and the in-place
 * contracts): rip_conv2d_fast_s8 (the 2x2 tile over gathered fields, TFLite's
 * requantisation) and rip_conv2d_fast_rq_s8 (the packed filter against the pixel pair
 * widened once, the cheap requantisation).
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include <stddef.h>
#include "rip_conv2d_fast.h"
#include "rip_conv_support.h"
#include "rip_cores.h"
#include "rip_gemv.h"

#if defined(__ARM_FEATURE_DSP)
/* One 4-tap step of a 2 x 2 tile, the pixels' taps already widened (SXTB16 pairs: taps 0, 2
 * and 1, 3): the two weight words widened, eight SMLADs. */
RIP_INLINE void rip_smlad_2x2(int32_t xa02, int32_t xa13, int32_t xb02, int32_t xb13,
                              int32_t wa, int32_t wb, int32_t *a00, int32_t *a01,
                              int32_t *a10, int32_t *a11) {
    const int32_t wa02 = __sxtb16(wa), wa13 = rip_fast_sxtb16_ror8(wa);
    *a00 = __smlad(xa13, wa13, __smlad(xa02, wa02, *a00));
    *a10 = __smlad(xb13, wa13, __smlad(xb02, wa02, *a10));
    const int32_t wb02 = __sxtb16(wb), wb13 = rip_fast_sxtb16_ror8(wb);
    *a01 = __smlad(xa13, wb13, __smlad(xa02, wb02, *a01));
    *a11 = __smlad(xb13, wb13, __smlad(xb02, wb02, *a11));
}
#endif

/* The 2 x 2 tile's dot products: a_ij += x_i . w_j over `k` taps. */
RIP_INLINE void rip_fast_dot_2x2(const int8_t *x0, const int8_t *x1, const int8_t *w0,
                                 const int8_t *w1, int32_t k, int32_t *p00, int32_t *p01,
                                 int32_t *p10, int32_t *p11) {
    int32_t a00 = *p00, a01 = *p01, a10 = *p10, a11 = *p11;
    int32_t i = 0;
#if defined(__ARM_FEATURE_DSP)
    for (; i + 4 <= k; i += 4) {
        const int32_t xa = rip_fast_load_s8x4(x0 + i);
        const int32_t xb = rip_fast_load_s8x4(x1 + i);
        const int32_t wa = rip_fast_load_s8x4(w0 + i);
        const int32_t wb = rip_fast_load_s8x4(w1 + i);
        rip_smlad_2x2(__sxtb16(xa), rip_fast_sxtb16_ror8(xa), __sxtb16(xb),
                      rip_fast_sxtb16_ror8(xb), wa, wb, &a00, &a01, &a10, &a11);
    }
#endif
    for (; i < k; ++i) {
        const int32_t xa = x0[i], xb = x1[i], wa = w0[i], wb = w1[i];
        a00 += xa * wa;
        a01 += xa * wb;
        a10 += xb * wa;
        a11 += xb * wb;
    }
    *p00 = a00;
    *p01 = a01;
    *p10 = a10;
    *p11 = a11;
}

typedef struct {
    const int32_t *bias, *multiplier, *shift; /* RIP_RQ_EXACT */
    const rip_fast_channel *channels;         /* RIP_RQ_CHEAP_* */
    int32_t output_offset, act_min, act_max;
} rip_fast_epilogue;

RIP_INLINE int32_t rip_fast_bias(const rip_fast_epilogue *e, const int mode, int32_t oc) {
    return mode == RIP_RQ_EXACT ? e->bias[oc] : e->channels[oc].bias;
}

RIP_INLINE int8_t rip_fast_out(const rip_fast_epilogue *e, const int mode, int32_t oc,
                               int32_t acc) {
    if (mode == RIP_RQ_EXACT) {
        return (int8_t)rip_fast_requantize(acc, e->multiplier[oc], e->shift[oc],
                                           e->output_offset, e->act_min, e->act_max);
    }
    const rip_fast_channel *c = &e->channels[oc];
    const int32_t y = rip_cheap_requantize(acc, c->multiplier, c->round, c->shift);
    return (int8_t)(mode == RIP_RQ_CHEAP_SAT ? rip_sat_s8(y)
                                             : rip_clamp32(y, e->act_min, e->act_max));
}

/* Outputs of one or two pixels over all channels: x0, x1 are `k` gathered taps each, y0,
 * y1 the two output pixels (x1 == x0 and y1 == y0 for a lone pixel: it writes the same
 * bytes twice). Filter rows are `k` bytes, one per output channel. */
RIP_INLINE void rip_fast_gemm_2px(const int8_t *x0, const int8_t *x1, int32_t k,
                                  const int8_t *filter, int32_t c_out,
                                  const rip_fast_epilogue *e, const int mode, int8_t *y0,
                                  int8_t *y1) {
    int32_t oc = 0;
    for (; oc + 2 <= c_out; oc += 2) {
        const int8_t *w0 = filter + (size_t)oc * k;
        int32_t a00 = rip_fast_bias(e, mode, oc), a01 = rip_fast_bias(e, mode, oc + 1);
        int32_t a10 = a00, a11 = a01;
        rip_fast_dot_2x2(x0, x1, w0, w0 + k, k, &a00, &a01, &a10, &a11);
        y0[oc] = rip_fast_out(e, mode, oc, a00);
        y0[oc + 1] = rip_fast_out(e, mode, oc + 1, a01);
        y1[oc] = rip_fast_out(e, mode, oc, a10);
        y1[oc + 1] = rip_fast_out(e, mode, oc + 1, a11);
    }
    if (oc < c_out) {
        /* The last odd channel: its row twice (the second pair of sums is discarded). */
        const int8_t *w0 = filter + (size_t)oc * k;
        int32_t a00 = rip_fast_bias(e, mode, oc), a10 = a00, a01 = 0, a11 = 0;
        rip_fast_dot_2x2(x0, x1, w0, w0, k, &a00, &a01, &a10, &a11);
        y0[oc] = rip_fast_out(e, mode, oc, a00);
        y1[oc] = rip_fast_out(e, mode, oc, a10);
    }
}

int32_t rip_conv2d_fast_s8_get_buffer_size(const rip_dims *input_dims,
                                           const rip_dims *filter_dims) {
    (void)input_dims;
    return 2 * filter_dims->h * filter_dims->w * filter_dims->c;
}

/* The traversal both CONV_2D entries share: pixel pairs in row-major order, both receptive
 * fields gathered before either pixel's first channel is written. */
RIP_INLINE void rip_conv2d_fast_run(const rip_conv_params *params, const rip_dims *input_dims,
                                    const int8_t *input, const rip_dims *filter_dims,
                                    const int8_t *filter, const rip_dims *output_dims,
                                    int8_t *output, int8_t *col0, const rip_fast_epilogue *e,
                                    const int mode) {
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t h_out = output_dims->h, w_out = output_dims->w, c_out = output_dims->c;
    const int32_t taps = filter_dims->h * filter_dims->w * c_in;
    /* A 1x1 unit-stride unpadded convolution reads pixel p alone: a pair is one copy. */
    const int pointwise = filter_dims->h == 1 && filter_dims->w == 1 && params->stride.h == 1 &&
                          params->stride.w == 1 && params->padding.h == 0 &&
                          params->padding.w == 0 && h_out == h && w_out == w;
    const int32_t n_pix = h_out * w_out;
    int8_t *const col1 = col0 + taps;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c_in;
        int8_t *out = output + (size_t)b * n_pix * c_out;
        int32_t oy = 0, ox = 0; /* pixel p */
        for (int32_t p = 0; p < n_pix; p += 2) {
            const int pair = p + 1 < n_pix;
            /* Gather (sigma = 0): every read for pixels p and p + 1 happens here. */
            if (pointwise) {
                memcpy(col0, in + (size_t)p * c_in, (size_t)(pair ? 2 : 1) * (size_t)c_in);
            } else {
                rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col0);
                if (++ox == w_out) {
                    ox = 0;
                    ++oy;
                }
                if (pair) {
                    rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col1);
                    if (++ox == w_out) {
                        ox = 0;
                        ++oy;
                    }
                }
            }
            int8_t *y0 = out + (size_t)p * c_out;
            rip_fast_gemm_2px(col0, pair ? col1 : col0, taps, filter, c_out, e, mode, y0,
                              pair ? y0 + c_out : y0);
        }
    }
}

static int rip_conv2d_fast_args_ok(const rip_context *ctx, const rip_conv_params *params,
                                   const rip_dims *input_dims, const rip_dims *filter_dims,
                                   const rip_dims *output_dims) {
    const int32_t taps = filter_dims->h * filter_dims->w * input_dims->c;
    return ctx != NULL && ctx->buf != NULL && ctx->size >= 2 * taps &&
           filter_dims->c == input_dims->c && filter_dims->n == output_dims->c &&
           input_dims->n == output_dims->n && params->stride.h >= 1 && params->stride.w >= 1 &&
           params->dilation.h >= 1 && params->dilation.w >= 1 &&
           rip_conv_valid_act(params->activation);
}

rip_status rip_conv2d_fast_s8(const rip_context *ctx, const rip_conv_params *params,
                              const rip_per_channel_quant *quant, const rip_dims *input_dims,
                              const int8_t *input, const rip_dims *filter_dims,
                              const int8_t *filter, const rip_dims *bias_dims,
                              const int32_t *bias, const rip_dims *output_dims, int8_t *output) {
    (void)bias_dims;
    if (bias == NULL || !rip_conv2d_fast_args_ok(ctx, params, input_dims, filter_dims,
                                                 output_dims)) {
        return RIP_ERROR_ARGUMENT;
    }
    const rip_fast_epilogue e = {bias, quant->multiplier, quant->shift, NULL,
                                 params->output_offset, params->activation.min,
                                 params->activation.max};
    rip_conv2d_fast_run(params, input_dims, input, filter_dims, filter, output_dims, output,
                        ctx->buf, &e, RIP_RQ_EXACT);
    return RIP_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* rip_conv2d_fast_rq_s8: packed filter, inputs widened once per pixel pair                  */
/* ---------------------------------------------------------------------------------------- */

int32_t rip_conv2d_fast_rq_s8_get_buffer_size(const rip_dims *input_dims,
                                              const rip_dims *filter_dims) {
    (void)input_dims;
    const int32_t taps = filter_dims->h * filter_dims->w * filter_dims->c;
    return 8 * rip_rq_k4(taps) + 2 * taps;
}


#if defined(__ARM_FEATURE_DSP)
/* Pixel pair (xa, xb), k taps each, widened to the order SMLAD wants: per 4 taps the words
 * SXTB16(a), SXTB16(a ror 8), SXTB16(b), SXTB16(b ror 8) (taps 0 and 2, then 1 and 3, as
 * int16 pairs), the last word's missing taps 0. */
static void rip_rq_widen_2px(const int8_t *xa, const int8_t *xb, int32_t k, int32_t *dst) {
    int32_t i = 0;
    for (; i + 4 <= k; i += 4) {
        const int32_t a = rip_fast_load_s8x4(xa + i), b = rip_fast_load_s8x4(xb + i);
        dst[0] = __sxtb16(a);
        dst[1] = rip_fast_sxtb16_ror8(a);
        dst[2] = __sxtb16(b);
        dst[3] = rip_fast_sxtb16_ror8(b);
        dst += 4;
    }
    if (i < k) {
        const int32_t a = rip_fast_load_s8_tail(xa + i, k - i);
        const int32_t b = rip_fast_load_s8_tail(xb + i, k - i);
        dst[0] = __sxtb16(a);
        dst[1] = rip_fast_sxtb16_ror8(a);
        dst[2] = __sxtb16(b);
        dst[3] = rip_fast_sxtb16_ror8(b);
    }
}
#endif

/* One tap of the ARMv6-M pair loop below, spelt out line by line rather than as an
 * assembler .macro: GCC sizes an asm statement by its lines, and a macro's expansion it
 * does not see pushed its own branches out of range (rip_conv2d_fast_rq_s8 at -O1). */
#define RIP_V6M_TAP(off, step)                \
    "ldrsb %[t2], [%[w], %[i]]\n"              \
    "ldr %[t1], [%[x], #" off "]\n"            \
    "movs %[t3], %[t1]\n"                      \
    "muls %[t3], %[t2]\n"                      \
    "add %[a00], %[t3]\n"                      \
    "ldrsb %[t3], [%[w4], %[i]]\n"             \
    "muls %[t1], %[t3]\n"                      \
    "add %[a01], %[t1]\n"                      \
    "ldr %[t1], [%[x], #(" off " + 16)]\n"     \
    "muls %[t2], %[t1]\n"                      \
    "add %[a10], %[t2]\n"                      \
    "muls %[t1], %[t3]\n"                      \
    "add %[a11], %[t1]\n"                      \
    "adds %[i], #" step "\n"

/* The pair loop over a channel pair's k4 taps, four a pass: i from 0 to n = 2 k4 (the
 * filter's index from w and w + 4), x on by the pass's 32 bytes of the widened pair. */
#define RIP_V6M_TAPS                          \
    RIP_V6M_TAP("0", "1")                     \
    RIP_V6M_TAP("4", "1")                     \
    RIP_V6M_TAP("8", "1")                     \
    RIP_V6M_TAP("12", "5")                    \
    "adds %[x], #32\n"                        \
    "cmp %[i], %[n]\n"                        \
    "bne 1b\n"

/* One channel pair's dot products with the pair of pixels: `xs` the widened pair, `*wp` the
 * pair's packed filter rows (advanced past them). */
RIP_INLINE void rip_rq_dot(const void *xs, const int8_t **wp, int32_t k4, int32_t *p00,
                           int32_t *p01, int32_t *p10, int32_t *p11) {
    int32_t a00 = *p00, a01 = *p01, a10 = *p10, a11 = *p11;
    const int8_t *w = *wp;
#if defined(__ARM_FEATURE_DSP)
    const int8_t *x = (const int8_t *)__builtin_assume_aligned(xs, 4);
    const int8_t *const w_end = w + 2 * k4;
#if RIP_HAND_ASM
    /* 17 instructions per 16 MACs (GCC's own schedule of the loop below takes 20):
     * LDRD with writeback for both weight words and the pixel pair's words, pixel b
     * reloaded into pixel a's registers, so the 13 values fit the registers. */
    {
        int32_t x0, x1, wa, wb, t, u;
        __asm__ volatile(
            RIP_ASM_LOOP_HEAD
            "ldrd %[wa], %[wb], [%[w]], #8\n"
            "ldrd %[x0], %[x1], [%[x]], #16\n"
            "sxtb16 %[t], %[wa], ror #8\n"
            "sxtb16 %[wa], %[wa]\n"
            "smlad %[a00], %[x0], %[wa], %[a00]\n"
            "smlad %[a00], %[x1], %[t], %[a00]\n"
            "sxtb16 %[u], %[wb], ror #8\n"
            "sxtb16 %[wb], %[wb]\n"
            "smlad %[a01], %[x0], %[wb], %[a01]\n"
            "smlad %[a01], %[x1], %[u], %[a01]\n"
            "ldrd %[x0], %[x1], [%[x], #-8]\n"
            "smlad %[a10], %[x0], %[wa], %[a10]\n"
            "smlad %[a10], %[x1], %[t], %[a10]\n"
            "smlad %[a11], %[x0], %[wb], %[a11]\n"
            "smlad %[a11], %[x1], %[u], %[a11]\n"
            "cmp %[w], %[end]\n"
            "bne 1b\n"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
              [w] "+r"(w), [x] "+r"(x), [x0] "=&r"(x0), [x1] "=&r"(x1), [wa] "=&r"(wa),
              [wb] "=&r"(wb), [t] "=&r"(t), [u] "=&r"(u)
            : [end] "r"(w_end)
            : "cc", "memory");
    }
#else
    while (w != w_end) {
        const int32_t xa02 = rip_fast_load_s8x4(x), xa13 = rip_fast_load_s8x4(x + 4);
        const int32_t xb02 = rip_fast_load_s8x4(x + 8), xb13 = rip_fast_load_s8x4(x + 12);
        const int32_t wa = rip_fast_load_s8x4(w), wb = rip_fast_load_s8x4(w + 4);
        x += 16;
        w += 8;
        rip_smlad_2x2(xa02, xa13, xb02, xb13, wa, wb, &a00, &a01, &a10, &a11);
    }
#endif
#else
    /* xs: the pair widened to int32, per 4 taps those of pixel a then of pixel b: word
     * loads with immediate offsets, where ARMv6-M's LDRSB takes only a register. */
    const int32_t *x = (const int32_t *)__builtin_assume_aligned(xs, 4);
#if defined(__ARM_ARCH_6M__) && RIP_HAND_ASM
    /* GCC keeps moving values between low and high registers here (about 100
     * instructions per 16 MACs); by hand 60: accumulators in high registers, the
     * filter indexed by i from w and w + 4, the pair by immediate offsets. */
    {
        const int8_t *const w4 = w + 4;
        int32_t i = 0, t1, t2, t3;
        __asm__ volatile(
            ".syntax unified\n"
            "1:\n"
            RIP_V6M_TAPS
            : [a00] "+h"(a00), [a01] "+h"(a01), [a10] "+h"(a10), [a11] "+h"(a11),
              [x] "+l"(x), [i] "+l"(i), [t1] "=&l"(t1), [t2] "=&l"(t2), [t3] "=&l"(t3)
            : [w] "l"(w), [w4] "l"(w4), [n] "r"(2 * k4)
            : "cc", "memory");
        w += 2 * k4;
    }
#else
    const int8_t *const w_end = w + 2 * k4;
    for (; w != w_end; w += 8, x += 8) {
        for (int32_t j = 0; j < 4; ++j) {
            const int32_t va = x[j], vb = x[4 + j], wa = w[j], wb = w[4 + j];
            a00 += va * wa;
            a01 += va * wb;
            a10 += vb * wa;
            a11 += vb * wb;
        }
    }
#endif
#endif
    *wp = w;
    *p00 = a00;
    *p01 = a01;
    *p10 = a10;
    *p11 = a11;
}

#if defined(__ARM_ARCH_6M__)
/* ARMv6-M has no 32 x 32 -> 64 multiply, and rip_smmulr's four 16 x 16 products with their
 * carries made the requantisation cost some 57 instructions an output (measured by
 * difference), as much as 15 MACs: a 1x1 layer over 16 channels spent a third of its time
 * there. Where |acc| < 2^19 (almost every accumulator; checked, the others take
 * rip_rq_out), t = SMMULR(2 acc, m) = floor((acc m + 2^30) / 2^31) takes three MULS with
 * m's parts m = m2 2^23 + m1 2^12 + m0 (m0 < 2^12, m1 < 2^11, |m2| < 2^8; split once a
 * channel), each product inside int32 (|acc m0| < 2^31, |acc m1| < 2^30), summed from the
 * bottom:
 * t = (acc m2 + ((acc m1 + ((acc m0) >> 12)) >> 11) + 2^7) >> 8, as
 * floor((a + floor(b / 2^s)) / 2^r) = floor((a 2^s + b) / 2^(r + s)) and 2^30 = 2^7 2^23.
 * Then rip_cheap_requantize's rounding and shift. */
typedef struct {
    int32_t m2, m1, m0, round, shift;
} rip_v6m_rq;

RIP_INLINE rip_v6m_rq rip_v6m_split(const rip_fast_channel *c) {
    const int32_t m = c->multiplier;
    const rip_v6m_rq r = {m >> 23, (int32_t)(((uint32_t)m << 9) >> 21),
                          (int32_t)(((uint32_t)m << 20) >> 20), c->round, c->shift};
    return r;
}

RIP_INLINE void rip_v6m_out(const rip_v6m_rq *r, const rip_fast_channel *c, const int mode,
                            int32_t lo, int32_t hi, int32_t acc, int8_t *o) {
    const int32_t sign = acc >> 31;
    if ((acc >> 19) != sign) {
        *o = rip_rq_out(c, mode, lo, hi, acc);
        return;
    }
    const int32_t t = (acc * r->m2 + ((acc * r->m1 + ((acc * r->m0) >> 12)) >> 11) + 128) >> 8;
    int32_t y = (t + r->round + sign) >> r->shift;
    if (mode == RIP_RQ_CHEAP_SAT) {
        if ((uint32_t)y + 128u > 255u) {
            y = (y >> 31) ^ 127;
        }
    } else {
        y = rip_clamp32(y, lo, hi);
    }
    *o = (int8_t)y;
}
#endif

#if defined(__ARM_ARCH_6M__) && RIP_HAND_ASM
/* One output of rip_v6m_pairs_sat: accumulator `acc` (a high register) of the channel
 * whose record is at t3 + `rec`, stored at w4 + `out`, by rip_v6m_out's arithmetic (m's
 * parts read from the record each time: no register is left to keep them). An
 * accumulator out of +-2^19 leaves the loop (label 9). */
#define RIP_V6M_OUT(acc, rec, out)                  \
    "mov %[x], %[" acc "]\n"                        \
    "asrs %[i], %[x], #31\n"                        \
    "asrs %[t1], %[x], #19\n"                       \
    "cmp %[t1], %[i]\n"                             \
    "beq 4f\n"                                      \
    "b 9f\n"                                        \
    "4:\n"                                          \
    "ldr %[t1], [%[t3], #(4 + " rec ")]\n"          \
    "lsls %[t1], %[t1], #20\n"                      \
    "lsrs %[t1], %[t1], #20\n"                      \
    "muls %[t1], %[x], %[t1]\n"                     \
    "asrs %[t1], %[t1], #12\n"                      \
    "ldr %[t2], [%[t3], #(4 + " rec ")]\n"          \
    "lsls %[t2], %[t2], #9\n"                       \
    "lsrs %[t2], %[t2], #21\n"                      \
    "muls %[t2], %[x], %[t2]\n"                     \
    "adds %[t1], %[t1], %[t2]\n"                    \
    "asrs %[t1], %[t1], #11\n"                      \
    "ldr %[t2], [%[t3], #(4 + " rec ")]\n"          \
    "asrs %[t2], %[t2], #23\n"                      \
    "muls %[t2], %[x], %[t2]\n"                     \
    "adds %[t1], %[t1], %[t2]\n"                    \
    "adds %[t1], #128\n"                            \
    "asrs %[t1], %[t1], #8\n"                       \
    "ldr %[t2], [%[t3], #(8 + " rec ")]\n"          \
    "adds %[t1], %[t1], %[t2]\n"                    \
    "adds %[t1], %[t1], %[i]\n"                     \
    "ldr %[t2], [%[t3], #(12 + " rec ")]\n"         \
    "asrs %[t1], %[t1], %[t2]\n"                    \
    "sxtb %[t2], %[t1]\n" /* int8 if unchanged */  \
    "cmp %[t2], %[t1]\n"                            \
    "beq 5f\n"                                      \
    "asrs %[t1], %[t1], #31\n"                      \
    "movs %[t2], #127\n"                            \
    "eors %[t1], %[t2]\n"                           \
    "5:\n"                                          \
    "strb %[t1], [%[w4], #" out "]\n"

/* Channel pairs of a pixel pair (widened at xs) saturated to int8 (RIP_RQ_CHEAP_SAT): the
 * pair loop of rip_rq_dot and the requantisation of rip_v6m_out in one block, GCC's
 * schedule of the two having moved the accumulators between high and low registers and
 * spilled around each. Pixel i, channel j at o + i * step + j. Stops after the pairs, or
 * at a pair with an accumulator out of +-2^19, whose four it returns in acc (1) for the
 * caller to requantise the general way, with *wp past its rows and *cp, *op at it. */
static int rip_v6m_pairs_sat(const int32_t *xs, int32_t k4, const int8_t **wp,
                             const rip_fast_channel **cp, const rip_fast_channel *c_end,
                             int8_t **op, ptrdiff_t step, int32_t *acc) {
    const int8_t *w = *wp;
    const int32_t *const sx = xs;
    const ptrdiff_t sstep = step;
    const rip_fast_channel *sc = *cp;
    int8_t *so = *op;
    int32_t a00, a01, a10, a11, bad;
    const int32_t *x;
    int32_t i, t1, t2, t3;
    const int8_t *w4;
    __asm__ volatile(
        ".syntax unified\n"
        "2:\n"
        "ldr %[t1], %[sc]\n"
        "ldr %[t2], [%[t1]]\n"
        "mov %[a00], %[t2]\n"
        "mov %[a10], %[t2]\n"
        "ldr %[t2], [%[t1], #16]\n"
        "mov %[a01], %[t2]\n"
        "mov %[a11], %[t2]\n"
        "ldr %[x], %[sx]\n"
        "movs %[i], #0\n"
        "adds %[w4], %[w], #4\n"
        "1:\n"
        RIP_V6M_TAPS
        "add %[w], %[n]\n"
        /* x the accumulator, i its sign, t1 / t2 temporaries, t3 the records, w4 the
         * pixel's outputs */
        "ldr %[t3], %[sc]\n"
        "ldr %[w4], %[so]\n"
        RIP_V6M_OUT("a00", "0", "0")
        RIP_V6M_OUT("a01", "16", "1")
        "ldr %[i], %[sstep]\n"
        "adds %[w4], %[w4], %[i]\n"
        RIP_V6M_OUT("a10", "0", "0")
        RIP_V6M_OUT("a11", "16", "1")
        "adds %[t3], #32\n"
        "str %[t3], %[sc]\n"
        "ldr %[w4], %[so]\n"
        "adds %[w4], #2\n"
        "str %[w4], %[so]\n"
        "ldr %[t1], %[c_end]\n"
        "cmp %[t3], %[t1]\n"
        "beq 3f\n"
        "b 2b\n"
        "3:\n"
        "movs %[bad], #0\n"
        "b 8f\n"
        "9:\n"
        "movs %[bad], #1\n"
        "8:\n"
        : [a00] "=&h"(a00), [a01] "=&h"(a01), [a10] "=&h"(a10), [a11] "=&h"(a11),
          [w] "+l"(w), [x] "=&l"(x), [i] "=&l"(i), [t1] "=&l"(t1), [t2] "=&l"(t2),
          [t3] "=&l"(t3), [w4] "=&l"(w4), [bad] "=&l"(bad), [sc] "+m"(sc), [so] "+m"(so)
        : [n] "h"(2 * k4), [sx] "m"(sx), [sstep] "m"(sstep), [c_end] "m"(c_end)
        : "cc", "memory");
    *wp = w;
    *cp = sc;
    *op = so;
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
    return bad;
}
#endif

/* All channels of a pixel pair: `xs` the pair widened (int16 pairs with DSP, int32
 * without), `filter` the packed filter (rip_conv2d_fast.h), k4 taps a channel, channels in pairs
 * with their words interleaved. */
RIP_INLINE void rip_rq_gemm_2px(const void *xs, int32_t k4, const int8_t *filter,
                                int32_t c_out, const rip_fast_channel *ch, const int mode,
                                int32_t lo, int32_t hi, int8_t *y0, int8_t *y1) {
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(filter, 4);
    const rip_fast_channel *c = ch;
    int8_t *o0 = y0, *o1 = y1;
#if defined(__ARM_ARCH_6M__) && RIP_HAND_ASM
    if (mode == RIP_RQ_CHEAP_SAT) {
        const rip_fast_channel *const c_end = ch + (c_out & ~1);
        while (c != c_end) {
            int32_t a[4];
            if (rip_v6m_pairs_sat((const int32_t *)xs, k4, &w, &c, c_end, &o0, y1 - y0, a)) {
                /* a pair the short requantisation does not cover */
                o0[0] = rip_rq_out(&c[0], mode, lo, hi, a[0]);
                o0[1] = rip_rq_out(&c[1], mode, lo, hi, a[1]);
                o0[y1 - y0] = rip_rq_out(&c[0], mode, lo, hi, a[2]);
                o0[y1 - y0 + 1] = rip_rq_out(&c[1], mode, lo, hi, a[3]);
                c += 2;
                o0 += 2;
            }
        }
        o1 = o0 + (y1 - y0);
    }
#endif
    for (int32_t n = (c_out - (int32_t)(c - ch)) >> 1; n > 0; --n) {
        int32_t a00 = c[0].bias, a01 = c[1].bias;
        int32_t a10 = a00, a11 = a01;
        rip_rq_dot(xs, &w, k4, &a00, &a01, &a10, &a11);
#if defined(__ARM_ARCH_6M__)
        const rip_v6m_rq r0 = rip_v6m_split(&c[0]);
        rip_v6m_out(&r0, &c[0], mode, lo, hi, a00, &o0[0]);
        rip_v6m_out(&r0, &c[0], mode, lo, hi, a10, &o1[0]);
        const rip_v6m_rq r1 = rip_v6m_split(&c[1]);
        rip_v6m_out(&r1, &c[1], mode, lo, hi, a01, &o0[1]);
        rip_v6m_out(&r1, &c[1], mode, lo, hi, a11, &o1[1]);
#else
        o0[0] = rip_rq_out(&c[0], mode, lo, hi, a00);
        o1[0] = rip_rq_out(&c[0], mode, lo, hi, a10);
        o0[1] = rip_rq_out(&c[1], mode, lo, hi, a01);
        o1[1] = rip_rq_out(&c[1], mode, lo, hi, a11);
#endif
        c += 2;
        o0 += 2;
        o1 += 2;
    }
    if (c_out & 1) { /* the last channel, paired with the packed filter's zero row */
        int32_t a00 = c[0].bias, a01 = 0;
        int32_t a10 = a00, a11 = 0;
        rip_rq_dot(xs, &w, k4, &a00, &a01, &a10, &a11);
        o0[0] = rip_rq_out(&c[0], mode, lo, hi, a00);
        o1[0] = rip_rq_out(&c[0], mode, lo, hi, a10);
    }
}

#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
/* Pointwise layers on DSP cores take their pixels three at a time: a 3 x 2 tile spreads
 * the requantisation over half as many more MACs as the 2 x 2 one, and its inner loop is
 * 23 instructions per 24 MACs (17 per 16). The widened triple is 6 * k4 bytes, inside the
 * 8 * k4 the scratch reserves for the pair. */
#define RIP_RQ_TRIPLES 1

/* Pixels xa, xa + k, xa + 2k (k taps each, contiguous) widened as rip_rq_widen_2px does,
 * per 4 taps the words of a, then b, then c. */
static inline __attribute__((always_inline)) void rip_rq_widen_3px_(const int8_t *xa,
                                                                   int32_t k, int32_t *dst,
                                                                   const int DBL) {
    int32_t i = 0;
#define RIP_W3(v) (DBL ? __sadd16((v), (v)) : (v))
    for (; i + 4 <= k; i += 4) {
        const int32_t a = rip_fast_load_s8x4(xa + i), b = rip_fast_load_s8x4(xa + k + i);
        const int32_t c = rip_fast_load_s8x4(xa + 2 * k + i);
        dst[0] = RIP_W3(__sxtb16(a));
        dst[1] = RIP_W3(rip_fast_sxtb16_ror8(a));
        dst[2] = RIP_W3(__sxtb16(b));
        dst[3] = RIP_W3(rip_fast_sxtb16_ror8(b));
        dst[4] = RIP_W3(__sxtb16(c));
        dst[5] = RIP_W3(rip_fast_sxtb16_ror8(c));
        dst += 6;
    }
    if (i < k) {
        for (int32_t j = 0; j < 3; ++j) {
            const int32_t v = rip_fast_load_s8_tail(xa + j * k + i, k - i);
            dst[2 * j] = RIP_W3(__sxtb16(v));
            dst[2 * j + 1] = RIP_W3(rip_fast_sxtb16_ror8(v));
        }
    }
#undef RIP_W3
}

static void rip_rq_widen_3px(const int8_t *xa, int32_t k, int32_t *dst) {
    rip_rq_widen_3px_(xa, k, dst, 0);
}

/* rip_rq_widen_3px with every input doubled (in int16 lanes: |2 x| <= 256), for
 * rip_rq_pairs3_sat2, which then need not double each accumulator. */
static void rip_rq_widen_3px_doubled(const int8_t *xa, int32_t k, int32_t *dst) {
    rip_rq_widen_3px_(xa, k, dst, 1);
}

/* One pass of the pixel-triple dot product (rip_rq_dot3, rip_rq_pairs3_sat): four taps of
 * two channels (a pair's packed word each, widened by SXTB16) against three pixels' widened
 * inputs, six accumulators by SMLAD; the pointers advance by one pass. */
#define RIP_DOT3_PASS \
    "ldrd %[wa], %[wb], [%[w]], #8\n" \
    "ldrd %[x0], %[x1], [%[x]], #24\n" \
    "sxtb16 %[t], %[wa], ror #8\n" \
    "sxtb16 %[wa], %[wa]\n" \
    "smlad %[a00], %[x0], %[wa], %[a00]\n" \
    "smlad %[a00], %[x1], %[t], %[a00]\n" \
    "sxtb16 %[u], %[wb], ror #8\n" \
    "sxtb16 %[wb], %[wb]\n" \
    "smlad %[a01], %[x0], %[wb], %[a01]\n" \
    "smlad %[a01], %[x1], %[u], %[a01]\n" \
    "ldrd %[x0], %[x1], [%[x], #-16]\n" \
    "smlad %[a10], %[x0], %[wa], %[a10]\n" \
    "smlad %[a10], %[x1], %[t], %[a10]\n" \
    "smlad %[a11], %[x0], %[wb], %[a11]\n" \
    "smlad %[a11], %[x1], %[u], %[a11]\n" \
    "ldrd %[x0], %[x1], [%[x], #-8]\n" \
    "smlad %[a20], %[x0], %[wa], %[a20]\n" \
    "smlad %[a20], %[x1], %[t], %[a20]\n" \
    "smlad %[a21], %[x0], %[wb], %[a21]\n" \
    "smlad %[a21], %[x1], %[u], %[a21]\n"

/* RIP_DOT3_PASS as a channel pair's first pass, its accumulators a00 and a01 holding the
 * pair's biases: pixel c's and b's sums start from them, then pixel a's (four MOVs fewer
 * than copying the biases into all six). */
#define RIP_DOT3_FIRST \
    "ldrd %[wa], %[wb], [%[w]], #8\n" \
    "ldrd %[x0], %[x1], [%[x], #16]\n" \
    "sxtb16 %[t], %[wa], ror #8\n" \
    "sxtb16 %[wa], %[wa]\n" \
    "smlad %[a20], %[x0], %[wa], %[a00]\n" \
    "smlad %[a20], %[x1], %[t], %[a20]\n" \
    "sxtb16 %[u], %[wb], ror #8\n" \
    "sxtb16 %[wb], %[wb]\n" \
    "smlad %[a21], %[x0], %[wb], %[a01]\n" \
    "smlad %[a21], %[x1], %[u], %[a21]\n" \
    "ldrd %[x0], %[x1], [%[x], #8]\n" \
    "smlad %[a10], %[x0], %[wa], %[a00]\n" \
    "smlad %[a10], %[x1], %[t], %[a10]\n" \
    "smlad %[a11], %[x0], %[wb], %[a01]\n" \
    "smlad %[a11], %[x1], %[u], %[a11]\n" \
    "ldrd %[x0], %[x1], [%[x]], #24\n" \
    "smlad %[a00], %[x0], %[wa], %[a00]\n" \
    "smlad %[a00], %[x1], %[t], %[a00]\n" \
    "smlad %[a01], %[x0], %[wb], %[a01]\n" \
    "smlad %[a01], %[x1], %[u], %[a01]\n"

/* One channel pair's dot products with the triple (a_ij: pixel i, channel j), `*wp` the
 * pair's packed rows (advanced past them). Fourteen registers hold the loop's values; the
 * end pointer is reloaded from the stack into a pixel register once a pass. */
RIP_INLINE void rip_rq_dot3(const int32_t *x, const int8_t **wp, int32_t k4, int32_t *acc) {
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3], a20 = acc[4],
            a21 = acc[5];
    const int8_t *w = *wp;
    const int8_t *const w_end = w + 2 * k4;
    int32_t x0, x1, wa, wb, t, u;
    __asm__ volatile(
        RIP_ASM_LOOP_HEAD
        RIP_DOT3_PASS
        "ldr %[x0], %[end]\n"
        "cmp %[w], %[x0]\n"
        "bne 1b\n"
        : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
          [a20] "+r"(a20), [a21] "+r"(a21), [w] "+r"(w), [x] "+r"(x), [x0] "=&r"(x0),
          [x1] "=&r"(x1), [wa] "=&r"(wa), [wb] "=&r"(wb), [t] "=&r"(t), [u] "=&r"(u)
        : [end] "m"(w_end)
        : "cc", "memory");
    *wp = w;
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
    acc[4] = a20;
    acc[5] = a21;
}

/* The triple's six outputs of a channel pair, saturated to int8 (rip_rq_out with
 * RIP_RQ_CHEAP_SAT): pixel i, channel j at o[i * step + j], a[2i + j] its accumulator. By
 * hand: GCC's schedule of the same six requantisations spilled (57 instructions, 40 here). */
RIP_INLINE void rip_rq_store3_sat(const int32_t *a, const rip_fast_channel *c, int8_t *o,
                                  ptrdiff_t step) {
    int32_t a00 = a[0], a01 = a[1], a10 = a[2], a11 = a[3], a20 = a[4], a21 = a[5];
    int32_t m, r, sh, y, o2;
    __asm__ volatile(
        "add %[o2], %[o], %[step], lsl #1\n"
        "ldrd %[m], %[r], [%[c], #4]\n"
        "ldr %[sh], [%[c], #12]\n"
        "lsls %[a00], %[a00], #1\n"
        "smmlar %[y], %[a00], %[m], %[r]\n"
        "add %[y], %[y], %[a00], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o]]\n"
        "lsls %[a10], %[a10], #1\n"
        "smmlar %[y], %[a10], %[m], %[r]\n"
        "add %[y], %[y], %[a10], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o], %[step]]\n"
        "lsls %[a20], %[a20], #1\n"
        "smmlar %[y], %[a20], %[m], %[r]\n"
        "add %[y], %[y], %[a20], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o2]]\n"
        "ldrd %[m], %[r], [%[c], #20]\n"
        "ldr %[sh], [%[c], #28]\n"
        "lsls %[a21], %[a21], #1\n"
        "smmlar %[y], %[a21], %[m], %[r]\n"
        "add %[y], %[y], %[a21], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o2], #1]\n"
        "adds %[o2], %[o], #1\n"
        "lsls %[a01], %[a01], #1\n"
        "smmlar %[y], %[a01], %[m], %[r]\n"
        "add %[y], %[y], %[a01], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o2]]\n"
        "lsls %[a11], %[a11], #1\n"
        "smmlar %[y], %[a11], %[m], %[r]\n"
        "add %[y], %[y], %[a11], asr #31\n"
        "asrs %[y], %[y], %[sh]\n"
        "ssat %[y], #8, %[y]\n"
        "strb %[y], [%[o2], %[step]]\n"
        : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
          [a20] "+r"(a20), [a21] "+r"(a21), [m] "=&r"(m), [r] "=&r"(r), [sh] "=&r"(sh),
          [y] "=&r"(y), [o2] "=&r"(o2)
        : [c] "r"(c), [o] "r"(o), [step] "r"(step)
        : "cc", "memory");
}

/* The six outputs of one channel pair for a triple (pixel i, channel j at o[i * step + j],
 * a[2i + j] its accumulator); `c` the pair's records, c[1] unread where `two` is 0 (the odd
 * last channel). */
RIP_INLINE void rip_rq_put3(const int32_t *a, const rip_fast_channel *c, const int mode,
                            int32_t lo, int32_t hi, int8_t *o, ptrdiff_t step, int two) {
    if (mode == RIP_RQ_CHEAP_SAT && two) {
        rip_rq_store3_sat(a, c, o, step);
        return;
    }
    /* The records as locals, every output before a store: an int8 store may alias them,
     * and GCC reloaded them after each. */
    const rip_fast_channel r0 = c[0];
    const int8_t y00 = rip_rq_out(&r0, mode, lo, hi, a[0]);
    const int8_t y10 = rip_rq_out(&r0, mode, lo, hi, a[2]);
    const int8_t y20 = rip_rq_out(&r0, mode, lo, hi, a[4]);
    if (!two) {
        o[0] = y00;
        o[step] = y10;
        o[2 * step] = y20;
        return;
    }
    const rip_fast_channel r1 = c[1];
    const int8_t y01 = rip_rq_out(&r1, mode, lo, hi, a[1]);
    const int8_t y11 = rip_rq_out(&r1, mode, lo, hi, a[3]);
    const int8_t y21 = rip_rq_out(&r1, mode, lo, hi, a[5]);
    o[0] = y00;
    o[1] = y01;
    o[step] = y10;
    o[step + 1] = y11;
    o[2 * step] = y20;
    o[2 * step + 1] = y21;
}

/* rip_rq_pairs3_sat's words in memory (its registers all take the tile): those of the
 * layer, set once (rip_rq3_words_init), and the triple's, set at each. On the caller's
 * stack, so that the block reads each by an SP-relative load: kept from triple to triple,
 * they cost a triple two stores instead of some twenty. */
typedef struct {
    const int32_t *sx, *sx_end; /* the widened triple, the inner loop's end */
    ptrdiff_t sstep;            /* a pixel's outputs apart */
    int32_t copy, skip;         /* the entry's place (below) */
    const void *entry;          /* computed at the first triple, NULL before */
    const rip_fast_channel *sc; /* the triple's: the next pair's records, */
    int8_t *so, *so_end;        /* its outputs, their end */
} rip_rq3_words;

/* The layer's words: triples widened at xs, k4 taps, outputs step apart. The passes after
 * the first, four an iteration: where their count is not a multiple of 4 the loop is
 * entered at its second, third or fourth (the same for every pair and tile), none at its
 * end. Fewer than four (at most 16 taps: the pointwise layers after 8 or 16 channels) go
 * through a copy of the last three without the loop's end test (three instructions a tile
 * fewer): `copy`, `skip` bytes into the copy (3 - rest passes of 80, all 32-bit
 * instructions: the assembler checks), else that far into the loop. */
static inline void rip_rq3_words_init(rip_rq3_words *k, const int32_t *xs, int32_t k4,
                                      ptrdiff_t step) {
    const int32_t rest = (k4 >> 2) - 1;
    k->sx = xs;
    k->sx_end = xs + 6 * k4 / 4;
    k->sstep = step;
    k->copy = rest < 4;
    k->skip = 80 * (k->copy ? 3 - rest : (4 - (rest & 3)) & 3);
    k->entry = NULL;
}

/* The doubling of rip_cheap_requantize's 2 acc: in the epilogue (DBL 0), or already in the
 * widened inputs and here in the biases (DBL 1, rip_rq_run's `doubled`). */
#define RIP_P3_LSL0(r) "lsls %[" r "], %[" r "], #1\n"
#define RIP_P3_LSL1(r) ""
#define RIP_P3_BIAS0 ""
#define RIP_P3_BIAS1 "lsls %[a00], %[a00], #1\nlsls %[a01], %[a01], #1\n"

/* Every channel pair of a triple, saturated to int8 (RIP_RQ_CHEAP_SAT): rip_rq_dot3 and
 * rip_rq_store3_sat in one loop, with the same loads, stores and store order. One block
 * because GCC's schedule of the pair loop around the two kept the tile's pointers on the
 * stack and moved them through registers at every tile; here they stay in memory operands,
 * the epilogue takes the inner loop's registers, and the inner loop ends on the widened
 * triple's end, the same for every tile (MCUNet-in3's pointwise layers: 6.4 instructions
 * a tile fewer, 1.32 to 1.29 a MAC). `*wp`, `*cp`, `*op` advanced past the `pairs` pairs
 * (at least one); k the layer's words (rip_rq3_words_init). DBL: rip_rq_pairs3_sat2
 * takes the doubled inputs (RIP_P3_*). */
#define RIP_RQ_PAIRS3_SAT(NAME, DBL)                                                               \
RIP_INLINE void NAME(rip_rq3_words *k, const int8_t **wp, int32_t pairs,                           \
                                  const rip_fast_channel **cp, int8_t **op) {                      \
    const int8_t *w = *wp;                                                                         \
    k->sc = *cp;                                                                                   \
    k->so = *op;                                                                                   \
    k->so_end = *op + 2 * pairs;                                                                   \
    const int32_t *x;                                                                              \
    int32_t a00, a01, a10, a11, a20, a21, x0, x1, wa, wb, t, u;                                    \
    __asm__ volatile(                                                                              \
        "ldr %[x1], %[entry]\n"                                                                    \
        "cmp %[x1], #0\n"                                                                          \
        "bne 7f\n"                                                                                 \
        "adr.w %[x1], 1f\n"                                                                        \
        "ldr %[x0], %[copy]\n"                                                                     \
        "cmp %[x0], #0\n"                                                                          \
        "it ne\n"                                                                                  \
        "adrne.w %[x1], 13f\n"                                                                     \
        "ldr %[x0], %[skip]\n"                                                                     \
        "add %[x1], %[x1], %[x0]\n"                                                                \
        "orr %[x1], %[x1], #1\n" /* a Thumb address */                                             \
        "str %[x1], %[entry]\n"                                                                    \
        "7:\n"                                                                                     \
        "ldr %[x1], %[sc]\n" /* the records, in x1 at every tile's start */                        \
        "2:\n"                                                                                     \
        "ldr %[x], %[sx]\n"                                                                        \
        "ldr %[a00], [%[x1]]\n"                                                                    \
        "ldr %[a01], [%[x1], #16]\n"                                                               \
        RIP_P3_BIAS##DBL                                                                           \
        RIP_DOT3_FIRST                                                                             \
        "ldr pc, %[entry]\n"                                                                       \
        "13:\n"                                                                                    \
        RIP_DOT3_PASS                                                                              \
        "14:\n"                                                                                    \
        RIP_DOT3_PASS                                                                              \
        "15:\n"                                                                                    \
        RIP_DOT3_PASS                                                                              \
        "b 6f\n"                                                                                   \
        RIP_ASM_LOOP_HEAD                                                                          \
        RIP_DOT3_PASS                                                                              \
        "3:\n"                                                                                     \
        RIP_DOT3_PASS                                                                              \
        "4:\n"                                                                                     \
        RIP_DOT3_PASS                                                                              \
        "5:\n"                                                                                     \
        RIP_DOT3_PASS                                                                              \
        "ldr %[x0], %[sx_end]\n"                                                                   \
        "cmp %[x], %[x0]\n"                                                                        \
        "bne 1b\n"                                                                                 \
        "6:\n"                                                                                     \
        /* the epilogue: x1 the records, wa the outputs, wb the step, x0 / t / u a                 \
         * channel's multiplier / round / shift, x the value, a00 (once stored) o + 2 step */      \
        "ldr %[x1], %[sc]\n"                                                                       \
        "ldr %[wa], %[so]\n"                                                                       \
        "ldr %[wb], %[sstep]\n"                                                                    \
        "ldrd %[x0], %[t], [%[x1], #4]\n"                                                          \
        "ldr %[u], [%[x1], #12]\n"                                                                 \
        RIP_P3_LSL##DBL("a00")                                                                     \
        "smmlar %[x], %[a00], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a00], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[wa]]\n"                                                                     \
        RIP_P3_LSL##DBL("a10")                                                                     \
        "smmlar %[x], %[a10], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a10], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[wa], %[wb]]\n"                                                              \
        "add %[a00], %[wa], %[wb], lsl #1\n"                                                       \
        RIP_P3_LSL##DBL("a20")                                                                     \
        "smmlar %[x], %[a20], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a20], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[a00]]\n"                                                                    \
        "ldrd %[x0], %[t], [%[x1], #20]\n"                                                         \
        "ldr %[u], [%[x1], #28]\n"                                                                 \
        RIP_P3_LSL##DBL("a21")                                                                     \
        "smmlar %[x], %[a21], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a21], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[a00], #1]\n"                                                                \
        "adds %[a00], %[wa], #1\n"                                                                 \
        RIP_P3_LSL##DBL("a01")                                                                     \
        "smmlar %[x], %[a01], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a01], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[a00]]\n"                                                                    \
        RIP_P3_LSL##DBL("a11")                                                                     \
        "smmlar %[x], %[a11], %[x0], %[t]\n"                                                       \
        "add %[x], %[x], %[a11], asr #31\n"                                                        \
        "asrs %[x], %[x], %[u]\n"                                                                  \
        "ssat %[x], #8, %[x]\n"                                                                    \
        "strb %[x], [%[a00], %[wb]]\n"                                                             \
        "adds %[x1], %[x1], #32\n"                                                                 \
        "str %[x1], %[sc]\n"                                                                       \
        "adds %[wa], %[wa], #2\n"                                                                  \
        "str %[wa], %[so]\n"                                                                       \
        "ldr %[x0], %[so_end]\n"                                                                   \
        "cmp %[wa], %[x0]\n"                                                                       \
        "bne 2b\n"                                                                                 \
        ".if (14b - 13b) != 80 || (15b - 14b) != 80 || (3b - 1b) != 80 || "                        \
        "(4b - 3b) != 80 || (5b - 4b) != 80\n"                                                     \
        ".error \"" #NAME ": a pass is not 80 bytes\"\n"                                           \
        ".endif\n"                                                                                 \
        : [a00] "=&r"(a00), [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11),                  \
          [a20] "=&r"(a20), [a21] "=&r"(a21), [w] "+r"(w), [x] "=&r"(x), [x0] "=&r"(x0),           \
          [x1] "=&r"(x1), [wa] "=&r"(wa), [wb] "=&r"(wb), [t] "=&r"(t), [u] "=&r"(u),              \
          [sc] "+m"(k->sc), [so] "+m"(k->so), [entry] "+m"(k->entry)                               \
        : [sx] "m"(k->sx), [sx_end] "m"(k->sx_end), [sstep] "m"(k->sstep),                         \
          [so_end] "m"(k->so_end), [copy] "m"(k->copy), [skip] "m"(k->skip)                        \
        : "cc", "memory");                                                                         \
    *wp = w;                                                                                       \
    *cp = k->sc;                                                                                   \
    *op = k->so;                                                                                   \
}
RIP_RQ_PAIRS3_SAT(rip_rq_pairs3_sat, 0)
RIP_RQ_PAIRS3_SAT(rip_rq_pairs3_sat2, 1)

/* c_out channels of a pixel triple (rip_rq_gemm_2px's order): pixel i's outputs at
 * y + i * step. */
RIP_INLINE void rip_rq_gemm_3px(const int32_t *xs, int32_t k4, const int8_t *filter,
                                int32_t c_out, const rip_fast_channel *ch, const int mode,
                                int32_t lo, int32_t hi, int8_t *y, ptrdiff_t step,
                                rip_rq3_words *k) {
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(filter, 4);
    const rip_fast_channel *c = ch;
    int8_t *o = y;
    int32_t n = c_out >> 1;
    if (mode == RIP_RQ_CHEAP_SAT && n > 0) {
        rip_rq_pairs3_sat(k, &w, n, &c, &o);
        n = 0;
    }
    for (; n > 0; --n) {
        int32_t a[6];
        a[0] = a[2] = a[4] = c[0].bias;
        a[1] = a[3] = a[5] = c[1].bias;
        rip_rq_dot3(xs, &w, k4, a);
        rip_rq_put3(a, c, mode, lo, hi, o, step, 1);
        c += 2;
        o += 2;
    }
    if (c_out & 1) { /* the last channel, paired with the packed filter's zero row */
        int32_t a[6] = {c[0].bias, 0, c[0].bias, 0, c[0].bias, 0};
        rip_rq_dot3(xs, &w, k4, a);
        rip_rq_put3(a, c, mode, lo, hi, o, step, 0);
    }
}

/* Pixels a sweep of the packed filter takes (at least 3; 2 * k4 bytes each widened) for
 * a pointwise layer with `scratch_bytes` of scratch, its filter streaming from flash or
 * not (rip_rq_streams). */
static inline int32_t rip_rq_sweep_pixels(int streams, int32_t k4, int32_t scratch_bytes) {
    return streams ? rip_max32(scratch_bytes / (2 * k4), 3) : 3;
}

/* Word k of three pixels' fields (a, b, c) widened to dst: SXTB16 of each and of each
 * rotated by 8, as rip_rq_widen_3px stores them. */
#define RIP_WIDEN3_STORE                                  \
    "sxtb16 %[t], %[a]\n"                                 \
    "sxtb16 %[a], %[a], ror #8\n"                         \
    "strd %[t], %[a], [%[dst]], #24\n"                    \
    "sxtb16 %[t], %[b]\n"                                 \
    "sxtb16 %[b], %[b], ror #8\n"                         \
    "strd %[t], %[b], [%[dst], #-16]\n"                   \
    "sxtb16 %[t], %[c]\n"                                 \
    "sxtb16 %[c], %[c], ror #8\n"                         \
    "strd %[t], %[c], [%[dst], #-8]\n"

/* Three pixels' receptive fields widened as rip_rq_widen_3px widens them, read straight
 * from their KH rows of `row` >= 4 bytes each (pixel i's row ky at s_i + ky * pitch: the
 * input where a field lies wholly inside it at unit dilation across, or a field gathered
 * into scratch, pitch = row): taps in fours across the rows' ends, the taps a row ends
 * with carried into the next row's first word. A carry is read as the row's last word,
 * shifted down, and the next row's first word is shifted up over it: every byte read lies
 * in the field. The stems (3x3 over 3 channels, rows of 9 bytes) spent more on gathering
 * their fields than on widening them. */
static void rip_rq_widen_rows_3px(const int8_t *s0, const int8_t *s1, const int8_t *s2,
                                  ptrdiff_t pitch, int32_t kh, int32_t row, int32_t *dst) {
    const ptrdiff_t back = row - 4 - pitch; /* from a row to the previous one's last word */
    int32_t h = 0;                          /* taps a row ends with, carried to the next */
    int32_t a, b, c, t;
    for (int32_t ky = 0; ky < kh; ++ky, s0 += pitch, s1 += pitch, s2 += pitch) {
        int32_t j = 0;
        if (h != 0) { /* the previous row's last h taps, then this row's first 4 - h */
            const uint32_t up = (uint32_t)(8 * h), down = 32u - up;
            a = (int32_t)(((uint32_t)rip_fast_load_s8x4(s0 + back) >> down) |
                          ((uint32_t)rip_fast_load_s8x4(s0) << up));
            b = (int32_t)(((uint32_t)rip_fast_load_s8x4(s1 + back) >> down) |
                          ((uint32_t)rip_fast_load_s8x4(s1) << up));
            c = (int32_t)(((uint32_t)rip_fast_load_s8x4(s2 + back) >> down) |
                          ((uint32_t)rip_fast_load_s8x4(s2) << up));
            __asm__ volatile(RIP_WIDEN3_STORE
                             : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [t] "=&r"(t),
                               [dst] "+r"(dst)
                             :
                             : "memory");
            j = 4 - h;
        }
        int32_t n = (row - j) >> 2;
        if (n > 0) {
            const int8_t *p0 = s0 + j, *p1 = s1 + j, *p2 = s2 + j;
            __asm__ volatile(RIP_ASM_LOOP_HEAD
                             "ldr %[a], [%[p0]], #4\n"
                             "ldr %[b], [%[p1]], #4\n"
                             "ldr %[c], [%[p2]], #4\n"
                             RIP_WIDEN3_STORE
                             "subs %[n], %[n], #1\n"
                             "bne 1b\n"
                             : [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [t] "=&r"(t),
                               [dst] "+r"(dst), [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2),
                               [n] "+r"(n)
                             :
                             : "cc", "memory");
        }
        h = (row - j) & 3;
    }
    if (h != 0) { /* the last row's last h taps, the word's missing taps 0 */
        const uint32_t down = 32u - (uint32_t)(8 * h);
        a = (int32_t)((uint32_t)rip_fast_load_s8x4(s0 + back) >> down);
        b = (int32_t)((uint32_t)rip_fast_load_s8x4(s1 + back) >> down);
        c = (int32_t)((uint32_t)rip_fast_load_s8x4(s2 + back) >> down);
        __asm__ volatile(RIP_WIDEN3_STORE
                         : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [t] "=&r"(t), [dst] "+r"(dst)
                         :
                         : "memory");
    }
}

/* rip_rq_widen_rows_3px for the stems' fields, 3 rows of 9 bytes (3x3 over 3 channels),
 * straight: the words of taps 8-11 and 16-19 span two rows (MCUNet-in3's stem: 1.56 to
 * 1.49 instructions a MAC on the M33 against the row loop). */
static void rip_rq_widen_rows9_3px(const int8_t *s0, const int8_t *s1, const int8_t *s2,
                                   ptrdiff_t pitch, int32_t *dst) {
#define RIP_ROWS9_WORD(expr)                                                              \
    do {                                                                                  \
        const int8_t *s_ = s0;                                                            \
        int32_t a = (int32_t)(expr), b, c, t;                                             \
        s_ = s1;                                                                          \
        b = (int32_t)(expr);                                                              \
        s_ = s2;                                                                          \
        c = (int32_t)(expr);                                                              \
        __asm__ volatile(RIP_WIDEN3_STORE                                                 \
                         : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [t] "=&r"(t),           \
                           [dst] "+r"(dst)                                                \
                         :                                                                \
                         : "memory");                                                     \
    } while (0)
#define RIP_LD(off) ((uint32_t)rip_fast_load_s8x4(s_ + (off)))
    RIP_ROWS9_WORD(RIP_LD(0));
    RIP_ROWS9_WORD(RIP_LD(4));
    RIP_ROWS9_WORD((RIP_LD(5) >> 24) | (RIP_LD(pitch) << 8));
    s0 += pitch;
    s1 += pitch;
    s2 += pitch;
    RIP_ROWS9_WORD(RIP_LD(3));
    RIP_ROWS9_WORD((RIP_LD(5) >> 16) | (RIP_LD(pitch) << 16));
    s0 += pitch;
    s1 += pitch;
    s2 += pitch;
    RIP_ROWS9_WORD(RIP_LD(2));
    RIP_ROWS9_WORD(RIP_LD(5) >> 8);
#undef RIP_LD
#undef RIP_ROWS9_WORD
}

/* n pixels (n >= 2) as triples and then one or two pairs: n3 triples, n2 pairs. */
static inline void rip_rq_blocks(int32_t n, int32_t *n3, int32_t *n2) {
    *n2 = n % 3 == 0 ? 0 : n % 3 == 2 ? 1 : 2;
    *n3 = (n - 2 * *n2) / 3;
}

/* n contiguous pixels of k taps from x widened for rip_rq_gemm_sweep: the triples
 * (rip_rq_widen_3px, 6 * k4 bytes each), then the pairs (rip_rq_widen_2px, 4 * k4). */
static void rip_rq_widen_sweep(const int8_t *x, int32_t k, int32_t n, int32_t *dst) {
    const int32_t k4 = rip_rq_k4(k);
    int32_t n3, n2;
    rip_rq_blocks(n, &n3, &n2);
    for (int32_t t = 0; t < n3; ++t, x += 3 * k, dst += 6 * k4 / 4) {
        rip_rq_widen_3px(x, k, dst);
    }
    for (int32_t t = 0; t < n2; ++t, x += 2 * k, dst += k4) {
        rip_rq_widen_2px(x, x + k, k, dst);
    }
}

/* One channel pair's (or the odd last channel's: `two` 0) outputs of a pair of pixels:
 * pixel i, channel j at o[i * step + j]. */
RIP_INLINE void rip_rq_put2(int32_t a00, int32_t a01, int32_t a10, int32_t a11,
                            const rip_fast_channel *c, const int mode, int32_t lo, int32_t hi,
                            int8_t *o, ptrdiff_t step, int two) {
    const rip_fast_channel r0 = c[0];
    const int8_t y00 = rip_rq_out(&r0, mode, lo, hi, a00);
    const int8_t y10 = rip_rq_out(&r0, mode, lo, hi, a10);
    if (!two) {
        o[0] = y00;
        o[step] = y10;
        return;
    }
    const rip_fast_channel r1 = c[1];
    const int8_t y01 = rip_rq_out(&r1, mode, lo, hi, a01);
    const int8_t y11 = rip_rq_out(&r1, mode, lo, hi, a11);
    o[0] = y00;
    o[1] = y01;
    o[step] = y10;
    o[step + 1] = y11;
}

/* c_out channels of n contiguous pixels (widened by rip_rq_widen_sweep) in one sweep of
 * the filter: each channel pair's rows run against every triple and pair before the next
 * pair's are read, so the sweep reads the filter once from flash where n pixels read it
 * ceil(n / 3) times as triples. Pixel i's outputs at y + i * step. */
static void rip_rq_gemm_sweep(const int32_t *xs, int32_t n, int32_t k4, const int8_t *filter,
                              int32_t c_out, const rip_fast_channel *ch, const int mode,
                              int32_t lo, int32_t hi, int8_t *y, ptrdiff_t step) {
    int32_t n3, n2;
    rip_rq_blocks(n, &n3, &n2);
    const int8_t *rows = (const int8_t *)__builtin_assume_aligned(filter, 4);
    for (int32_t j = 0; j < c_out; j += 2, rows += 2 * k4) {
        const rip_fast_channel *c = ch + j;
        const int two = j + 1 < c_out;
        const int32_t b0 = c[0].bias, b1 = two ? c[1].bias : 0;
        const int32_t *x = xs;
        int8_t *o = y + j;
        for (int32_t t = 0; t < n3; ++t, x += 6 * k4 / 4, o += 3 * step) {
            int32_t a[6] = {b0, b1, b0, b1, b0, b1};
            const int8_t *w = rows;
            rip_rq_dot3(x, &w, k4, a);
            rip_rq_put3(a, c, mode, lo, hi, o, step, two);
        }
        for (int32_t t = 0; t < n2; ++t, x += k4, o += 2 * step) {
            int32_t a00 = b0, a01 = b1, a10 = b0, a11 = b1;
            const int8_t *w = rows;
            rip_rq_dot(x, &w, k4, &a00, &a01, &a10, &a11);
            rip_rq_put2(a00, a01, a10, a11, c, mode, lo, hi, o, step, two);
        }
    }
}
#else
#define RIP_RQ_TRIPLES 0
#endif

/* Two cores taking turns over the same pixel tiles (rip_rq_run): tile t is core t % 2's.
 * `mine` -1: every tile is this core's (one core, or the channel split). */
typedef struct {
    int mine;
    uint32_t n; /* tiles passed so far */
} rip_rq_turns;

/* Whether the next tile is the other core's (this one skips it), counting it either way. */
static inline int rip_rq_theirs(rip_rq_turns *t) {
    const uint32_t k = t->n++;
    return t->mine >= 0 && (int)(k & 1u) != t->mine;
}

/* How many more pixels core 0 takes than core 1 when they take n pixels' tiles of `tile`
 * (the last one smaller) in turns. */
static inline int32_t rip_rq_turns_excess(int32_t n, int32_t tile) {
    const int32_t t = n / tile, r = n % tile;
    const int32_t c0 = tile * ((t + 1) / 2) + (r > 0 && t % 2 == 0 ? r : 0);
    const int32_t c1 = tile * (t / 2) + (r > 0 && t % 2 == 1 ? r : 0);
    return c0 - c1;
}

/* Output pixel (oy, ox) moved on by n pixels in raster order. */
static inline void rip_rq_advance(int32_t *oy, int32_t *ox, int32_t w_out, int32_t n) {
    for (*ox += n; *ox >= w_out; *ox -= w_out) {
        ++*oy;
    }
}

/* Two cores run the same tiles in the same order (they depend on the geometry, the whole
 * filter and the scratch size, which both share), and `core` publishes each of its tiles
 * once its reads are done and waits before its first store (rip_cores.h):
 * - they take turns, tile t core t % 2's, all its channels, so that each core widens only
 *   its own pixels. Core 1 starts one unit ahead, so that core 0 stores tile t once core 1
 *   has read tile t - 1, and core 1 stores tile t once core 0 has read tile t + 1: the live
 *   input at a store is what it is on one core;
 * - or each core takes its output channels [c_lo, c_hi) of every tile and stores it once
 *   the other has read it (lag 0): where the filter is swept through the flash cache
 *   (sweep > 3: each core streams half of it), and where the turns would leave core 1 idle
 *   longer than the channel split makes both widen every pixel (a small map, or many
 *   channels).
 * 0 when this core has nothing to do (too few channels to split, the other runs them). Out
 * of line: inlined, it pushed ARMv6-M's branches in rip_rq_run past their range. */
static __attribute__((noinline)) int rip_rq_share(int32_t share, int32_t c_out, int32_t n_pix,
                                                  int32_t sweep, int32_t *c_lo, int32_t *c_hi,
                                                  int *core, rip_rq_turns *turns) {
    if (share >= RIP_SHARE_PART0) { /* this core's channels, no synchronisation */
        rip_share_channels(share - RIP_SHARE_PART0 + RIP_SHARE_CORE0, c_out, c_lo, c_hi);
        *core = -1;
        return *c_lo < *c_hi;
    }
    *core = share - RIP_SHARE_CORE0;
    const int32_t tile = RIP_RQ_TRIPLES ? 3 : 2;
    /* the turns' cost in pixels of every channel: core 0's extra pixels, and a tile each op
     * starts and ends with one core waiting; the split's: every pixel widened twice, about
     * 1.25 instructions a tap against one a MAC with DSP, 2 against about 6 without */
    const int32_t lost = rip_rq_turns_excess(n_pix, tile) + tile;
#if defined(__ARM_FEATURE_DSP)
    const int uneven = 4 * lost * c_out > 5 * n_pix;
#else
    const int uneven = 3 * lost * c_out > n_pix;
#endif
    if (sweep > 3 || (uneven && c_out >= 4)) {
        rip_share_channels(share, c_out, c_lo, c_hi);
        if (*c_lo == *c_hi) {
            return 0;
        }
        *core = *c_hi - *c_lo == c_out ? -1 : *core;
        return 1;
    }
    turns->mine = *core;
    if (*core == 1) {
        rip_core_publish(1);
    }
    return 1;
}

#if !defined(__ARM_FEATURE_DSP)
/* Tap i of a stem pair's fields (rows of 9 bytes at ra / rb, pitch apart) into its place in
 * the widened pair: per 4 taps pixel a's four words, then pixel b's. */
#define RIP_STEM_TAP(i)                                                                        \
    d[2 * ((i) & ~3) + ((i) & 3)] = ra[(i) / 9 * pitch + (i) % 9];                             \
    d[2 * ((i) & ~3) + ((i) & 3) + 4] = rb[(i) / 9 * pitch + (i) % 9];
#define RIP_STEM_TAPS9(r)                                                                      \
    RIP_STEM_TAP(9 * (r)) RIP_STEM_TAP(9 * (r) + 1) RIP_STEM_TAP(9 * (r) + 2)                   \
    RIP_STEM_TAP(9 * (r) + 3) RIP_STEM_TAP(9 * (r) + 4) RIP_STEM_TAP(9 * (r) + 5)               \
    RIP_STEM_TAP(9 * (r) + 6) RIP_STEM_TAP(9 * (r) + 7) RIP_STEM_TAP(9 * (r) + 8)

/* A stem pair's 27 taps each, read from the input's rows, widened as the pair loop's
 * gathered fields are (the 28th stays the scratch's zero). */
static void rip_rq_widen_stem_2px(const int8_t *ra, const int8_t *rb, ptrdiff_t pitch,
                                  int32_t *d) {
    RIP_STEM_TAPS9(0) RIP_STEM_TAPS9(1) RIP_STEM_TAPS9(2)
}
#endif

/* rip_conv2d_fast_run's traversal with the packed filter and widened inputs. */
RIP_INLINE void rip_rq_run(const rip_conv_params *params, const rip_dims *input_dims,
                           const int8_t *input, const rip_dims *filter_dims,
                           const int8_t *filter, const rip_dims *output_dims, int8_t *output,
                           const rip_context *ctx, const rip_fast_channel *ch,
                           const int mode) {
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t h_out = output_dims->h, w_out = output_dims->w, c_out = output_dims->c;
    int8_t *const scratch = ctx->buf;
    const int32_t scratch_bytes = ctx->size;
    const int32_t taps = filter_dims->h * filter_dims->w * c_in;
    const int32_t k4 = rip_rq_k4(taps);
    const int32_t lo = params->activation.min, hi = params->activation.max;
    const int pointwise = filter_dims->h == 1 && filter_dims->w == 1 && params->stride.h == 1 &&
                          params->stride.w == 1 && params->padding.h == 0 &&
                          params->padding.w == 0 && h_out == h && w_out == w;
    const int32_t n_pix = h_out * w_out;
#if RIP_RQ_TRIPLES
    /* Other layers' fields: KH rows of `row` bytes, pitch apart in the input, read from
     * there where the pixel's origin (iy0, ix0) is at most (iy_max, ix_max) */
    const int32_t kh = filter_dims->h, row = filter_dims->w * c_in;
    const ptrdiff_t pitch = (ptrdiff_t)params->dilation.h * w * c_in;
    const int32_t iy_max = h - 1 - (kh - 1) * params->dilation.h, ix_max = w - filter_dims->w;
    const int direct = params->dilation.w == 1 && row >= 4 && iy_max >= 0 && ix_max >= 0;
    const ptrdiff_t step_in = (ptrdiff_t)params->stride.w * c_in;
    const int stem = kh == 3 && row == 9;
    int8_t *const fields = scratch + 6 * k4;
    rip_rq3_words words3; /* rip_rq_pairs3_sat's, the same for every triple */
    rip_rq3_words_init(&words3, (const int32_t *)__builtin_assume_aligned(scratch, 4), k4,
                       c_out);
    /* A pointwise layer of at least as many channels out as taps doubles its widened
     * inputs in the one-core loop below: 1.5 k4 SADD16 a triple against six LSLs less a
     * channel pair (four with the biases'), a saving from c_out > 0.75 k4 (the expansions
     * after 8 or 16 channels). The general loop keeps one copy of the pair block. */
    const int doubled = pointwise && mode == RIP_RQ_CHEAP_SAT && c_out >= k4;
    /* the filter streams from flash (its sweeps and the lone pixel read it in order) */
    const int streams = pointwise && rip_rq_streams(filter, k4, c_out);
    /* pixels a sweep of the filter (0: not pointwise) */
    const int32_t sweep = pointwise ? rip_rq_sweep_pixels(streams, k4, scratch_bytes) : 0;
#else
    const int32_t sweep = 0;
#endif
    int32_t c_lo = 0, c_hi = c_out;
    int core = -1;
    rip_rq_turns turns = {-1, 0};
    if (ctx->share != RIP_SHARE_WHOLE &&
        !rip_rq_share(ctx->share, c_out, n_pix, sweep, &c_lo, &c_hi, &core, &turns)) {
        return; /* too few channels to split: the other core runs them all */
    }
    const int32_t n_ch = c_hi - c_lo;
    const int8_t *const rows = filter + (size_t)c_lo * k4; /* channel pairs of 2 * k4 bytes */
    const rip_fast_channel *const chs = ch + c_lo;
    /* The widened pair (4 * k4 bytes with DSP, 8 * k4 without), then the raw fields. */
    int32_t *const wide = (int32_t *)__builtin_assume_aligned(scratch, 4);
    int8_t *const col0 = scratch + 8 * k4;
    int8_t *const col1 = col0 + taps;
#if !defined(__ARM_FEATURE_DSP)
    /* Portable: the pair widened to int32 (8 * k4 bytes), zero padded to k4 taps. */
    memset(scratch, 0, (size_t)(8 * k4));
    /* a stem (3x3 over 3 channels at unit dilation): its fields' rows pitch apart, inside
     * the input where the field's origin is at most (stem_iy_max, stem_ix_max) */
    const int stem_v6m = filter_dims->h == 3 && filter_dims->w == 3 && c_in == 3 &&
                         params->dilation.w == 1;
    const ptrdiff_t stem_pitch = (ptrdiff_t)params->dilation.h * w * c_in;
    const int32_t stem_iy_max = h - 1 - 2 * params->dilation.h, stem_ix_max = w - 3;
#endif
    (void)scratch_bytes; /* the sweep width, on DSP cores only */
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c_in;
        int8_t *out = output + (size_t)b * n_pix * c_out + c_lo;
        int32_t oy = 0, ox = 0; /* pixel p */
        int32_t p = 0;
#if RIP_RQ_TRIPLES
        if (sweep > 3) {
            /* A filter the flash cache cannot hold: the fewest sweeps the scratch allows,
             * balanced (no lone pixel unless the map is one). Every read of a sweep's pixels
             * happens before its first store. */
            while (n_pix - p >= 2) {
                const int32_t left = n_pix - p, sweeps = (left + sweep - 1) / sweep;
                const int32_t n = (left + sweeps - 1) / sweeps;
                rip_rq_widen_sweep(in + (size_t)p * c_in, taps, n, wide);
                RIP_SHARE_SYNC(core);
                rip_rq_gemm_sweep(wide, n, k4, rows, n_ch, chs, mode, lo, hi,
                                  out + (size_t)p * c_out, c_out);
                p += n;
            }
        }
        /* Pointwise: triples while three pixels are left, then pairs. Every read of a
         * triple happens before its first store, as for a pair. Where this core runs
         * every triple of an even number of channels saturated to int8 (no turns, no odd
         * channel), the loop holds only the widening and the pair block (some twenty
         * instructions a triple fewer than the general one below). */
        if (pointwise && core < 0 && mode == RIP_RQ_CHEAP_SAT && n_ch > 0 && (n_ch & 1) == 0) {
            for (; p + 3 <= n_pix; p += 3) {
                const int8_t *wr = (const int8_t *)__builtin_assume_aligned(rows, 4);
                const rip_fast_channel *cr = chs;
                int8_t *o = out + (size_t)p * c_out;
                if (doubled) {
                    rip_rq_widen_3px_doubled(in + (size_t)p * c_in, taps, wide);
                    rip_rq_pairs3_sat2(&words3, &wr, n_ch >> 1, &cr, &o);
                } else {
                    rip_rq_widen_3px(in + (size_t)p * c_in, taps, wide);
                    rip_rq_pairs3_sat(&words3, &wr, n_ch >> 1, &cr, &o);
                }
            }
        }
        for (; pointwise && p + 3 <= n_pix; p += 3) {
            if (rip_rq_theirs(&turns)) {
                continue;
            }
            rip_rq_widen_3px(in + (size_t)p * c_in, taps, wide);
            RIP_SHARE_SYNC(core);
            rip_rq_gemm_3px(wide, k4, rows, n_ch, chs, mode, lo, hi, out + (size_t)p * c_out,
                            c_out, &words3);
        }
        if (pointwise && p + 1 == n_pix && !rip_rq_theirs(&turns)) {
            /* A lone last pixel (a 1 x 1 map, or 4 pixels): one GEMV instead of a pair that
             * computes it twice, from a copy of its field in scratch (widened, where the
             * filter streams from flash: rip_rq_gemv_1x2), so that the field is read
             * before any of its channels is stored, as for a pair. */
            if (streams) {
                rip_rq_widen_1px(in + (size_t)p * c_in, taps, wide);
                RIP_SHARE_SYNC(core);
                rip_rq_gemv_1x2(wide, k4, rows, n_ch, chs, mode, lo, hi,
                                out + (size_t)p * c_out);
            } else {
                memcpy(col0, in + (size_t)p * c_in, (size_t)taps);
                RIP_SHARE_SYNC(core);
                rip_rq_gemv(col0, taps, rows, n_ch, chs, mode, lo, hi, out + (size_t)p * c_out);
            }
        }
        if (pointwise && p + 1 == n_pix) {
            p = n_pix;
        }
        /* Other layers: triples too, then a pair or a lone pixel (the pair loop below), all
         * three fields read before any of the triple's channels is stored. Where each lies
         * wholly inside the input at unit dilation across, widened from the input's rows;
         * else gathered side by side behind the widened triple (6 * k4 + 3 * taps bytes,
         * within the scratch's 8 * k4 + 2 * taps), and widened from there. */
        /* pixel p's field origin (iy, ix), `at` bytes into the input, and whether its
         * field's rows lie inside the input */
        int32_t iy = -params->padding.h, ix = -params->padding.w;
        ptrdiff_t at = ((ptrdiff_t)iy * w + ix) * c_in;
        int row_in = direct && (uint32_t)iy <= (uint32_t)iy_max;
        for (; !pointwise && p + 3 <= n_pix; p += 3) {
            const int32_t ty = oy, tx = ox; /* the triple's first pixel */
            ptrdiff_t src[3];
            int inside = 1;
            for (int32_t j = 0; j < 3; ++j) {
                inside = inside && row_in && (uint32_t)ix <= (uint32_t)ix_max;
                src[j] = at;
                if (++ox == w_out) {
                    ox = 0;
                    ++oy;
                    iy += params->stride.h;
                    ix = -params->padding.w;
                    at = ((ptrdiff_t)iy * w + ix) * c_in;
                    row_in = direct && (uint32_t)iy <= (uint32_t)iy_max;
                } else {
                    ix += params->stride.w;
                    at += step_in;
                }
            }
            if (rip_rq_theirs(&turns)) {
                continue;
            }
            if (inside && stem) {
                rip_rq_widen_rows9_3px(in + src[0], in + src[1], in + src[2], pitch, wide);
            } else if (inside) {
                rip_rq_widen_rows_3px(in + src[0], in + src[1], in + src[2], pitch, kh, row,
                                      wide);
            } else {
                int32_t y = ty, x = tx;
                for (int32_t j = 0; j < 3; ++j, rip_rq_advance(&y, &x, w_out, 1)) {
                    rip_conv_gather_s8(in, input_dims, filter_dims, params, y, x,
                                       fields + j * taps);
                }
                if (row >= 4) {
                    rip_rq_widen_rows_3px(fields, fields + taps, fields + 2 * taps, row, kh,
                                          row, wide);
                } else {
                    rip_rq_widen_3px(fields, taps, wide);
                }
            }
            RIP_SHARE_SYNC(core);
            rip_rq_gemm_3px(wide, k4, rows, n_ch, chs, mode, lo, hi, out + (size_t)p * c_out,
                            c_out, &words3);
        }
#endif
        for (; p < n_pix; p += 2) {
            const int pair = p + 1 < n_pix;
            if (rip_rq_theirs(&turns)) {
                if (!pointwise) {
                    rip_rq_advance(&oy, &ox, w_out, pair ? 2 : 1);
                }
                continue;
            }
            /* Gather (sigma = 0): every read for pixels p and p + 1 happens here. */
            const int8_t *xa, *xb;
#if !defined(__ARM_FEATURE_DSP)
            /* ARMv6-M: a stem pair (3x3 over 3 channels) whose fields lie wholly inside the
             * input, widened straight from its rows (the gather's tap ranges and row copies
             * cost three times the widening) */
            if (stem_v6m && pair && ox + 1 < w_out) {
                const int32_t iy = oy * params->stride.h - params->padding.h;
                const int32_t ix = ox * params->stride.w - params->padding.w;
                if (iy >= 0 && iy <= stem_iy_max && ix >= 0 &&
                    ix + params->stride.w <= stem_ix_max) {
                    const int8_t *const a = in + ((ptrdiff_t)iy * w + ix) * c_in;
                    rip_rq_widen_stem_2px(a, a + (ptrdiff_t)params->stride.w * c_in,
                                          stem_pitch, wide);
                    ox += 2;
                    if (ox == w_out) {
                        ox = 0;
                        ++oy;
                    }
                    RIP_SHARE_SYNC(core);
                    int8_t *y0 = out + (size_t)p * c_out;
                    rip_rq_gemm_2px(scratch, k4, rows, n_ch, chs, mode, lo, hi, y0, y0 + c_out);
                    continue;
                }
            }
#endif
            if (pointwise) {
                xa = in + (size_t)p * c_in;
                xb = pair ? xa + c_in : xa;
            } else {
                rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col0);
                if (++ox == w_out) {
                    ox = 0;
                    ++oy;
                }
                if (pair) {
                    rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col1);
                    if (++ox == w_out) {
                        ox = 0;
                        ++oy;
                    }
                }
                xa = col0;
                xb = pair ? col1 : col0;
            }
#if defined(__ARM_FEATURE_DSP)
            rip_rq_widen_2px(xa, xb, taps, wide);
#else
            /* four taps a step with immediate offsets (its index arithmetic cost GCC's
             * loop over single taps 8 instructions a tap on ARMv6-M) */
            int32_t i = 0;
            for (int32_t *d = wide; i + 4 <= taps; i += 4, d += 8) {
                d[0] = xa[i];
                d[1] = xa[i + 1];
                d[2] = xa[i + 2];
                d[3] = xa[i + 3];
                d[4] = xb[i];
                d[5] = xb[i + 1];
                d[6] = xb[i + 2];
                d[7] = xb[i + 3];
            }
            for (; i < taps; ++i) {
                const int32_t at = 2 * (i & ~3) + (i & 3);
                wide[at] = xa[i];
                wide[at + 4] = xb[i];
            }
#endif
            RIP_SHARE_SYNC(core);
            int8_t *y0 = out + (size_t)p * c_out;
            rip_rq_gemm_2px(scratch, k4, rows, n_ch, chs, mode, lo, hi, y0,
                            pair ? y0 + c_out : y0);
        }
    }
    if (turns.mine == 0 && (turns.n & 1u) == 0) {
        rip_core_publish(0); /* as many units as core 1, which started one ahead */
    }
}

rip_status rip_conv2d_fast_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output) {
    if (channels == NULL ||
        !rip_conv2d_fast_args_ok(ctx, params, input_dims, filter_dims, output_dims) ||
        ctx->size < rip_conv2d_fast_rq_s8_get_buffer_size(input_dims, filter_dims) ||
        ((uintptr_t)ctx->buf & 3u) != 0 || ((uintptr_t)filter & 3u) != 0 ||
        !rip_share_ok(ctx, RIP_SHARE_PART1)) {
        return RIP_ERROR_ARGUMENT;
    }
    if (params->activation.min == -128 && params->activation.max == 127) {
        rip_rq_run(params, input_dims, input, filter_dims, filter, output_dims, output, ctx,
                   channels, RIP_RQ_CHEAP_SAT);
    } else {
        rip_rq_run(params, input_dims, input, filter_dims, filter, output_dims, output, ctx,
                   channels, RIP_RQ_CHEAP_CLAMP);
    }
    return RIP_OK;
}
