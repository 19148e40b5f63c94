/*
 * rip kernels: the 16x8 kernels (int16 activations, int8 weights, the converter's
 * EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 mode), as TFLite Micro's
 * reference integer kernels compute them. The convolutions and FULLY_CONNECTED take int16
 * tensors at even addresses as int16 arrays (two a word on the cores with DSP, SMLAD and
 * the halfword multiplies) and any other address a byte at a time (ARMv6-M faults on an
 * unaligned halfword; the arena is 4-byte aligned, a view may not be).
 *
 * A CONV_2D's and FULLY_CONNECTED's filter comes packed (rip.codegen.lower_wide.pack_filter):
 * per convolution group, its output channels in panels of four (the last one to three a
 * panel of their own), a panel's taps one after another, a tap's K input channels as
 * K / 4 blocks (a word per channel, bytes v0 v2 v1 v3) and then the K % 4 tail values (the
 * panel's channel bytes of each). A DEPTHWISE_CONV_2D's filter is TFLite's.
 */
#ifndef RIP_WIDE_H
#define RIP_WIDE_H

#include <stdint.h>

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FULLY_CONNECTED 16x8: out[b][o] = clamp(MultiplyByQuantizedMultiplier(sum_d w[o][d] *
 * (x[b][d] + input_offset) + bias[o]) + output_offset), the sum an int64 (wide_sum: the
 * 64-bit MultiplyByQuantizedMultiplier) or an int32 (the double-rounding one), as TFLite
 * Micro picks by the bias type; the bias int64 (bias_bytes 8), int32 (4) or none (0); one
 * multiplier per output channel (per_channel) or one for all; the filter [O, D] packed
 * (one tap of D channels). */
typedef struct {
    int32_t batches;
    int32_t input_depth;
    int32_t output_depth;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
    int32_t bias_bytes; /* 0, 4 or 8 */
    int32_t wide_sum;   /* 1: int64 sums */
    int32_t per_channel;
    const int32_t *multiplier; /* [output_depth], or [1] */
    const int32_t *shift;
} rip_fully_connected_s16_params;

rip_status rip_fully_connected_s16(const rip_fully_connected_s16_params *params,
                                   const void *input, const int8_t *filter, const void *bias,
                                   void *output);

/* CONV_2D (groups = input channels / filter channels) and DEPTHWISE_CONV_2D
 * (depth_multiplier > 0) 16x8, TFLite Micro's ConvPerChannel / DepthwiseConvPerChannel for
 * int16: no offsets (symmetric int16), a padded tap contributes nothing, one multiplier per
 * output channel, the sum an int64 (wide_sum) or int32 as for FULLY_CONNECTED above. The
 * filter is [O, KH, KW, I / groups] packed (KH * KW taps of I / groups channels), or
 * [1, KH, KW, C * M] as it is for a depthwise one. */
typedef struct {
    rip_dims input;
    rip_dims output;
    int32_t kh, kw;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_h, pad_w; /* top, left */
    int32_t depth_multiplier; /* > 0: depthwise; 0: a convolution */
    int32_t filter_channels;  /* a convolution's filter input channels (I / groups) */
    int32_t activation_min;
    int32_t activation_max;
    int32_t bias_bytes; /* 0, 4 or 8 */
    int32_t wide_sum;
    const int32_t *multiplier; /* [output channels] */
    const int32_t *shift;
} rip_conv_s16_params;

rip_status rip_conv_s16(const rip_conv_s16_params *params, const void *input,
                        const int8_t *filter, const void *bias, void *output);

/* AVERAGE_POOL_2D (average 1) and MAX_POOL_2D (average 0) 16x8, TFLite Micro's int16
 * pooling: the cells inside the input only, the average rounded half away from zero. */
typedef struct {
    rip_dims input;
    rip_dims output;
    int32_t kh, kw;
    int32_t stride_h, stride_w;
    int32_t pad_h, pad_w; /* top, left */
    int32_t average;
    int32_t activation_min;
    int32_t activation_max;
} rip_pool_s16_params;

rip_status rip_pool_s16(const rip_pool_s16_params *params, const void *input, void *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_WIDE_H */
