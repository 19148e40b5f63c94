/*
 * rip kernels: faster variants of CONV_2D and DEPTHWISE_CONV_2D (issue 11).
 *
 * Same arithmetic as rip_conv.h (TFLite's reference integer kernels, bit for bit), same
 * params and dims structs, same in-place contracts, with three changes a CMSIS-NN reader
 * will recognise:
 *
 * - `bias` is the folded bias the generator computes (rip.codegen.kernel_choice):
 *       folded_bias[oc] = bias[oc] + input_offset * sum over all taps of filter[oc]
 *   so inner loops multiply raw int8 inputs. A tap outside the input reads the input zero
 *   point (-input_offset), whose product cancels its share of the folded bias, exactly as
 *   TFLite's skipped tap contributes 0. `bias` must not be NULL.
 * - CONV_2D computes two output pixels x two output channels per step (a 2x2 tile of the
 *   GEMM output), with SMLAD and SXTB16 (with its rotate) on cores with the DSP extension
 *   and portable C elsewhere; one pixel pair's receptive fields are gathered before any of
 *   their channels is written.
 * - DEPTHWISE_CONV_2D splits each channel plane into an interior (every tap inside the
 *   input: no bounds checks, no divisions, kernel sizes 3, 5 and 7 fully unrolled with the
 *   channel's weights held in registers) and a border (bounds-checked, still no division).
 *
 * Requantization is TFLite's MultiplyByQuantizedMultiplier in the CMSIS-NN form: one 64-bit
 * multiply-accumulate with the 2^30 rounding constant (equal to gemmlowp's
 * SaturatingRoundingDoublingHighMul for every multiplier but INT32_MIN, which
 * QuantizeMultiplier never produces), then RoundingDivideByPOT.
 */
#ifndef RIP_CONV_FAST_H
#define RIP_CONV_FAST_H

#include "rip_conv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch of rip_conv2d_s8_fast: two gathered receptive fields, 2 * KH * KW * C_in bytes
 * (rip.codegen.kernel_choice.scratch_bytes). */
int32_t rip_conv2d_s8_fast_get_buffer_size(const rip_dims *input_dims,
                                           const rip_dims *filter_dims);

/* CONV_2D with a folded bias. In place as rip_conv2d_s8: `output` may start `gap` bytes
 * below `input`, gap >= rip_bound(geom, "dense", "gather", "row").gap. Output pixels go in
 * row-major order two at a time (pixels 2t and 2t + 1, a pair may span two rows; an odd
 * last pixel alone): both receptive fields are gathered into ctx->buf before any channel of
 * either pixel is written. That is the simulator's tile = 2 traversal
 * (rip.allocator.theory.simulate.simulate_rip(..., tile=2)), whose minimum gap is never
 * above the per-pixel one. */
int rip_conv2d_s8_fast(const rip_context *ctx, const rip_conv_params *params,
                       const rip_per_channel_quant *quant, const rip_dims *input_dims,
                       const int8_t *input, const rip_dims *filter_dims, const int8_t *filter,
                       const rip_dims *bias_dims, const int32_t *bias,
                       const rip_dims *output_dims, int8_t *output);

/* DEPTHWISE_CONV_2D out of place with a folded bias, depth multiplier 1. No scratch. */
int rip_depthwise_conv2d_s8_fast(const rip_context *ctx, const rip_dw_conv_params *params,
                                 const rip_per_channel_quant *quant,
                                 const rip_dims *input_dims, const int8_t *input,
                                 const rip_dims *filter_dims, const int8_t *filter,
                                 const rip_dims *bias_dims, const int32_t *bias,
                                 const rip_dims *output_dims, int8_t *output);

/* DEPTHWISE_CONV_2D channel in place with a folded bias: the contract and the scratch of
 * rip_depthwise_conv2d_s8_inplace (one output channel plane, H_out * W_out bytes,
 * rip_depthwise_conv2d_s8_get_buffer_size), gap 0. */
int rip_depthwise_conv2d_s8_inplace_fast(const rip_context *ctx,
                                         const rip_dw_conv_params *params,
                                         const rip_per_channel_quant *quant,
                                         const rip_dims *input_dims, int8_t *data,
                                         const rip_dims *filter_dims, const int8_t *filter,
                                         const rip_dims *bias_dims, const int32_t *bias,
                                         const rip_dims *output_dims);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV_FAST_H */
