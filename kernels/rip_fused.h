/*
 * rip kernels: a fused, row-streamed chain of convolutions (issue 12).
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
 * after every input read of its step, and no later step reads the input bytes it covers. With a residual ADD, input row y is read
 * elementwise while output row y is stored (element i before element i). Rings must not
 * overlap the input, the output or each other.
 *
 * Stages: a 1x1 CONV_2D whose window row is present runs rip_conv2d_fast_s8 over that one
 * row (h = 1); a larger CONV_2D gathers two pixels' receptive fields from the row pointers
 * and runs rip_conv2d_fast_s8 over them as a 1x1 convolution of KH * KW * C_in taps; both
 * take the folded bias (rip_conv.h). A DEPTHWISE_CONV_2D runs this file's row-pointer
 * routine (ring rows are not contiguous), with the model's bias and TFLite's reference
 * arithmetic.
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
    RIP_FUSED_CONV = 0,      /* CONV_2D, folded bias */
    RIP_FUSED_DEPTHWISE = 1, /* DEPTHWISE_CONV_2D, depth multiplier 1, the model's bias */
} rip_fused_stage_kind;

typedef struct {
    int32_t kind;          /* rip_fused_stage_kind */
    rip_dims input_dims;   /* [1, H, W, C_in] */
    rip_dims filter_dims;  /* conv [C_out, KH, KW, C_in]; depthwise [1, KH, KW, C] */
    rip_dims output_dims;  /* [1, H_out, W_out, C_out] */
    rip_conv_params conv;  /* offsets, stride, padding (top, left), dilation, activation */
    rip_per_channel_quant quant;
    const int8_t *filter;
    const int32_t *bias;   /* conv: folded, not NULL; depthwise: the model's, may be NULL */
    int32_t ring_rows;     /* slots of this stage's output ring; 0 for the last stage */
    const int16_t *ordinal; /* per output row: its rank among the needed rows, -1 if not
                               needed; NULL: every row is needed (rank = row) */
} rip_fused_stage;

typedef struct {
    int32_t n_stages;                /* 2 .. RIP_FUSED_MAX_STAGES */
    const rip_fused_stage *stages;
    const rip_add_params *residual;  /* the ADD of the chain's input, NULL: none */
    int32_t residual_input_first;    /* 1: ADD(input, chain), 0: ADD(chain, input) */
} rip_fused_chain;

/* Scratch (rip.scratch.fused_scratch_bytes): the residual row W_out * C_out rounded up to
 * 4 when there is an ADD, then the largest stage need: conv 4 * KH * KW * C_in rounded
 * up to 4 (two gathered fields and the fast conv's two copies; a 1x1 conv over a padded
 * row gathers too), depthwise 12 * KH * KW (one pixel's valid taps). */
int32_t rip_fused_chain_s8_get_buffer_size(const rip_fused_chain *chain);

/* rings[j] is stage j's output ring (j < n_stages - 1), ring_rows * W_out * C_out bytes. */
rip_status rip_fused_chain_s8(const rip_context *ctx, const rip_fused_chain *chain,
                              const int8_t *input, int8_t *const *rings, int8_t *output);

/* One depthwise output row from KH input row pointers (NULL: a padded row), W * C each:
 * TFLite's reference arithmetic, four channels a step (SMLABB / SMLATT on DSP cores);
 * scratch holds 12 * KH * KW bytes (one pixel's valid taps). */
void rip_fused_depthwise_row_s8(const rip_fused_stage *stage, const int8_t *const *rows,
                                int32_t *scratch, int8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* RIP_FUSED_H */
