/*
 * rip kernels: a fused, row-streamed chain of convolutions (issue 12; the IR op FUSED_CHAIN).
 *
 * A chain of CONV_2D and DEPTHWISE_CONV_2D stages (depth multiplier 1), optionally ending in
 * the residual ADD of the chain's input, runs as one op: each intermediate tensor lives in a
 * ring of `ring_rows` rows (row r in slot r % ring_rows), never whole, and every row is
 * computed once and requantised to int8 exactly as the unfused op would store it, so the
 * output bytes are TFLite Micro's.
 *
 * Row schedule: rip.allocator.theory.fused.fused_schedule, the one order the planner's gap
 * and rings are derived and simulated for (docs/fused-chains.md). For each output row y of
 * the last stage in order, pull(last, y), where pull(j, t) first pulls, in order, every
 * needed row of stage j - 1 up to the highest input row stage j's row t reads, then
 * computes row t of stage j. A stage's needed rows are those some needed row of its reader
 * reads (all rows of the last stage): `needed` marks them (NULL: every row), and the i-th
 * row a stage computes goes to ring slot i % ring_rows (`ordinal` gives i; NULL: the row).
 *
 * In place (RiP layout): `output` may start `gap` bytes below `input` in the same buffer,
 * gap >= rip.allocator.theory.simulate_fused.simulate_fused: output row y is stored only
 * after every input read of its step, and no later step reads the input bytes it covers.
 * With a residual ADD, input row y is read elementwise while output row y is stored
 * (element i before element i). Rings must not overlap the input, the output or each other.
 *
 * A depthwise stage after the first whose reader holds one of its rows may have no ring
 * (ring_rows 0): each row is stored over the lowest input row it reads, in that row's
 * slot of the stage's input ring, where rip.allocator.theory.fused.in_slot allows it (no
 * later row reads that row; the horizontal stride above the left padding, so the row
 * engine's stores, left to right, reach only bytes it has read) and
 * rip.allocator.theory.simulate_fused.slot_corruption and chain_evictions find no
 * corruption; the stage before it must have a ring.
 *
 * Stages run the inner loops of the unfused ops they replace (kernels/rip_conv.h), with the
 * same per-member choice: the cheap requantisation's rip_fast_channel records where the
 * generator proved them for the member (rip.codegen.kernel_choice, as for its unfused op),
 * TFLite's general requantisation with the folded bias otherwise.
 * - CONV_2D: rip_conv2d_fast_rq_s8 (packed filter) or rip_conv2d_fast_s8, called once per
 *   output row: over the window's rows as a one-row output where those rows lie at one
 *   stride in memory (the chain's input, stored whole; a ring window that does not wrap; a
 *   1x1 stage's single row: the pointwise route, pixel pairs read in place), else (a KxK
 *   stage over a wrapping ring) over gathered receptive fields, two pixels a call, as a
 *   1x1 convolution of KH * KW * C_in taps. Either way a row's pixel pairs in order.
 * - DEPTHWISE_CONV_2D (depth multiplier 1): rip_depthwise_conv2d_row_fast_s8 or its _rq
 *   twin, the whole-tensor kernels' row engine over the row pointers.
 * The last stage's row goes straight to the output (it reads rings only, so every input
 * read of its step is done), or with a residual ADD to scratch first.
 */
#ifndef RIP_FUSED_H
#define RIP_FUSED_H

#include "rip_common.h"
#include "rip_conv.h"
#include "rip_elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RIP_FUSED_MAX_STAGES 16
#define RIP_FUSED_MAX_KH 64 /* kernel rows of one stage */

typedef enum {
    RIP_FUSED_CONV = 0,      /* CONV_2D */
    RIP_FUSED_DEPTHWISE = 1, /* DEPTHWISE_CONV_2D, depth multiplier 1 */
} rip_fused_stage_kind;

