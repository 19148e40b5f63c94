/*
 * rip kernels: DEPTHWISE_CONV_2D in place, row-streamed (rip_depthwise_inplace_rows_fast.c),
 * with a ring of saved input rows; the folded bias (rip_conv_types.h) and the row engine of
 * rip_depthwise_fast.h. Also the C twin of the scratch the planner reserves for any
 * DEPTHWISE_CONV_2D.
 */
#ifndef RIP_DEPTHWISE_INPLACE_ROWS_FAST_H
#define RIP_DEPTHWISE_INPLACE_ROWS_FAST_H

#include "rip_conv_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DEPTHWISE_CONV_2D in place, row-streamed: the contract of the channel in-place kernels
 * (`data` holds the input and receives the output at the same base, gap 0, depth multiplier
 * 1, H_out * W_out <= H * W), batch 1, KH <= 16, with the row engine of the out-of-place
 * kernel over all channels of each output row. Output rows are written in order;
 * before row r is stored, each input row that row r's bytes reach first and that row r or a
 * later row still reads is copied into a FIFO ring of whole input rows (W * C bytes each)
 * in ctx->buf, and those taps read the ring from then on. At stride 1 with KH = 3, SAME,
 * the ring is KH - 1 rows; at stride 2 it is at most one.
 *
 * The schedule is baked in by the generator (rip.allocator.planning.scratch.
 * depthwise_ring_slots): ring_slots[i] is the ring slot input row i is copied into (-1:
 * never saved), ring_rows the ring's row count; the kernel does no schedule arithmetic of
 * its own. Scratch (rip.allocator.planning.scratch.depthwise_rows_scratch_bytes):
 * ring_rows * W * C, ring_rows the widest window of saved rows still read (the schedule
 * counted, not a closed form); the C twin below counts the same schedule, -1 for arguments
 * the kernel refuses. rip.allocator.theory.simulate.simulate_depthwise_rows executes this
 * schedule over a tracked workspace and finds no corruption at that ring, and corruption at
 * one slot fewer on unit-stride layers.
 *
 * Every core runs this schedule, except where it takes the layer in the engine's plane order
 * (rip_dw_plane_cols, rip_dw_row_engine.h): on DSP cores and hosts the column-pair
 * engine's (every channel in a group of four, a row in one tile), a group over every output
 * row, its widened window kept from row to row; on ARMv6-M a channel at a time, its output
 * rows in bands from a window of input rows kept from band to band. Either reads each input
 * row before any output byte reaches it wherever the kernel takes it (its test; rip
 * .allocator.theory.simulate.simulate_depthwise_plane and simulate_depthwise_band execute
 * those orders) and then saves no row. */
int32_t rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size(
    const rip_dw_conv_params *params, const rip_dims *input_dims, const rip_dims *filter_dims,
    const rip_dims *output_dims);

rip_status rip_depthwise_conv2d_inplace_rows_fast_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_per_channel_quant *quant,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
    const int16_t *ring_slots, int32_t ring_rows);

/* The same with the cheap requantisation: `channels` replaces quant and the bias. */
rip_status rip_depthwise_conv2d_inplace_rows_fast_rq_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_fast_channel *channels,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *output_dims, const int16_t *ring_slots, int32_t ring_rows);

/* The scratch the planner reserves for a DEPTHWISE_CONV_2D
 * (rip.allocator.planning.scratch.kernel_scratch_bytes, whichever kernel then runs it):
 * one output channel plane, H_out * W_out (the minimum of the channel in-place kernels,
 * and what ARMv6-M's rows entry runs on), or, where
 * rip_depthwise_conv2d_inplace_rows_fast_s8 applies (depth multiplier 1, one batch,
 * KH <= 16, H_out * W_out <= H * W), the larger of that plane and its scratch (table and
 * ring, rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size). The scratch is outside
 * the arena: it changes no activation placement. */
int32_t rip_depthwise_conv2d_scratch_get_buffer_size(const rip_dw_conv_params *params,
                                                      const rip_dims *input_dims,
                                                      const rip_dims *filter_dims,
                                                      const rip_dims *output_dims);

#ifdef __cplusplus
}
#endif

#endif /* RIP_DEPTHWISE_INPLACE_ROWS_FAST_H */
