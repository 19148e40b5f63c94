/*
 * rip kernels: helpers the convolution sources share (not part of the public API).
 */
#ifndef RIP_CONV_INTERNAL_H
#define RIP_CONV_INTERNAL_H

#include <string.h>
#include "rip_conv.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* Requantization                                                                           */
/* ---------------------------------------------------------------------------------------- */

/* TFLite's MultiplyByQuantizedMultiplier + output offset + activation clamp. The high half
 * of (x * m + 2^30) >> 31 equals SaturatingRoundingDoublingHighMul(x, m) for m != INT32_MIN:
 * for x * m >= 0 both round half up; for x * m < 0 the reference truncates
 * (x * m + 1 - 2^30) / 2^31 towards zero, which is floor((x * m + 2^30) / 2^31). */
static inline int32_t rip_fast_requantize(int32_t acc, int32_t multiplier, int32_t shift,
                                          int32_t output_offset, int32_t act_min,
                                          int32_t act_max) {
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)acc << left);
    const int64_t product = (int64_t)shifted * multiplier + ((int64_t)1 << 30);
    int32_t x = (int32_t)(uint32_t)((uint64_t)product >> 31);
    const int32_t mask = (int32_t)((1u << right) - 1u);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    x = (x >> right) + (remainder > threshold ? 1 : 0) + output_offset;
    return x < act_min ? act_min : (x > act_max ? act_max : x);
}

/* ---------------------------------------------------------------------------------------- */
/* CONV_2D: gather two receptive fields, then a 2 x 2 (pixels x channels) GEMM tile         */
/* ---------------------------------------------------------------------------------------- */

/* Four int8 in one word, byte k = p[k] (the kernels run on little-endian cores). */
static inline int32_t rip_fast_load_s8x4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4); /* one LDR: unaligned word loads are legal on v8-M Mainline */
    return v;
}

#if defined(__ARM_FEATURE_DSP)

/* SXTB16 with its rotate folded in (GCC 12 does not fold a separate ROR into it). */
static inline int32_t rip_fast_sxtb16_ror8(int32_t x) {
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
#endif

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

#endif /* RIP_CONV_INTERNAL_H */
