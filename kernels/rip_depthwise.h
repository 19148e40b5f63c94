/*
 * rip kernels: DEPTHWISE_CONV_2D, the reference kernels (rip_depthwise.c), any depth
 * multiplier. Params, dims and arithmetic: rip_conv_types.h.
 */
#ifndef RIP_DEPTHWISE_H
#define RIP_DEPTHWISE_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch of rip_depthwise_conv2d_inplace_s8: one output channel plane, H_out * W_out
 * bytes (the minimum of rip.allocator.planning.scratch.kernel_scratch_bytes for
 * DEPTHWISE_CONV_2D, whose C twin is rip_depthwise_conv2d_scratch_get_buffer_size). */
int32_t rip_depthwise_conv2d_inplace_s8_get_buffer_size(const rip_dims *output_dims);

/* DEPTHWISE_CONV_2D out of place: `output` must not overlap `input`. No scratch is used
 * (ctx may be NULL). */
rip_status rip_depthwise_conv2d_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                            const rip_per_channel_quant *quant, const rip_dims *input_dims,
                            const int8_t *input, const rip_dims *filter_dims,
                            const int8_t *filter, const rip_dims *bias_dims, const int32_t *bias,
                            const rip_dims *output_dims, int8_t *output);

/* DEPTHWISE_CONV_2D channel in place (TinyEngine's scheme): `data` holds the input and
 * receives the output at the same base. Needs depth multiplier 1 and
 * H_out * W_out <= H * W. Each channel's whole output plane is computed into ctx->buf from
 * that channel alone, then scattered over the same channel, which no later channel reads. */
rip_status rip_depthwise_conv2d_inplace_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                    const rip_per_channel_quant *quant,
                                    const rip_dims *input_dims, int8_t *data,
                                    const rip_dims *filter_dims, const int8_t *filter,
                                    const rip_dims *bias_dims, const int32_t *bias,
                                    const rip_dims *output_dims);

#ifdef __cplusplus
}
#endif

#endif /* RIP_DEPTHWISE_H */
