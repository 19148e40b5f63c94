/*
 * rip kernels: DEPTHWISE_CONV_2D, one output row from row pointers
 * (rip_depthwise_row_fast.c): the stage of a fused chain (rip_fused.h), on the row engine
 * of rip_depthwise_fast.h.
 */
#ifndef RIP_DEPTHWISE_ROW_FAST_H
#define RIP_DEPTHWISE_ROW_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DEPTHWISE_CONV_2D, one output row (every channel) from row pointers, depth multiplier 1,
 * batch 1, the folded bias (or, _rq, rip_fast_channel records): rows[ky] (ky < KH) is input
 * row oy * stride.h - padding.h + ky * dilation.h of the output row oy computed, W * C bytes,
 * NULL for a row outside the input; the rows need not be stored together (a fused chain's
 * ring). input_dims and output_dims are the whole tensors' (their H is not read). The row
 * engine of the whole-tensor kernels (channel groups in order, pixels left to right);
 * `output` (W_out * C bytes) must not overlap the rows. No scratch. */
rip_status rip_depthwise_conv2d_row_fast_s8(const rip_dw_conv_params *params,
                                            const rip_per_channel_quant *quant,
                                            const rip_dims *input_dims,
                                            const int8_t *const *rows,
                                            const rip_dims *filter_dims, const int8_t *filter,
                                            const int32_t *bias, const rip_dims *output_dims,
                                            int8_t *output);

rip_status rip_depthwise_conv2d_row_fast_rq_s8(const rip_dw_conv_params *params,
                                               const rip_fast_channel *channels,
                                               const rip_dims *input_dims,
                                               const int8_t *const *rows,
                                               const rip_dims *filter_dims,
                                               const int8_t *filter,
                                               const rip_dims *output_dims, int8_t *output);

/* Channels [c0, c0 + n_ch) of the row (output's other bytes untouched): one core's share
 * of a fused chain's depthwise stage. `channels` the cheap records, or (NULL) `quant` and
 * the folded `bias`. */
rip_status rip_depthwise_conv2d_row_part_s8(const rip_dw_conv_params *params,
                                            const rip_fast_channel *channels,
                                            const rip_per_channel_quant *quant,
                                            const int32_t *bias, const rip_dims *input_dims,
                                            const int8_t *const *rows,
                                            const rip_dims *filter_dims, const int8_t *filter,
                                            const rip_dims *output_dims, int32_t c0,
                                            int32_t n_ch, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_DEPTHWISE_ROW_FAST_H */
