/*
 * rip kernels: DEPTHWISE_CONV_2D channel in place, fast (rip_depthwise_inplace_fast.c), by
 * channel planes, the folded bias (rip_conv_types.h) and the row engine of
 * rip_depthwise_fast.h.
 */
#ifndef RIP_DEPTHWISE_INPLACE_FAST_H
#define RIP_DEPTHWISE_INPLACE_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DEPTHWISE_CONV_2D channel in place with a folded bias: the contract and the minimum
 * scratch of rip_depthwise_conv2d_inplace_s8 (one output channel plane, H_out * W_out bytes,
 * rip_depthwise_conv2d_inplace_s8_get_buffer_size), gap 0. With more scratch (ctx->size,
 * the model's whole scratch buffer, reserved for its largest op anyway) the channel-
 * vectorised cores take G = min(C, 4 * floor(ctx->size / (4 * H_out * W_out))) channels a
 * pass when G >= 4: group [c0, c0 + G) reads input channels [c0, c0 + G) only, computes
 * their planes into ctx->buf and then scatters them over the same channels, which no later
 * group reads. The order is the channel scheme's with wider channels: gap 0 still holds. */
rip_status rip_depthwise_conv2d_inplace_fast_s8(const rip_context *ctx,
                                                const rip_dw_conv_params *params,
                                                const rip_per_channel_quant *quant,
                                                const rip_dims *input_dims, int8_t *data,
                                                const rip_dims *filter_dims,
                                                const int8_t *filter, const rip_dims *bias_dims,
                                                const int32_t *bias,
                                                const rip_dims *output_dims);

/* The same with the cheap requantisation: `channels` replaces quant and the bias. */
rip_status rip_depthwise_conv2d_inplace_fast_rq_s8(const rip_context *ctx,
                                                   const rip_dw_conv_params *params,
                                                   const rip_fast_channel *channels,
                                                   const rip_dims *input_dims, int8_t *data,
                                                   const rip_dims *filter_dims,
                                                   const int8_t *filter,
                                                   const rip_dims *output_dims);

#ifdef __cplusplus
}
#endif

#endif /* RIP_DEPTHWISE_INPLACE_FAST_H */
