/*
 * rip kernels: int8 convolution, depthwise convolution and fully connected layers.
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
 */
#ifndef RIP_CONV_H
#define RIP_CONV_H

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

/* Scratch of rip_conv2d_s8: one gathered receptive field, KH * KW * C_in bytes
 * (rip.scratch.scratch_bytes for CONV_2D). */
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

/* Scratch of rip_depthwise_conv2d_inplace_s8: one output channel plane, H_out * W_out
 * bytes (the minimum of rip.scratch.scratch_bytes for DEPTHWISE_CONV_2D, whose C twin is
 * rip_depthwise_conv2d_scratch_get_buffer_size). */
int32_t rip_depthwise_conv2d_inplace_s8_get_buffer_size(const rip_dims *output_dims);

/* DEPTHWISE_CONV_2D out of place: `output` must not overlap `input`. No scratch is used
 * (ctx may be NULL). */
rip_status rip_depthwise_conv2d_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                            const rip_per_channel_quant *quant, const rip_dims *input_dims,
                            const int8_t *input, const rip_dims *filter_dims,
                            const int8_t *filter, const rip_dims *bias_dims, const int32_t *bias,
                            const rip_dims *output_dims, int8_t *output);

/* DEPTHWISE_CONV_2D channel in place (TinyEngine's scheme): `data` holds the input and
 * receives the output at the same base. Needs depth multiplier 1 and
 * H_out * W_out <= H * W. Each channel's whole output plane is computed into ctx->buf from
 * that channel alone, then scattered over the same channel, which no later channel reads. */
rip_status rip_depthwise_conv2d_inplace_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                    const rip_per_channel_quant *quant,
                                    const rip_dims *input_dims, int8_t *data,
                                    const rip_dims *filter_dims, const int8_t *filter,
                                    const rip_dims *bias_dims, const int32_t *bias,
                                    const rip_dims *output_dims);

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

/* ---------------------------------------------------------------------------------------
 * Fast variants (issue 11; kernels/rip_conv_fast.c, kernels/rip_depthwise_fast.c). Same
 * arithmetic, params, dims and in-place contracts as the kernels above, with three changes a
 * CMSIS-NN reader will know:
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
 * - DEPTHWISE_CONV_2D runs one output row at a time through a row engine: per channel
 *   group, the weights staged once per row (on cores with the DSP extension and on hosts,
 *   four channels a word as SXTB16 halfword pairs, SMLABB / SMLATT per channel; on ARMv6-M
 *   one channel at a time, LDRSB and MULS), taps unrolled for 3x3, 5x5 and 7x7, a kernel row
 *   outside the input weighted 0 with its zero-point share moved into the bias, interior
 *   pixels straight from the input rows and border pixels from their gathered receptive
 *   field. Within a row: channel groups in order, pixels left to right within a group.
 *   Where the generator proves it, the _rq twins take rip_fast_channel records and
 *   rip_cheap_requantize.
 *
 * Requantization is TFLite's MultiplyByQuantizedMultiplier in the CMSIS-NN form: one 64-bit
 * multiply-accumulate with the 2^30 rounding constant (equal to gemmlowp's
 * SaturatingRoundingDoublingHighMul for every multiplier but INT32_MIN, which
 * QuantizeMultiplier never produces), then RoundingDivideByPOT.
 * ------------------------------------------------------------------------------------- */

/* Scratch of rip_conv2d_fast_s8: two gathered receptive fields, 2 * KH * KW * C_in bytes
 * (rip.scratch.scratch_bytes for CONV_2D). */
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

/* Per output channel constants of the cheap requantisation (rip_conv2d_fast_rq_s8): the
 * folded bias, the multiplier, round = 2^(e - 1) + output_offset * 2^e and the right shift
 * e = -shift >= 1, one 16-byte record the kernel reads with two LDRDs. The generator
 * computes them and proves, per layer, that they give TFLite's requantisation exactly
 * (rip.codegen.requant.cheap_channels: no left shift, |acc| < 2^30, no overflow). */
typedef struct {
    int32_t bias;
    int32_t multiplier;
    int32_t round;
    int32_t shift;
} rip_fast_channel;

/* Scratch of rip_conv2d_fast_rq_s8: the pixel pair widened, 8 * K4 bytes (K4 = KH * KW *
 * C_in rounded up to a multiple of 4; int32 taps without DSP, int16 pairs in the first half
 * with it), then two gathered receptive fields, 2 * KH * KW * C_in
 * (rip.scratch.scratch_bytes for CONV_2D). */