typedef struct {
    int32_t kind;          /* rip_fused_stage_kind */
    rip_dims input_dims;   /* [1, H, W, C_in] */
    rip_dims filter_dims;  /* conv [C_out, KH, KW, C_in]; depthwise [1, KH, KW, C] */
    rip_dims output_dims;  /* [1, H_out, W_out, C_out] */
    rip_conv_params conv;  /* offsets, stride, padding (top, left), dilation, activation */
    rip_per_channel_quant quant; /* the general requantisation's (channels == NULL) */
    const int8_t *filter;  /* conv with channels: packed as rip_conv2d_fast_rq_s8 reads it
                              (4-byte aligned); otherwise the model's */
    const int32_t *bias;   /* the folded bias (rip_conv_types.h), not NULL without channels */
    const rip_fast_channel *channels; /* the cheap requantisation's records, one per output
                                         channel, where proven for the member; else NULL */
    int32_t ring_rows;     /* slots of this stage's output ring; 0 for the last stage,
                              and for a depthwise stage storing its rows in its input's slot */
    const int16_t *ordinal; /* per output row: its rank among the needed rows, -1 if not
                               needed; NULL: every row is needed (rank = row) */
} rip_fused_stage;

typedef struct {
    int32_t n_stages;                /* 2 .. RIP_FUSED_MAX_STAGES (1 .. when streamed) */
    const rip_fused_stage *stages;
    const rip_add_params *residual;  /* the ADD of the chain's input, NULL: none */
    int32_t residual_input_first;    /* 1: ADD(input, chain), 0: ADD(chain, input) */
    int32_t source_rows;             /* rows of a streamed input's ring; 0: input resident */
} rip_fused_chain;

/* A streamed input (rip_fused_chain_streamed_s8): read(user, row, dst, bytes) stores input
 * row `row` (W * C int8 bytes = bytes) at dst and returns 0, or nonzero when it cannot (the
 * chain then stops at once with RIP_ERROR_SOURCE; its output is not valid). Rows are asked
 * for in order 0, 1, ..., H - 1, each once, every one of them (rows no stage reads too, so
 * that a camera's frame is always consumed whole), each just before the first output row
 * that reads it: a source may block until its row has arrived. */
typedef int32_t (*rip_row_read_fn)(void *user, int32_t row, int8_t *dst, int32_t bytes);
typedef struct {
    rip_row_read_fn read;
    void *user;
} rip_row_source;

/* Scratch (rip.allocator.planning.scratch.fused_scratch_bytes): the residual row
 * W_out * C_out rounded up to 4 when there is an ADD, then the largest stage need: a CONV_2D stage the scratch of
 * rip_conv2d_fast_rq_s8 (8 * K4 + 2 * KH * KW * C_in, K4 the taps rounded up to 4; it also
 * covers rip_conv2d_fast_s8's), plus two gathered fields (2 * KH * KW * C_in rounded up to
 * 4) for a stage after the first with KH > 1 (the first too when its input streams); a
 * depthwise stage none. */
int32_t rip_fused_chain_s8_get_buffer_size(const rip_fused_chain *chain);

/* rings[j] is stage j's output ring (j < n_stages - 1), ring_rows * W_out * C_out bytes
 * (NULL where ring_rows is 0).
 * ctx->buf must be 4-byte aligned. */
rip_status rip_fused_chain_s8(const rip_context *ctx, const rip_fused_chain *chain,
                              const int8_t *input, int8_t *const *rings, int8_t *output);

/* The chain over a streamed input (issue 25): input row r arrives from `source` into slot
 * r % source_rows of `source_ring` (source_rows * W * C bytes, overlapping nothing else),
 * the count rip.allocator.theory.fused.source_rows gives and the simulator's
 * source_evictions checks; stage 0 reads its rows there, a window that wraps in the ring
 * through gathered receptive fields, as a later stage reads its ring. No residual ADD
 * (the input's rows are gone by then). rings may be NULL for a one-stage chain. */
rip_status rip_fused_chain_streamed_s8(const rip_context *ctx, const rip_fused_chain *chain,
                                       const rip_row_source *source, int8_t *source_ring,
                                       int8_t *const *rings, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_FUSED_H */
