/*
 * rip kernels: FULLY_CONNECTED on the packed GEMV (rip_fully_connected_fast.c). Params,
 * dims and rip_fast_channel: rip_conv_types.h.
 */
#ifndef RIP_FULLY_CONNECTED_FAST_H
#define RIP_FULLY_CONNECTED_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FULLY_CONNECTED with the cheap requantisation: rip_fully_connected_s8's dims, arithmetic
 * and disjoint buffers, with the records (`channels`, one per output unit; a per-tensor
 * multiplier repeated, rip.codegen.kernel_choice.fast_fc_channels) in place of quant and
 * bias, and the filter packed as rip_conv2d_fast_rq_s8's (the FULLY_CONNECTED as a 1x1
 * convolution over its batches: units in pairs, rows of depth taps padded to a multiple of
 * 4, 4-byte aligned). Each input row is a GEMV against the packed pairs, four units at a
 * time. No scratch (ctx may be NULL). */
rip_status rip_fully_connected_fast_rq_s8(const rip_context *ctx, const rip_fc_params *params,
                                          const rip_fast_channel *channels,
                                          const rip_dims *input_dims, const int8_t *input,
                                          const rip_dims *filter_dims, const int8_t *filter,
                                          const rip_dims *output_dims, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_FULLY_CONNECTED_FAST_H */