int32_t rip_conv2d_fast_rq_s8_get_buffer_size(const rip_dims *input_dims,
                                              const rip_dims *filter_dims);

/* rip_conv2d_fast_s8's traversal and in-place contract (pixel pairs, both receptive fields
 * gathered before either is written; for a 1x1 unit-stride unpadded layer the pair is read
 * straight from the input, which is the same order) with the cheap requantisation:
 * `channels` replaces quant and bias, and the output offset lives in it. The filter is
 * packed by the generator (rip.codegen.kernel_choice.pack_filter_pairs), 4-byte aligned:
 * output channels in pairs (2j, 2j + 1; an odd last one paired with zeros), each pair K4 / 4
 * blocks of 8 bytes, taps [4t, 4t + 4) of channel 2j then of channel 2j + 1, taps past
 * KH * KW * C_in zero. ctx->buf must be 4-byte aligned. */
rip_status rip_conv2d_fast_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output);

/* FULLY_CONNECTED with the cheap requantisation: rip_fully_connected_s8's dims, arithmetic
 * and disjoint buffers, with the records (`channels`, one per output unit; a per-tensor
 * multiplier repeated, rip.codegen.kernel_choice.fast_fc_channels) in place of quant and
 * bias, and the filter packed as rip_conv2d_fast_rq_s8's (the FULLY_CONNECTED as a 1x1
 * convolution over its batches: units in pairs, rows of depth taps padded to a multiple of
 * 4, 4-byte aligned). Each input row is a GEMV against the packed pairs, four units at a
 * time. No scratch (ctx may be NULL). */
rip_status rip_fully_connected_fast_rq_s8(const rip_context *ctx, const rip_fc_params *params,
                                          const rip_fast_channel *channels,
                                          const rip_dims *input_dims, const int8_t *input,
                                          const rip_dims *filter_dims, const int8_t *filter,
                                          const rip_dims *output_dims, int8_t *output);

/* CONV_2D on the FULLY_CONNECTED GEMV: rip_conv2d_fast_rq_s8's records and packed filter,
 * one output pixel at a time in row-major order, its receptive field gathered into ctx->buf
 * (KH * KW * C_in bytes, rip_conv2d_s8's scratch and in-place contract: gap >= the
 * per-pixel gather gap) before any of its channels is written, then every channel four at
 * a time. For layers whose scratch allowance holds one receptive field but not the pixel
 * pair's widened copy (rip.codegen.kernel_choice.depthwise_as_conv). */
rip_status rip_conv2d_gemv_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output);

/* DEPTHWISE_CONV_2D out of place with a folded bias, depth multiplier 1. No scratch. */
rip_status rip_depthwise_conv2d_fast_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                        const rip_per_channel_quant *quant,
                                        const rip_dims *input_dims, const int8_t *input,
                                        const rip_dims *filter_dims, const int8_t *filter,
                                        const rip_dims *bias_dims, const int32_t *bias,
                                        const rip_dims *output_dims, int8_t *output);

/* DEPTHWISE_CONV_2D channel in place with a folded bias: the contract and the minimum
 * scratch of rip_depthwise_conv2d_inplace_s8 (one output channel plane, H_out * W_out bytes,
 * rip_depthwise_conv2d_inplace_s8_get_buffer_size), gap 0. With more scratch (ctx->size,
 * the model's whole scratch buffer, reserved for its largest op anyway) the channel-
 * vectorised cores take G = min(C, 4 * floor(ctx->size / (4 * H_out * W_out))) channels a
 * pass when G >= 4: group [c0, c0 + G) reads input channels [c0, c0 + G) only, computes
 * their planes into ctx->buf and then scatters them over the same channels, which no later
 * group reads. The order is the channel scheme's with wider channels: gap 0 still holds. */
rip_status rip_depthwise_conv2d_inplace_fast_s8(const rip_context *ctx,
                                                const rip_dw_conv_params *params,
                                                const rip_per_channel_quant *quant,
                                                const rip_dims *input_dims, int8_t *data,
                                                const rip_dims *filter_dims,
                                                const int8_t *filter, const rip_dims *bias_dims,
                                                const int32_t *bias,
                                                const rip_dims *output_dims);

