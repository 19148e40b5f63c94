/* rip kernels: int8 BATCH_MATMUL (see rip_matmul.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_matmul.h"
#include "rip_support.h"

/* One rows x cols product of the left matrix at `a` and the right one at `b`. */
static void matmul_s8(const rip_batch_matmul_params *p, const int8_t *a, const int8_t *b,
                      int8_t *out) {
    for (int32_t i = 0; i < p->rows; ++i) {
        const int8_t *row = a + i * p->lhs_row_step;
        for (int32_t j = 0; j < p->cols; ++j) {
            const int8_t *col = b + j * p->rhs_col_step;
            int32_t acc = 0;
            for (int32_t k = 0; k < p->depth; ++k) {
                acc += ((int32_t)row[k * p->lhs_depth_step] + p->lhs_offset) *
                       ((int32_t)col[k * p->rhs_depth_step] + p->rhs_offset);
            }
            acc = rip_multiply_by_quantized_multiplier(acc, p->multiplier, p->shift) +
                  p->output_offset;
            *out++ = (int8_t)rip_clamp32(acc, INT8_MIN, INT8_MAX);
        }
    }
}

rip_status rip_batch_matmul_s8(const rip_batch_matmul_params *params, const int8_t *lhs,
                               const int8_t *rhs, int8_t *output) {
    const rip_batch_matmul_params *p = params;
    if (p->rows <= 0 || p->cols <= 0 || p->depth <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t matrix = p->rows * p->cols;
    for (int32_t b0 = 0; b0 < p->batch[0]; ++b0) {
        for (int32_t b1 = 0; b1 < p->batch[1]; ++b1) {
            for (int32_t b2 = 0; b2 < p->batch[2]; ++b2) {
                const int8_t *a = lhs + b0 * p->lhs_batch_stride[0] +
                                  b1 * p->lhs_batch_stride[1] + b2 * p->lhs_batch_stride[2];
                const int8_t *b = rhs + b0 * p->rhs_batch_stride[0] +
                                  b1 * p->rhs_batch_stride[1] + b2 * p->rhs_batch_stride[2];
                matmul_s8(p, a, b, output);
                output += matrix;
            }
        }
    }
    return RIP_OK;
}
