/*
 * rip kernels: the params and records of the weighted kernel families (CONV_2D,
 * DEPTHWISE_CONV_2D, FULLY_CONNECTED; rip_conv.h includes every family header).
 *
 * Arithmetic is TFLite's reference integer kernels bit for bit
 * (reference/integer_ops/conv.h, depthwise_conv.h, fully_connected.h):
 *   acc = bias[oc] + sum (x + input_offset) * w
 *   y   = clamp(MultiplyByQuantizedMultiplier(acc, multiplier[oc], shift[oc]) + output_offset,
 *               activation.min, activation.max)
 * Padding is never stored: taps outside the input contribute nothing, as in TFLite.
 *
 * Dims (rip_dims is n, h, w, c):
 *   conv       input [N, H, W, C_in], filter [C_out, KH, KW, C_in], output [N, H_out, W_out, C_out]
 *   depthwise  input [N, H, W, C],    filter [1, KH, KW, C * M],     output [N, H_out, W_out, C * M]
 *   fully conn input [N, 1, 1, I],    filter [O, 1, 1, I],           output [N, 1, 1, O]
 * bias_dims is accepted for the CMSIS-NN shape of the API and not read; bias may be NULL.
 *
 * The fast variants (rip_conv2d_fast.h, rip_conv2d_gemv.h, rip_depthwise_*fast.h,
 * rip_fully_connected_fast.h) keep that arithmetic, the params, dims and in-place
 * contracts, with two changes a CMSIS-NN reader will know:
 *
 * - `bias` is the folded bias the generator computes (rip.codegen.kernel_choice):
 *       folded_bias[oc] = bias[oc] + input_offset * sum over all taps of filter[oc]
 *   so inner loops multiply raw int8 inputs. A tap outside the input reads the input zero
 *   point (-input_offset), whose product cancels its share of the folded bias, exactly as
 *   TFLite's skipped tap contributes 0. `bias` must not be NULL.
 * - Requantization is TFLite's MultiplyByQuantizedMultiplier in the CMSIS-NN form: one
 *   64-bit multiply-accumulate with the 2^30 rounding constant (equal to gemmlowp's
 *   SaturatingRoundingDoublingHighMul for every multiplier but INT32_MIN, which
 *   QuantizeMultiplier never produces), then RoundingDivideByPOT. Where the generator
 *   proves it, the _rq twins take rip_fast_channel records and the cheap requantisation
 *   (rip_cheap_requantize in rip_support.h) instead.
 */
#ifndef RIP_CONV_TYPES_H
#define RIP_CONV_TYPES_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    rip_hw stride;
    rip_hw padding;        /* top and left; bottom and right follow from the output dims */
    rip_hw dilation;
    rip_activation activation;
} rip_conv_params;

typedef struct {
    int32_t input_offset;
    int32_t output_offset;
    rip_hw stride;
    rip_hw padding;
    rip_hw dilation;
    int32_t depth_multiplier; /* output channel c * M + m reads input channel c */
    rip_activation activation;
} rip_dw_conv_params;

typedef struct {
    int32_t input_offset;
    int32_t output_offset;
    rip_activation activation;
    /* -weights zero point: TFLite's weights_offset, per-tensor weights only (0 otherwise;
     * the exact kernels add it, the packed one requires 0) */
    int32_t filter_offset;
} rip_fc_params;

/* Per output channel constants of the cheap requantisation (the _rq kernels): the folded
 * bias, the multiplier, round = 2^(e - 1) + output_offset * 2^e and the right shift
 * e = -shift >= 1, one 16-byte record the kernel reads with two LDRDs. The generator
 * computes them and proves, per layer, that they give TFLite's requantisation exactly
 * (rip.codegen.requant.cheap_channels: no left shift, |acc| < 2^30, no overflow). */
typedef struct {
    int32_t bias;
    int32_t multiplier;
    int32_t round;
    int32_t shift;
} rip_fast_channel;

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV_TYPES_H */
