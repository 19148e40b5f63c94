/*
 * rip kernels: what the weighted kernel families share beyond rip_support.h (not part of
 * the generated code's API): the receptive-field gather and tap ranges
 * (rip_conv_support.c), the reference kernels' dot product and requantisation, and the
 * packed kernels' requantisation modes.
 */
#ifndef RIP_CONV_SUPPORT_H
#define RIP_CONV_SUPPORT_H

#include "rip_conv_types.h"
#include "rip_support.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RIP_INLINE static inline __attribute__((always_inline))

/* An int8 activation range the kernels can clamp to. */
static inline int rip_conv_valid_act(rip_activation act) {
    return act.min <= act.max && act.min >= -128 && act.max <= 127;
}

/* Taps k in [0, k_size) with 0 <= origin + k * dilation < extent form one run [*lo, *hi);
 * found by comparison, no division. */
void rip_conv_tap_range(int32_t origin, int32_t dilation, int32_t k_size, int32_t extent,
                        int32_t *lo, int32_t *hi);

/* Copy output pixel (oy, ox)'s receptive field into dst (KH * KW * C_in bytes), padded taps
 * filled with the input zero point: every read of the input for that pixel (sigma = 0,
 * Eq. 6), before any of its channels is written. */
void rip_conv_gather_s8(const int8_t *in, const rip_dims *input_dims,
                        const rip_dims *filter_dims, const rip_conv_params *params, int32_t oy,
                        int32_t ox, int8_t *dst);

/* ---- the reference kernels (rip_conv2d.c, rip_depthwise.c, rip_fully_connected.c) ------ */

/* The dot product sum (x[i] + input_offset) * w[i], the inner loop of the reference conv
 * and fully connected kernels. */
#if defined(__ARM_FEATURE_DSP)
/* SMLAD: two 16 x 16 products per instruction. x + input_offset lies in [-255, 255], so the
 * offset is added in 16-bit lanes (SADD16) and nothing needs extra scratch. Lanes pair bytes
 * 0/2 and 1/3 of both operands, so every product is one the reference forms; the sum is the
 * same integer in any order. */
static inline int32_t rip_dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n,
                                        int32_t input_offset) {
    const uint32_t lo = (uint32_t)input_offset & 0xFFFFu;
    const int32_t offset2 = (int32_t)(lo | (lo << 16));
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t xv = rip_fast_load_s8x4(x + i);
        const int32_t wv = rip_fast_load_s8x4(w + i);
        const int32_t x02 = __sadd16(__sxtb16(xv), offset2);
        const int32_t x13 = __sadd16(__sxtb16((int32_t)rip_ror32((uint32_t)xv, 8)), offset2);
        const int32_t w02 = __sxtb16(wv);
        const int32_t w13 = __sxtb16((int32_t)rip_ror32((uint32_t)wv, 8));
        acc = __smlad(x02, w02, acc);
        acc = __smlad(x13, w13, acc);
    }
    for (; i < n; ++i) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
    }
    return acc;
}
#else
static inline int32_t rip_dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n,
                                        int32_t input_offset) {
    int32_t acc = 0;
    for (int32_t i = 0; i < n; ++i) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
    }
    return acc;
}
#endif

/* TFLite's requantisation of one accumulator: MultiplyByQuantizedMultiplier, the output
 * offset, the activation clamp. */
static inline int8_t rip_requantize(int32_t acc, int32_t multiplier, int32_t shift,
                                    int32_t output_offset, rip_activation act) {
    acc = rip_multiply_by_quantized_multiplier(acc, multiplier, shift) + output_offset;
    return (int8_t)rip_clamp32(acc, act.min, act.max);
}

/* ---- the packed kernels (rip_conv2d_fast.c, rip_gemv.h) --------------------------------- */

/* How a tile's accumulators become int8: TFLite's general path (per-channel multiplier and
 * shift, rip_fast_requantize) or the cheap one (rip_fast_channel, rip_cheap_requantize),
 * clamped to the full int8 range by saturation or to the activation range. */
enum { RIP_RQ_EXACT, RIP_RQ_CHEAP_SAT, RIP_RQ_CHEAP_CLAMP };

/* Taps rounded up to whole words: the packed filter's row length (its padding weights are
 * 0, and the widened inputs' padding taps are 0 too). */
static inline int32_t rip_rq_k4(int32_t taps) { return (taps + 3) & ~3; }

/* A filter of more packed bytes than this is swept through a flash cache (the Picos' XIP
 * cache, 16 KB on both chips) that cannot hold it: every sweep misses on all of it
 * (rip.core.kernel_variants.CONV_SWEEP_CACHE_BYTES). */
#define RIP_RQ_SWEEP_CACHE_BYTES 16384

/* Whether p is read through the XIP cache: the Picos execute flash in place at
 * 0x10000000-0x1fffffff (the RP2040's and RP2350's XIP windows and their aliases; rip's
 * QEMU M33 board maps its code and constants there too). A filter elsewhere (staged in
 * SRAM by flash-aware execution, or on a chip that maps flash elsewhere) is not. */
#ifndef RIP_XIP_CACHED
#define RIP_XIP_CACHED(p) (((uintptr_t)(p) >> 28) == 1u)
#endif

/* Whether the packed filter of c_out channels of k4 taps streams from flash through the
 * XIP cache, too large to stay in it: its kernels then read it in as few sweeps as they
 * can (rip_rq_sweep_pixels), each in address order (rip_rq_gemv_1x2). */
static inline int rip_rq_streams(const int8_t *filter, int32_t k4, int32_t c_out) {
    return (c_out + (c_out & 1)) * k4 > RIP_RQ_SWEEP_CACHE_BYTES && RIP_XIP_CACHED(filter);
}

RIP_INLINE int8_t rip_rq_out(const rip_fast_channel *c, const int mode, int32_t lo, int32_t hi,
                             int32_t acc) {
    const int32_t y = rip_cheap_requantize(acc, c->multiplier, c->round, c->shift);
    return (int8_t)(mode == RIP_RQ_CHEAP_SAT ? rip_sat_s8(y) : rip_clamp32(y, lo, hi));
}

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV_SUPPORT_H */
