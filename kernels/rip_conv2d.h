/*
 * rip kernels: CONV_2D, the reference kernel (rip_conv2d.c). Params, dims and arithmetic:
 * rip_conv_types.h.
 */
#ifndef RIP_CONV2D_H
#define RIP_CONV2D_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch of rip_conv2d_s8: one gathered receptive field, KH * KW * C_in bytes. */
int32_t rip_conv2d_s8_get_buffer_size(const rip_dims *input_dims, const rip_dims *filter_dims);

/* CONV_2D. In place (Sec. 4, sigma = 0): `output` may start `gap` bytes below `input` in the
 * same buffer, gap >= rip_bound(geom, "dense", "gather", "row").gap, overlapping the input
 * arbitrarily. Output pixels are produced in row-major order and each pixel's receptive field
 * is gathered into ctx->buf before any of its channels is written, so no input byte is read
 * after a later output byte has been stored. */
rip_status rip_conv2d_s8(const rip_context *ctx, const rip_conv_params *params,
                  const rip_per_channel_quant *quant, const rip_dims *input_dims,
                  const int8_t *input, const rip_dims *filter_dims, const int8_t *filter,
                  const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
                  int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV2D_H */
