/*
 * rip kernels: int8 BATCH_MATMUL.
 *
 * TFLite Micro's batch_matmul.cc with reference_ops::BatchMatMul: for every batch index of
 * the output (three batch axes, the operands extended to rank 5 with leading ones, a batch
 * axis of size 1 broadcast), output (i, j) is
 *   clamp(output_offset + MultiplyByQuantizedMultiplier(
 *             sum_k (lhs(i, k) + lhs_offset) * (rhs(k, j) + rhs_offset), multiplier, shift),
 *         -128, 127)
 * with one multiplier for the whole op (per-tensor operands, no fused activation). Where
 * TFLite Micro transposes an operand into a persistent copy (adj_x, or a right operand
 * without adj_y), this kernel walks it in place with its own element steps, so it needs
 * neither scratch nor a copy. Written from that description; parameters come from
 * rip.codegen.matmul_params.
 *
 * Not in place: output row i reads all of left row i and every right column, so an output
 * overlaying either operand would overwrite values still to be read.
 */
#ifndef RIP_MATMUL_H
#define RIP_MATMUL_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t lhs_offset; /* -zero point of the left operand */
    int32_t rhs_offset; /* -zero point of the right operand */
    int32_t output_offset;
    int32_t multiplier;
    int32_t shift;               /* TFLite's sign convention (positive: left) */
    int32_t batch[3];            /* the output's batch extents */
    int32_t lhs_batch_stride[3]; /* elements per batch index, 0 where broadcast */
    int32_t rhs_batch_stride[3];
    int32_t rows;  /* of the left operand and the output */
    int32_t cols;  /* of the right operand and the output */
    int32_t depth; /* the summed axis */
    int32_t lhs_row_step, lhs_depth_step; /* element (i, k) at i * row + k * depth step */
    int32_t rhs_depth_step, rhs_col_step; /* element (k, j) at k * depth + j * col step */
} rip_batch_matmul_params;

/* output: batch[0] * batch[1] * batch[2] row-major rows x cols matrices. */
rip_status rip_batch_matmul_s8(const rip_batch_matmul_params *params, const int8_t *lhs,
                               const int8_t *rhs, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_MATMUL_H */
