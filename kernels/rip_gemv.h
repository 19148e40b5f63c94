/*
 * rip kernels: the packed-filter GEMV that FULLY_CONNECTED (rip_fully_connected_fast.c) and
 * the one-field CONV_2D (rip_conv2d_gemv.c) share: rows of k taps against the filter as
 * rip_conv2d_fast_rq_s8 packs it, four output channels a step, the cheap requantisation.
 * Always inlined into its callers (not part of the generated code's API).
 */
#ifndef RIP_GEMV_H
#define RIP_GEMV_H

#include <stddef.h>
#include "rip_conv_support.h"

/* Four output channels (packed pairs `wa` and `wb`, rows of k4 taps with their words
 * interleaved as rip_conv2d_fast_rq_s8 reads them) against one row `x` of k raw int8 taps:
 * a GEMV has no second pixel to share a weight with, so the tile is 1 x 4 and each input
 * word is widened once for the four channels. `wb` == `wa` runs one pair twice. */
RIP_INLINE void rip_rq_dot_1x4(const int8_t *x, const int8_t *wa, const int8_t *wb, int32_t k,
                               int32_t *p0, int32_t *p1, int32_t *p2, int32_t *p3) {
    int32_t a0 = *p0, a1 = *p1, a2 = *p2, a3 = *p3;
    const int32_t groups = k >> 2;
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    /* 22 instructions per 16 MACs (the loop runs two groups a pass): one unaligned LDR of
     * four inputs widened by two SXTB16s, an LDRD per pair's four taps of both channels,
     * two SXTB16s and two SMLADs a channel. */
#define RIP_FC_GROUP                                                                    \
    "ldr %[xv], [%[x]], #4\n"                                                           \
    "ldrd %[w0], %[w1], [%[wa]], #8\n"                                                  \
    "sxtb16 %[x13], %[xv], ror #8\n"                                                    \
    "sxtb16 %[xv], %[xv]\n"                                                             \
    "sxtb16 %[t], %[w0], ror #8\n"                                                      \
    "sxtb16 %[w0], %[w0]\n"                                                             \
    "smlad %[a0], %[xv], %[w0], %[a0]\n"                                                \
    "smlad %[a0], %[x13], %[t], %[a0]\n"                                                \
    "sxtb16 %[t], %[w1], ror #8\n"                                                      \
    "sxtb16 %[w1], %[w1]\n"                                                             \
    "smlad %[a1], %[xv], %[w1], %[a1]\n"                                                \
    "smlad %[a1], %[x13], %[t], %[a1]\n"                                                \
    "ldrd %[w0], %[w1], [%[wb]], #8\n"                                                  \
    "sxtb16 %[t], %[w0], ror #8\n"                                                      \
    "sxtb16 %[w0], %[w0]\n"                                                             \
    "smlad %[a2], %[xv], %[w0], %[a2]\n"                                                \
    "smlad %[a2], %[x13], %[t], %[a2]\n"                                                \
    "sxtb16 %[t], %[w1], ror #8\n"                                                      \
    "sxtb16 %[w1], %[w1]\n"                                                             \
    "smlad %[a3], %[xv], %[w1], %[a3]\n"                                                \
    "smlad %[a3], %[x13], %[t], %[a3]\n"
#define RIP_FC_OPERANDS                                                                 \
    [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [wa] "+r"(wa), \
        [wb] "+r"(wb), [xv] "=&r"(xv), [x13] "=&r"(x13), [w0] "=&r"(w0), [w1] "=&r"(w1),  \
        [t] "=&r"(t)
    {
        int32_t xv, x13, w0, w1, t;
        const int8_t *const end = wa + 8 * groups;
        RIP_ASM_GROUPS(groups, RIP_FC_GROUP, RIP_FC_OPERANDS, "wa", end);
    }
#undef RIP_FC_GROUP
#undef RIP_FC_OPERANDS
#elif defined(__ARM_ARCH_6M__) && RIP_HAND_ASM
    /* 59 instructions per 16 MACs: LDRSB takes a register offset only, so one index i
     * walks the packed rows (steps 1, 1, 1, 5) and the input pointer moves back 4 a group
     * to read x[i - 4g]; accumulators in high registers. */
    if (groups > 0) {
        const int8_t *px = x;
        const int8_t *const wa4 = wa + 4, *const wb4 = wb + 4;
        int32_t i = 0, t1, t2;
        __asm__ volatile(
            ".syntax unified\n"
            ".macro RIP_FC_TAP step\n"
            "ldrsb %[t1], [%[px], %[i]]\n"
            "ldrsb %[t2], [%[wa], %[i]]\n"
            "muls %[t2], %[t1]\n"
            "add %[a0], %[t2]\n"
            "ldrsb %[t2], [%[wa4], %[i]]\n"
            "muls %[t2], %[t1]\n"
            "add %[a1], %[t2]\n"
            "ldrsb %[t2], [%[wb], %[i]]\n"
            "muls %[t2], %[t1]\n"
            "add %[a2], %[t2]\n"
            "ldrsb %[t2], [%[wb4], %[i]]\n"
            "muls %[t2], %[t1]\n"
            "add %[a3], %[t2]\n"
            "adds %[i], #\\step\n"
            ".endm\n"
            "1:\n"
            "RIP_FC_TAP 1\n"
            "RIP_FC_TAP 1\n"
            "RIP_FC_TAP 1\n"
            "RIP_FC_TAP 5\n"
            "subs %[px], #4\n"
            "cmp %[i], %[n]\n"
            "bne 1b\n"
            ".purgem RIP_FC_TAP\n"
            : [a0] "+h"(a0), [a1] "+h"(a1), [a2] "+h"(a2), [a3] "+h"(a3), [px] "+l"(px),
              [i] "+l"(i), [t1] "=&l"(t1), [t2] "=&l"(t2)
            : [wa] "l"(wa), [wa4] "l"(wa4), [wb] "l"(wb), [wb4] "l"(wb4), [n] "h"(8 * groups)
            : "cc", "memory");
        x += 4 * groups;
        wa += 8 * groups;
        wb += 8 * groups;
    }
#else
    for (int32_t g = 0; g < groups; ++g, x += 4, wa += 8, wb += 8) {
        for (int32_t j = 0; j < 4; ++j) {
            const int32_t v = x[j];
            a0 += v * wa[j];
            a1 += v * wa[4 + j];
            a2 += v * wb[j];
            a3 += v * wb[4 + j];
        }
    }
#endif
    for (int32_t j = 0; j < (k & 3); ++j) { /* the last k % 4 taps (the rest padding) */
        const int32_t v = x[j];
        a0 += v * wa[j];
        a1 += v * wa[4 + j];
        a2 += v * wb[j];
        a3 += v * wb[4 + j];
    }
    *p0 = a0;
    *p1 = a1;
    *p2 = a2;
    *p3 = a3;
}

#if defined(__ARM_FEATURE_DSP)
/* x's k taps widened for rip_rq_dot_1x2 into xw (k4 / 2 words): per 4 taps SXTB16 of the
 * word (taps 0 and 2) and of it rotated by 8 (taps 1 and 3), the last word's missing taps
 * zero, as the packed filter's padding is. */
RIP_INLINE void rip_rq_widen_1px(const int8_t *x, int32_t k, int32_t *xw) {
    int32_t i = 0;
    for (; i + 4 <= k; i += 4, xw += 2) {
        const int32_t a = rip_fast_load_s8x4(x + i);
        xw[0] = __sxtb16(a);
        xw[1] = rip_fast_sxtb16_ror8(a);
    }
    if (i < k) {
        const int32_t a = rip_fast_load_s8_tail(x + i, k - i);
        xw[0] = __sxtb16(a);
        xw[1] = rip_fast_sxtb16_ror8(a);
    }
}

/* One packed pair (two output channels, their rows' words interleaved) against the
 * widened row xw, `groups` groups of 4 taps: the pair's bytes are read once each, in
 * address order, so that a filter streaming through the Pico 2's XIP cache misses on
 * consecutive lines, each continuing the QSPI transfer the last one opened (48 cycles a
 * line, where the 1 x 4 tile's two pairs, read in turn, open a transfer every line: 108).
 * 10 instructions per 8 MACs: an LDRD of the widened taps, an LDRD of both channels' four
 * taps, two SXTB16s and two SMLADs a channel. */
RIP_INLINE void rip_rq_dot_1x2(const int32_t *xw, const int8_t *w, int32_t groups,
                               int32_t *p0, int32_t *p1) {
    int32_t a0 = *p0, a1 = *p1;
#if RIP_HAND_ASM
#define RIP_FC2_GROUP                                                                   \
    "ldrd %[xa], %[xb], [%[x]], #8\n"                                                  \
    "ldrd %[w0], %[w1], [%[w]], #8\n"                                                  \
    "sxtb16 %[t], %[w0], ror #8\n"                                                     \
    "sxtb16 %[w0], %[w0]\n"                                                            \
    "smlad %[a0], %[xa], %[w0], %[a0]\n"                                               \
    "smlad %[a0], %[xb], %[t], %[a0]\n"                                                \
    "sxtb16 %[t], %[w1], ror #8\n"                                                     \
    "sxtb16 %[w1], %[w1]\n"                                                            \
    "smlad %[a1], %[xa], %[w1], %[a1]\n"                                               \
    "smlad %[a1], %[xb], %[t], %[a1]\n"
#define RIP_FC2_OPERANDS                                                                \
    [a0] "+r"(a0), [a1] "+r"(a1), [x] "+r"(xw), [w] "+r"(w), [xa] "=&r"(xa),             \
        [xb] "=&r"(xb), [w0] "=&r"(w0), [w1] "=&r"(w1), [t] "=&r"(t)
    int32_t xa, xb, w0, w1, t;
    const int8_t *const end = w + 8 * groups;
    RIP_ASM_GROUPS(groups, RIP_FC2_GROUP, RIP_FC2_OPERANDS, "w", end);
#undef RIP_FC2_GROUP
#undef RIP_FC2_OPERANDS
#else
    const int32_t *wv = (const int32_t *)__builtin_assume_aligned(w, 4);
    for (int32_t g = 0; g < groups; ++g, xw += 2, wv += 2) {
        a0 = __smlad(xw[0], __sxtb16(wv[0]), a0);
        a0 = __smlad(xw[1], rip_fast_sxtb16_ror8(wv[0]), a0);
        a1 = __smlad(xw[0], __sxtb16(wv[1]), a1);
        a1 = __smlad(xw[1], rip_fast_sxtb16_ror8(wv[1]), a1);
    }
#endif
    *p0 = a0;
    *p1 = a1;
}

/* All output channels of a row widened by rip_rq_widen_1px (xw, k4 taps), the filter swept
 * pair by pair in address order (rip_rq_dot_1x2; an odd last channel's pair has the packed
 * filter's zero row, its sum discarded). */
RIP_INLINE void rip_rq_gemv_1x2(const int32_t *xw, int32_t k4, const int8_t *filter,
                                int32_t c_out, const rip_fast_channel *ch, const int mode,
                                int32_t lo, int32_t hi, int8_t *y) {
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(filter, 4);
    for (int32_t oc = 0; oc < c_out; oc += 2, w += 2 * k4) {
        const int two = oc + 1 < c_out;
        int32_t a0 = ch[oc].bias, a1 = two ? ch[oc + 1].bias : 0;
        rip_rq_dot_1x2(xw, w, k4 >> 2, &a0, &a1);
        y[oc] = rip_rq_out(&ch[oc], mode, lo, hi, a0);
        if (two) {
            y[oc + 1] = rip_rq_out(&ch[oc + 1], mode, lo, hi, a1);
        }
    }
}
#endif

/* All output channels of one input row: channel quads (two packed pairs), then the last
 * one to three channels (their pairs, a lone pair run twice; the packed filter's zero row
 * and unused sums discarded). */
RIP_INLINE void rip_rq_gemv(const int8_t *x, int32_t k, const int8_t *filter, int32_t c_out,
                            const rip_fast_channel *ch, const int mode, int32_t lo, int32_t hi,
                            int8_t *y) {
    const size_t pair = 2 * (size_t)rip_rq_k4(k);
    const int8_t *w = (const int8_t *)__builtin_assume_aligned(filter, 4);
    int32_t oc = 0;
    for (; oc + 4 <= c_out; oc += 4) {
        int32_t a0 = ch[oc].bias, a1 = ch[oc + 1].bias, a2 = ch[oc + 2].bias,
                a3 = ch[oc + 3].bias;
        rip_rq_dot_1x4(x, w, w + pair, k, &a0, &a1, &a2, &a3);
        y[oc] = rip_rq_out(&ch[oc], mode, lo, hi, a0);
        y[oc + 1] = rip_rq_out(&ch[oc + 1], mode, lo, hi, a1);
        y[oc + 2] = rip_rq_out(&ch[oc + 2], mode, lo, hi, a2);
        y[oc + 3] = rip_rq_out(&ch[oc + 3], mode, lo, hi, a3);
        w += 2 * pair;
    }
    const int32_t left = c_out - oc;
    if (left > 0) {
        int32_t a0 = ch[oc].bias, a1 = left > 1 ? ch[oc + 1].bias : 0;
        int32_t a2 = left > 2 ? ch[oc + 2].bias : 0, a3 = 0;
        rip_rq_dot_1x4(x, w, left > 2 ? w + pair : w, k, &a0, &a1, &a2, &a3);
        y[oc] = rip_rq_out(&ch[oc], mode, lo, hi, a0);
        if (left > 1) {
            y[oc + 1] = rip_rq_out(&ch[oc + 1], mode, lo, hi, a1);
        }
        if (left > 2) {
            y[oc + 2] = rip_rq_out(&ch[oc + 2], mode, lo, hi, a2);
        }
    }
}

#endif /* RIP_GEMV_H */
