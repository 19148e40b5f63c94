/*
 * rip kernels: FULLY_CONNECTED, the exact kernels (rip_fully_connected.c). Params, dims and
 * arithmetic: rip_conv_types.h.
 */
#ifndef RIP_FULLY_CONNECTED_H
#define RIP_FULLY_CONNECTED_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FULLY_CONNECTED, per-tensor weights (weights zero point 0, as TFLite requires).
 * Output must not overlap input; no scratch (ctx may be NULL). */
rip_status rip_fully_connected_s8(const rip_context *ctx, const rip_fc_params *params,
                           const rip_quant *quant, const rip_dims *input_dims,
                           const int8_t *input, const rip_dims *filter_dims, const int8_t *filter,
                           const rip_dims *bias_dims, const int32_t *bias,
                           const rip_dims *output_dims, int8_t *output);

/* FULLY_CONNECTED with per-channel weights (one multiplier and shift per output unit). */
rip_status rip_fully_connected_per_channel_s8(const rip_context *ctx, const rip_fc_params *params,
                                       const rip_per_channel_quant *quant,
                                       const rip_dims *input_dims, const int8_t *input,
                                       const rip_dims *filter_dims, const int8_t *filter,
                                       const rip_dims *bias_dims, const int32_t *bias,
                                       const rip_dims *output_dims, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_FULLY_CONNECTED_H */
