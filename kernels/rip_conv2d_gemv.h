/*
 * rip kernels: CONV_2D on the packed GEMV (rip_conv2d_gemv.c), one receptive field at a
 * time, for a CONV_2D of one output pixel (a classifier) and a DEPTHWISE_CONV_2D over one
 * input channel (the CONV_2D it equals). Params,
 * dims and rip_fast_channel (the folded bias in each record): rip_conv_types.h.
 */
#ifndef RIP_CONV2D_GEMV_H
#define RIP_CONV2D_GEMV_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CONV_2D on the FULLY_CONNECTED GEMV: rip_conv2d_fast_rq_s8's records and packed filter,
 * one output pixel at a time in row-major order, its receptive field gathered into ctx->buf
 * (KH * KW * C_in bytes, rip_conv2d_s8's scratch and in-place contract: gap >= the
 * per-pixel gather gap) before any of its channels is written, then every channel four at
 * a time; with DSP, where ctx->size also holds the field widened (2 * K4 bytes, K4 the taps
 * rounded up to 4, word-aligned after the field), two at a time from that copy, so that the
 * filter is read once in address order (a flash filter's misses continue one QSPI
 * transfer). For one-pixel layers (rip.codegen.kernel_choice.choose_conv_kernel) and layers
 * whose scratch allowance holds one receptive field but not the pixel pair's widened copy
 * (depthwise_as_conv). */
rip_status rip_conv2d_gemv_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV2D_GEMV_H */
