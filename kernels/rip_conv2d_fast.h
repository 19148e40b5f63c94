/*
 * rip kernels: CONV_2D on the fast GEMM (rip_conv2d_fast.c): two output pixels x two
 * output channels per step (a 2x2 tile of the GEMM output), with SMLAD and SXTB16 (with
 * its rotate) on cores with the DSP extension and portable C elsewhere; one pixel pair's
 * receptive fields are gathered before any of their channels is written. They also run a
 * DEPTHWISE_CONV_2D over one input channel, out of place, as the CONV_2D it equals
 * (rip.codegen.kernel_choice.depthwise_as_conv). Params, dims, the folded bias and
 * rip_fast_channel: rip_conv_types.h.
 */
#ifndef RIP_CONV2D_FAST_H
#define RIP_CONV2D_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scratch of rip_conv2d_fast_s8: two gathered receptive fields, 2 * KH * KW * C_in bytes. */
int32_t rip_conv2d_fast_s8_get_buffer_size(const rip_dims *input_dims,
                                           const rip_dims *filter_dims);

/* CONV_2D with a folded bias. In place as rip_conv2d_s8: `output` may start `gap` bytes
 * below `input`, gap >= rip_bound(geom, "dense", "gather", "row").gap. Output pixels go in
 * row-major order two at a time (pixels 2t and 2t + 1, a pair may span two rows; an odd
 * last pixel alone): both receptive fields are gathered into ctx->buf before any channel of
 * either pixel is written. That is the simulator's tile = 2 traversal
 * (rip.allocator.theory.simulate.simulate_rip(..., tile=2)), whose minimum gap is never
 * above the per-pixel one. */
rip_status rip_conv2d_fast_s8(const rip_context *ctx, const rip_conv_params *params,
                              const rip_per_channel_quant *quant, const rip_dims *input_dims,
                              const int8_t *input, const rip_dims *filter_dims,
                              const int8_t *filter, const rip_dims *bias_dims,
                              const int32_t *bias, const rip_dims *output_dims, int8_t *output);

/* Scratch of rip_conv2d_fast_rq_s8: the pixel pair widened, 8 * K4 bytes (K4 = KH * KW *
 * C_in rounded up to a multiple of 4; int32 taps without DSP, int16 pairs in the first half
 * with it), then two gathered receptive fields, 2 * KH * KW * C_in
 * (rip.allocator.planning.scratch.kernel_scratch_bytes for CONV_2D). */
int32_t rip_conv2d_fast_rq_s8_get_buffer_size(const rip_dims *input_dims,
                                              const rip_dims *filter_dims);

/* rip_conv2d_fast_s8's traversal and in-place contract (pixel pairs, both receptive fields
 * gathered before either is written; for a 1x1 unit-stride unpadded layer the pair is read
 * straight from the input, which is the same order; on cores with the DSP extension pixels
 * go three at a time, the last one or two as a pair or alone, all three fields read (from
 * the input, or gathered into the scratch) before any is written: the simulator's tile = 3
 * traversal; and for a pointwise layer whose packed filter is larger than the Picos'
 * 16 KB flash cache and read through it, as many pixels a sweep of the filter as ctx->size
 * holds widened (2 * K4 bytes each), in balanced tiles
 * (rip.core.kernel_variants.conv_sweep_tiles, which the simulator executes): never above
 * the per-pixel gap either) with the cheap requantisation: `channels` replaces quant and
 * bias, and the output offset lives in it. The filter is packed by the generator
 * (rip.codegen.kernel_choice.pack_filter_pairs), 4-byte aligned: output channels in pairs
 * (2j, 2j + 1; an odd last one paired with zeros), each pair K4 / 4 blocks of 8 bytes,
 * taps [4t, 4t + 4) of channel 2j then of channel 2j + 1, taps past KH * KW * C_in zero.
 * ctx->buf must be 4-byte aligned. Two cores (ctx->share, each core its own context and
 * scratch, rip_cores.h): the same tiles taken in turns, or where the filter is swept
 * through the flash cache, split by output channels; either keeps the in-place contract
 * above (docs/two-cores.md). RIP_SHARE_PART0 / _PART1: core 0's or core 1's output
 * channels of every pixel (rip_share_channels), with no synchronisation: the caller's (a
 * fused chain's row compute). */
rip_status rip_conv2d_fast_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV2D_FAST_H */