/* DEPTHWISE_CONV_2D in place, row-streamed: the contract of the channel in-place kernels
 * (`data` holds the input and receives the output at the same base, gap 0, depth multiplier
 * 1, H_out * W_out <= H * W), batch 1, KH <= 16, with the row engine of the out-of-place
 * kernel over all channels of each output row. Output rows are written in order;
 * before row r is stored, each input row that row r's bytes reach first and that row r or a
 * later row still reads is copied into a FIFO ring of whole input rows (W * C bytes each)
 * in ctx->buf, and those taps read the ring from then on. At stride 1 with KH = 3, SAME,
 * the ring is KH - 1 rows; at stride 2 it is at most one.
 *
 * The schedule is baked in by the generator (rip.scratch.depthwise_ring_slots):
 * ring_slots[i] is the ring slot input row i is copied into (-1: never saved), ring_rows
 * the ring's row count; the kernel does no schedule arithmetic of its own. Scratch
 * (rip.scratch.depthwise_rows_scratch_bytes): ring_rows * W * C, ring_rows the widest
 * window of saved rows still read (the schedule counted, not a closed form); the C twin
 * below counts the same schedule, -1 for arguments the kernel refuses.
 * rip.allocator.theory.simulate.simulate_depthwise_rows executes this schedule over a
 * tracked workspace and finds no corruption at that ring, and corruption at one slot fewer
 * on unit-stride layers.
 *
 * Every core runs this schedule (ARMv6-M's engine one channel at a time within each row:
 * the same rows saved, the same ring). */
int32_t rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size(
    const rip_dw_conv_params *params, const rip_dims *input_dims, const rip_dims *filter_dims,
    const rip_dims *output_dims);

rip_status rip_depthwise_conv2d_inplace_rows_fast_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_per_channel_quant *quant,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
    const int16_t *ring_slots, int32_t ring_rows);

/* The three fast depthwise kernels with the cheap requantisation (rip_fast_channel records
 * the generator proved exact for the layer, as for rip_conv2d_fast_rq_s8): the same
 * traversal, scratch and in-place contract as their namesakes above; `channels` replaces
 * quant and the bias. */
rip_status rip_depthwise_conv2d_fast_rq_s8(const rip_context *ctx,
                                           const rip_dw_conv_params *params,
                                           const rip_fast_channel *channels,
                                           const rip_dims *input_dims, const int8_t *input,
                                           const rip_dims *filter_dims, const int8_t *filter,
                                           const rip_dims *output_dims, int8_t *output);

rip_status rip_depthwise_conv2d_inplace_fast_rq_s8(const rip_context *ctx,
                                                   const rip_dw_conv_params *params,
                                                   const rip_fast_channel *channels,
                                                   const rip_dims *input_dims, int8_t *data,
                                                   const rip_dims *filter_dims,
                                                   const int8_t *filter,
                                                   const rip_dims *output_dims);

rip_status rip_depthwise_conv2d_inplace_rows_fast_rq_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_fast_channel *channels,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *output_dims, const int16_t *ring_slots, int32_t ring_rows);

/* The scratch the planner reserves for a DEPTHWISE_CONV_2D (rip.scratch.scratch_bytes,
 * whichever kernel then runs it): one output channel plane, H_out * W_out (the minimum of
 * the channel in-place kernels, and what ARMv6-M's rows entry runs on), or, where
 * rip_depthwise_conv2d_inplace_rows_fast_s8 applies (depth multiplier 1, one batch,
 * KH <= 16, H_out * W_out <= H * W), the larger of that plane and its scratch (table and
 * ring, rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size). The scratch is outside
 * the arena: it changes no activation placement. */
int32_t rip_depthwise_conv2d_scratch_get_buffer_size(const rip_dw_conv_params *params,
                                                      const rip_dims *input_dims,
                                                      const rip_dims *filter_dims,
                                                      const rip_dims *output_dims);

/* DEPTHWISE_CONV_2D, one output row (every channel) from row pointers, depth multiplier 1,
 * batch 1, the folded bias (or, _rq, rip_fast_channel records): rows[ky] (ky < KH) is input
 * row oy * stride.h - padding.h + ky * dilation.h of the output row oy computed, W * C bytes,
 * NULL for a row outside the input; the rows need not be stored together (a fused chain's
 * ring). input_dims and output_dims are the whole tensors' (their H is not read). The row
 * engine of the whole-tensor kernels above (channel groups in order, pixels left to right);
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

#ifdef __cplusplus
}
#endif

#endif /* RIP_CONV_H */
