/*
 * rip kernels: helpers the convolution sources share (not part of the public API).
 */
#ifndef RIP_CONV_INTERNAL_H
#define RIP_CONV_INTERNAL_H

#include "rip_conv.h"

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
