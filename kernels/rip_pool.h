/*
 * rip kernels: int8 average and max pooling, and global average pooling (TFLite's MEAN over
 * H and W).
 *
 * Pooling is TFLite's reference integer pooling bit for bit (reference/integer_ops/pooling.h):
 * cells outside the input are skipped, not in the max and not in the average's divisor, and
 * the average rounds half away from zero: (sum +- count / 2) / count with C's truncating
 * division. With `pad_counts` set (an explicit PAD folded into a VALID pool), padded cells
 * instead hold `pad_value` (the input zero point) and take part like any other cell.
 * Input and output share their quantization, so there is no requantization.
 *
 * Dims: input [N, H, W, C], filter_dims h and w the window, output [N, H_out, W_out, C].
 */
#ifndef RIP_POOL_H
#define RIP_POOL_H

#include "rip_common.h" /* rip_dims, rip_hw, rip_activation, rip_context, rip_status */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    rip_hw stride;
    rip_hw padding;    /* top and left */
    rip_activation activation;
    int32_t pad_counts; /* nonzero: padded cells hold pad_value and count */
    int32_t pad_value;  /* the input zero point */
} rip_pool_params;

typedef struct {
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    int32_t multiplier;    /* input_scale / output_scale with 1 / (H * W) folded in, as TFLM */
    int32_t shift;
} rip_mean_params;

/* Scratch of the pools, 4 * C bytes (rip.allocator.planning.scratch.kernel_scratch_bytes for
 * pooling, GLOBAL_AVERAGE_POOL and MEAN over H and W): the global pool's int32 sums; the
 * first C bytes stage one output pixel of an in-place pool. */
int32_t rip_avg_pool_s8_get_buffer_size(const rip_dims *output_dims);
int32_t rip_max_pool_s8_get_buffer_size(const rip_dims *output_dims);
int32_t rip_global_avg_pool_s8_get_buffer_size(const rip_dims *output_dims);

/* AVERAGE_POOL_2D / MAX_POOL_2D. In place: `output` may start `gap` bytes below `input` in the
 * same buffer, gap >= pool_bound(geom, "dense").gap. Output pixels are produced in row-major
 * order, each as if stored only after its whole window is read: its channels are stored as
 * they are done where that gives the same bytes (disjoint buffers, or a gap that is a
 * multiple of C: a store then lands on an input channel this pixel has read), otherwise
 * staged in ctx->buf (4-byte aligned) and copied out after the window. On DSP cores four
 * channels a word (SSUB8/SEL maxima; SXTAB16 sums in 16-bit lanes for windows of at most
 * 255 cells); without a divide instruction the rounded average multiplies by a reciprocal
 * (exact for windows of at most 361 cells). */
rip_status rip_avg_pool_s8(const rip_context *ctx, const rip_pool_params *params,
                    const rip_dims *input_dims, const int8_t *input, const rip_dims *filter_dims,
                    const rip_dims *output_dims, int8_t *output);
rip_status rip_max_pool_s8(const rip_context *ctx, const rip_pool_params *params,
                    const rip_dims *input_dims, const int8_t *input, const rip_dims *filter_dims,
                    const rip_dims *output_dims, int8_t *output);

/* MEAN over H and W (keep_dims or not: the output is C bytes per batch either way), TFLite
 * Micro's int8 algorithm: per channel sum, minus input zero point times H * W, one
 * MultiplyByQuantizedMultiplier, plus the output zero point, clamped to int8. Output must
 * not overlap input; ctx->buf (4-byte aligned) holds the C sums. */
rip_status rip_global_avg_pool_s8(const rip_context *ctx, const rip_mean_params *params,
                           const rip_dims *input_dims, const int8_t *input,
                           const rip_dims *output_dims, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_POOL_H */
