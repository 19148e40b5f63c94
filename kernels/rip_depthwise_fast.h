/*
 * rip kernels: DEPTHWISE_CONV_2D out of place, fast (rip_depthwise_fast.c), depth
 * multiplier 1, the folded bias (rip_conv_types.h).
 *
 * Every fast depthwise kernel (this one, rip_depthwise_inplace_fast.h,
 * rip_depthwise_inplace_rows_fast.h and rip_depthwise_row_fast.h) takes the filter packed
 * by the generator (rip.codegen.kernel_choice.pack_depthwise_filter, rip_dw_weight in
 * rip_dw_geometry.h: channel groups of four, tap pairs, a sign-extended halfword pair per
 * channel and pair, 4-byte aligned) and runs one output row at a time through one row
 * engine (rip_dw_row_engine.h): on cores with the DSP extension and on hosts four channels
 * a word, each tap pair's two input words repacked into halfword pairs (PKHBT / PKHTB,
 * SXTB16) and multiplied by the packed weights with one SMLAD per channel (hand-scheduled:
 * two LDRDs of weights a pair); on ARMv6-M one channel at a time, LDRSB and MULS against
 * the channel's weights unpacked on the stack. The taps unroll for 3x3, 5x5 and 7x7 and the
 * requantisation is specialised per mode. A kernel row outside the input is weighted 0 (a
 * masked copy of the packed weights) with its zero-point share moved into the bias;
 * interior pixels read the input rows, each row's left and right border pixels a padded
 * segment gathered once per side. Within a row: channel groups in order, pixels left to
 * right within a group (the left side's fields all read before its first store). Kernels
 * taller than 16 rows take the engine's channel planes instead.
 */
#ifndef RIP_DEPTHWISE_FAST_H
#define RIP_DEPTHWISE_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DEPTHWISE_CONV_2D out of place with a folded bias, depth multiplier 1. No scratch. */
rip_status rip_depthwise_conv2d_fast_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                        const rip_per_channel_quant *quant,
                                        const rip_dims *input_dims, const int8_t *input,
                                        const rip_dims *filter_dims, const int8_t *filter,
                                        const rip_dims *bias_dims, const int32_t *bias,
                                        const rip_dims *output_dims, int8_t *output);

/* The same with the cheap requantisation: `channels` (rip_fast_channel records the
 * generator proved exact for the layer) replaces quant and the bias. */
rip_status rip_depthwise_conv2d_fast_rq_s8(const rip_context *ctx,
                                           const rip_dw_conv_params *params,
                                           const rip_fast_channel *channels,
                                           const rip_dims *input_dims, const int8_t *input,
                                           const rip_dims *filter_dims, const int8_t *filter,
                                           const rip_dims *output_dims, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_DEPTHWISE_FAST_H */
