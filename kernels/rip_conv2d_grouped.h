/*
 * rip kernels: GROUPED_CONV_2D (rip_conv2d_grouped.c), a CONV_2D whose filter's input
 * channels are a proper divisor of the input's, as TFLite Micro's reference conv runs it.
 * Params, dims and arithmetic: rip_conv_types.h.
 */
#ifndef RIP_CONV2D_GROUPED_H
#define RIP_CONV2D_GROUPED_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch of rip_conv2d_grouped_s8: one gathered receptive field over every input channel,
 * KH * KW * C_in bytes (C_in the input's, not the filter's). */
int32_t rip_conv2d_grouped_s8_get_buffer_size(const rip_dims *input_dims,
                                              const rip_dims *filter_dims);

/* Grouped CONV_2D: filter [C_out, KH, KW, C_in / G], G = C_in / filter_dims->c groups,
 * output channel oc reading input channels [g * C_in / G, (g + 1) * C_in / G) of group
 * g = oc / (C_out / G) (TFLite's reference_integer_ops::ConvPerChannel). In place as
 * rip_conv2d_s8: `output` may start `gap` bytes below `input` in one buffer, gap >=
 * rip_bound(geom, "dense", "gather", "row").gap; output pixels are produced in row-major
 * order and each pixel's receptive field, all C_in channels, is gathered into ctx->buf
 * before any of its channels is written. */
rip_status rip_conv2d_grouped_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_per_channel_quant *quant, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *bias_dims,
                                 const int32_t *bias, const rip_dims *output_dims,
                                 int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV2D_GROUPED_H */
